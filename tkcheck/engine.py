"""Checking one file: parse -> KernelModels -> rules -> suppression.

Public: `check_file(path, CheckOptions)` (the whole check) and `models_of(path, ParseOptions)`
(the models the rules query), with `CheckOptions`, `FileResult`, `ParseOptions`, `InputError`;
`parse_for_check(path, text, CheckOptions)` is the parse alone, which `check_file(...,
parsed=...)` takes for checking one file several times with options that differ only after
the parse (a solver budget, the rules enabled): the walk and the rules run again, not libclang.

Everything a file's check needs travels in `CheckOptions` (picklable, so
`-j N` can run files in worker processes: libclang and z3 are not
thread-safe). Errors in tkcheck itself never escape as a traceback: a kernel
that cannot be modelled is skipped with a note (re-raised with `--debug`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, cast

from . import cache, registry
from .solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS
from .findings import Finding, Location
from .frontend.parse import InputError, ParseOptions, on_deep_stack, parse_source, read_source
from .rules import PARSE_ERROR
from .model.ir import KernelModel
from .suppress import apply_suppressions, parse_suppressions

if TYPE_CHECKING:
    from .frontend.builder import ModelBuilder
    from .coverage import KernelCoverage
    from .frontend.diagnostics import Diagnostic, ErrorMap
    from .frontend.parse import ParsedFile
    from .registry import RuleInfo
    from .rule import Rule
    from .sass.model import SassResult
    from .solver import Inconclusive, SolverContext


# A CUDA block has at most 1024 threads: a kernel declaring more cannot launch, and is not analysed.
MAX_BLOCK_THREADS = 1024


@dataclass(frozen=True)
class CheckOptions:
    parse: ParseOptions = field(default_factory=ParseOptions)
    enabled: frozenset[str] = frozenset()  # rule codes that run (after select/ignore)
    show_unknown: bool = False
    debug: bool = False
    solver_budget: int = DEFAULT_BUDGET  # z3 rlimit steps per query: deterministic
    solver_timeout_ms: int = DEFAULT_SAFETY_NET_MS  # wall-clock safety net per query
    cache_dir: str | None = None
    sass: bool = False  # compile + disassemble, run the SASS rules (tag "sass")
    sass_cache_dir: str | None = None  # None: no SASS cache (--no-cache)
    sass_arch: str | None = None  # arch the SASS is built for; None: parse.arch


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    input_error: str | None = None
    source: str = ""
    cached: bool = False
    # errors of tkcheck itself (also told in `notes`); the CLI exits 2 on any
    internal_errors: list[str] = field(default_factory=list)
    # kernel -> proofs that ended inconclusive (budget spent, unknown): never findings, never cached
    inconclusive: dict[str, int] = field(default_factory=dict)
    # for the cache: the files the parse read, the folders an include lookup searched, and why
    # this result must not be stored (a missing include, a SASS pass that did not finish)
    dependencies: list[str] = field(default_factory=list)
    search_roots: list[str] = field(default_factory=list)
    not_cached: list[str] = field(default_factory=list)
    # what was modelled, per kernel found (tkcheck.coverage.KernelCoverage)
    coverage: list[KernelCoverage] = field(default_factory=list)
    # passes the user asked for that did not run (the SASS pass without nvcc), each with why: shown
    # in every output format, failing the run under --require-coverage; such a result is not cached
    skipped_passes: list[str] = field(default_factory=list)


def _fill(f: Finding, rules: Mapping[str, Rule | RuleInfo]) -> Finding:
    r = rules.get(f.code)
    if r is not None:
        f.name = f.name or r.name
        f.contract = f.contract or r.contract
        f.severity = r.severity if f.severity == "error" and r.severity != "error" else f.severity
        f.symptom = f.symptom or r.symptom
    return f


def models_of(path: str, options: ParseOptions | None = None, text: str | None = None) -> list[KernelModel]:
    """The KernelModels of one file, built as `check_file` builds them (one parse, one model per
    kernel, template instantiation and TK prototype struct; `check_file` then leaves out a
    kernel whose block cannot launch). `text`: the file's contents, read from `path` when None.
    Raises InputError for a file tkcheck cannot read."""
    from . import solver
    from .frontend.builder import ModelBuilder
    from .frontend.walk_env import forget_source_texts
    from .model.expr import reset_unknowns

    reset_unknowns()  # as check_file: the names of unknowns and the solver's answers
    forget_source_texts()
    if text is None:
        text = read_source(path)
    with solver.session():  # the default limits and a z3 context of its own, as a check's
        return ModelBuilder(parse_source(path, text, options or ParseOptions())).build()


def parse_for_check(path: str, text: str, opts: CheckOptions) -> ParsedFile:
    """The parse `check_file(path, opts, text)` makes (libclang, before any model is built).
    Handed back to `check_file(path, opts2, text, parsed=...)` for any `opts2` whose `parse` and
    `cache_dir` are `opts`'s, it stands for that check's own parse: the result is the same as
    a fresh check's (tests/test_solver_budget.py holds it to that). Raises InputError."""
    return parse_source(path, text, opts.parse, pch_dir=_pch_dir(opts))


