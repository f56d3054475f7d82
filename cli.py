"""The command line: `tkcheck [check] PATH...`, `tkcheck rule CODE`, `tkcheck eval`.

Installed as `tkcheck.cli.cli` (entry point `tkcheck`). Exit codes: 0 clean,
1 findings at or above the fail level, 2 usage, config, input or internal
error. No exception leaves `main` as a traceback unless `--debug` is given.

Other modules add commands to the `main` group: `_LAZY_COMMANDS` names the
module (with a `register_cli(group)`) that defines each, imported when the
command is used (`confirm`, `triage` from `tkcheck.confirm`).
"""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

import click

from tkcheck import __version__
from tkcheck.compiler_options import UnsafeOption, check_compiler_options
from tkcheck.formats import OUTPUT_FORMATS
from tkcheck.solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS

if TYPE_CHECKING:  # the engine is imported where a check runs (start-up stays lean)
    from tkcheck.engine import CheckOptions

Path = pathlib.Path

SOURCE_SUFFIXES = (".cu", ".cuh")
PROGRESS_MIN_FILES = 8
CACHE_DIR_NAME = ".tkcheck_cache"
MAX_COMPILE_COMMANDS_BYTES = 1 << 30
SEVERITY_RANK = {"note": 0, "warning": 1, "error": 2}
# commands other modules add, imported only when used (start-up stays lean for `tkcheck check`)
_LAZY_COMMANDS = {"confirm": "tkcheck.confirm", "triage": "tkcheck.confirm", "server": "tkcheck.server"}

# Set by a command that takes --debug: internal errors then show their traceback.
_DEBUG = {"on": False}


class UsageProblem(Exception):
    """A mistake on the command line or in a config: message + exit 2."""


# ---------------------------------------------------------------- the group


