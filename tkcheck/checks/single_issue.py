"""Single-issue facts: which operations must have one issuer per intended copy, and the
conjuncts of a thread guard (what each issuing thread issues is `paths.issue_signature`)."""

from __future__ import annotations

from ..model import expr as E
from ..model import ir

# Operations whose PTX must be issued by one thread per intended copy.
SINGLE_ISSUE_KINDS = (ir.TMA_LOAD, ir.TMA_STORE, ir.MBAR_EXPECT, ir.MBAR_INIT)


def conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "&&":
        return conjuncts(e.a) + conjuncts(e.b)
    return [e]
