"""Historical ThunderKittens bugs: tkcheck on the buggy parent and on the fixing commit.

    python scripts/history_pairs.py <bare or normal TK git dir> [--pairs scripts/data/tk_history_pairs.toml]
        [--write docs/BENCHMARKS.md]

For each (fixing commit, file) of the pairs file, the parent's and the fix's versions of the file,
its folder and TK's headers (include/, prototype/, or the 2024 src/) are unpacked into a
temporary folder (removed afterwards; nothing is kept or copied into this repository), and
`tkcheck check` and `tkcheck coverage` run on each. The table says whether each version parses
(TK000), how many of its kernels were analysed, the findings only the buggy version has
(candidates for the bug, to be read by hand), and the findings both have.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def git(gitdir: str, *args: str, out=None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=out is None, stdout=out, check=False)


def unpack(gitdir: str, commit: str, file: str, dest: Path) -> bool:
    dest.mkdir(parents=True, exist_ok=True)
    top = file.split("/")[0]  # the file's whole tree: its own headers (../common.cuh)
    paths = [
        p
        for p in ("include", "prototype", "src", top)
        if git(gitdir, "cat-file", "-e", f"{commit}:{p}").returncode == 0
    ]
    archive = dest / "a.tar"
    with open(archive, "wb") as fh:
        if git(gitdir, "archive", commit, *paths, out=fh).returncode != 0:
            return False
    ok = subprocess.run(["tar", "-xf", str(archive), "-C", str(dest)], capture_output=True).returncode == 0
    archive.unlink()
    return ok and (dest / file).is_file()


def run(tree: Path, file: str, arch: str, defines=()) -> dict:
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    base = [sys.executable, "-m", "tkcheck"]
    flags = ["--tk-include", str(tree), "--arch", arch, "-I", str((tree / file).parent)]
    for d in defines:  # TK before 2.0 selected its arch with -D KITTENS_*
        flags += ["-D", d]
    chk = subprocess.run(
        base + ["check", "--no-cache", "--output-format", "json", *flags, file],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
    )
    cov = subprocess.run(
        base + ["coverage", "--output-format", "json", *flags, file], cwd=tree, capture_output=True, text=True, env=env
    )
    findings = json.loads(chk.stdout or "[]")
    kernels = json.loads(cov.stdout or "[]")
    return {
        "tk000": [f["message"] for f in findings if f["code"] == "TK000"],
        "findings": [(f["code"], f["location"]["row"], f["message"]) for f in findings if f["code"] != "TK000"],
        "kernels": len(kernels),
        "analysed": sum(1 for k in kernels if k["analysed"]),
    }


def table(gitdir: str, pairs: list[dict]) -> str:
    rows = [
        "| fixing commit | file | what | buggy: parses / analysed | fixed: parses / analysed | "
        "findings only on the buggy version | on both |",
        "|---|---|---|---|---|---|---|",
    ]
    tally = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="tkcheck-history-") as tmp:
        for i, p in enumerate(pairs):
            fix = p["commit"]
            parent = git(gitdir, "rev-parse", "--short", f"{fix}^").stdout.decode().strip()
            res = {}
            for side, commit in (("buggy", parent), ("fixed", fix)):
                tree = Path(tmp) / f"{i}-{side}"
                res[side] = (
                    run(tree, p["file"], p.get("arch", "sm_90a"), p.get("defines", ()))
                    if unpack(gitdir, commit, p["file"], tree)
                    else None
                )
                shutil.rmtree(tree, ignore_errors=True)
            b, f = res["buggy"], res["fixed"]
            if b is None or f is None:
                rows.append(f"| `{fix}` | `{p['file']}` | {p.get('what', '')} | not unpacked | | | |")
                continue
            tally["pairs"] += 1
            tally["buggy parses"] += not b["tk000"]
            tally["fixed parses"] += not f["tk000"]
            fixed_keys = {(c, m) for c, _, m in f["findings"]}
            only = sorted({f"{c} (line {r})" for c, r, m in b["findings"] if (c, m) not in fixed_keys})
            both = sorted({c for c, _, m in b["findings"] if (c, m) in fixed_keys})
            tally["pairs with a finding only on the buggy side"] += bool(only)

            def status(x):
                return (
                    "parses" if not x["tk000"] else f"TK000: {x['tk000'][0][:60]}"
                ) + f" / {x['analysed']} of {x['kernels']}"

            rows.append(
                f"| `{fix}` | `{p['file']}` | {p.get('what', '')} | {status(b)} | {status(f)} | "
                f"{', '.join(only) or '-'} | {', '.join(both) or '-'} |"
            )
    summary = ", ".join(f"{k}: {v}" for k, v in tally.items())
    return "\n".join(rows) + f"\n\n{summary}.\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gitdir", help="a ThunderKittens git directory (bare, or a clone's .git)")
    ap.add_argument("--pairs", default=str(ROOT / "scripts" / "data" / "tk_history_pairs.toml"))
    ap.add_argument("--write", metavar="MARKDOWN")
    args = ap.parse_args()
    pairs = tomllib.loads(Path(args.pairs).read_text())["pair"]
    text = table(args.gitdir, pairs)
    if args.write:
        from coverage_report import write  # the same markers

        write(text, "tk-history", Path(args.write))
    print(text, end="")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