def _pch_dir(opts: CheckOptions) -> str | None:
    return os.path.join(opts.cache_dir, "pch") if opts.cache_dir else None


def check_file(path: str, opts: CheckOptions, text: str | None = None, parsed: ParsedFile | None = None) -> FileResult:
    """Everything tkcheck reports on one file: findings (suppressions applied), notes, coverage
    and timings. Input tkcheck cannot read becomes a parse-error finding, an internal error a note.
    `parsed`: `parse_for_check(path, text, o)`'s answer for options `o` with the same parse
    options, used instead of parsing again (the file's `text` must be given with it)."""
    if parsed is not None and (text is None or parsed.path != path):
        raise ValueError("check_file: a reused parse needs the text it was made from and the same path")
    res = FileResult(path=path)
    t0 = time.perf_counter()
    rules = registry.catalog()  # metadata only: a rule's module is imported when the rule runs
    try:
        if text is None:
            text = read_source(path)
        res.source = text
    except InputError as e:
        res.input_error = str(e)
        res.findings.append(_fill(Finding(PARSE_ERROR.code, str(e), Location(path, 1, 1)), rules))
        return res
    if opts.cache_dir:
        cached = cache.lookup(opts.cache_dir, path, text, opts)
        if cached is not None:
            cached.source = text
            cached.cached = True
            return cached
    try:
        # on a deep stack: libclang and the walk recurse once per nesting level of the code
        # (frontend/parse.py `on_deep_stack`); past what that holds a kernel is named not analysed
        on_deep_stack(_check_text, path, text, opts, res, rules, parsed)
    except InputError as e:
        res.input_error = str(e)
        res.findings.append(_fill(Finding(PARSE_ERROR.code, str(e), Location(path, 1, 1)), rules))
    except Exception as e:  # noqa: BLE001 - an internal error must not become a traceback
        if opts.debug:
            raise
        res.notes.append(
            f"internal error while checking {path}: {type(e).__name__}: {e} "
            "(no findings reported for this file; rerun with --debug)"
        )
        res.internal_errors.append(res.notes[-1])
    res.timing["total"] = time.perf_counter() - t0
    if (
        opts.cache_dir
        and res.input_error is None
        and not res.internal_errors
        and not res.inconclusive
        and not res.not_cached
    ):
        cache.store(opts.cache_dir, path, text, opts, res, res.dependencies, res.search_roots)
    return res


def _check_text(
    path: str,
    text: str,
    opts: CheckOptions,
    res: FileResult,
    rules: Mapping[str, RuleInfo],
    parsed: ParsedFile | None = None,
) -> None:
    # the model builder, the checks and z3 are imported when a file is checked (a cached result,
    # a file that cannot be read need none of them)
    from . import solver
    from .frontend.walk_env import forget_source_texts
    from .model.expr import reset_unknowns

    reset_unknowns()  # names of unknowns restart per file: output does not depend on order
    forget_source_texts()  # a header edited since the last check in this process is read again
    # nor do the solver's answers: each check has a z3 context of its own (solver.session)
    with solver.session(budget=opts.solver_budget, safety_net_ms=opts.solver_timeout_ms) as ctx:
        _check_in_session(path, text, opts, res, rules, parsed, ctx)