class _DefaultGroup(click.Group):
    """`tkcheck PATH...` means `tkcheck check PATH...`; `--explain X` means `rule X`."""

    def parse_args(self, ctx, args):
        args = list(args)
        if not args:
            args = ["check"]  # a bare `tkcheck` checks the current folder, as ruff does
        if args:
            first = args[0]
            if first == "--explain":
                args = ["rule", *args[1:]]
            elif first.startswith("--explain="):
                args = ["rule", first.split("=", 1)[1], *args[1:]]
            elif (
                first not in self.commands
                and first not in _LAZY_COMMANDS
                and first not in ("-h", "--help", "--version")
            ):
                args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(_LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in _LAZY_COMMANDS:
            _register_module(self, _LAZY_COMMANDS[name])
        return self.commands.get(name)

    def format_usage(self, ctx, formatter):
        formatter.write(
            "Usage: tkcheck [check] [OPTIONS] [PATH...]\n"
            "       tkcheck rule CODE | --all\n"
            "       tkcheck COMMAND [ARGS]...\n"
        )

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            # `tkcheck rule --all | head`: the reader left; nothing more to say, and no traceback
            _silence_stdout()
            ctx.exit(0)
        except UsageProblem as e:
            click.echo(f"tkcheck: error: {e}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("tkcheck: interrupted", err=True)
            ctx.exit(2)
        except Exception as e:  # noqa: BLE001 - an internal error is a message, not a traceback
            if _DEBUG["on"]:
                raise
            click.echo(
                f"tkcheck: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)", err=True
            )
            ctx.exit(2)


@click.group(
    cls=_DefaultGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
    no_args_is_help=False,
)
@click.version_option(__version__, "--version", prog_name="tkcheck", message="%(prog)s %(version)s")
def main():
    """tkcheck: a static verifier for asynchronous ThunderKittens kernels (Hopper, Blackwell).

    `tkcheck PATH...` checks files and folders (the `check` command is the
    default; a bare `tkcheck` checks `.`); `tkcheck rule TK301` (or `--explain TK301`) explains a rule.

    Exit status: 0 no findings, 1 findings, 2 usage, config, input or internal error.
    """


# ---------------------------------------------------------------- option helpers


def _split_codes(values: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return tuple(out)


def _parse_per_file_ignores(values: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    pairs = []
    for v in values:
        glob, sep, codes = v.rpartition(":")
        if not sep or not glob or not codes.strip():
            raise UsageProblem(f"--per-file-ignores {v!r}: expected GLOB:CODES, e.g. 'tests/*.cu:TK301,TK5'")
        pairs.append((glob, _split_codes([codes])))
    return tuple(pairs)


def _tk_include_dir(value: str | os.PathLike | None) -> str | None:
    """The real TK include/ folder; a checkout root (with include/kittens.cuh) is accepted too."""
    if value is None:
        return None
    p = Path(value)
    if not p.is_dir():
        raise UsageProblem(f"--tk-include {value}: not a folder")
    from tkcheck.frontend.parse import find_tk_include

    return find_tk_include(p) or str(p)


def _tk_dirs(values) -> tuple[str | None, tuple[str, ...]]:
    """--tk-include, repeatable: a checkout root (include/ or the 2024 src/ and prototype/ are
    found in it), the include/ folder, or more folders such as prototype/. Returns (the folder
    holding kittens.cuh, the others in the order given)."""
    from tkcheck.frontend.parse import find_tk_include

    primary, extra = None, []
    for v in values or ():
        if v is None:
            continue
        p = Path(v)
        if not p.is_dir():
            raise UsageProblem(f"--tk-include {v}: not a folder")
        inc = find_tk_include(p)
        if inc is not None and primary is None:
            primary = inc
            if (p / "prototype").is_dir():
                extra.append(str(p / "prototype"))
        elif inc is not None and os.path.abspath(inc) != os.path.abspath(primary):
            raise UsageProblem(f"--tk-include {v}: a second ThunderKittens include folder (the first is {primary})")
        elif inc is None:
            extra.append(str(p))
    return primary, tuple(dict.fromkeys(extra))


def _defines(values) -> tuple[str, ...]:
    out = []
    for v in values or ():
        name = v.split("=", 1)[0]
        if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
            raise UsageProblem(f"-D {v}: expected NAME or NAME=VALUE")
        out.append(v)
    from tkcheck.compiler_options import UnsafeOption, check_compiler_options

    try:
        check_compiler_options(defines=out, where="command line")
    except UnsafeOption as e:
        raise UsageProblem(str(e)) from None
    return tuple(out)


def _include_dirs(values) -> tuple[str, ...]:
    out = tuple(str(Path(d).resolve()) for d in values or ())
    try:
        check_compiler_options(include_dirs=out, where="command line -I")
    except UnsafeOption as e:
        raise UsageProblem(str(e)) from None
    return out


# ---------------------------------------------------------------- file discovery


def collect_files(paths: Iterable[str], exclusions_for=None, notes: list[str] | None = None) -> list[tuple[str, str]]:
    """(file, the argument it came from) for every file to check, in a stable order.

    Files named on the command line are checked whatever their suffix; folders
    contribute their *.cu / *.cuh files, leaving out what the settings of each
    folder exclude (`exclude`, `extend-exclude`, `.gitignore` with
    `respect-gitignore`; tkcheck.file_selection). `exclusions_for(folder)` gives
    those settings; None: the defaults. A path that does not exist is a usage error;
    a dangling link found in a folder is skipped with a note (added to `notes`), not
    an error of the run.
    """
    from tkcheck.file_selection import DEFAULT_EXCLUDE, Exclusions, GitIgnores, config_patterns

    if exclusions_for is None:
        default = Exclusions(config_patterns(DEFAULT_EXCLUDE, Path.cwd(), "default"))

        def exclusions_for(folder: str) -> Exclusions:
            return default

    gitignores = GitIgnores()
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(f: str, arg: str):
        key = os.path.normpath(os.path.abspath(f))
        if key not in seen:
            seen.add(key)
            out.append((f, arg))

    def skipped(path: str, is_dir: bool, rules) -> bool:
        return rules.excluded(path, is_dir) or (rules.respect_gitignore and gitignores.ignored(path, is_dir))

    for arg in paths:
        p = Path(arg)
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(arg):
                rules = exclusions_for(dirpath)
                dirnames[:] = sorted(d for d in dirnames if not skipped(os.path.join(dirpath, d), True, rules))
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    if name.endswith(SOURCE_SUFFIXES) and not skipped(full, False, rules):
                        if os.path.islink(full) and not os.path.exists(full):
                            if notes is not None:
                                notes.append(f"{full}: skipped, a link to {os.readlink(full)} that does not exist")
                            continue
                        add(full, arg)
        elif p.exists():
            add(arg, arg)
        else:
            raise UsageProblem(f"{arg}: no such file or directory")
    return out


def exclusions_of(config, s: "_Settings"):
    """The file_selection.Exclusions of one config plus the command line's options."""
    from tkcheck.file_selection import DEFAULT_EXCLUDE, Exclusions, config_patterns

    where = str(config.source) if config.source is not None else "default"
    pats = []
    if s.exclude is not None:
        pats += config_patterns(s.exclude, Path.cwd(), "--exclude")
    elif config.exclude is not None:
        for g, base in config.exclude:
            pats += config_patterns((g,), Path(base), where)
    else:
        pats += config_patterns(DEFAULT_EXCLUDE, Path.cwd(), "default")
    for g, base in config.extend_exclude:
        pats += config_patterns((g,), Path(base), where)
    pats += config_patterns(s.extend_exclude, Path.cwd(), "--extend-exclude")
    respect = s.respect_gitignore if s.respect_gitignore is not None else config.respect_gitignore
    return Exclusions(tuple(pats), respect)


# ---------------------------------------------------------------- compile_commands.json


def load_compile_commands(location: str | os.PathLike) -> dict[str, dict]:
    """file (absolute, normalised) -> {include_dirs, defines} from a compile_commands.json."""
    p = Path(location)
    if p.is_dir():
        p = p / "compile_commands.json"
    from tkcheck.safe_io import NotReadable, read_regular

    try:
        entries = json.loads(read_regular(p, MAX_COMPILE_COMMANDS_BYTES).decode("utf-8"))
    except NotReadable as e:
        raise UsageProblem(f"compile commands {p}: cannot read: {e}") from None
    except OSError as e:
        raise UsageProblem(f"compile commands {p}: cannot read: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise UsageProblem(f"compile commands {p}: not valid JSON: {e}") from None
    if not isinstance(entries, list):
        raise UsageProblem(f"compile commands {p}: expected a JSON array of entries")
    table: dict[str, dict] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "file" not in entry:
            raise UsageProblem(f"compile commands {p}: entry {i} has no 'file'")
        directory = Path(str(entry.get("directory") or p.parent))
        if "arguments" in entry and isinstance(entry["arguments"], list):
            argv = [str(a) for a in entry["arguments"]]
        else:
            try:
                argv = shlex.split(str(entry.get("command", "")))
            except ValueError as e:
                raise UsageProblem(f"compile commands {p}: entry {i}: cannot split the command: {e}") from None
        includes, defines = _flags_of(argv, directory)
        from tkcheck.compiler_options import UnsafeOption, check_compiler_options

        try:
            check_compiler_options(defines=defines, include_dirs=includes, where=f"compile commands {p}: entry {i}")
        except UnsafeOption as e:
            raise UsageProblem(str(e)) from None
        f = Path(str(entry["file"]))
        f = f if f.is_absolute() else directory / f
        table[os.path.normpath(str(f))] = {"include_dirs": includes, "defines": defines}
    return table


def _flags_of(argv: list[str], directory: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """-I/-isystem/-iquote folders (absolute) and -D defines of one compile command."""
    includes: list[str] = []
    defines: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        value = None
        for flag in ("-I", "-isystem", "-iquote", "--include-path"):
            if a == flag and i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
                break
            if a.startswith(flag + "=") or (flag == "-I" and a.startswith("-I") and len(a) > 2):
                value = a.split("=", 1)[1] if a.startswith(flag + "=") else a[2:]
                break
        if value is not None:
            d = Path(value)
            includes.append(str(d if d.is_absolute() else directory / d))
        elif a in ("-D", "--define-macro") and i + 1 < len(argv):
            defines.append(argv[i + 1])
            i += 1
        elif a.startswith("-D") and len(a) > 2:
            defines.append(a[2:])
        elif a.startswith("--define-macro="):
            defines.append(a.split("=", 1)[1])
        i += 1
    return tuple(includes), tuple(defines)


# ---------------------------------------------------------------- running the checks


@dataclass
class _Job:
    index: int
    path: str
    opts: "CheckOptions"
    text: str | None = None


def _check_job(job: _Job):
    from tkcheck.engine import check_file

    return job.index, check_file(job.path, job.opts, text=job.text)


def _failed(job: _Job, why: str):
    """The result of a file whose check could not finish: told, and exit status 2."""
    from tkcheck.engine import FileResult
    from tkcheck.render._common import display_path

    res = FileResult(path=job.path, source=job.text or "")
    shown = display_path(job.path, Path.cwd())
    if why.startswith(("stopped after", "the checking process")):  # a limit, not a bug of tkcheck
        res.notes.append(f"check of {shown} stopped: {why} (no findings reported for this file)")
    else:
        res.notes.append(f"internal error while checking {shown}: {why} (no findings reported for this file)")
    res.internal_errors.append(res.notes[-1])
    return res


def _worker_main(jobs_in, results_out, parent: int):
    """In a forked worker: check the jobs the parent sends, one after the other, each result
    sent back pickled (or the error's text), until the parent sends an empty message, closes
    the pipe or is gone. Every check
    answers as a process of its own would: its own z3 context, the unknowns' numbering, the
    source texts and the checks' memos start afresh per check (engine.check_file)."""
    import pickle

    # nothing a file names may read the terminal or the caller's pipe (`#include "/dev/stdin"`)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _limit_memory(FILE_MEMORY_LIMIT["bytes"])
    while True:
        try:
            while not jobs_in.poll(1.0):
                if os.getppid() != parent:  # the parent died: nobody reads what this checks
                    os._exit(0)
            message = jobs_in.recv_bytes()
        except (EOFError, OSError):
            break
        if not message:
            break
        job = pickle.loads(message)
        try:
            _, res = _check_job(job)
            payload = pickle.dumps(res)
        except BaseException as e:  # noqa: BLE001 - reported by the parent
            payload = pickle.dumps(f"{type(e).__name__}: {e}")
        results_out.send_bytes(payload)
    results_out.close()


def _cache_hit(job: _Job):
    """The cached FileResult of a job, looked up here (no process, no parse, no engine import),
    as `check_file` would find it; None when the job must be checked."""
    if not job.opts.cache_dir:
        return None
    from tkcheck import cache
    from tkcheck.frontend.parse import InputError, read_source

    try:
        text = job.text if job.text is not None else read_source(job.path)
    except InputError:
        return None  # told by the check
    res = cache.lookup(job.opts.cache_dir, job.path, text, job.opts)
    if res is not None:
        res.source = text
        res.cached = True
    return res


# The address space one checking process may use: a macro bomb that clang expands without end,
# or a solver blow-up, ends that file's check (exit 2) instead of the machine's memory.
FILE_MEMORY_LIMIT = {"bytes": 8 << 30}


def _limit_memory(limit: int | None):
    if not limit:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass


def _can_fork() -> bool:
    import multiprocessing as mp

    return sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods()


def run_jobs(
    jobs: list[_Job], workers: int, progress: bool, *, file_timeout: float | None = None, isolate: bool = True
) -> list:
    """FileResults in job order.

    A file whose result is in the cache is answered here (no process, no parse, no engine
    import). The others are checked in up to `workers` long-lived worker processes forked from
    this one, each checking many files one after the other (`_run_forked`): libclang and z3 are
    not thread-safe, and a crash of libclang on hostile input, or a check that runs past
    `file_timeout`, must cost that one file, not the whole run. Each check answers as a process
    of its own would (its own z3 context and memos: solver.session). The engine, the builder
    and the checks are imported once, here, before the first fork, so a worker starts warm.
    Without fork
    (or with `isolate=False`, as --debug does) files are checked in this process, one after the
    other.
    """
    results: list = [None] * len(jobs)
    bar = None
    if progress:
        bar = click.progressbar(length=len(jobs), label="checking", file=sys.stderr, show_pos=True)
        bar.__enter__()
    try:
        if not isolate or not _can_fork():
            for job in jobs:
                i, res = _check_job(job)
                results[i] = res
                if bar:
                    bar.update(1)
        else:
            to_check = []
            for job in jobs:
                hit = _cache_hit(job)
                if hit is None:
                    to_check.append(job)
                    continue
                results[job.index] = hit
                if bar:
                    bar.update(1)
            if to_check:
                _run_forked(to_check, max(min(workers, len(to_check)), 1), results, bar, file_timeout)
    finally:
        if bar:
            bar.__exit__(None, None, None)
    return results


# A worker checks this many files, then is replaced by a fresh fork of the warm parent. Each check
# answers as in a process of its own: a z3 context per check (solver.session), per-check memos
# (solver.memo), and every value read out of a z3 model is the smallest model
# (solver.smallest_model), not z3's pick, which followed z3's process-wide history (round 8 shipped
# 1 for that; docs/DEVELOPING.md "Models are chosen, not taken"). What a long run leaves in a
# process (the allocator's fragments, libclang's and z3's caches) stays bounded by the replacement
# and under --file-memory.
WORKER_FILES = 64


class _Worker:
    """A process forked from the warm parent that checks files one after the other."""

    def __init__(self, ctx):
        self.jobs_out_r, self.jobs_out = ctx.Pipe(duplex=False)  # parent -> worker
        self.results_in, results_w = ctx.Pipe(duplex=False)  # worker -> parent
        self.proc = ctx.Process(target=_worker_main, args=(self.jobs_out_r, results_w, os.getpid()), daemon=True)
        self.proc.start()
        self.jobs_out_r.close()
        results_w.close()  # the worker holds the only writer: its death reads as EOF here
        self.checked = 0  # files this worker finished
        self.job: _Job | None = None
        self.started = 0.0

    def send(self, job: _Job) -> None:
        import pickle

        self.job, self.started = job, time.monotonic()
        self.jobs_out.send_bytes(pickle.dumps(job))

    def stop(self, kill: bool = False) -> None:
        """End the worker: an empty message ends its loop (a later fork holds a copy of this
        pipe's writer, so closing it here is no EOF there); `kill` for one busy or dead."""
        if not kill:
            try:
                self.jobs_out.send_bytes(b"")
            except OSError:
                kill = True
            else:
                self.proc.join(30)
                kill = self.proc.exitcode is None
        if kill:
            self.proc.kill()
        self.proc.join()
        self.jobs_out.close()
        self.results_in.close()


def _warm_for_workers(jobs: list[_Job]) -> None:
    """Before the first fork, when several files are to be checked: import what every check
    imports on first use (the checks, the front end's parts, the rules the jobs enable) and read
    what a check reads once per process (libclang's version, the model's digest), so that each
    worker starts with them instead of paying for them again: a worker lives for WORKER_FILES
    files, and 500 small files took 8 workers, each importing about 130 modules. Only imports
    and pure per-process values: nothing a check's answer depends on (each check still makes
    its own z3 context and memos)."""
    import importlib
    import pkgutil

    import tkcheck.checks
    import tkcheck.frontend
    from tkcheck import registry

    sass = any(j.opts.sass for j in jobs)
    for pkg in (tkcheck.checks, tkcheck.frontend):
        for m in pkgutil.iter_modules(pkg.__path__):
            if m.name == "sass_cross" and not sass:
                continue  # only with --sass (keeps start-up light)
            importlib.import_module(f"{pkg.__name__}.{m.name}")
    for name in ("tkcheck.coverage", "tkcheck.fixes", "tkcheck.knowledge.launchers", "tkcheck.knowledge.layouts"):
        importlib.import_module(name)
    infos = registry.catalog()
    for code in sorted(set().union(*(j.opts.enabled for j in jobs))):
        info = infos.get(code)
        if info is not None and (not info.engine_only or sass):
            registry.rule(code)
    if any(j.opts.cache_dir for j in jobs):
        from tkcheck.frontend.parse import _libclang_version, _tool_digest

        _libclang_version()
        _tool_digest()


def _run_forked(jobs: list[_Job], workers: int, results: list, bar, file_timeout: float | None):
    """Check `jobs` in up to `workers` long-lived worker processes forked from this warm one,
    each checking files one after the other (`_worker_main`). A worker that dies (libclang or
    z3 crashed, the --file-memory limit) costs the file it was checking: that file is checked
    again once in a fresh worker when the dead one had checked other files before (so a crash
    is the file's own, as with a process per file), then told as failed. A check that runs past
    `file_timeout` kills its worker; a fresh one takes its place."""
    import multiprocessing as mp
    import pickle
    from collections import deque
    from multiprocessing.connection import wait

    # imported once here: every worker forked below starts with them (no import per file)
    import tkcheck.checks.analysis  # noqa: F401
    import tkcheck.engine  # noqa: F401
    import tkcheck.frontend.builder  # noqa: F401

    if len(jobs) > 1:
        _warm_for_workers(jobs)
    ctx = mp.get_context("fork")
    pending = deque(jobs)
    retried: set[int] = set()
    idle: list[_Worker] = []
    busy: dict = {}  # results_in -> worker
    sys.stdout.flush()
    sys.stderr.flush()

    def done(job: _Job, value) -> None:
        results[job.index] = value
        if bar:
            bar.update(1)

    try:
        while pending or busy:
            while pending and len(busy) < workers:
                job = pending.popleft()
                w = idle.pop() if idle and job.index not in retried else _Worker(ctx)
                try:
                    w.send(job)
                except OSError:  # the worker is gone: a fresh one takes the job
                    w.stop(kill=True)
                    w = _Worker(ctx)
                    w.send(job)
                busy[w.results_in] = w
            timeout = None
            if file_timeout:
                oldest = min(w.started for w in busy.values())
                timeout = max(0.0, oldest + file_timeout - time.monotonic())
            for ready in wait(list(busy), timeout=timeout):
                reader: Any = ready  # wait() returns the connections it was given
                w = busy.pop(reader)
                job = w.job
                assert job is not None
                try:
                    value = pickle.loads(reader.recv_bytes())
                except (EOFError, OSError, pickle.UnpicklingError):
                    value = None
                if value is None:  # the worker died
                    w.stop(kill=True)
                    if w.checked and job.index not in retried:
                        retried.add(job.index)
                        pending.appendleft(job)  # again, alone in a fresh worker
                        continue
                    code = w.proc.exitcode
                    why = (
                        f"the checking process died with signal {-code}"
                        if code and code < 0
                        else f"the checking process exited with status {code}"
                    )
                    done(
                        job,
                        _failed(
                            job, why + " (libclang or z3 crashed, or the file passed the memory limit of --file-memory)"
                        ),
                    )
                    continue
                w.checked += 1
                w.job = None
                done(job, _failed(job, value) if isinstance(value, str) else value)
                if w.checked >= WORKER_FILES:
                    w.stop()
                else:
                    idle.append(w)
            if file_timeout:
                now = time.monotonic()
                for reader, w in list(busy.items()):
                    if now - w.started > file_timeout:
                        del busy[reader]
                        w.stop(kill=True)
                        assert w.job is not None
                        done(
                            w.job,
                            _failed(w.job, f"stopped after {file_timeout:g} s (raise the limit with --file-timeout)"),
                        )
    finally:
        for w in idle:
            w.stop()
        for w in busy.values():
            w.stop(kill=True)


# ---------------------------------------------------------------- the check command


def _config_for(path: str, config_file, overrides, cache: dict, trust: bool = False):
    """The config of one file (or folder): the closest tkcheck.toml / pyproject.toml [tool.tkcheck]
    above it, as ruff does, whether the file was named or found in a folder; `--config-file` wins.
    A found file is the repository's: its settings that run programs count only with `trust`
    (--trust-config); a file named with --config-file is the user's own choice."""
    from tkcheck.config import ConfigError, find_config, load_config

    p = Path(path)
    folder = os.path.abspath(path if p.is_dir() else (os.path.dirname(path) or "."))
    try:
        if ("folder", folder) not in cache:
            cache[("folder", folder)] = Path(config_file) if config_file else find_config(Path(folder))
        found = cache[("folder", folder)]
        key = str(found) if found else None
        if key not in cache:
            cache[key] = load_config(
                Path(folder), config_file=found, overrides=overrides, trust=trust or bool(config_file)
            )
        return cache[key]
    except ConfigError as e:
        raise UsageProblem(str(e)) from None


@dataclass
class _Settings:
    """What the command line says, before each file's config is applied."""

    select: tuple[str, ...] | None
    ignore: tuple[str, ...]
    extend_select: tuple[str, ...]
    per_file_ignores: tuple
    arch: str | None
    tk_include: str | None
    tk_version: str | None
    compile_commands: str | None
    show_unknown: bool
    debug: bool
    no_cache: bool
    solver_timeout_ms: int
    solver_budget: int = DEFAULT_BUDGET
    sass: bool | None = None
    sass_arch: str | None = None
    tk_extra_dirs: tuple[str, ...] = ()  # more --tk-include folders (prototype/)
    include_dirs: tuple[str, ...] = ()  # -I DIR on the command line
    defines: tuple[str, ...] = ()  # -D NAME[=VALUE] on the command line
    exclude: tuple[str, ...] | None = None  # --exclude: replaces the configs' `exclude`
    extend_exclude: tuple[str, ...] = ()  # --extend-exclude
    respect_gitignore: bool | None = None  # --respect-gitignore / --no-respect-gitignore
    config_overrides: tuple[str, ...] = ()  # --config KEY=VALUE, to say where a setting came from
    _selectors: dict = field(default_factory=dict)
    # notes on cache folders that are links (not used): once each
    cache_notes: list = field(default_factory=list)
    _compile_tables: dict = field(default_factory=dict)


def _selector(config, s: _Settings):
    from tkcheck.selection import RuleSelector

    key = id(config)
    if key not in s._selectors:
        chosen = s.select if s.select is not None else config.select
        if not chosen:
            from tkcheck.config import ConfigError, _override_table

            try:
                by_override = "select" in _override_table(s.config_overrides)
            except ConfigError:
                by_override = False
            where = (
                "--select"
                if s.select is not None
                else "--config select"
                if by_override
                else f"{config.source}: 'select'"
            )
            raise UsageProblem(
                f"{where} is empty: no rule would run (give codes, prefixes such as TK3, names or ALL; "
                "to turn rules off use ignore)"
            )
        try:
            s._selectors[key] = RuleSelector(
                select=s.select if s.select is not None else config.select,
                ignore=tuple(config.ignore) + s.ignore,
                extend_select=tuple(config.extend_select) + s.extend_select,
                per_file_ignores=tuple(config.per_file_ignores) + s.per_file_ignores,
                root=config.root or Path.cwd(),
            )
        except ValueError as e:
            raise UsageProblem(str(e)) from None
    return s._selectors[key]


def _compile_table(config, s: _Settings) -> dict:
    where = s.compile_commands or (str(config.compile_commands) if config.compile_commands else None)
    if where is None:
        return {}
    if where not in s._compile_tables:
        s._compile_tables[where] = load_compile_commands(where)
    return s._compile_tables[where]


def _cache_dir(config, s: _Settings) -> str | None:
    if s.no_cache:
        return None
    base = config.source.parent if config.source is not None else Path.cwd()
    d = base / CACHE_DIR_NAME
    _note_linked_cache(d, s)
    try:
        if os.path.islink(d):
            return None  # the cache is written only inside its own folder, never through a link
        d.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (".gitignore", "# written by tkcheck: the cache is never committed\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# tkcheck result cache\n"),
        ):
            if not os.path.lexists(d / name):
                fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
    except OSError:
        return None  # an unwritable folder means no cache, not an error
    return str(d)


def _note_linked_cache(d: Path, s: _Settings) -> None:
    """A note for a cache folder (or one of its kinds) that is a link: it is not used, never
    written through (tkcheck/cache_io.py)."""
    for p in (d, *(d / sub for sub in ("results", "manifests", "pch", "sass"))):
        if os.path.islink(p):
            note = f"{p} is a link to {os.readlink(p)}: not used (the cache is never read or written through a link)"
            if note not in s.cache_notes:
                s.cache_notes.append(note)
            if p == d:
                return


def _options_for(path: str, config, s: _Settings):
    from tkcheck.engine import CheckOptions
    from tkcheck.frontend.parse import ParseOptions

    table = _compile_table(config, s)
    cc = table.get(os.path.normpath(os.path.abspath(path)), {})
    tk_include = s.tk_include or _tk_include_dir(config.tk_include)
    include_dirs = s.include_dirs + tuple(str(d) for d in config.include_dirs) + tuple(cc.get("include_dirs", ()))
    # an -I folder that holds ThunderKittens itself (kittens.cuh, prototype.cuh) is TK, not the
    # user's code: the same as --tk-include
    tk_extra = list(s.tk_extra_dirs)
    user_dirs = []
    from tkcheck.frontend.parse import find_tk_include

    for d in include_dirs:
        if Path(d).is_dir() and find_tk_include(d) == str(Path(d)):
            if tk_include is None:
                tk_include = str(Path(d))
            elif not os.path.samefile(d, tk_include):
                user_dirs.append(d)  # a second TK on the path: kept as the user put it
        elif (Path(d) / "prototype.cuh").is_file():
            tk_extra.append(d)
        else:
            user_dirs.append(d)
    parse = ParseOptions(
        arch=s.arch or config.arch or "sm_90a",
        arch_auto=not (s.arch or config.arch),
        include_dirs=tuple(dict.fromkeys(user_dirs)),
        # -D on the command line last: it wins over config and compile_commands, as in a compiler
        defines=tuple(config.defines) + tuple(cc.get("defines", ())) + s.defines,
        clang_args=tuple(config.clang_args),
        tk_include=tk_include,
        tk_extra_dirs=tuple(dict.fromkeys(tk_extra)),
        tk_version=s.tk_version or config.tk_version or "auto",
    )
    cache_dir = _cache_dir(config, s)
    return CheckOptions(
        parse=parse,
        enabled=frozenset(_selector(config, s).enabled_codes(path)),
        show_unknown=s.show_unknown,
        debug=s.debug,
        solver_timeout_ms=s.solver_timeout_ms,
        solver_budget=s.solver_budget,
        cache_dir=cache_dir,
        # the SASS pass: --sass/--no-sass, else the `sass` config key (default off)
        sass=bool(s.sass if s.sass is not None else (config.sass or False)),
        sass_arch=s.sass_arch,
        sass_cache_dir=os.path.join(cache_dir, "sass") if cache_dir else None,
    )


def _read_stdin() -> str:
    from tkcheck.frontend.parse import MAX_FILE_BYTES, InputError, decode_source

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)  # never more than one file's limit
    if len(data) > MAX_FILE_BYTES:
        raise UsageProblem(f"standard input is larger than {MAX_FILE_BYTES} bytes, the limit for one file")
    try:
        return decode_source("standard input", data)
    except InputError as e:
        raise UsageProblem(str(e)) from None


def _merge_notes(results: list, root: Path) -> list[str]:
    """Notes once each; a note only some files share names those files."""
    from tkcheck.render._common import display_path

    owners: dict[str, list[str]] = {}
    for res in results:
        for n in res.notes:
            files = owners.setdefault(n, [])
            shown = display_path(res.path, root)
            if shown not in files:
                files.append(shown)
    out = []
    for n, files in owners.items():
        if len(results) > 1 and len(files) < len(results) and not n.startswith(tuple(files)):
            out.append(f"{', '.join(files[:3])}{' and others' if len(files) > 3 else ''}: {n}")
        else:
            out.append(n)
    return out


def _statistics(findings: list, rules: dict, fmt: str, coverage: dict | None = None) -> str:
    from tkcheck.render._common import plural

    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt in ("json", "json-lines"):
        recs = [{"code": c, "name": rules[c].name if c in rules else "", "count": n} for c, n in rows]
        doc = {"findings": recs, "coverage": (coverage or {}).get("summary")}
        return json.dumps(doc, indent=2) + "\n"
    width = max((len(str(n)) for _, n in rows), default=1)
    lines = [f"{n:>{width}}  {c:<6} {rules[c].name if c in rules else ''}".rstrip() for c, n in rows]
    lines.append(f"Found {plural(sum(counts.values()), 'finding')}." if rows else "No findings.")
    if coverage and coverage.get("line"):
        lines.append(coverage["line"])  # with the inconclusive proofs: never findings, never gone
    return "\n".join(lines) + "\n"


def _coverage_of(results: list, root: Path) -> dict:
    """{"summary", "line", "kernels": [...]} over the files checked (tkcheck.coverage)."""
    from tkcheck.coverage import summary, summary_line
    from tkcheck.render._common import display_path

    entries = [c for res in results for c in getattr(res, "coverage", [])]
    kernels = []
    for c in entries:
        d = c.to_json()
        d["file"] = display_path(c.file, root) if os.path.isabs(c.file) else c.file
        for u in d["unknowns"]:
            parts = u["location"].rsplit(":", 2)
            if len(parts) == 3 and os.path.isabs(parts[0]):
                u["location"] = ":".join([display_path(parts[0], root), *parts[1:]])
        kernels.append(d)
    return {"summary": summary(entries), "line": summary_line(entries), "kernels": kernels, "entries": entries}


def _require_coverage(cov: dict, pct: float | None) -> list[str]:
    """The kernels under `--require-coverage PCT`, as messages (empty: the requirement holds)."""
    if pct is None:
        return []
    from tkcheck.coverage import below, short_of
    from tkcheck.render._common import display_path

    out = []
    for e in below(cov["entries"], pct):
        shown = display_path(e.file, Path.cwd()) if os.path.isabs(e.file) else e.file
        if not e.analysed:
            out.append(f"{shown}: kernel '{e.kernel}' not analysed: {e.reason}")
        elif short_of(e, pct) == "obligations":
            out.append(
                f"{shown}: kernel '{e.kernel}': {e.obligations_decided} of {e.obligations} proof obligations "
                f"decided ({100.0 * e.obligations_decided / e.obligations:.0f}% < {pct:g}%)"
            )
        else:
            out.append(
                f"{shown}: kernel '{e.kernel}': {e.sync_ops_modelled} of {e.sync_ops} sync ops modelled "
                f"({100.0 * e.sync_ops_modelled / e.sync_ops:.0f}% < {pct:g}%)"
            )
    return out


def _timing_report(results: list, wall: float) -> str:
    from tkcheck.render._common import display_path

    total: dict[str, float] = {}
    for res in results:
        if res.cached:  # its timing is the run that filled the cache
            continue
        for k, v in res.timing.items():
            total[k] = total.get(k, 0.0) + v
    cached = sum(1 for r in results if r.cached)
    lines = [f"timing: {len(results)} files ({cached} from cache), wall {wall:.3f} s"]

    def row(label: str, key: str, indent: int = 2):
        if key in total:
            lines.append(f"{' ' * indent}{label:<34}{total[key] * 1000:>10.1f} ms")

    row("front end (libclang parse)", "parse")
    row("model (KernelModel build)", "model")
    row("rules and contracts", "rules")
    for k in sorted(k for k in total if k.startswith("check:")):
        row(f"contract fact {k[6:]}", k, 4)
    rule_keys = sorted((k for k in total if k.startswith("rule:") and total[k] >= 0.0001), key=lambda k: (-total[k], k))
    for k in rule_keys:
        row(f"rule {k[5:]}", k, 4)
    row("solver (z3, inside the rules)", "solver")
    row("total (sum over files)", "total")
    slow = sorted(results, key=lambda r: -r.timing.get("total", 0.0))[:5]
    if len(results) > 1:
        lines.append("  slowest files:")
        for r in slow:
            lines.append(f"    {r.timing.get('total', 0.0) * 1000:>8.1f} ms  {display_path(r.path, Path.cwd())}")
    return "\n".join(lines) + "\n"


def _write_output(text: str, output: str | None):
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8", errors="replace")
        except OSError as e:
            raise UsageProblem(f"-o {output}: cannot write: {e.strerror or e}") from None
        return
    stream = sys.stdout
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            stream.buffer.write(text.encode(stream.encoding or "utf-8", errors="replace"))
        stream.flush()
    except BrokenPipeError:
        # `tkcheck ... | head`: the reader left; the exit status still tells the result.
        _silence_stdout()


def _silence_stdout():
    """After a broken pipe: further writes (and the interpreter's final flush) go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _check_output_folder(folder: str, option: str) -> None:
    """A folder the run will write into: usable now, or a usage error (before any work)."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise UsageProblem(f"{option} {folder}: cannot create the folder: {e.strerror or e}") from None
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise UsageProblem(f"{option} {folder}: not a writable folder")


def _use_color(output: str | None) -> bool:
    if output or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


CHECK_HELP = """Check CUDA/ThunderKittens kernels for broken async contracts.

PATH is a file or a folder (searched for *.cu and *.cuh, leaving out what
`exclude`, `extend-exclude` and .gitignore files exclude), or `-` to read
standard input (name it with --stdin-filename); without PATH, `.` is checked.
Exit status: 0 no findings, 1 findings, 2 usage, config, input or internal error.
"""


@main.command("check", help=CHECK_HELP)
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "-p",
    "--compile-commands",
    "compile_commands",
    metavar="DIR|FILE",
    help="Read -I/-D flags of each file from compile_commands.json (the file or its folder).",
)
@click.option(
    "--tk-include",
    metavar="DIR",
    multiple=True,
    help="Real ThunderKittens checkout, include/ folder, or another TK folder such as prototype/ "
    "(repeatable) to parse against.",
)
@click.option(
    "-I",
    "--include-dir",
    "include_dir",
    metavar="DIR",
    multiple=True,
    help="Add DIR to the include path, as a compiler's -I (repeatable).",
)
@click.option(
    "-D",
    "--define",
    "define",
    metavar="NAME[=VALUE]",
    multiple=True,
    help="Define a macro, as a compiler's -D (repeatable); used in constant evaluation too.",
)
@click.option(
    "--arch",
    type=click.Choice(["sm_90a", "sm_100a"]),
    help="Target architecture [default: sm_90a; sm_100a for files using Blackwell-only features].",
)
@click.option(
    "--tk-version",
    type=click.Choice(["auto", "thread-scope", "lane-guarded"]),
    help="Which TK semantics of TMA issue to assume [default: auto].",
)
@click.option("--select", multiple=True, metavar="CODES", help="Rules to run: codes, prefixes (TK3), names or ALL.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Rules not to run.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to run in addition to the selection.")
@click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODES", help="Rules not to run on matching files.")
@click.option(
    "--output-format",
    type=click.Choice(list(OUTPUT_FORMATS)),
    help="Report format [default: full on a terminal, concise otherwise].",
)
@click.option("-o", "--output-file", "output", metavar="FILE", help="Write the report to FILE.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--timing", is_flag=True, help="Print where the time went (front end, model, rules, solver) on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only: no notes, no progress bar.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--fail-level",
    type=click.Choice(["note", "warning", "error"]),
    default="note",
    show_default=True,
    help="Lowest severity that makes the exit status 1.",
)
@click.option("--show-unknown", is_flag=True, help="Also report what could not be modelled (as notes).")
@click.option("--no-cache", is_flag=True, help=f"Do not read or write the result cache ({CACHE_DIR_NAME}/).")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key (repeatable).")
@click.option("--config-file", type=click.Path(dir_okay=False), help="Use this tkcheck.toml / pyproject.toml.")
@click.option(
    "--trust-config",
    is_flag=True,
    help="Honour the settings of a found config file that run programs (sass = true, confirm.build/run); "
    "without it, only the command line and --config-file switch on compilation.",
)
@click.option("--stdin-filename", metavar="PATH", help="The name of the file read from `-`.")
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="GLOBS",
    help="Leave these files and folders out while walking folders; replaces the `exclude` setting "
    "and its defaults (hidden folders, node_modules, __pycache__, site-packages).",
)
@click.option("--extend-exclude", "extend_exclude", multiple=True, metavar="GLOBS", help="Leave these out too (added).")
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    "respect_gitignore",
    default=None,
    help="Leave out what .gitignore files ignore while walking folders [default: on, the `respect-gitignore` setting].",
)
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, and exit.")
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings that apply to the first PATH (a file) and where each comes from, and exit.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Check files in N parallel processes (0: one per CPU).",
)
@click.option(
    "--solver-budget",
    "solver_budget",
    type=click.IntRange(min=1),
    default=DEFAULT_BUDGET,
    show_default=True,
    metavar="STEPS",
    help="z3 resource limit per query (deterministic: the same answer on any machine and load); "
    "a query that spends it is an inconclusive proof, never a finding.",
)
@click.option(
    "--solver-timeout",
    "solver_timeout_ms",
    type=click.IntRange(min=1),
    default=DEFAULT_SAFETY_NET_MS,
    show_default=True,
    metavar="MS",
    help="Wall-clock safety net per z3 query, above the budget; reaching it is inconclusive too.",
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    default=300,
    show_default=True,
    metavar="SECONDS",
    help="Stop checking a file after this long (exit 2); 0: no limit.",
)
@click.option(
    "--file-memory",
    "file_memory_mb",
    type=click.IntRange(min=0),
    default=8192,
    show_default=True,
    metavar="MB",
    help="Memory one file's check may use (its own process); 0: no limit.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors (checks files in this process).")
