"""The packages' layering, read from the imports (ast) of every module, function-local ones
included: a lower layer never imports a higher one.

  knowledge   data and paths (TK's ops, layouts, the protocol files): no front end, no checks,
              no engine, and no libclang (the front end is the one place that parses)
  model       the KernelModel and its expressions: no front end, no checks, no engine
  solver      z3 with its budget, shared by the front end and the checks: neither of them
  recurrence  closed forms of loop-carried values (Expr math + solver), shared by the front end
              and the checks: neither of them, no engine
  frontend    source -> KernelModel: no checks, engine, rules or renderers
  checks      facts over a KernelModel: no front end (what both need lives in model/, solver,
              recurrence)
  config      reading a config loads no renderer (the format names live in tkcheck.formats)
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "tkcheck.knowledge": ("tkcheck.frontend", "tkcheck.checks", "tkcheck.engine", "clang"),
    "tkcheck.model": ("tkcheck.frontend", "tkcheck.checks", "tkcheck.engine"),
    "tkcheck.solver": ("tkcheck.frontend", "tkcheck.checks", "tkcheck.engine"),
    "tkcheck.solver_limits": ("tkcheck.frontend", "tkcheck.checks", "tkcheck.engine", "z3"),
    "tkcheck.recurrence": ("tkcheck.frontend", "tkcheck.checks", "tkcheck.engine"),
    "tkcheck.frontend": ("tkcheck.checks", "tkcheck.engine", "tkcheck.rules", "tkcheck.render"),
    "tkcheck.checks": ("tkcheck.frontend",),
    "tkcheck.config": ("tkcheck.render",),
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _module_name(path: Path, top: Path) -> tuple[str, str]:
    """(module, package its relative imports start from) of a file under `top` (the folder
    holding the `tkcheck` package)."""
    parts = list(path.relative_to(top).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def imported_names(path: Path, top: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file; `from X import y` also
    names X.y, which may be a submodule."""
    _, package = _module_name(path, top)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
    return out


def back_edges(top: Path) -> list[str]:
    """Every import under top/tkcheck that a layer of FORBIDDEN forbids, as 'file:line: a -> b'."""
    found = []
    for path in sorted((top / "tkcheck").rglob("*.py")):
        module, _ = _module_name(path, top)
        banned = [b for layer, bs in FORBIDDEN.items() if _under(module, layer) for b in bs]
        for line, name in imported_names(path, top):
            if any(_under(name, b) for b in banned):
                found.append(f"{path.relative_to(top)}:{line}: {module} -> {name}")
    return sorted(set(found))


def test_no_back_edges():
    assert back_edges(ROOT) == []


def _plant(top: Path, rel: str, text: str) -> None:
    p = top / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_a_planted_back_edge_is_found(tmp_path):
    for pkg in ("tkcheck", "tkcheck/frontend", "tkcheck/knowledge", "tkcheck/checks", "tkcheck/model"):
        _plant(tmp_path, f"{pkg}/__init__.py", "")
    _plant(tmp_path, "tkcheck/checks/solver.py", "")
    _plant(tmp_path, "tkcheck/frontend/ok.py", "from ..model import ir\nfrom .. import solver\n")
    _plant(tmp_path, "tkcheck/frontend/bad.py", "def f():\n    from ..checks import solver\n")
    _plant(tmp_path, "tkcheck/knowledge/bad.py", "import clang.cindex as ci\nfrom .. import frontend\n")
    _plant(tmp_path, "tkcheck/model/bad.py", "from tkcheck.checks.analysis import Analysis\n")
    _plant(tmp_path, "tkcheck/checks/bad.py", "def f():\n    from ..frontend import cexpr\n")
    assert back_edges(tmp_path) == [
        "tkcheck/checks/bad.py:2: tkcheck.checks.bad -> tkcheck.frontend",
        "tkcheck/checks/bad.py:2: tkcheck.checks.bad -> tkcheck.frontend.cexpr",
        "tkcheck/frontend/bad.py:2: tkcheck.frontend.bad -> tkcheck.checks",
        "tkcheck/frontend/bad.py:2: tkcheck.frontend.bad -> tkcheck.checks.solver",
        "tkcheck/knowledge/bad.py:1: tkcheck.knowledge.bad -> clang.cindex",
        "tkcheck/knowledge/bad.py:2: tkcheck.knowledge.bad -> tkcheck.frontend",
        "tkcheck/model/bad.py:1: tkcheck.model.bad -> tkcheck.checks.analysis",
        "tkcheck/model/bad.py:1: tkcheck.model.bad -> tkcheck.checks.analysis.Analysis",
    ]


def test_relative_imports_resolve_from_the_package():
    top = ROOT
    names = {n for _, n in imported_names(top / "tkcheck" / "recurrence.py", top)}
    assert "tkcheck.solver" in names
    names = {n for _, n in imported_names(top / "tkcheck" / "checks" / "phases.py", top)}
    assert {"tkcheck.solver", "tkcheck.recurrence"} <= names
    names = {n for _, n in imported_names(top / "tkcheck" / "knowledge" / "protocols" / "__init__.py", top)}
    assert not any(_under(n, "tkcheck") for n in names)


# Where the front end may read source text rather than the libclang tree (each a module that
# uses regular expressions), and why. Kernels, instances, prototype launches and interpreter ops
# are found from the tree (frontend/discovery.py, instances.py): neither reads text.
TEXT_READERS = {
    "builder": "the `<<<...>>>` launch configurations (a block size where no __launch_bounds__ says it)",
    "nvcc_compat": "rewrites made before clang parses (what nvcc accepts and clang does not)",
    "includes": "the #include pre-scan, before a translation unit exists",
    "parse": "command lines, diagnostics' messages, the TK version's header probe",
    "pch": "the precompiled headers' key (command-line flags)",
    "lexer": "tokens of one cursor's extent (comments and strings blanked)",
    "cexpr": "integer literals of those tokens",
    "walk_types": "attribute text libclang does not expose (__launch_bounds__, __cluster_dims__) "
    "and launch configurations",
    "walk_asm": "inline PTX strings",
    "poll_helpers": "the inline PTX string of a try-wait helper's probe, identifiers of its asm operands",
    "walk_statements": "alignment attributes, asm operand strings",
    "walk_exprs": "identifiers of tokens, TK's CLC handle declarations",
    "walk_arith": "type qualifiers in type spellings",
    "walk_libcu": "libclang's canonical type spellings of libcu++ objects (their scope, the stage count)",
    "walk_calls": "the canonical type spelling of cooperative groups' `cuda::aligned_size_t<N>` argument",
    "walk_atomics": "libclang's canonical type spellings of libcu++ atomics (their `thread_scope_X`)",
    "walk_ptxns": "the type spellings of `cuda::ptx` tag arguments (`sem_release_t`, `scope_cta_t`, ...)",
    "build_target": "the TK headers' `#if` lines and Blackwell-only names in the code (before the first parse)",
}
TREE_ONLY = ("discovery", "instances")


def test_the_front_end_reads_text_only_where_listed():
    readers = set()
    for path in sorted((ROOT / "tkcheck" / "frontend").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
                readers.add(path.stem)
    assert readers <= set(TEXT_READERS), f"text read outside the list: {sorted(readers - set(TEXT_READERS))}"
    assert not readers & set(TREE_ONLY), "kernel discovery must read the syntax tree, not text"
