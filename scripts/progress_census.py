"""What the progress exploration (checks/protocol.py) does on a tree of kernels: how many it
explores, how many of those have group / named barriers, the deadlocks it reaches and how the
deadlock rules classify them (one line per deadlock, then the counts).

    PYTHONPATH=. python scripts/progress_census.py <ThunderKittens checkout>/kernels --tk <ThunderKittens checkout>
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rules import _deadlock_common as D  # noqa: E402
from tkcheck.checks import protocol as P  # noqa: E402
from tkcheck.checks.analysis import Analysis  # noqa: E402
from tkcheck.engine import models_of  # noqa: E402
from tkcheck.frontend.parse import InputError, ParseOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree")
    ap.add_argument("--tk", required=True, help="ThunderKittens checkout (include/ and prototype/)")
    ap.add_argument("--exclude", action="append", default=["gemm/baselines/*", "*/launch.cu"])
    a = ap.parse_args()
    tree = Path(a.tree)
    files = sorted(
        p for p in tree.rglob("*.cu") if not any(fnmatch.fnmatch(p.relative_to(tree).as_posix(), g) for g in a.exclude)
    )
    # as `tkcheck check` without --arch: sm_90a, a file whose Blackwell code does not parse for it
    # parsed again for sm_100a
    opts = ParseOptions(
        tk_include=str(Path(a.tk) / "include"), tk_extra_dirs=(str(Path(a.tk) / "prototype"),), arch_auto=True
    )
    c: collections.Counter[str] = collections.Counter()
    for f in files:
        try:
            models = models_of(str(f), opts)
        except InputError:
            c["files not read"] += 1
            continue
        for m in models:
            an = Analysis(m)
            ex = P.explore(an)
            c["kernels"] += 1
            name = f"{f.relative_to(tree)} {m.name}"
            if ex.status != "explored":
                c[f"not explored: {ex.reason.split('(')[0].strip()[:50]}"] += 1
                continue
            c["explored"] += 1
            named = any(
                e.kind in ("sync", "barrive") and e.sync[0] < P.MMA_IDS and not e.block
                for r in ex.roles
                for e in r.events
            )
            if named:
                c["explored, with group / named barriers"] += 1
                print("explored with named barriers:", name, f"({ex.states} states)")
            if ex.deadlock is not None:
                cl = D.classify(an)
                c[f"deadlock reached, reported as {cl[0] if cl else None}"] += 1
                blocked = "; ".join(f"{ex.roles[i].name} at {P.event_text(e)}" for i, e in ex.deadlock.blocked)
                print("deadlock:", name, cl[0] if cl else None, "--", blocked)
    for k, v in sorted(c.items()):
        print(f"{v:5d}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
