"""The threads of a block that satisfy a predicate over the thread index, by enumeration:
the one exact answer both the front end (a branch no thread takes) and the checks (who runs
an op) use."""

from __future__ import annotations

from functools import lru_cache

from . import expr as E


@lru_cache(maxsize=4096)
def threads_satisfying(pred: E.Expr, n: int) -> frozenset[int] | None:
    """The threads 0..n-1 (x index; y and z 0) for which `pred` holds; None when `pred` does
    not evaluate for some thread (it names something besides the thread index)."""
    out = []
    for t in range(n):
        v = pred.eval({"tid": t, "tid_y": 0, "tid_z": 0})
        if v is None:
            return None
        if v:
            out.append(t)
    return frozenset(out)


__all__ = ["threads_satisfying"]