@click.option(
    "--update-expectations",
    is_flag=True,
    help="Fixtures: rewrite the `// expect:` comments of the given files from actual findings "
    "(message fragments that still match are kept).",
)
@click.option(
    "--trace-svg",
    "trace_svg",
    metavar="DIR",
    help="Draw every counterexample trace (deadlocks, phase mismatches) as an SVG in DIR.",
)
@click.option(
    "--sass/--no-sass",
    "sass",
    default=None,
    help="Compile with nvcc and cross-check the SASS (TK601-TK603); skipped with one note "
    "without nvcc or real TK headers [default: the `sass` config key, else off].",
)
@click.option("--sass-arch", metavar="SM", help="Arch to build the SASS for (default: --arch), e.g. sm_90.")
@click.option(
    "--baseline",
    "baseline",
    metavar="FILE",
    help="Report only findings not recorded in FILE (written by --write-baseline) "
    "[default: the `baseline` config key].",
)
@click.option(
    "--write-baseline",
    "write_baseline",
    metavar="FILE",
    help="Record today's findings in FILE (exit 0): adopt tkcheck in an existing repository.",
)
@click.option("--fix", "fix", is_flag=True, help="Apply the fixes marked safe to the files (others are shown).")
@click.option(
    "--require-coverage",
    "require_coverage",
    type=click.FloatRange(0, 100),
    metavar="PCT",
    help="Exit 2 when a kernel is not analysed or has fewer than PCT % of its sync ops modelled "
    "[default: the `require-coverage` config key, else off].",
)
def check_command(
    paths,
    compile_commands,
    tk_include,
    include_dir,
    define,
    arch,
    tk_version,
    select,
    ignore,
    extend_select,
    per_file_ignores,
    output_format,
    output,
    statistics,
    timing,
    quiet,
    exit_zero,
    fail_level,
    show_unknown,
    no_cache,
    overrides,
    config_file,
    trust_config,
    stdin_filename,
    jobs,
    solver_budget,
    solver_timeout_ms,
    file_timeout,
    file_memory_mb,
    debug,
    update_expectations,
    trace_svg,
    sass,
    sass_arch,
    baseline,
    write_baseline,
    fix,
    require_coverage,
    exclude=(),
    extend_exclude=(),
    respect_gitignore=None,
    show_files=False,
    show_settings=False,
):
    _DEBUG["on"] = debug
    t_start = time.perf_counter()
    if not paths:
        paths = (".",)  # a bare `tkcheck` checks the current folder
    import math

    if not math.isfinite(file_timeout):
        raise UsageProblem(f"--file-timeout {file_timeout}: give a number of seconds (0: no limit)")
    FILE_MEMORY_LIMIT["bytes"] = file_memory_mb << 20
    if trace_svg:
        _check_output_folder(trace_svg, "--trace-svg")
    if baseline and write_baseline:
        raise UsageProblem("--baseline and --write-baseline: give one (write a baseline, then check against it)")
    if config_file and not Path(config_file).is_file():
        raise UsageProblem(f"--config-file {config_file}: no such file")
    from tkcheck import registry
    from tkcheck.render import render

    settings = _Settings(
        select=_split_codes(select) if select else None,
        ignore=_split_codes(ignore),
        extend_select=_split_codes(extend_select),
        per_file_ignores=_parse_per_file_ignores(per_file_ignores),
        arch=arch,
        tk_include=_tk_dirs(tk_include)[0],
        tk_version=tk_version,
        compile_commands=compile_commands,
        show_unknown=show_unknown,
        debug=debug,
        no_cache=no_cache or update_expectations,
        solver_timeout_ms=solver_timeout_ms,
        solver_budget=solver_budget,
        sass=sass,
        sass_arch=sass_arch,
        tk_extra_dirs=_tk_dirs(tk_include)[1],
        include_dirs=_include_dirs(include_dir),
        defines=_defines(define),
        exclude=_split_codes(exclude) if exclude else None,
        extend_exclude=_split_codes(extend_exclude),
        respect_gitignore=respect_gitignore,
        config_overrides=tuple(overrides),
    )
    stdin_paths = [p for p in paths if p == "-"]
    if len(stdin_paths) > 1:
        raise UsageProblem("`-` (standard input) can be given only once")
    if stdin_filename and not stdin_paths:
        raise UsageProblem("--stdin-filename needs `-` among the paths")

    if update_expectations:
        if stdin_paths:
            raise UsageProblem("--update-expectations rewrites files; it cannot read standard input")
        from tkcheck.expectations import update_expectations as rewrite

        changed = 0
        for f, _ in collect_files(paths):
            if rewrite(f):
                changed += 1
                if not quiet:
                    click.echo(f"updated {f}", err=True)
        if not quiet:
            click.echo(f"{changed} fixture(s) updated.", err=True)
        return

    configs: dict = {}

    def exclusions_for(folder: str):
        return exclusions_of(_config_for(folder, config_file, overrides, configs, trust_config), settings)

    if show_settings:
        from tkcheck.settings_report import settings_text

        target = next((p for p in paths if p != "-"), stdin_filename or ".")
        config = _config_for(target, config_file, overrides, configs, trust_config)
        opts = _options_for(os.path.abspath(target), config, replace(settings, no_cache=True))  # writes nothing
        _write_output(settings_text(target, config, opts, settings, overrides, exclusions_of(config, settings)), output)
        return
    jobs_list: list[_Job] = []
    run_notes: list[str] = []
    files = collect_files([p for p in paths if p != "-"], exclusions_for, run_notes)
    if show_files:
        _write_output("".join(os.path.normpath(f) + "\n" for f, _ in files), output)
        return
    # Absolute paths inside, so a finding's file name and the source it came from
    # always agree; the renderers print them relative to the current folder.
    for f, arg in files:
        config = _config_for(f, config_file, overrides, configs, trust_config)
        f = os.path.abspath(f)
        jobs_list.append(_Job(len(jobs_list), f, _options_for(f, config, settings)))
    if stdin_paths:
        name = os.path.abspath(stdin_filename) if stdin_filename else "<stdin>"
        config = _config_for(stdin_filename or ".", config_file, overrides, configs, trust_config)
        opts = _options_for(name, config, settings)
        jobs_list.append(_Job(len(jobs_list), name, replace(opts, cache_dir=None), text=_read_stdin()))
    if not jobs_list:
        click.echo("tkcheck: warning: no *.cu or *.cuh files found under the given paths", err=True)

    # run-wide settings (the report format) come from the config of the current folder, else the
    # first file's
    loaded = [c for k, c in configs.items() if not isinstance(k, tuple)]
    try:
        run_config = _config_for(".", config_file, overrides, {**configs}, trust_config) if loaded else None
    except UsageProblem:  # a broken config no checked file uses is not this run's business
        run_config = None
    if (run_config is None or run_config.source is None) and loaded:
        run_config = loaded[0]
    fmt = output_format or (run_config.output_format if run_config else None)
    if fmt is None:
        fmt = "full" if (not output and sys.stdout.isatty()) else "concise"

    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    progress = (
        not quiet and sys.stderr.isatty() and len(jobs_list) >= PROGRESS_MIN_FILES and os.environ.get("TERM") != "dumb"
    )
    results = run_jobs(jobs_list, workers, progress, file_timeout=file_timeout or None, isolate=not debug)

    findings = [f for res in results for f in res.findings]
    # SARIF's rule table carries each rule's documentation (every rule imported); the other
    # formats need names and severities only, from the catalog (no rule imported here)
    rules = registry.by_code() if fmt == "sarif" and not statistics else registry.catalog()
    root = Path.cwd()
    notes = None if quiet else _merge_notes(results, root)
    if notes is not None:
        from tkcheck.config import untrusted_note

        for c in loaded:
            n = untrusted_note(c)
            if n and n not in run_notes:
                run_notes.append(n)
        notes += run_notes + settings.cache_notes
    sources = {res.path: res.source for res in results}
    from tkcheck import baseline as B

    B.assign_fingerprints(findings, sources)
    if write_baseline:
        try:
            n = B.write_baseline(write_baseline, findings)
        except B.BaselineError as e:
            raise UsageProblem(str(e)) from None
        click.echo(
            f"tkcheck: {n} finding(s) recorded in the baseline {write_baseline}; "
            f"check against it with --baseline {write_baseline}",
            err=True,
        )
        if any(res.input_error or res.internal_errors for res in results):
            sys.exit(2)
        return
    baseline_file = baseline or (str(run_config.baseline) if run_config and run_config.baseline else None)
    hidden = stale = 0
    if baseline_file:
        try:
            known = B.read_baseline(baseline_file)
        except B.BaselineError as e:
            raise UsageProblem(str(e)) from None
        findings, hidden, stale = B.apply_baseline(findings, known)
        if notes is not None and (hidden or stale):
            notes.append(_baseline_line(baseline_file, hidden, stale))
    if fix:
        from tkcheck.fixes import apply_safe_fixes

        fixed, changed = apply_safe_fixes(findings, sources)
        findings = [f for f in findings if not any(f is g for g in fixed)]
        if not quiet:
            click.echo(f"tkcheck: {len(fixed)} finding(s) fixed in {len(changed)} file(s)", err=True)
    cov = _coverage_of(results, root)
    required = (
        require_coverage
        if require_coverage is not None
        else (run_config.require_coverage if run_config is not None else None)
    )
    short = _require_coverage(cov, required)
    # a pass the user asked for that did not run: told in every format, a shortfall of coverage
    skipped = list(dict.fromkeys(m for res in results for m in getattr(res, "skipped_passes", [])))
    # what decided obligations assume (tkcheck.coverage.stated_assumptions): in every format
    assumptions = list(dict.fromkeys(a for c in cov["entries"] for a in c.assumptions))
    if required is not None:
        short += [f"a requested pass did not run: {m}" for m in skipped]

    input_errors = [res.input_error for res in results if res.input_error]
    internal = [e for res in results for e in getattr(res, "internal_errors", [])]
    tool_errors = [f for f in findings if f.code == "TK000"]
    level = SEVERITY_RANK[fail_level]
    failing = [f for f in findings if SEVERITY_RANK.get(f.severity, 2) >= level]
    if input_errors or internal or tool_errors or short:
        exit_code = 2
    else:
        exit_code = 1 if failing and not exit_zero else 0
    run_info = {
        "exit_code": exit_code,
        "errors": [*input_errors, *internal]
        + [f"coverage below {required:g}%: {m}" for m in short if required is not None],
        "skipped_passes": skipped,
        "assumptions": assumptions,
        "baseline": {"file": baseline_file, "hidden": hidden, "stale": stale} if baseline_file else None,
    }
    if statistics:
        text = _statistics(findings, rules, fmt, cov)
    else:
        text = render(
            findings,
            fmt,
            rules=rules,
            sources=sources,
            files_checked=len(results),
            color=_use_color(output) and fmt == "full",
            root=root,
            notes=notes,
            coverage=cov,
            run_info=run_info,
        )
    _write_output(text, output)
    told_in_report = fmt == "full" and not statistics and notes is not None
    if not quiet and not told_in_report:
        # the machine-read formats keep stdout to findings: what the run skipped or hid goes beside
        for m in skipped:
            click.echo(f"tkcheck: warning: {m}", err=True)
        for a in assumptions:
            click.echo(f"tkcheck: note: {a}", err=True)
        if baseline_file and (hidden or stale):
            click.echo(f"tkcheck: {_baseline_line(baseline_file, hidden, stale)}", err=True)
    if not quiet and not statistics and fmt in ("concise", "github", "junit"):
        click.echo(cov["line"], err=True)
    if trace_svg:
        from tkcheck.render.trace_svg import write_trace_svgs

        try:
            written = write_trace_svgs(findings, trace_svg)
        except OSError as e:
            raise UsageProblem(f"--trace-svg {trace_svg}: cannot write: {e.strerror or e}") from None
        if not quiet:
            click.echo(f"tkcheck: {len(written)} trace(s) drawn in {trace_svg}", err=True)
    if timing:
        click.echo(_timing_report(results, time.perf_counter() - t_start), err=True, nl=False)

    if input_errors or internal or tool_errors:
        if quiet or fmt != "full" or statistics:  # otherwise the report's notes told them
            for msg in internal:
                click.echo(f"tkcheck: error: {msg}", err=True)
        sys.exit(2)
    if short:
        for msg in short:
            click.echo(f"tkcheck: error: coverage below {required:g}%: {msg}", err=True)
        sys.exit(2)
    sys.exit(exit_code)


