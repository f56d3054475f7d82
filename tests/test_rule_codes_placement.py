"""Rule codes live in rules/: the package tkcheck/ is a rule-agnostic library.

The rule this file enforces: no Python file under tkcheck/ spells a rule code (`TK` and three
digits, any case) - not in code, strings, f-strings, comments or docstrings. Code outside rules/
reaches a rule through the registry, the fields of its `Rule` (triage's `explains`, confirm's
`confirm`), or the constants of rules/__init__.py (the tool's own rules, the example code of
help texts). The one exception is MENTIONS_ALLOWED: files that may name a code in comments and
docstrings (never in code), each with its reason.

The second half checks that what rules declare for triage and confirm names things that exist.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck import rule as R
from tkcheck.confirm import runner, triage, widen
from tkcheck.rules import EXAMPLE_CODE, PARSE_ERROR, UNUSED_SUPPRESSION

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"(?<![A-Za-z0-9])TK\d{3}", re.I)

MENTIONS_ALLOWED = {
    "tkcheck/expectations.py": "documents the fixture annotation syntax (`// expect: <code>`) with real codes",
}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def spellings(source: str) -> list[tuple[int, str, str]]:
    """(line, "code" | "comment" | "docstring", the code) for every rule code in a Python source."""
    docs = _docstring_lines(ast.parse(source))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        for m in CODE.finditer(tok.string):
            if tok.type == tokenize.COMMENT:
                kind = "comment"
            elif tok.type == tokenize.STRING and tok.start[0] in docs:
                kind = "docstring"
            else:
                kind = "code"
            out.append((tok.start[0], kind, m.group(0)))
    return out


def violations(root: Path, allowed: dict[str, str]) -> list[str]:
    """Every spelling of a rule code under `root`/tkcheck that the rule above forbids."""
    out = []
    for path in sorted((root / "tkcheck").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for line, kind, code in spellings(path.read_text(encoding="utf-8")):
            if kind == "code" or rel not in allowed:
                out.append(f"{rel}:{line}: {code} in {kind}")
    return out


def test_no_rule_code_outside_rules():
    found = violations(ROOT, MENTIONS_ALLOWED)
    assert not found, (
        "rule codes belong in rules/ (use the registry, the Rule's fields or the "
        "constants of rules/__init__.py):\n" + "\n".join(found)
    )


def test_each_allowance_is_still_needed():
    for rel, why in MENTIONS_ALLOWED.items():
        path = ROOT / rel
        assert path.is_file(), f"{rel} is gone: drop it from MENTIONS_ALLOWED"
        assert spellings(path.read_text(encoding="utf-8")), (
            f"{rel} no longer names a rule code ({why}): drop it from MENTIONS_ALLOWED"
        )


def test_scanner_finds_planted_codes(tmp_path):
    pkg = tmp_path / "tkcheck"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "clean.py").write_text('"""No codes."""\nTKCHECK_X = "TK3 prefix, TK30x"\n')
    (pkg / "string.py").write_text('x = "TK123"\n')
    (pkg / "fstring.py").write_text('def f(a):\n    return f"{a} tk123"\n')
    (pkg / "name.py").write_text("TK123_LIMIT = 1\n")
    (pkg / "sub" / "comment.py").write_text("x = 1  # see TK123\n")
    (pkg / "doc.py").write_text('"""About TK123."""\n')
    (pkg / "allowed.py").write_text('"""About TK123."""\n# and TK124\ny = "TK125"\n')
    found = violations(tmp_path, {"tkcheck/allowed.py": "a test"})
    assert found == [
        "tkcheck/allowed.py:3: TK125 in code",
        "tkcheck/doc.py:1: TK123 in docstring",
        "tkcheck/fstring.py:2: tk123 in code",
        "tkcheck/name.py:1: TK123 in code",
        "tkcheck/string.py:1: TK123 in code",
        "tkcheck/sub/comment.py:1: TK123 in comment",
    ]


# ------------------------------------------------------------ what rules declare

RULES = registry.all_rules()


def test_tool_rule_constants():
    assert PARSE_ERROR.contract == UNUSED_SUPPRESSION.contract == "tool"
    assert registry.get(EXAMPLE_CODE) is not None


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_explains_and_confirm_name_what_exists(rule):
    assert set(rule.explains) <= set(triage.SYMPTOMS), rule.explains
    assert all(isinstance(e, R.Explains) and e.weight > 0 for e in rule.explains.values())
    c = rule.confirm
    assert set(c.widen) <= set(widen.WIDENINGS), c.widen
    assert set(c.repairs) <= set(runner.REPAIRS), c.repairs
    assert c.wgmma_race in ("", R.WGMMA_ACCUMULATOR_READ, R.WGMMA_OPERAND_RELEASE)
    assert c.issuer_repair in ("", R.ISSUERS_OWN, R.ISSUERS_JOIN)
    assert (c.issuers is not None) == bool(c.issuer_repair)
