#!/usr/bin/env python3
"""Cost and quality of tkcheck on the corpus, as a markdown table.

For every corpus kernel: tkcheck's wall time, cold (a fresh process, no cache;
median of --runs) and its peak memory (the child's maximum RSS, from wait4),
against `nvcc -cubin` on the same kernel with the real ThunderKittens headers
where nvcc and the headers are at hand; then the quality table of `tkcheck
eval` (planted bugs found, false findings on clean kernels).

    python scripts/bench.py                       # print the tables
    python scripts/bench.py --write docs/BENCHMARKS.md

`--write` replaces the marked sections (<!-- bench:start --> ... <!-- bench:end -->
and <!-- eval:start --> ... <!-- eval:end -->) and leaves the rest of the page
alone. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tkcheck import __version__, evaluate

SECTIONS = ("bench", "bench-real", "tk-tree", "eval")


def tkcheck_cold(kernel: Path, runs: int, cwd: Path) -> list[evaluate.Measurement]:
    # a fresh process per run, with Python's bytecode cache as an installed tool has it (pip writes
    # it at install): an environment that sets PYTHONDONTWRITEBYTECODE would otherwise make every
    # run recompile tkcheck's sources (~0.12 s); one unmeasured run writes the cache first
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONSAFEPATH": "1", "NO_COLOR": "1"})
    argv = [
        sys.executable,
        "-m",
        "tkcheck",
        "check",
        "--no-cache",
        "-q",
        "--exit-zero",
        "--output-format",
        "concise",
        str(kernel),
    ]
    evaluate.measure(argv, cwd=str(cwd), env=env, timeout=600)
    return [evaluate.measure(argv, cwd=str(cwd), env=env, timeout=600) for _ in range(runs)]


def tkcheck_real_headers(kernel: Path, runs: int, tk_root: Path, work: Path) -> tuple[list, evaluate.Measurement]:
    """Cold runs (a fresh process each) against the real TK headers, as a pre-commit hook or a
    CI job runs once its cache folder exists: the precompiled TK headers kept, no result cached
    (the results folder is emptied before every run). Returns the runs and the first run of all
    (which builds the precompiled headers)."""
    import shutil

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONSAFEPATH": "1", "NO_COLOR": "1"})
    cache = work / ".tkcheck_cache"
    shutil.rmtree(cache, ignore_errors=True)
    argv = [
        sys.executable,
        "-m",
        "tkcheck",
        "check",
        "-q",
        "--exit-zero",
        "--output-format",
        "concise",
        "--tk-include",
        str(tk_root),
        str(kernel),
    ]
    first = evaluate.measure(argv, cwd=str(work), env=env, timeout=600)
    out = []
    for _ in range(runs):
        shutil.rmtree(cache / "results", ignore_errors=True)
        out.append(evaluate.measure(argv, cwd=str(work), env=env, timeout=600))
    return out, first


def bench_real_table(corpus: Path, runs: int, nvcc_runs: int, tk_include: str | None) -> str:
    nvcc = evaluate.find_nvcc()
    tk_root = evaluate.find_tk_root(tk_include, corpus.resolve().parent)
    if nvcc is None or tk_root is None:
        return "Not measured: needs nvcc and ThunderKittens headers (--tk-include, $TK_ROOT or third_party/).\n"
    lines = [
        "| kernel | tkcheck ms (first run, builds the PCH) | tkcheck ms (cold, PCH kept, median) | "
        "nvcc -cubin ms | time ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    ts, ns = [], []
    with tempfile.TemporaryDirectory(prefix="tkcheck-bench-real-") as tmp:
        for kernel in evaluate.clean_kernels(corpus):
            rel = kernel.relative_to(corpus).as_posix()
            print(f"bench (real headers): {rel}", file=sys.stderr)
            runs_, first = tkcheck_real_headers(kernel.resolve(), runs, tk_root, Path(tmp))
            t = statistics.median(m.seconds for m in runs_)
            nv = [m for m in nvcc_fresh(kernel.resolve(), nvcc, tk_root, nvcc_runs) if m.ok]
            nv_t = statistics.median(m.seconds for m in nv) if nv else None
            if nv_t:
                ts.append(t)
                ns.append(nv_t)
            lines.append(f"| `{rel}` | {_ms(first.seconds)} | {_ms(t)} | {_ms(nv_t)} | {_ratio(t, nv_t)} |")
    if ts:
        lines.append(
            f"| **median** | | {_ms(statistics.median(ts))} | {_ms(statistics.median(ns))} | "
            f"{_ratio(statistics.median(ts), statistics.median(ns))} |"
        )
    return (
        "\n".join(lines) + "\n\ntkcheck: `python -m tkcheck check --tk-include <tk>` in a fresh process per run, "
        f"{runs} run(s) per kernel after a first one that builds the precompiled TK headers under the cache "
        "folder; the cached results are removed before every run. nvcc as in the table above.\n"
    )


def tk_tree_time(tree: Path, tk_root: Path, jobs: int) -> str:
    """The whole tree with -j N: a first run (precompiled headers built) and a second one with them
    kept (no result cached)."""
    import shutil

    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory(prefix="tkcheck-bench-tree-") as tmp:
        argv = [
            sys.executable,
            "-m",
            "tkcheck",
            "check",
            "-q",
            "--exit-zero",
            "--output-format",
            "concise",
            "-j",
            str(jobs),
            "--tk-include",
            str(tk_root),
            str(tree),
        ]
        first = evaluate.measure(argv, cwd=tmp, env=env, timeout=3600)
        shutil.rmtree(Path(tmp) / ".tkcheck_cache" / "results", ignore_errors=True)
        warm = evaluate.measure(argv, cwd=tmp, env=env, timeout=3600)
    n = sum(1 for p in tree.rglob("*") if p.suffix in (".cu", ".cuh"))
    return (
        f"| run | wall s |\n|---|---:|\n| first (builds the precompiled headers) | {first.seconds:.1f} |\n"
        f"| precompiled headers kept, no result cached | {warm.seconds:.1f} |\n\n"
        f"`tkcheck check -j {jobs} --tk-include <tk> <tk>/kernels` over {n} files.\n"
    )


def nvcc_fresh(kernel: Path, nvcc: str, tk_root: Path, runs: int) -> list[evaluate.Measurement]:
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="tkcheck-bench-") as tmp:
            out.append(evaluate.measure(evaluate.nvcc_command(nvcc, tk_root, kernel, Path(tmp) / "k.cubin")))
    return out


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 1000:.0f}"


def _mb(kb: int | None) -> str:
    return "n/a" if kb is None else f"{kb / 1024:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.3f}"


def bench_table(
    corpus: Path, runs: int, nvcc_runs: int, tk_include: str | None, use_nvcc: bool, cwd: Path
) -> tuple[str, str]:
    nvcc = evaluate.find_nvcc() if use_nvcc else None
    tk_root = evaluate.find_tk_root(tk_include, corpus.resolve().parent) if use_nvcc else None
    if not use_nvcc:
        nvcc_note = "nvcc: skipped (--no-nvcc)"
    elif nvcc is None:
        nvcc_note = "nvcc: n/a (not on PATH)"
    elif tk_root is None:
        nvcc_note = "nvcc: n/a (no ThunderKittens headers: --tk-include, $TK_ROOT or third_party/ThunderKittens)"
    else:
        nvcc_note = (
            "nvcc: `nvcc " + " ".join(evaluate.NVCC_FLAGS) + " -I <tk>/include -I <tk>/prototype -cubin`"
            " (blackwell/ kernels: `" + " ".join(evaluate.NVCC_ARCH["sm_100a"]) + "`)"
            f" ({nvcc_version(nvcc)}), {nvcc_runs} run(s) per kernel"
        )
    lines = [
        "| kernel | tkcheck ms (cold, median) | tkcheck peak MB | nvcc -cubin ms | nvcc peak MB "
        "| time ratio | memory ratio | tkcheck exit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    t_all, n_all = [], []
    for kernel in evaluate.clean_kernels(corpus):
        rel = kernel.relative_to(corpus).as_posix()
        print(f"bench: {rel}", file=sys.stderr)
        tk = tkcheck_cold(kernel.resolve(), runs, cwd)
        t = statistics.median(m.seconds for m in tk)
        peak = max(m.peak_kb for m in tk)
        exits = sorted({m.returncode for m in tk})
        nv_t = nv_peak = None
        if nvcc and tk_root:
            nv = [m for m in nvcc_fresh(kernel.resolve(), nvcc, tk_root, nvcc_runs) if m.ok]
            if nv:
                nv_t = statistics.median(m.seconds for m in nv)
                nv_peak = max(m.peak_kb for m in nv)
                t_all.append(t)
                n_all.append(nv_t)
        lines.append(
            f"| `{rel}` | {_ms(t)} | {_mb(peak)} | {_ms(nv_t)} | {_mb(nv_peak)} | {_ratio(t, nv_t)} "
            f"| {_ratio(peak, nv_peak)} | {','.join(map(str, exits))} |"
        )
    if t_all:
        lines.append(
            f"| **median** | {_ms(statistics.median(t_all))} | | {_ms(statistics.median(n_all))} | "
            f"| {_ratio(statistics.median(t_all), statistics.median(n_all))} | | |"
        )
    note = (
        f"tkcheck: `python -m tkcheck check --no-cache` in a fresh process per run, {runs} run(s) per kernel "
        "(interpreter start-up included, bytecode cache written by one unmeasured run first); peak memory is "
        "the child's maximum resident set size.\n"
        f"{nvcc_note}."
    )
    return "\n".join(lines) + "\n", note


def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    m = re.search(r"release ([\d.]+)", out)
    return f"CUDA {m.group(1)}" if m else "version unknown"


def header(cwd: Path) -> str:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    machine = (
        f"{os.cpu_count()} CPUs ({platform.machine()}), {platform.system()}, "
        f"Python {platform.python_version()}, tkcheck {__version__}"
    )
    return f"Measured {date} at commit `{commit}` on {machine}."


def replace_section(page: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(page):
        return pattern.sub(lambda _: block, page, count=1)
    title = {
        "bench": "## Cost per kernel",
        "eval": "## Quality on the corpus",
        "bench-real": "## Cost per kernel with the real headers",
        "tk-tree": "## ThunderKittens' kernels/ tree",
    }[name]
    return page.rstrip() + f"\n\n{title}\n\n{block}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default="corpus", help="corpus folder [corpus]")
    ap.add_argument("--runs", type=int, default=5, help="cold tkcheck runs per kernel (median) [5]")
    ap.add_argument("--nvcc-runs", type=int, default=1, help="nvcc runs per kernel (median) [1]")
    ap.add_argument("--tk-include", help="ThunderKittens checkout or include/ folder for nvcc")
    ap.add_argument("--no-nvcc", action="store_true", help="skip the nvcc baseline")
    ap.add_argument("--no-eval", action="store_true", help="skip the quality table")
    ap.add_argument("--no-real-headers", action="store_true", help="skip the table with the real TK headers")
    ap.add_argument("--tk-tree", metavar="DIR", help="also time tkcheck over this folder (TK's kernels/) with -j 2")
    ap.add_argument("--write", metavar="PAGE", help="update the marked sections of PAGE (docs/BENCHMARKS.md)")
    args = ap.parse_args(argv)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"bench: {corpus}: not a folder (run from the repository root)", file=sys.stderr)
        return 2
    cwd = Path.cwd()
    head = header(cwd)
    table, note = bench_table(corpus, max(args.runs, 1), max(args.nvcc_runs, 1), args.tk_include, not args.no_nvcc, cwd)
    bench_body = f"{head}\n\n{table}\n{note}\n"
    out = ["## Cost per kernel", "", bench_body]
    real_body = tree_body = None
    if not args.no_real_headers and not args.no_nvcc:
        real_body = f"{head}\n\n" + bench_real_table(corpus, max(args.runs, 1), max(args.nvcc_runs, 1), args.tk_include)
        out += ["## Cost per kernel with the real headers", "", real_body]
    if args.tk_tree:
        tk_root = evaluate.find_tk_root(args.tk_include, corpus.resolve().parent)
        if tk_root is not None:
            tree_body = f"{head}\n\n" + tk_tree_time(Path(args.tk_tree), tk_root, 2)
            out += ["## ThunderKittens' kernels/ tree", "", tree_body]
    eval_body = None
    if not args.no_eval:
        print("bench: eval", file=sys.stderr)
        report = evaluate.run_eval(corpus, tk_root=args.tk_include, nvcc=not args.no_nvcc)
        t = report.total
        eval_body = (
            f"{head}\n\n{evaluate.quality_table(report)}\n"
            f"Planted bugs found: {t.found} of {t.planted}; false findings on {len(report.clean)} clean "
            f"kernels: {t.false_findings}; mutations waiting for rules not yet implemented: "
            f"{sum(o.status == 'not-implemented' for o in report.mutations)}. "
            f"Median ms per kernel: tkcheck in one process, no cache; ratio to nvcc -cubin: "
            f"{report.nvcc_status}.\n"
        )
        out += ["## Quality on the corpus", "", eval_body]
    print("\n".join(out))
    if args.write:
        page_path = Path(args.write)
        page = (
            page_path.read_text(encoding="utf-8")
            if page_path.exists()
            else (
                "# Benchmarks\n\nWritten by `python scripts/bench.py --write docs/BENCHMARKS.md`; "
                "the numbers between the markers are replaced on every run.\n"
            )
        )
        page = replace_section(page, "bench", bench_body)
        if real_body is not None:
            page = replace_section(page, "bench-real", real_body)
        if tree_body is not None:
            page = replace_section(page, "tk-tree", tree_body)
        if eval_body is not None:
            page = replace_section(page, "eval", eval_body)
        page_path.parent.mkdir(parents=True, exist_ok=True)
        page_path.write_text(page, encoding="utf-8")
        print(f"bench: wrote {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
