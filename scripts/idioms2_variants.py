"""Write a set of new-idiom kernels of issue 25 and every planted bug of the set as stand-alone
.cu files for a GPU batch (scripts/idioms2_gpu_run.sh builds and runs them).

    python3 scripts/idioms2_variants.py DIR/variants [SET]

SET is the set's folder (a kernel folder holding a mutations*.toml), corpus/idioms2 by default
(corpus/idioms3 for the third set). Each clean kernel keeps its name; each mutant is named by its
mutation id.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tkcheck import evaluate  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    folder = Path(argv[1]) if len(argv) == 2 else ROOT / "corpus" / "idioms2"
    if not folder.is_dir() or not any(folder.glob("mutations*.toml")):
        print(f"error: {folder} is not a folder with a mutations*.toml", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for k in sorted(folder.glob("*.cu")):
        (out / k.name).write_text(k.read_text(encoding="utf-8"), encoding="utf-8")
        n += 1
    try:
        mutations = evaluate.load_mutations(folder)
    except evaluate.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for m in mutations:
        try:
            text = evaluate.mutated_text(folder, m)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        (out / f"{m.id}.cu").write_text(text, encoding="utf-8")
        n += 1
    print(f"{n} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
