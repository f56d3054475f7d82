"""Every undecided obligation of findings snapshots, by question and cause (all kinds, not only
the barrier accounts and wait phases that scripts/undecided_causes.py splits further).

    python scripts/findings_snapshot.py <TK>/kernels --tk-include <TK> -o before.txt
    ... change the code ...
    python scripts/findings_snapshot.py <TK>/kernels --tk-include <TK> -o after.txt
    python scripts/undecided_kinds.py before.txt after.txt [--detail]

Reads the `coverage {...}` lines' `unknowns` (one per undecided obligation) and prints a markdown
table of counts by question (barrier account, wait phase, progress, PDL, warp collective, other),
one column per snapshot; `--detail` adds a row per cause (names, line numbers and quoted code
left out so that sites of one cause count together).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

_KINDS = (
    ("wait on ", "wait phase"),
    ("barrier ", "barrier account"),
    ("progress", "progress"),
    ("grid dependency (PDL)", "PDL"),
    ("warp collective", "warp collective"),
)


def kind_of(why: str) -> str:
    for prefix, name in _KINDS:
        if why.startswith(prefix):
            return name
    return "other"


def _cause(why: str) -> str:
    reason = why.split(": ", 1)[1] if ": " in why else why
    reason = re.sub(r"`[^`]*`", "`…`", reason)
    reason = re.sub(r"'[^']*'", "'…'", reason)
    reason = re.sub(r"\([^()]*\)", "(…)", reason)
    reason = re.sub(r"line \d+", "line …", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason[:140]


def tally(path: Path) -> tuple[Counter, Counter]:
    kinds: Counter = Counter()
    detail: Counter = Counter()
    for line in path.read_text().splitlines():
        if not line.startswith("coverage "):
            continue
        d = json.loads(line[len("coverage ") :])
        for u in d.get("unknowns", ()):
            why = u.get("why", "")
            k = kind_of(why)
            kinds[k] += 1
            detail[f"{k}: {_cause(why)}"] += 1
    return kinds, detail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshots", nargs="+", type=Path)
    ap.add_argument("--detail", action="store_true", help="a row per cause")
    a = ap.parse_args(argv)
    tallies = []
    for p in a.snapshots:
        if not p.is_file():
            print(f"undecided_kinds: {p}: not a file", file=sys.stderr)
            return 2
        tallies.append(tally(p))
    print("| question | " + " | ".join(p.name for p in a.snapshots) + " |")
    print("|---|" + "---:|" * len(a.snapshots))
    names = [n for _, n in _KINDS] + ["other"]
    for n in names:
        print(f"| {n} | " + " | ".join(str(k[n]) for k, _ in tallies) + " |")
    print("| total | " + " | ".join(str(sum(k.values())) for k, _ in tallies) + " |")
    if a.detail:
        rows = sorted(set().union(*(d for _, d in tallies)))
        print()
        print("| cause | " + " | ".join(p.name for p in a.snapshots) + " |")
        print("|---|" + "---:|" * len(a.snapshots))
        for r in rows:
            print(f"| {r} | " + " | ".join(str(d[r]) for _, d in tallies) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