def _check_in_session(
    path: str,
    text: str,
    opts: CheckOptions,
    res: FileResult,
    rules: Mapping[str, RuleInfo],
    parsed: ParsedFile | None,
    ctx: SolverContext,
) -> None:
    """`_check_text` inside the check's own solver context `ctx` (its limits, ledger and time)."""
    from . import solver
    from .checks.analysis import Analysis
    from .frontend.builder import ModelBuilder

    t = time.perf_counter()
    if parsed is None:  # the parse reads no model and asks no solver: one made earlier stands for it
        parsed = parse_source(path, text, opts.parse, pch_dir=_pch_dir(opts))
    res.timing["parse"] = time.perf_counter() - t
    res.notes.extend(parsed.notes)
    _record_dependencies(parsed, opts, res)
    if parsed.stopped:
        first = next((d for d in parsed.diagnostics if d.is_error()), None)
        res.findings.append(
            _fill(
                Finding(
                    PARSE_ERROR.code,
                    "clang stopped at its error limit: the rest of the file was not parsed"
                    + (f" (first error: {first.message})" if first else ""),
                    first.location if first and first.location else Location(path, 1, 1),
                    help="nothing in this file is analysed; remove -ferror-limit from clang-args",
                ),
                rules,
            )
        )
        return
    t = time.perf_counter()
    builder = ModelBuilder(parsed)
    checked: list[KernelModel] = []
    for m in builder.build():
        n = m.num_threads()
        if n is not None and n > MAX_BLOCK_THREADS:
            # a block that cannot launch: not analysed (its thread sets are never enumerated)
            builder.not_analysed.append(
                (
                    m.name,
                    m.location,
                    f"a block of {n} threads cannot launch (CUDA allows at most {MAX_BLOCK_THREADS} threads per block)",
                )
            )
            builder._not_analysed_cursors[m.name] = builder.model_cursors.get(id(m))
            continue
        checked.append(m)
    res.timing["model"] = time.perf_counter() - t
    _report_errors(path, parsed, builder, res, rules)
    for name, loc, why in builder.not_analysed:  # the builder types its locations `object`
        res.notes.append(f"kernel '{name}' not analysed ({display_location(cast('Location | None', loc))}): {why}")
    t = time.perf_counter()
    res.coverage = builder.coverage(checked)
    res.timing["coverage"] = time.perf_counter() - t
    res.kernels = [m.name for m in checked]
    sass_result = _run_sass(path, text, opts, res, parsed.arch) if opts.sass and checked else None
    t = time.perf_counter()
    solver_before = ctx.seconds
    for m in checked:
        res.notes.extend(n for n in m.notes if n not in res.notes)
        mark = solver.inconclusive_count()
        an = Analysis(m, arch=parsed.arch, solver_timeout_ms=ctx.safety_net_ms)
        if opts.sass:
            from .checks import sass_cross  # only with --sass: keeps start-up light

            sass_cross.attach(an, sass_result, m)  # an.sass / an.sass_result (None when absent)
        for code in sorted(opts.enabled):
            info = rules.get(code)
            if info is None or (info.engine_only and not (opts.sass and "sass" in info.tags)):
                continue
            rule = registry.rule(code)  # imported on first use
            if rule is None or rule.check is None:
                continue
            t_rule = time.perf_counter()
            try:
                with solver.scope(f"rule:{code}"):
                    found = list(rule.check(an) or ())
                for f in found:
                    f.code = f.code or code
                    f.kernel = m.name
                    if m.instance_site is not None:
                        _tell_instance(f, m)
                    _place_at_user(f, m)
                    _tell_call_sites(f, m)
                    res.findings.append(_fill(f, rules))
            except RecursionError:
                # expressions nested a few hundred levels deep: this rule says nothing about the kernel
                res.notes.append(
                    f"rule {code} not run on kernel '{m.name}': its expressions nest deeper than tkcheck models"
                )
            except Exception as e:  # noqa: BLE001
                if opts.debug:
                    raise
                res.notes.append(f"rule {code} failed on kernel '{m.name}': {type(e).__name__}: {e}")
                res.internal_errors.append(res.notes[-1])
            res.timing[f"rule:{code}"] = res.timing.get(f"rule:{code}", 0.0) + time.perf_counter() - t_rule
        # what the checks could not decide about this kernel (barrier accounts, wait phases):
        # part of its coverage, whether or not a rule asked (the facts are computed once)
        t_cov = time.perf_counter()
        from .coverage import add_undecided, stated_assumptions

        try:
            entry = next((c for c in res.coverage if c.analysed and c.kernel == m.name), None)
            add_undecided(entry, an)
            stated = stated_assumptions(an)
            res.notes.extend(n for n in stated if n not in res.notes)
            if entry is not None:
                entry.assumptions.extend(n for n in stated if n not in entry.assumptions)
        except Exception as e:  # noqa: BLE001
            if opts.debug:
                raise
            res.notes.append(f"coverage of kernel '{m.name}' incomplete: {type(e).__name__}: {e}")
        res.timing["coverage"] = res.timing.get("coverage", 0.0) + time.perf_counter() - t_cov
        for k, v in an.timings.items():
            res.timing[f"check:{k}"] = res.timing.get(f"check:{k}", 0.0) + v
        events = solver.inconclusive_since(mark)
        if events:
            res.inconclusive[m.name] = len(events)
            m.inconclusive = len(events)  # type: ignore[attr-defined]  # coverage.py reads it
            for cov in res.coverage:  # the coverage report counts them per kernel
                if cov.kernel == m.name and cov.analysed:
                    cov.inconclusive = len(events)
            if opts.show_unknown:
                res.notes.append(_inconclusive_note(m, events))
        if opts.show_unknown:
            for loc, why in m.unmodelled[:20]:
                res.notes.append(f"{loc.filename}:{loc.row}:{loc.column}: unknown: {why}")
    res.findings = _merge_instantiations(res.findings)
    res.timing["rules"] = time.perf_counter() - t
    res.timing["solver"] = ctx.seconds - solver_before
    # suppression comments
    sup = parse_suppressions(path, text)
    kept, new = apply_suppressions(res.findings, {path: sup}, set(opts.enabled), resolver=registry.expand)
    res.findings = sorted([_fill(f, rules) for f in kept + new], key=Finding.sort_key)
    res.findings = [f for f in res.findings if f.code in opts.enabled]