def _baseline_line(baseline_file: str, hidden: int, stale: int) -> str:
    """How many findings a baseline hid (and how many of its records are gone)."""
    line = f"baseline {baseline_file}: {hidden} recorded finding(s) not shown"
    if stale:
        line += f"; {stale} recorded finding(s) are gone (write the baseline again to drop them)"
    return line


# ---------------------------------------------------------------- coverage


@main.command("coverage")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "-p",
    "--compile-commands",
    "compile_commands",
    metavar="DIR|FILE",
    help="Read -I/-D flags of each file from compile_commands.json (the file or its folder).",
)
@click.option(
    "--tk-include",
    metavar="DIR",
    multiple=True,
    help="Real ThunderKittens checkout, include/ folder, or another TK folder (repeatable).",
)
@click.option("-I", "--include-dir", "include_dir", metavar="DIR", multiple=True, help="Add DIR to the include path.")
@click.option("-D", "--define", "define", metavar="NAME[=VALUE]", multiple=True, help="Define a macro.")
@click.option("--arch", type=click.Choice(["sm_90a", "sm_100a"]), help="Target architecture.")
@click.option("--tk-version", type=click.Choice(["auto", "thread-scope", "lane-guarded"]))
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output-file", "output", metavar="FILE", help="Write the report to FILE.")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key.")
@click.option("--config-file", type=click.Path(dir_okay=False), help="Use this tkcheck.toml / pyproject.toml.")
@click.option(
    "--trust-config",
    is_flag=True,
    help="Honour the settings of a found config file that run programs (sass = true, confirm.build/run); "
    "without it, only the command line and --config-file switch on compilation.",
)
@click.option("--unknowns", "show_unknowns", is_flag=True, help="Text format: list each kernel's unknowns too.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Check files in N parallel processes (0: one per CPU).",
)
@click.option("--file-timeout", type=click.FloatRange(min=0), default=300, show_default=True, metavar="SECONDS")
@click.option(
    "--require-coverage",
    "require_coverage",
    type=click.FloatRange(0, 100),
    metavar="PCT",
    help="Exit 2 when a kernel is not analysed or has fewer than PCT % of its sync ops modelled.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def coverage_command(
    paths,
    compile_commands,
    tk_include,
    include_dir,
    define,
    arch,
    tk_version,
    output_format,
    output,
    overrides,
    config_file,
    trust_config,
    show_unknowns,
    jobs,
    file_timeout,
    require_coverage,
    debug,
):
    """What was modelled: per kernel (with its template arguments), whether it was analysed, why
    not, how many of its sync operations (mbarrier init/arrive/expect/wait, TMA, MMA and their
    commits, named and block barriers, fences) the model understood, and the unknowns.

    JSON: a list of objects with the keys file, kernel, analysed, reason, sync_ops,
    sync_ops_modelled, unknowns (and inconclusive). Exit status: 0, or 2 on a usage or input
    error or when --require-coverage is not met. Rules do not run (see `tkcheck check`).
    """
    _DEBUG["on"] = debug
    if not paths:
        raise click.UsageError("no PATH given")
    if config_file and not Path(config_file).is_file():
        raise UsageProblem(f"--config-file {config_file}: no such file")
    settings = _Settings(
        select=None,
        ignore=(),
        extend_select=(),
        per_file_ignores=(),
        arch=arch,
        tk_include=_tk_dirs(tk_include)[0],
        tk_version=tk_version,
        compile_commands=compile_commands,
        show_unknown=False,
        debug=debug,
        no_cache=True,
        # the limits of `tkcheck check` (deterministic budget, the far safety net): what was
        # decided must not depend on the machine's load (a 2 s net here left ring proofs of a
        # busy machine undecided that an idle one decided)
        solver_timeout_ms=DEFAULT_SAFETY_NET_MS,
        solver_budget=DEFAULT_BUDGET,
        tk_extra_dirs=_tk_dirs(tk_include)[1],
        include_dirs=_include_dirs(include_dir),
        defines=_defines(define),
    )
    configs: dict = {}
    jobs_list: list[_Job] = []
    files = collect_files(
        paths, lambda d: exclusions_of(_config_for(d, config_file, overrides, configs, trust_config), settings)
    )
    for f, arg in files:
        config = _config_for(f, config_file, overrides, configs, trust_config)
        f = os.path.abspath(f)
        opts = replace(_options_for(f, config, settings), enabled=frozenset())  # the model, no rules
        jobs_list.append(_Job(len(jobs_list), f, opts))
    results = run_jobs(
        jobs_list,
        jobs if jobs > 0 else (os.cpu_count() or 1),
        False,
        file_timeout=file_timeout or None,
        isolate=not debug,
    )
    root = Path.cwd()
    cov = _coverage_of(results, root)
    if output_format == "json":
        text = json.dumps(cov["kernels"], indent=2) + "\n"
    else:
        lines = []
        for k in cov["kernels"]:
            if k["analysed"]:
                pct = f"{100.0 * k['sync_ops_modelled'] / k['sync_ops']:.0f}%" if k["sync_ops"] else "-"
                dec = (
                    f"{k['obligations_decided']}/{k['obligations']} obligations decided "
                    f"({100.0 * k['obligations_decided'] / k['obligations']:.0f}%), "
                    if k["obligations"]
                    else ""
                )
                lines.append(
                    f"{k['file']}: {k['kernel']}: analysed, {dec}{k['sync_ops_modelled']}/{k['sync_ops']} "
                    f"sync ops modelled ({pct})"
                )
            else:
                lines.append(f"{k['file']}: {k['kernel']}: not analysed: {k['reason']}")
            if show_unknowns:
                lines += [f"    {u['location']}: {u['why']}" for u in k["unknowns"]]
            # a decision that rests on an assumption says so on every run, not only with --unknowns
            lines += [f"    assumption: {a}" for a in k.get("assumptions", [])]
        for res in results:
            if res.input_error:
                lines.append(f"{display_path_of(res.path, root)}: not read: {res.input_error}")
        lines.append(cov["line"])
        text = "\n".join(lines) + "\n"
    _write_output(text, output)
    required = (
        require_coverage
        if require_coverage is not None
        else next(
            (
                c.require_coverage
                for k, c in configs.items()
                if not isinstance(k, tuple) and c.require_coverage is not None
            ),
            None,
        )
    )
    short = _require_coverage(cov, required)
    internal = [e for res in results for e in getattr(res, "internal_errors", [])]
    for msg in internal:
        click.echo(f"tkcheck: error: {msg}", err=True)
    for msg in short:
        click.echo(f"tkcheck: error: coverage below {required:g}%: {msg}", err=True)
    sys.exit(2 if short or internal or any(res.input_error for res in results) else 0)


