"""Write docs/rules.md from the rule catalog (the same text `tkcheck rule --all` prints).

python scripts/gen_rule_docs.py            # rewrite docs/rules.md
python scripts/gen_rule_docs.py --check    # exit 1 if docs/rules.md is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a source checkout
from tkcheck import registry  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def render() -> str:
    rules = registry.all_rules()
    lines = [
        "# tkcheck rules",
        "",
        "Generated from the rule catalog (`rules/`) by `scripts/gen_rule_docs.py`; "
        "`tkcheck rule CODE` prints the same text.",
        "",
        "| code | name | contract | severity | symptom | summary |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        lines.append(
            f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.contract} | {r.severity} | "
            f"{r.symptom or '-'} | {r.summary} |"
        )
    for r in rules:
        lines += [
            "",
            f"## {r.code}",
            "",
            f"**{r.name}** — {r.summary}",
            "",
            f"contract: {r.contract} · severity: {r.severity} · precision: {r.precision} · symptom: {r.symptom or '-'}",
            "",
        ]
        lines.append(re.sub(r"(?m)^## ", "### ", r.doc).rstrip())
    return "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        return 0 if OUT.exists() and OUT.read_text() == text else 1
    OUT.write_text(text)
    print(f"wrote {OUT.name}: {len(registry.all_rules())} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
