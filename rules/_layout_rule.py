"""Shared wording for the layout rules (the facts come from tkcheck.checks.layout).

Each layout rule picks its kinds of `layout.LayoutMismatch` and words them; `report` turns the
kernel's facts into findings, one per distinct message at an op.
"""

from tkcheck.checks import layout
from tkcheck.checks.layout_proofs import Counterexample

from ._common import finding


def sw(x) -> str:
    return "none" if x is None else f"{x}B"


def witness(res: Counterexample, **kw) -> dict:
    w = {
        "row": res.row,
        "col": res.col,
        "offset_a": res.offset_a,
        "offset_b": res.offset_b,
        "base": res.base,
        "swizzle_a": sw(res.swizzle_a),
        "swizzle_b": sw(res.swizzle_b),
    }
    w.update(kw)
    return w


def cx_text(res: Counterexample, name_a: str, name_b: str, swizzle_b: str | None = None) -> str:
    where_b = "outside the buffer" if res.offset_b is None else f"byte {res.offset_b:+d}"
    return (
        f"element ({res.row}, {res.col}) is at byte {res.offset_a:+d} for {name_a} but at "
        f"{where_b} for {name_b} (swizzle {sw(res.swizzle_a)} vs {swizzle_b or sw(res.swizzle_b)}; "
        f"tile base {res.base:#x})"
    )


def report(an, code: str, kinds, word) -> list:
    """Findings of `code` for the kernel's mismatches of `kinds`; `word(m)` gives (message,
    witness, related, help). The same message at the same op is reported once (an op can reach
    one buffer through two accessors that say the same)."""
    out, seen = [], set()
    for m in layout.mismatches(an, kinds):
        msg, wit, related, help = word(m)
        key = (m.op.location.row, m.op.location.column, msg)
        if key in seen:
            continue
        seen.add(key)
        out.append(finding(code, msg, m.op.location, related=list(related), witness=dict(wit), help=help))
    return out
