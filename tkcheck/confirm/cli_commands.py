"""`tkcheck confirm` and `tkcheck triage` (click commands; cli.py registers them).

    register(group)   adds both commands to the `tkcheck` group
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import runner, triage as T

_FORMATS = ("full", "concise", "json", "sarif", "github", "junit")


def _fail(msg: str):
    click.echo(f"tkcheck: error: {msg}", err=True)
    sys.exit(2)


def _tk_root(value: str | None, config) -> str | None:
    v = value or (str(config.tk_include) if config is not None and config.tk_include else None) \
        or os.environ.get("TKCHECK_TK_INCLUDE")
    if not v:
        return None
    p = Path(v)
    if p.name == "include" and (p.parent / "prototype").is_dir():
        p = p.parent
    if not (p / "include").is_dir():
        _fail(f"--tk-include {v}: not a ThunderKittens checkout (no include/ folder)")
    return str(p.resolve())     # builds run in the temporary tree: a relative path would not resolve there


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
            sel = RuleSelector(select=config.select if not select else tuple(sorted(codes)), ignore=config.ignore,
                               extend_select=config.extend_select if not select else (),
                               per_file_ignores=config.per_file_ignores, root=config.root or Path.cwd())
        except ValueError as e:
            _fail(str(e))
        codes &= set(sel.enabled_codes(os.path.abspath(path)))
    parse = ParseOptions(
        arch=(config.arch if config is not None and config.arch else "sm_90a"),
        include_dirs=tuple(str(d) for d in (config.include_dirs if config is not None else ())),
        defines=tuple(config.defines) if config is not None else (),
        tk_include=str(Path(tk_root) / "include") if tk_root else None,
    )
    res = check_file(path, CheckOptions(parse=parse, enabled=frozenset(codes)))
    if res.input_error:
        _fail(res.input_error)
    return res


def _config(path: str, config_file: str | None):
    from ..config import ConfigError, load_config
    from dataclasses import replace
    try:
        config = load_config(Path(path).parent, config_file=Path(config_file) if config_file else None)
    except ConfigError as e:
        _fail(str(e))
    # the runner fills {src}/{bin}/{dir} with str.format: any other brace is the user's text
    return replace(config, confirm=config.confirm.format_ready())


def _render(findings, fmt: str, sources, notes=None) -> str:
    from .. import registry
    from ..render import render
    return render(findings, fmt, rules=registry.by_code(), sources=sources, files_checked=1, notes=notes)


@click.command("confirm")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--select", multiple=True, metavar="CODES", help="Confirm only these rule codes (prefixes allowed).")
@click.option("--tk-include", metavar="DIR", help="ThunderKittens checkout (include/ and prototype/) to build with.")
@click.option("--timeout", type=float, default=None, help="Seconds per run (default: config or 20).")
@click.option("--tool", "tools", multiple=True, type=click.Choice(("racecheck", "synccheck", "memcheck", "initcheck")),
              help="compute-sanitizer tools to run (default: the tools that fit the findings' contracts: "
                   "racecheck/synccheck for scope and deadlock, racecheck for accumulator, racecheck/memcheck "
                   "for completion, memcheck for layout).")
@click.option("--keep", metavar="DIR", help="Keep the instrumented tree in DIR (default: a temporary folder, removed).")
@click.option("--config", "config_file", metavar="FILE", help="pyproject.toml / tkcheck.toml to read.")
@click.option("--output-format", "fmt", type=click.Choice(_FORMATS), default="full", show_default=True)
def confirm_command(path, select, tk_include, timeout, tools, keep, config_file, fmt):
    """Prove findings on a GPU: run an instrumented copy of PATH (watchdog on every wait, stage
    poisoning, phase log) and compute-sanitizer, then label each finding CONFIRMED (with the
    evidence), NOT REPRODUCED or UNCONFIRMABLE HERE. PATH itself is never modified."""
    if not Path(path).is_file():
        _fail(f"{path}: no such file")
    if timeout is not None and timeout <= 0:
        _fail("--timeout must be positive")
    config = _config(path, config_file)
    tk_root = _tk_root(tk_include, config)
    res = _check(path, tk_root, select, config)
    findings = [f for f in res.findings if not f.code.startswith("TK0")]
    if not findings:
        click.echo(f"{path}: no findings to confirm")
        sys.exit(0)
    try:
        ev = runner.confirm_file(path, res.source, findings, confirm_cfg=config.confirm if config else None,
                                 tk_root=tk_root, timeout=timeout, tools=tuple(tools) or tuple(runner.tools_for(findings)),
                                 keep=keep)
    except runner.ConfirmError as e:
        _fail(str(e))
    click.echo(_render(findings, fmt, {path: res.source}), nl=False)
    if fmt in ("full", "concise") and ev.unconfirmable:
        click.echo(f"note: nothing was run: {ev.unconfirmable}", err=True)
    sys.exit(1 if any((f.verdict or {}).get("status") == runner.CONFIRMED for f in findings) else 0)


@click.command("triage")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--symptom", required=True, type=click.Choice(T.SYMPTOMS), help="What the run showed.")
@click.option("--evidence", "evidence", metavar="FILE",
              help="A compute-sanitizer XML (--xml --save) or a hung run's log (TKCHECK_WATCHDOG lines).")
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
