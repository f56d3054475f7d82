"""Coverage and findings of tkcheck over a checkout nobody here wrote, as a table for BENCHMARKS.md.

    python scripts/coverage_report.py <ThunderKittens>/kernels --name tk-head --tk-include <ThunderKittens> \\
        --exclude 'gemm/baselines/*' --exclude '*/launch.cu' --write docs/BENCHMARKS.md

Runs `tkcheck coverage` and `tkcheck check` (JSON, -j N) over the path (files or a folder) and
prints, or writes between `<!-- coverage:NAME:start -->` / `<!-- coverage:NAME:end -->` markers:
files, kernels found / analysed, sync ops modelled, what the checks left undecided, TK000 by
cause, findings by rule, wall time. Nothing of the checkout is copied anywhere; the table names
files relative to the path given.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import fnmatch
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def files_under(path: Path, excludes: list[str]) -> list[Path]:
    if path.is_file():
        return [path]
    out = []
    for p in sorted(path.rglob("*")):
        if p.suffix in (".cu", ".cuh") and p.is_file():
            rel = p.relative_to(path).as_posix()
            if not any(fnmatch.fnmatch(rel, g) for g in excludes):
                out.append(p)
    return out


def tkcheck(args: list[str], cwd: Path) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tkcheck", *args], cwd=cwd, capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr, time.perf_counter() - t


def commit_of(path: Path) -> str:
    for cand in [path, *path.parents]:
        head = cand / ".tkcheck-commit"
        if head.is_file():
            return head.read_text().strip()
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or "?"
    except OSError:
        return "?"


def report(args) -> str:
    base = Path(args.path).resolve()
    files = files_under(base, args.exclude)
    cwd = base if base.is_dir() else base.parent
    rels = [str(f.relative_to(cwd)) for f in files]
    common = []
    for d in args.tk_include:
        common += ["--tk-include", str(Path(d).resolve())]
    for d in args.include:
        common += ["-I", str(Path(d).resolve())]
    for d in args.define:
        common += ["-D", d]
    if args.arch:
        common += ["--arch", args.arch]
    rc, out, err, t_cov = tkcheck(["coverage", "--output-format", "json", "-j", str(args.jobs), *common, *rels], cwd)
    kernels = json.loads(out or "[]")
    rc, out, err, t_check = tkcheck(
        ["check", "--no-cache", "--output-format", "json", "-j", str(args.jobs), *common, *rels], cwd
    )
    findings = json.loads(out or "[]")
    analysed = [k for k in kernels if k["analysed"]]
    ops = sum(k["sync_ops"] for k in analysed)
    mod = sum(k["sync_ops_modelled"] for k in analysed)
    undecided = sum(k.get("undecided", 0) for k in analysed)
    obl = sum(k.get("obligations", 0) for k in analysed)
    dec = sum(k.get("obligations_decided", 0) for k in analysed)
    reasons = collections.Counter(re.sub(r"\s*\(.*$", "", k["reason"] or "")[:70] for k in kernels if not k["analysed"])
    tk000 = collections.Counter(re.sub(r"'[^']*'", "'…'", f["message"])[:90] for f in findings if f["code"] == "TK000")
    by_rule = collections.Counter(f["code"] for f in findings if f["code"] != "TK000")
    tk000_files = len({f["filename"] for f in findings if f["code"] == "TK000"})
    date = datetime.date.today().isoformat()
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        f"Measured {date} at tkcheck commit `{sha}` on {os.cpu_count()} CPUs ({platform.machine()}), "
        f"over `{args.label or base.name}` (checkout commit `{commit_of(base)}`), flags: "
        f"`{' '.join(_shown(common, args))}`"
        + (f", excluded: {', '.join(f'`{g}`' for g in args.exclude)}" if args.exclude else "")
        + ".",
        "",
        "| what | value |",
        "|---|---:|",
        f"| files | {len(files)} |",
        f"| files ending in TK000 | {tk000_files} |",
        f"| kernels found (instantiations counted one by one) | {len(kernels)} |",
        f"| kernels analysed | {len(analysed)} ({_pct(len(analysed), len(kernels))}) |",
        f"| proof obligations in analysed kernels / decided | {obl} / {dec} ({_pct(dec, obl)}) |",
        f"| sync ops in analysed kernels / modelled | {ops} / {mod} ({_pct(mod, ops)}) |",
        f"| barrier accounts and wait phases the checks left undecided | {undecided} |",
        f"| findings (TK000 excluded) | {sum(by_rule.values())} |",
        f"| wall time: coverage / check (-j {args.jobs}) | {t_cov:.1f} s / {t_check:.1f} s |",
    ]
    if reasons:
        lines += [
            "",
            "Kernels not analysed, by reason: " + "; ".join(f"{r or '?'} ({n})" for r, n in sorted(reasons.items())),
        ]
    if tk000:
        lines += ["", "TK000 by cause: " + "; ".join(f"{m} ({n})" for m, n in sorted(tk000.items()))]
    if by_rule:
        lines += ["", "Findings by rule: " + ", ".join(f"{c} {n}" for c, n in sorted(by_rule.items()))]
    lines += [
        "",
        f"Command: `python scripts/coverage_report.py <checkout>/{base.name} --name {args.name} "
        + " ".join(_shown(common, args))
        + "".join(f" --exclude '{g}'" for g in args.exclude)
        + "`",
    ]
    return "\n".join(lines) + "\n"


def _shown(common: list[str], args) -> list[str]:
    """The flags with this machine's paths replaced by placeholders."""
    out = []
    repl = {str(Path(d).resolve()): "<tk>" for d in args.tk_include}
    repl.update({str(Path(d).resolve()): f"<{Path(d).name}>" for d in args.include})
    for a in common:
        out.append(repl.get(a, a))
    return out


def _pct(a, b) -> str:
    return f"{100.0 * a / b:.0f}%" if b else "-"


def write(section: str, name: str, target: Path):
    text = target.read_text()
    start, end = f"<!-- coverage:{name}:start -->", f"<!-- coverage:{name}:end -->"
    block = f"{start}\n{section}{end}"
    if start in text and end in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    target.write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a checkout folder (or file) to run over")
    ap.add_argument("--name", required=True, help="the section's name in BENCHMARKS.md")
    ap.add_argument("--label", help="how the table names the path (default: its folder name)")
    ap.add_argument("--tk-include", action="append", default=[])
    ap.add_argument("-I", "--include", action="append", default=[])
    ap.add_argument("-D", "--define", action="append", default=[])
    ap.add_argument("--arch")
    ap.add_argument("--exclude", action="append", default=[], help="glob relative to the path (repeatable)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--write", metavar="MARKDOWN", help="write the table into this file between the markers")
    args = ap.parse_args()
    section = report(args)
    if args.write:
        write(section, args.name, Path(args.write))
    print(section, end="")


if __name__ == "__main__":
    main()
