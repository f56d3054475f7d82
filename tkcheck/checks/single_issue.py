"""Single-issue facts: which operations must have one issuer per intended copy, and the
conjuncts of a thread guard (what each issuing thread issues is `paths.issue_signature`)."""

from __future__ import annotations

from ..model import expr as E
from ..model import ir

# Operations whose PTX must be issued by one thread per intended copy.
SINGLE_ISSUE_KINDS = (ir.TMA_LOAD, ir.TMA_STORE, ir.MBAR_EXPECT, ir.MBAR_INIT)


def single_issue_ops(model: ir.KernelModel) -> list[ir.Op]:
    """The ops of `model` that must have one issuer per intended copy. An expect_tx without an
    arrival (`mbarrier.expect_tx`, r16-expecttx) is not one: each issuing thread adds its own
    bytes to the phase's pending count (lanes that each announce their own copy), and what the
    threads announce together is the byte account's question (completion, violations), not a copy
    issued twice."""
    return [o for o in model.ops_of(*SINGLE_ISSUE_KINDS) if not o.tx_only]


def conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "&&":
        return conjuncts(e.a) + conjuncts(e.b)
    return [e]