def _record_dependencies(parsed: ParsedFile, opts: CheckOptions, res: FileResult) -> None:
    """What the cache key needs: every file libclang read (not tkcheck's own model, whose bytes
    are in the code digest) and the folders its include search looked in."""
    from .frontend.includes import search_path_of
    from .frontend.parse import MODEL_INCLUDE, build_args

    own = os.path.normpath(str(MODEL_INCLUDE)) + os.sep
    main = os.path.normpath(parsed.abs_path)
    deps: set[str] = set()
    tu: Any = parsed.tu  # libclang's TranslationUnit (no type information)
    for inc in tu.get_includes():
        name = os.path.normpath(os.path.abspath(inc.include.name)) if inc.include is not None else None
        if name and name != main and not name.startswith(own):
            deps.add(name)
    res.dependencies = sorted(deps)
    sp = search_path_of(build_args(opts.parse, os.path.dirname(main)), os.getcwd())
    res.search_roots = sorted(
        {
            os.path.normpath(d)
            for d in [os.path.dirname(main), *sp.quote, *sp.angle]
            if not (os.path.normpath(d) + os.sep).startswith(own)
        }
    )
    if any("file not found" in d.message for d in parsed.diagnostics):
        res.not_cached.append("an include was not found")


def _inconclusive_note(m: KernelModel, events: list[Inconclusive]) -> str:
    """`kernel 'k': 3 inconclusive proofs (solver budget of 10 steps spent) in <code>, <code>`."""
    reasons = sorted({e.reason for e in events})
    where = sorted({label[5:] for e in events for label in e.scope if label.startswith("rule:")})
    at = f"{m.location.filename}:{m.location.row}:{m.location.column}"
    return (
        f"{at}: unknown: kernel '{m.name}': {len(events)} inconclusive proof(s) ({'; '.join(reasons)})"
        + (f" in {', '.join(where)}" if where else "")
        + ": no finding was made from them; raise --solver-budget to decide them"
    )


