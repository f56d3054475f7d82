"""`tkcheck confirm` and `tkcheck triage` (click commands; cli.py registers them).

register(group)   adds both commands to the `tkcheck` group
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from ..formats import OUTPUT_FORMATS
from . import runner, triage as T

# every format `tkcheck check` writes (one list: tkcheck/formats.py), verdicts included
_FORMATS = OUTPUT_FORMATS


def _fail(msg: str):
    click.echo(f"tkcheck: error: {msg}", err=True)
    sys.exit(2)


def _tk_root(value: str | None, config) -> str | None:
    v = (
        value
        or (str(config.tk_include) if config is not None and config.tk_include else None)
        or os.environ.get("TKCHECK_TK_INCLUDE")
    )
    if not v:
        return None
    p = Path(v)
    if p.name == "include" and (p.parent / "prototype").is_dir():
        p = p.parent
    if not (p / "include").is_dir():
        _fail(f"--tk-include {v}: not a ThunderKittens checkout (no include/ folder)")
    return str(p.resolve())  # builds run in the temporary tree: a relative path would not resolve there


def _check(path: str, tk_root: str | None, select: tuple[str, ...], config):
    from ..engine import check_file
    from ..frontend.parse import ParseOptions
    from ..engine import CheckOptions
    from .. import registry

    codes = {r.code for r in registry.all_rules()}
    if select:
        wanted = {c.strip().upper() for s in select for c in s.split(",") if c.strip()}
        bad = sorted(w for w in wanted if not any(c.startswith(w) for c in codes))
        if bad:
            _fail(f"--select: unknown rule code(s) {', '.join(bad)}")
        codes = {c for c in codes if any(c.startswith(w) for w in wanted)}
    if config is not None:
        # the config's selection applies as it does for `tkcheck check` (--select replaces its select)
        from ..selection import RuleSelector

        try:
            sel = RuleSelector(
                select=config.select if not select else tuple(sorted(codes)),
                ignore=config.ignore,
                extend_select=config.extend_select if not select else (),
                per_file_ignores=config.per_file_ignores,
                root=config.root or Path.cwd(),
            )
        except ValueError as e:
            _fail(str(e))
        codes &= set(sel.enabled_codes(os.path.abspath(path)))
    parse = ParseOptions(
        arch=(config.arch if config is not None and config.arch else "sm_90a"),
        # no arch configured: a Blackwell file is analysed for sm_100a, as `tkcheck check` does
        # (its findings then stay UNCONFIRMABLE HERE on a Hopper GPU)
        arch_auto=not (config is not None and config.arch),
        include_dirs=tuple(str(d) for d in (config.include_dirs if config is not None else ())),
        defines=tuple(config.defines) if config is not None else (),
        tk_include=str(Path(tk_root) / "include") if tk_root else None,
    )
    res = check_file(path, CheckOptions(parse=parse, enabled=frozenset(codes)))
    if res.input_error:
        _fail(res.input_error)
    return res


def _source_arch(res, config) -> str:
    """The arch the file was analysed for: the configured one, else sm_100a when the analysis
    picked it for Blackwell-only code (its note), else sm_90a."""
    if config is not None and config.arch:
        return config.arch
    return "sm_100a" if any("arch sm_100a" in n for n in getattr(res, "notes", ())) else "sm_90a"


def _config(path: str, config_file: str | None, trust: bool = False):
    """The config for `path`; a found (repository's) file's build/run commands count only with
    --trust-config, a file named with --config is the user's own (tkcheck.config.distrust)."""
    from ..config import ConfigError, load_config, untrusted_note
    from dataclasses import replace

    try:
        config = load_config(
            Path(path).parent, config_file=Path(config_file) if config_file else None, trust=trust or bool(config_file)
        )
    except ConfigError as e:
        _fail(str(e))
    note = untrusted_note(config)
    if note:
        click.echo(f"tkcheck: note: {note}", err=True)
    # the runner fills {src}/{bin}/{dir} with str.format: any other brace is the user's text
    return replace(config, confirm=config.confirm.format_ready())


def _render(findings, fmt: str, sources, notes=None, files: int = 1) -> str:
    from .. import registry
    from ..render import render

    return render(findings, fmt, rules=registry.by_code(), sources=sources, files_checked=files, notes=notes)


EXIT_CONFIRMED = 1  # at least one finding CONFIRMED
EXIT_USAGE = 2  # bad input or usage
EXIT_NOT_RUN = 3  # confirm could not run at all (no GPU, no nvcc, no build, no program to run)


def _visible_id(index: int) -> str:
    from .device import visible_id

    return visible_id(index)


def _gpu_slots(info, jobs: int, gpus: str | None) -> list[int | None]:
    """One GPU per worker: worker k gets the k-th GPU of `gpus` (default: all the probe found),
    round robin when there are more workers than GPUs."""
    if gpus:
        try:
            ids = [int(x) for x in gpus.split(",") if x.strip()]
        except ValueError:
            _fail(f"--gpus {gpus}: expected GPU indices such as 0,1")
        bad = [i for i in ids if info.gpu(i) is None]
        if bad and info.gpus:
            _fail(f"--gpus: no GPU {', '.join(map(str, bad))} here (found {len(info.gpus)})")
    else:
        ids = [g.index for g in info.gpus]
    if not ids:
        return [None] * jobs
    return [ids[k % len(ids)] for k in range(jobs)]


@click.command("confirm")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--select", multiple=True, metavar="CODES", help="Confirm only these rule codes (prefixes allowed).")
@click.option("--tk-include", metavar="DIR", help="ThunderKittens checkout (include/ and prototype/) to build with.")
@click.option("--timeout", type=float, default=None, help="Seconds per run (default: config or 20).")
@click.option(
    "--tool",
    "tools",
    multiple=True,
    type=click.Choice(("racecheck", "synccheck", "memcheck", "initcheck")),
    help="compute-sanitizer tools to run (default: the tools that fit the findings' contracts: "
    "racecheck/synccheck for scope and deadlock, racecheck for accumulator, racecheck/memcheck "
    "for completion, memcheck for layout).",
)
@click.option("--no-sanitizer", is_flag=True, help="Run no compute-sanitizer tool.")
@click.option(
    "--sanitizer-timeout",
    type=float,
    default=None,
    help="Seconds per compute-sanitizer run (default: 60, or 3 x --timeout when longer).",
)
@click.option(
    "--keep",
    metavar="DIR",
    help="Keep the builds, logs and evidence in DIR (default: a temporary "
    "folder, removed); with several files, one folder per file inside.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Files confirmed at once; each worker runs on one GPU (CUDA_VISIBLE_DEVICES), round robin.",
)
@click.option("--gpus", metavar="LIST", help="GPU indices to spread the workers over (default: every GPU found).")
@click.option(
    "--gpu-slots",
    type=click.IntRange(0, 64),
    default=2,
    show_default=True,
    help="Programs run at once on one GPU (and as many compute-sanitizer runs), over all workers and "
    "confirm processes of this machine: time-sliced programs slow each other down; 0: no limit.",
)
@click.option("--config", "config_file", metavar="FILE", help="pyproject.toml / tkcheck.toml to read.")
@click.option(
    "--trust-config",
    is_flag=True,
    help="Run the confirm.build / confirm.run commands of a config file found in the repository.",
)
@click.option("--output-format", "fmt", type=click.Choice(_FORMATS), default="full", show_default=True)
def confirm_command(
    paths,
    select,
    tk_include,
    timeout,
    tools,
    no_sanitizer,
    sanitizer_timeout,
    keep,
    jobs,
    gpus,
    gpu_slots,
    config_file,
    trust_config,
    fmt,
):
    """Prove findings on a GPU: run PATHS plain, instrumented copies of them (watchdog on every
    wait, stage poisoning, NaN rows, a phase log; a widened copy per race finding, a repaired copy
    per layout finding) and compute-sanitizer, then label each finding CONFIRMED (with the
    evidence at its site), NOT REPRODUCED or UNCONFIRMABLE HERE. PATHS are never modified.

    Exit status: 0 ran (or nothing to confirm), nothing CONFIRMED; 1 at least one finding
    CONFIRMED; 2 bad input; 3 could not run at all (no GPU, no nvcc, the file does not build or
    has no program to run)."""
    import queue
    from concurrent.futures import ThreadPoolExecutor

    from .device import probe

    for p in paths:
        if not Path(p).is_file():
            _fail(f"{p}: no such file")
    if timeout is not None and timeout <= 0:
        _fail("--timeout must be positive")
    if sanitizer_timeout is not None and sanitizer_timeout <= 0:
        _fail("--sanitizer-timeout must be positive")
    from .procs import install_signal_handlers

    install_signal_handlers()
    # the static checks first, one after the other (the solver is not shared between threads)
    work = []
    for p in paths:
        config = _config(p, config_file, trust_config)
        tk_root = _tk_root(tk_include, config)
        res = _check(p, tk_root, select, config)
        findings = [f for f in res.findings if not f.code.startswith("TK0")]
        work.append((p, config, tk_root, res, findings))
    info = probe() if any(w[4] for w in work) else None
    slots: "queue.Queue[int | None]" = queue.Queue()
    for g in _gpu_slots(info, jobs, gpus) if info is not None else [None] * jobs:
        slots.put(g)

    def one(k, item):
        p, config, tk_root, res, findings = item
        if not findings:
            return None
        chosen = () if no_sanitizer else (tuple(tools) or tuple(runner.tools_for(findings)))
        where = None
        if keep:
            where = str(Path(keep) / f"{k:02d}-{Path(p).stem}") if len(paths) > 1 else keep
        gpu = slots.get()
        try:
            return runner.confirm_file(
                p,
                res.source,
                findings,
                confirm_cfg=config.confirm if config else None,
                tk_root=tk_root,
                include_dirs=tuple(str(d) for d in (config.include_dirs if config is not None else ())),
                timeout=timeout,
                tools=chosen,
                keep=where,
                device=info,
                gpu=gpu,
                sanitizer_timeout=sanitizer_timeout,
                gpu_slots=gpu_slots,
                source_arch=_source_arch(res, config),
            )
        finally:
            slots.put(gpu)

    try:
        if jobs > 1 and len(work) > 1:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                evs = list(pool.map(lambda kv: one(*kv), enumerate(work)))
        else:
            evs = [one(k, item) for k, item in enumerate(work)]
    except runner.ConfirmError as e:
        _fail(str(e))
    findings = [f for item in work for f in item[4]]
    notes = []
    for (p, *_rest, fs), ev in zip(work, evs):
        if not fs:
            notes.append(f"{p}: no findings to confirm")
        elif ev is not None and ev.unconfirmable:
            notes.append(f"{p}: nothing was run: {ev.unconfirmable}")
        elif ev is not None:
            if ev.device:
                notes.append(f"{p}: ran on {ev.device}")
            if ev.left_behind:
                notes.append(f"{p}: {ev.left_behind} processes outlived their run and were ended")
            notes += [f"{p}: {n}" for n in ev.notes]
    sources = {item[0]: item[3].source for item in work}
    if fmt in ("full", "concise") and not findings:
        click.echo("\n".join(notes))
    else:
        click.echo(_render(findings, fmt, sources, notes=notes if fmt == "full" else None, files=len(work)), nl=False)
        if fmt == "concise":
            for n in notes:
                click.echo(f"note: {n}", err=True)
    if any((f.verdict or {}).get("status") == runner.CONFIRMED for f in findings):
        sys.exit(EXIT_CONFIRMED)
    ran = [ev for ev in evs if ev is not None]
    if ran and all(ev.unconfirmable for ev in ran):
        sys.exit(EXIT_NOT_RUN)
    sys.exit(0)


@click.command("triage")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--symptom", required=True, type=click.Choice(T.SYMPTOMS), help="What the run showed.")
@click.option(
    "--evidence",
    "evidence",
    metavar="FILE",
    help="A compute-sanitizer XML (--xml --save) or a hung run's log (TKCHECK_WATCHDOG lines).",
)
@click.option("--tk-include", metavar="DIR", help="ThunderKittens checkout to parse against.")
@click.option("--config", "config_file", metavar="FILE", help="pyproject.toml / tkcheck.toml to read.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
def triage_command(path, symptom, evidence, tk_include, config_file, as_json):
    """Rank the findings of PATH by how well each explains SYMPTOM (hang, nan, stripes, wrong),
    name the broken contract, and suggest the confirm run."""
    if not Path(path).is_file():
        _fail(f"{path}: no such file")
    observed = None
    if evidence:
        try:
            observed = T.load_evidence(evidence)
        except T.EvidenceError as e:
            _fail(str(e))
    config = _config(path, config_file)
    res = _check(path, _tk_root(tk_include, config), (), config)
    ranked = T.rank(res.findings, symptom, observed, path)
    if as_json:
        click.echo(json.dumps({"symptom": symptom, "ranked": [r.to_json() for r in ranked]}, indent=2))
    else:
        click.echo(T.format_ranked(ranked, symptom, observed), nl=False)
    sys.exit(0)


def register(group: click.Group) -> None:
    group.add_command(confirm_command)
    group.add_command(triage_command)
