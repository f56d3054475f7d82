"""Helpers shared by rule files (kept tiny: rules are queries over the model)."""

from __future__ import annotations

from tkcheck.findings import Finding, Location, Related
from tkcheck.model import expr as E


def num(e: E.Expr | None) -> str:
    """A number for messages: folded when constant, else the expression."""
    if e is None:
        return "?"
    v = e.eval({})
    return str(v) if v is not None and not isinstance(v, bool) else str(e)


def related(op, note: str) -> Related:
    return Related(op.location, note)


def user_site(op) -> Location:
    """Where a finding about op points: the kernel's call of the user's helper function that op
    is in (the helper may be called from several places), else op itself."""
    return op.callers[0] if op.callers else op.location


def in_helper(op, note: str = "the instruction, in the helper called there") -> list[Related]:
    """The instruction itself as a related site when `user_site` shows its helper's call."""
    return [related(op, note)] if op.callers else []


def finding(code: str, message: str, location: Location, **kw) -> Finding:
    return Finding(code=code, message=message, location=location, **kw)


HEADER = '#include "kittens.cuh"\nusing namespace kittens;\n'