def _merge_instantiations(findings: list[Finding]) -> list[Finding]:
    """The same finding in several instantiations of one template kernel (same rule, place and
    words but for the instantiation) is one finding naming them all."""
    groups: dict[tuple, list[Finding]] = {}
    order: list[tuple] = []
    for f in findings:
        kernel = f.kernel or ""
        tail = f" (in {kernel})" if kernel else None
        if tail and f.message.endswith(tail) and "<" in kernel:
            key: tuple = (
                f.code,
                f.location.filename,
                f.location.row,
                f.location.column,
                f.message[: -len(tail)],
                kernel.split("<")[0],
            )
        else:
            key = (id(f),)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    out = []
    for key in order:
        fs = groups[key]
        if len(fs) == 1:
            out.append(fs[0])
            continue
        first = fs[0]
        # every finding has its kernel by now (check_text sets it); an op model may hit one site twice
        names = list(dict.fromkeys(f.kernel or "" for f in fs))
        first.instances = names
        if len(names) == 1:
            out.append(first)
            continue
        shown = ", ".join(names[:4]) + (f", ... ({len(names)} instantiations)" if len(names) > 4 else "")
        first.message = f"{key[4]} (in {shown})"
        seen = {(r.location.filename, r.location.row, r.location.column, r.message) for r in first.related}
        for f in fs[1:]:
            for r in f.related:
                k = (r.location.filename, r.location.row, r.location.column, r.message)
                if k not in seen:
                    seen.add(k)
                    first.related.append(r)
        if first.witness is not None:
            first.witness = {**first.witness, "kernel": names[0], "instantiations": len(names)}
        out.append(first)
    return out


def _tell_instance(f: Finding, m: KernelModel) -> None:
    """A finding in one instantiation of a template kernel (or in a function a launcher runs)
    says which one, and points at where the file names it."""
    from .findings import Related

    assert m.instance_site is not None  # the caller asks only for an instance
    if "<" in m.name and f"in {m.name}" not in f.message:
        f.message = f"{f.message} (in {m.name})"
    what = {"launch": "launched here", "explicit": "instantiated here", "reference": "named here"}.get(
        m.instance_how or "", f"launched here by {m.instance_how}"
    )
    f.related.append(Related(m.instance_site, f"{m.name} {what}"))
    if f.witness is not None and "kernel" not in f.witness:
        f.witness = {**f.witness, "kernel": m.name}


def _tell_call_sites(f: Finding, m: KernelModel) -> None:
    """A finding on a line of a user's helper function (a `__device__` function tkcheck inlined)
    names the kernel's call of the helper as a related site: the helper may be called from
    several places, and its line alone does not say which call the proof is about. The calls are
    the callers of the model's ops at the finding's site (the outermost call, in the kernel)."""
    from .findings import Related
    from .knowledge.protocols import in_protocol_file

    loc = f.location
    calls = []
    for op in m.ops:
        ol = op.location
        if op.callers and ol.row == loc.row and ol.column == loc.column and ol.filename == loc.filename:
            c = op.callers[0]
            if c not in calls and not in_protocol_file(c.filename):
                calls.append(c)
    have = {(r.location.filename, r.location.row) for r in f.related}
    for c in calls:
        if (c.filename, c.row) not in have and (c.filename, c.row) != (loc.filename, loc.row):
            f.related.append(Related(c, "called from here (the kernel's call of the helper the finding is in)"))


def _place_at_user(f: Finding, m: KernelModel) -> None:
    """A finding whose site is a line of tkcheck's own protocol files (its model of a TK
    prototype template) is told at the user's declaration of the template struct, the place a
    user can act on (and suppress); the template's step stays in the text, the trace and a
    related note."""
    from .findings import Related, Location
    from .knowledge.protocols import in_protocol_file

    if not in_protocol_file(f.location.filename) or in_protocol_file(m.location.filename):
        return
    step = f.location
    f.related.insert(0, Related(step, f"the {m.kind or 'prototype'} template's step (tkcheck's model of it)"))
    f.message = (
        f"{f.message} (at the {m.kind or 'prototype'} template's {os.path.basename(step.filename)}:{step.row} step)"
    )
    user = m.location
    f.location = Location(user.filename, user.row, user.column, user.end_row, user.end_column)


