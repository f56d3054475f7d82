"""Write docs/rules.md from the rule catalog (the same text `tkcheck rule --all` prints), and
rules/catalog.json, the rules' metadata tkcheck.registry reads without importing the rules.

python scripts/gen_rule_docs.py            # rewrite docs/rules.md and rules/catalog.json
python scripts/gen_rule_docs.py --check    # exit 1 if either is stale
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a source checkout
from tkcheck import registry  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
CATALOG = Path(__file__).resolve().parent.parent / "rules" / registry.CATALOG_FILE


def catalog_text() -> str:
    return json.dumps(registry.catalog_json(), indent=1) + "\n"


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
    text, catalog = render(), catalog_text()
    if "--check" in sys.argv:
        current = OUT.exists() and OUT.read_text() == text
        return 0 if current and CATALOG.exists() and CATALOG.read_text() == catalog else 1
    OUT.write_text(text)
    CATALOG.write_text(catalog)
    print(f"wrote {OUT.name}: {len(registry.all_rules())} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
