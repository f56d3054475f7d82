"""Time a command the way hyperfine does, with CPU time beside wall time (a shared, loaded
machine stretches wall time; the CPU time a run costs moves far less).

    python3 scripts/startup_time.py [-n RUNS] [--warmup N] [--cwd DIR] [--env K=V ...] -- CMD ARGS...

Runs CMD (after --warmup unmeasured runs) RUNS times, one after the other, and prints the
median, minimum and maximum of the wall time and of the CPU time (user + system of the
command and its children, from the kernel's rusage), plus the exit statuses seen. `--json`
prints the same as a JSON object.

`--imports` runs the command with Python's import profiler on (PYTHONPROFILEIMPORTTIME, which a
forked child keeps) and prints, as the median over the runs, the time spent importing, summed
over the modules' own ("self") times and grouped: tkcheck's rules, renderers, checks, front end,
the rest of tkcheck, z3, libclang's bindings, click, everything else.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def measure(cmd: list[str], runs: int, warmup: int, cwd: str | None, env: dict[str, str]) -> dict:
    walls: list[float] = []
    cpus: list[float] = []
    codes: set[int] = set()
    for i in range(warmup + runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i < warmup:
            continue
        walls.append(wall)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        codes.add(done.returncode)

    def stats(xs: list[float]) -> dict[str, float]:
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}

    return {"runs": runs, "wall_s": stats(walls), "cpu_s": stats(cpus), "exit_codes": sorted(codes)}


GROUPS = (
    ("tkcheck.rules", "rules"),
    ("tkcheck.render", "renderers"),
    ("tkcheck.checks", "checks"),
    ("tkcheck.frontend", "front end"),
    ("tkcheck", "rest of tkcheck"),
    ("z3", "z3"),
    ("clang", "libclang bindings"),
    ("click", "click"),
)


def import_times(cmd: list[str], runs: int, cwd: str | None, env: dict[str, str]) -> dict[str, float]:
    """Median seconds of import (self times) per group, over `runs` runs."""
    per_run: list[dict[str, float]] = []
    for _ in range(runs):
        done = subprocess.run(cmd, cwd=cwd, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True, text=True)
        sums: dict[str, float] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _, name = (p.strip() for p in line[len("import time:") :].split("|"))
            group = next((g for prefix, g in GROUPS if name == prefix or name.startswith(prefix + ".")), "other")
            sums[group] = sums.get(group, 0.0) + int(self_us) / 1e6
        sums["total"] = sum(sums.values())
        per_run.append(sums)
    keys = sorted({k for r in per_run for k in r})
    return {k: statistics.median(r.get(k, 0.0) for r in per_run) for k in keys}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cwd")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="set (K=) or unset (K) a variable")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--imports", action="store_true", help="import times per group instead of run times")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd or a.runs < 1:
        ap.error("give a command after --, and at least one run")
    env = dict(os.environ)
    for kv in a.env:
        k, sep, v = kv.partition("=")
        if sep:
            env[k] = v
        else:
            env.pop(k, None)
    if a.imports:
        t = import_times(cmd, a.runs, a.cwd, env)
        if a.json:
            print(json.dumps(t, indent=2))
        else:
            print(
                f"{' '.join(cmd)}\n  import time, median of {a.runs} runs (s): "
                + ", ".join(f"{k} {v:.3f}" for k, v in sorted(t.items(), key=lambda kv: -kv[1]))
            )
        return 0
    r = measure(cmd, a.runs, a.warmup, a.cwd, env)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        w, c = r["wall_s"], r["cpu_s"]
        print(
            f"{' '.join(cmd)}\n  {r['runs']} runs: wall median {w['median']:.3f} s "
            f"(min {w['min']:.3f}, max {w['max']:.3f}); CPU median {c['median']:.3f} s "
            f"(min {c['min']:.3f}, max {c['max']:.3f}); exit {r['exit_codes']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
