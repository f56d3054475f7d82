"""Everything tkcheck says about a set of files, as stable text, to compare two versions line by line.

    python scripts/findings_snapshot.py corpus fixtures -o /tmp/before.txt
    python scripts/findings_snapshot.py <TK>/kernels --tk-include <TK> -o /tmp/tk-before.txt
    ... change the code ...
    python scripts/findings_snapshot.py corpus fixtures -o /tmp/after.txt && diff /tmp/before.txt /tmp/after.txt

A behaviour-preserving change (a refactoring) must leave the snapshot identical: every finding
with its code, place, message, witness, trace, related notes, help and fixes, and every kernel's
coverage (analysed or why not, sync operations modelled, unknowns). Paths are written relative
to the folder each PATH names, so snapshots taken from two clones compare equal.

Flags after the paths (`--tk-include`, `-I`, `-D`, `--arch`, `--exclude GLOB`, `-j N`) are passed
to both `tkcheck check` and `tkcheck coverage`; the cache is never used. No file time limit
(`--file-timeout 0`): a snapshot must not depend on how loaded the machine is (the default 300 s
stops a large kernel's check on a busy machine and its findings vanish from the JSON). A file
whose check still could not finish (a crash, the memory limit) is written as an `error` line.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the clone whose tkcheck is measured


def files_under(path: Path, excludes: list[str]) -> list[Path]:
    if path.is_file():
        return [path]
    return [
        p
        for p in sorted(path.rglob("*"))
        if p.suffix in (".cu", ".cuh")
        and p.is_file()
        and not any(fnmatch.fnmatch(p.relative_to(path).as_posix(), g) for g in excludes)
    ]


def run_json(command: str, files: list[Path], flags: list[str]) -> list[dict]:
    env = {
        **os.environ,
        "PYTHONSAFEPATH": "1",
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    args = [sys.executable, "-m", "tkcheck", command, *flags, "--output-format", "json", "--file-timeout", "0"]
    if command == "check":
        args += ["--no-cache", "--exit-zero", "-q"]
    out = subprocess.run([*args, *map(str, files)], capture_output=True, text=True, env=env)
    if out.returncode not in (0, 1, 2) or not out.stdout.strip():
        sys.exit(f"tkcheck {command} failed (exit {out.returncode}): {out.stderr[-2000:]}")
    ERRORS.extend(
        f"{command}: {line.strip()}"
        for line in out.stderr.splitlines()
        if "stopped:" in line or "internal error while checking" in line
    )
    return json.loads(out.stdout)


ERRORS: list[str] = []  # files whose check could not finish, as tkcheck said on stderr


def relative(obj, roots: list[tuple[str, str]]):
    """Replace every absolute or cwd-relative path of a checked file by 'ROOTNAME/rel'."""
    if isinstance(obj, dict):
        return {k: relative(v, roots) for k, v in obj.items()}
    if isinstance(obj, list):
        return [relative(v, roots) for v in obj]
    if isinstance(obj, str):
        for prefix, name in roots:
            if obj.startswith(prefix):
                return name + obj[len(prefix) :]
    return obj


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("-j", "--jobs", default="2")
    ap.add_argument("--tk-include", action="append", default=[])
    ap.add_argument("-I", dest="includes", action="append", default=[])
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--arch")
    a = ap.parse_args(argv)
    flags = ["-j", a.jobs]
    flags += [x for t in a.tk_include for x in ("--tk-include", t)]
    flags += [x for i in a.includes for x in ("-I", i)]
    flags += [x for d in a.defines for x in ("-D", d)]
    if a.arch:
        flags += ["--arch", a.arch]
    files = [f for p in a.paths for f in files_under(p, a.exclude)]
    if not files:
        sys.exit("no .cu/.cuh files under the paths given")
    roots = []
    for p in a.paths:
        base = p if p.is_dir() else p.parent
        for spelled in {str(base.resolve()), str(base), os.path.normpath(str(base))}:
            roots.append((spelled.rstrip("/") + "/", base.resolve().name + "/"))
    roots.sort(key=lambda r: -len(r[0]))
    lines = []
    for f in relative(run_json("check", files, flags), roots):
        f.pop("fingerprint", None)  # a hash of the path, which differs between clones
        lines.append("finding " + json.dumps(f, sort_keys=True))
    for c in relative(run_json("coverage", files, flags), roots):
        lines.append("coverage " + json.dumps(c, sort_keys=True))
    for e in ERRORS:
        for prefix, name in roots:
            e = e.replace(prefix, name)
        lines.append("error " + json.dumps(e))
    lines.sort()
    text = "\n".join(lines) + "\n"
    if a.output:
        a.output.write_text(text)
        print(
            f"{sum(l.startswith('finding') for l in lines)} findings, "
            f"{sum(l.startswith('coverage') for l in lines)} kernels, {len(files)} files, "
            f"{len(ERRORS)} not finished -> {a.output}"
        )
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
