"""json and json-lines: Finding.to_json() records, in the shared sorted order.

Values a check put in a witness that JSON cannot hold (a z3 numeral, a Path)
are written as their text rather than crashing the run at the last step.
Output is ASCII (\\u escapes): a stray surrogate from a badly decoded file
cannot then fail the write.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

from ..findings import Finding
from ._common import display_path, sort_findings


def _record(f: Finding, root: pathlib.Path | None) -> dict[str, Any]:
    rec = f.to_json()
    if root is not None:
        # Repository-relative paths, so records from two checkouts compare equal.
        rec["filename"] = display_path(rec["filename"], root)
        for item in rec.get("related", []) + rec.get("trace", []):
            if "filename" in item:
                item["filename"] = display_path(item["filename"], root)
    return rec


def render_json(findings: list[Finding], *, root: pathlib.Path | None = None, **_: object) -> str:
    records = [_record(f, root) for f in sort_findings(findings)]
    return json.dumps(records, indent=2, default=str) + "\n"


def render_json_lines(findings: list[Finding], *, root: pathlib.Path | None = None, **_: object) -> str:
    return "".join(
        json.dumps(_record(f, root), default=str, separators=(",", ":")) + "\n" for f in sort_findings(findings)
    )