def _report_errors(
    path: str, parsed: ParsedFile, builder: ModelBuilder, res: FileResult, rules: Mapping[str, RuleInfo]
) -> None:
    """Parse-error findings for the clang errors of the user's device code: the first error that stops each
    kernel's analysis (one finding per error, naming every kernel it stops), the first error
    at file scope, the first error in device code no kernel reaches. Errors in host code (not
    analysed; it may use libraries tkcheck has no stand-in for) and in headers are notes."""
    errors = builder.errors
    reported: dict[tuple, tuple] = {}  # error key -> (diagnostic, kernels it stops)

    def key_of(d: Diagnostic) -> tuple[str | None, int, int, str]:
        assert d.location is not None  # the user's errors are placed by their location
        return (d.abs_file, d.location.row, d.location.column, d.message)

    for name, _loc, errs in builder.blocked:
        d = errs[0]
        reported.setdefault(key_of(d), (d, []))[1].append(name)
    if errors is not None:
        for d in errors.file_errors()[:1]:
            reported.setdefault(key_of(d), (d, []))
        blocking = {id(e) for _, _, errs in builder.blocked for e in errs}
        unreached = errors.unreached(blocking)
        device = [d for d in unreached if _space_of(errors, d) != "decl"]
        deferred = [d for d in device if errors.deferred(d)]
        if deferred:
            res.notes.append(
                f"{len(deferred)} clang error{'s' if len(deferred) > 1 else ''} in function templates no kernel "
                f"instantiates, which nvcc reports only on instantiation (first: "
                f"{display_location(deferred[0].location)}: {deferred[0].message})"
            )
            device = [d for d in device if not errors.deferred(d)]
        for d in device[:1]:
            reported.setdefault(key_of(d), (d, []))
        types = [d for d in unreached if _space_of(errors, d) == "decl"]
        if types:
            res.notes.append(
                f"{len(types)} clang error{'s' if len(types) > 1 else ''} in declarations no kernel uses "
                f"(first: {display_location(types[0].location)}: {types[0].message})"
            )
    for d, names in sorted(
        reported.values(), key=lambda dn: (dn[0].location.filename != path, dn[0].location.row, dn[0].location.column)
    ):
        which = ", ".join(f"'{n}'" for n in names)
        if names:
            why = (
                f"kernel{'s' if len(names) > 1 else ''} {which} not analysed: this error is in "
                f"{'its' if len(names) == 1 else 'their'} code"
            )
            res.notes.append(
                f"kernel{'s' if len(names) > 1 else ''} {which} not analysed: clang error at "
                f"{display_location(d.location)}: {d.message}"
            )
        else:
            why = "kernels containing parse errors are not analysed"
        res.findings.append(_fill(Finding(PARSE_ERROR.code, f"clang: {d.message}", d.location, help=why), rules))
    host = errors.host_errors() if errors is not None else []
    if host:
        d = host[0]
        res.notes.append(
            f"{len(host)} clang error{'s' if len(host) > 1 else ''} in host code, which is not analysed "
            f"(first: {display_location(d.location)}: {d.message})"
        )
    placed = {id(d) for d, _ in (errors.placed if errors is not None else [])}
    header_errors = [
        d for d in parsed.diagnostics if d.is_error() and id(d) not in placed and not parsed.is_user_file(d.abs_file)
    ]
    if header_errors:
        res.notes.append(
            f"{len(header_errors)} clang errors inside included headers (first: "
            f"{header_errors[0].message}); analysis continues on the user's code"
        )


def _space_of(errors: ErrorMap, d: Diagnostic) -> str | None:
    return next((f.space for e, f in errors.placed if e is d and f is not None), None)


def display_location(loc: Location | None) -> str:
    return f"{loc.filename}:{loc.row}:{loc.column}" if loc is not None else "?"


def _run_sass(path: str, text: str, opts: CheckOptions, res: FileResult, arch: str | None = None) -> SassResult | None:
    """Compile + disassemble the file once (cached by tkcheck.sass); a pass that cannot
    run (no compiler, no real TK headers, compile error) is one note, never an error."""
    t = time.perf_counter()
    from .sass.build import run_sass
    from .sass.model import Skipped

    result = run_sass(path, text, opts.parse, sass_arch=opts.sass_arch or arch, cache_dir=opts.sass_cache_dir)
    res.timing["sass"] = time.perf_counter() - t
    if isinstance(result, Skipped):
        res.notes.append(result.reason)
        res.skipped_passes.append(result.reason)
        res.not_cached.append("the SASS pass did not run")
        return None
    res.timing["sass_cache_hit"] = 1.0 if result.cache_hit else 0.0
    if not result.cache_hit:
        res.timing["sass_compile"] = result.compile_seconds + result.disassemble_seconds
    return result


__all__ = ["check_file", "models_of", "CheckOptions", "FileResult", "ParseOptions", "InputError"]
