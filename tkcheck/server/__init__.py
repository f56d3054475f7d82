"""`tkcheck server`: a language server (LSP over stdio) checking the editor's buffers.

`register_cli(group)` adds the command (imported only when `tkcheck server` runs); the protocol is
in `lsp.py`, the framing in `jsonrpc.py`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import click

from ..solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS

SERVER_HELP = """Run a language server (LSP over standard input and output) for editors.

Diagnostics of the open CUDA buffers (unsaved text, checked after DEBOUNCE ms of quiet), the
rule's doc on hover, the mechanical fixes as code actions. Options as `tkcheck check`'s; the config
of each file is found as the command line finds it. The server runs no program: the SASS pass is
off and a found config is not trusted to switch it on.
"""


def register_cli(group: click.Group) -> None:
    group.add_command(server_command)


@click.command("server", help=SERVER_HELP)
@click.option(
    "--stdio", is_flag=True, help="Talk over standard input and output (the default; for clients that pass it)."
)
@click.option(
    "-p",
    "--compile-commands",
    "compile_commands",
    metavar="DIR|FILE",
    help="Read -I/-D flags from compile_commands.json.",
)
@click.option(
    "--tk-include", metavar="DIR", multiple=True, help="Real ThunderKittens checkout or include/ folder (repeatable)."
)
@click.option("-I", "--include-dir", "include_dir", metavar="DIR", multiple=True, help="Add DIR to the include path.")
@click.option("-D", "--define", "define", metavar="NAME[=VALUE]", multiple=True, help="Define a macro.")
@click.option("--arch", type=click.Choice(["sm_90a", "sm_100a"]), help="Target architecture.")
@click.option(
    "--tk-version", type=click.Choice(["auto", "thread-scope", "lane-guarded"]), help="TK semantics of TMA issue."
)
@click.option("--select", multiple=True, metavar="CODES", help="Rules to run.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules not to run.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to run in addition.")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key (repeatable).")
@click.option("--config-file", type=click.Path(dir_okay=False), help="Use this tkcheck.toml / pyproject.toml.")
@click.option(
    "--no-cache", is_flag=True, help="Do not read or write the result cache (the memo of this session stays)."
)
@click.option("--solver-budget", type=click.IntRange(min=1), default=DEFAULT_BUDGET, show_default=True, metavar="STEPS")
@click.option(
    "--solver-timeout",
    "solver_timeout_ms",
    type=click.IntRange(min=1),
    default=DEFAULT_SAFETY_NET_MS,
    show_default=True,
    metavar="MS",
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0, max=86400),
    default=300,
    show_default=True,
    metavar="SECONDS",
    help="Stop checking a buffer after this long (a diagnostic says so); 0: no limit.",
)
@click.option(
    "--debounce",
    "debounce_ms",
    type=click.IntRange(min=0, max=60_000),
    default=300,
    show_default=True,
    metavar="MS",
    help="Quiet after an edit before the buffer is checked.",
)
def server_command(
    stdio,
    compile_commands,
    tk_include,
    include_dir,
    define,
    arch,
    tk_version,
    select,
    ignore,
    extend_select,
    overrides,
    config_file,
    no_cache,
    solver_budget,
    solver_timeout_ms,
    file_timeout,
    debounce_ms,
):
    from ..cli import cli as C
    from .lsp import OptionsError, run_stdio

    if config_file and not os.path.isfile(config_file):
        raise C.UsageProblem(f"--config-file {config_file}: no such file")
    settings = C._Settings(
        select=C._split_codes(select) if select else None,
        ignore=C._split_codes(ignore),
        extend_select=C._split_codes(extend_select),
        per_file_ignores=(),
        arch=arch,
        tk_include=C._tk_dirs(tk_include)[0],
        tk_version=tk_version,
        compile_commands=compile_commands,
        show_unknown=False,
        debug=False,
        no_cache=no_cache,
        solver_timeout_ms=solver_timeout_ms,
        solver_budget=solver_budget,
        sass=False,  # no program runs from the server
        tk_extra_dirs=C._tk_dirs(tk_include)[1],
        include_dirs=C._include_dirs(include_dir),
        defines=C._defines(define),
        config_overrides=tuple(overrides),
    )
    configs: dict = {}

    def options_for(path: str):
        try:
            config = C._config_for(path, config_file, overrides, configs, trust=False)
            opts = C._options_for(path, config, settings)
        except C.UsageProblem as e:
            raise OptionsError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a config that cannot be used is told, not fatal
            raise OptionsError(f"{type(e).__name__}: {e}") from None
        return replace(opts, sass=False, sass_cache_dir=None, debug=False)

    def forget_config() -> None:
        configs.clear()
        settings._selectors.clear()
        settings._compile_tables.clear()

    def check(path: str, opts, text: str):
        # the command line's runner: a cached result here, else a child forked from this warm process
        return C.run_jobs([C._Job(0, path, opts, text=text)], 1, False, file_timeout=file_timeout or None)[0]

    sys.exit(run_stdio(options_for, forget_config, debounce_ms / 1000, check))
