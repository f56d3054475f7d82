"""The undecided barrier accounts and wait phases of findings snapshots, by cause.

    python scripts/findings_snapshot.py <TK>/kernels --tk-include <TK> -o before.txt
    ... change the code ...
    python scripts/findings_snapshot.py <TK>/kernels --tk-include <TK> -o after.txt
    python scripts/undecided_causes.py before.txt after.txt

Reads the `coverage {...}` lines of each snapshot (scripts/findings_snapshot.py) and prints the
total of undecided obligations (the sum of the kernels' `undecided`) and a markdown table of the
unknowns of barrier accounts ("barrier 'x': ...") and wait phases ("wait on 'x': ...") by reason,
one column per snapshot. Barrier names, line numbers and account groups are left out of the
reason so that sites of one cause count together.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path


def causes(path: Path) -> tuple[int, Counter]:
    total, out = 0, Counter()
    for line in path.read_text().splitlines():
        if not line.startswith("coverage "):
            continue
        d = json.loads(line[len("coverage ") :])
        total += d.get("undecided", 0)
        for u in d.get("unknowns", ()):
            why = u.get("why", "")
            if why.startswith("wait on "):
                kind = "wait"
            elif why.startswith("barrier "):
                kind = "account"
            else:
                continue
            reason = why.split(": ", 1)[1] if ": " in why else why
            reason = reason.split(": ", 1)[1] if reason.startswith(("the phase", "arrivals/bytes")) else reason
            reason = re.sub(r"'[^']*'", "'…'", reason)
            reason = re.sub(r"line \d+", "line …", reason)
            reason = re.sub(r"^(steady|one-shot)\b.*? sites of", r"\1 sites of", reason)
            out[f"{kind}: {reason}"] += 1
    return total, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshots", nargs="+", type=Path)
    a = ap.parse_args(argv)
    tallies = []
    for p in a.snapshots:
        if not p.is_file():
            print(f"undecided_causes: {p}: not a file", file=sys.stderr)
            return 2
        tallies.append(causes(p))
    names = [p.name for p in a.snapshots]
    print("| cause | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    print("| **undecided obligations (total)** | " + " | ".join(str(t) for t, _ in tallies) + " |")
    keys = Counter()
    for _, c in tallies:
        keys.update(c)
    for k, _ in keys.most_common():
        print(f"| {k} | " + " | ".join(str(c.get(k, 0)) for _, c in tallies) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