def display_path_of(path: str, root: Path) -> str:
    from tkcheck.render._common import display_path

    return display_path(path, root)


# ---------------------------------------------------------------- rule


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule_command(code, show_all, output_format):
    """Explain a rule (a code like TK301, or its name), or list them all with --all."""
    from tkcheck import registry

    if show_all == bool(code):
        raise click.UsageError("give a rule code (tkcheck rule TK301) or --all")
    if show_all:
        rules = registry.all_rules()
        if output_format == "json":
            click.echo(json.dumps([r.to_json() for r in rules], indent=2))
            return
        width = max((len(r.name) for r in rules), default=4)
        for r in rules:
            click.echo(f"{r.code}  {r.name:<{width}}  {r.contract:<11} {r.severity:<7} {r.summary}")
        return
    r = registry.get(code)
    if r is None:
        import difflib

        names = [x.code for x in registry.all_rules()] + [x.name for x in registry.all_rules()]
        close = difflib.get_close_matches(code, names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else "; `tkcheck rule --all` lists them"
        raise UsageProblem(f"unknown rule '{code}'{hint}")
    if output_format == "json":
        click.echo(json.dumps(r.to_json(), indent=2))
        return
    click.echo(f"# {r.code} {r.name}\n")
    facts = [f"contract: {r.contract}", f"severity: {r.severity}", f"precision: {r.precision}"]
    if r.symptom:
        facts.append(f"symptom: {r.symptom}")
    facts.append("arch: " + ", ".join(r.arch))
    click.echo(" · ".join(facts) + "\n")
    click.echo(r.summary + "\n")
    click.echo(r.doc.rstrip())


# ---------------------------------------------------------------- eval


@main.command("eval")
@click.argument("corpus", required=False, default="corpus", metavar="[CORPUS_DIR]")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--tk-include", metavar="DIR", help="ThunderKittens checkout or include/ folder for the nvcc baseline.")
@click.option("--no-nvcc", is_flag=True, help="Skip the nvcc compile-time baseline.")
@click.option("--only", multiple=True, metavar="ID", help="Run only these mutation ids (prefixes allowed).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a mutation is missed or a clean kernel has findings.")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def eval_command(corpus, as_json, tk_include, no_nvcc, only, exit_zero, debug):
    """Measure recall and false findings on the corpus and its planted bugs.

    Checks every clean kernel under CORPUS_DIR (any finding is a false finding)
    and every `[[mutation]]` of CORPUS_DIR/mutations*.toml. Exit 1 when a
    mutation of an implemented rule is missed or a clean kernel has findings.
    """
    _DEBUG["on"] = debug
    from tkcheck import evaluate

    if not Path(corpus).is_dir():
        raise UsageProblem(f"{corpus}: not a folder")
    try:
        report = evaluate.run_eval(
            Path(corpus), tk_root=tk_include, nvcc=not no_nvcc, only=only, debug=debug, progress=sys.stderr.isatty()
        )
    except evaluate.SpecError as e:
        raise UsageProblem(str(e)) from None
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo(evaluate.format_report(report), nl=False)
    sys.exit(0 if exit_zero or report.ok else 1)


# ---------------------------------------------------------------- commands from other modules


def _register_module(group: click.Group, name: str):
    """Import a module that adds commands (`register_cli(group)`), when one of them is used."""
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - a broken plug-in must not break `tkcheck check`
        click.echo(f"tkcheck: warning: commands of {name} not loaded: {type(e).__name__}: {e}", err=True)
        return
    register = getattr(mod, "register_cli", None)
    if callable(register):
        register(group)


if __name__ == "__main__":  # pragma: no cover
    main()
