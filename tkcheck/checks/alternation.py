"""Forward handshakes told by alternation: a role's uses of a barrier and its requests on another.

A role W waits on a barrier B (no bytes land on it) whose every signal is an arrive of another
role S that, in the same iteration, first waits on a barrier X of the same element (S answers a
request: `wait(X[e]); ...; arrive(B[e])`), and X is signalled by W alone. Then B's phase j needs
X's phase j, which needs W's request j. When W's uses of B and its requests on X alternate in W's
program (a use, a request, a use, ...), W's use v comes after exactly r(v) requests, r(v) = v when
a use comes first (its first use passes on the phase before the first: a free first use), r(v) =
v + 1 when a request does; B's phase r(v) cannot complete before W's next request, which follows
the use, and phase r(v) - 1 is the one the use waits for (the use before waited for phase r(v) -
2, so nothing older is pending). The due phase of use v is v - 1 or v: `offset` -1 or 0.

Where a ring walk or a body walk (`phases._ring_walk_uses`, `phases._body_walk_uses`) leaves the
direction of such a wait unknown ("no handshake found" from one site's loop body is no proof of
it), `offset` reads it from the alternation. The alternation is proved on W's sites in the walk's
region (the task loop's body, or the role's whole body): plain sites and loops of one level whose
body alternates, starts with the kind opposite to the site before the loop and ends with the other
(so any trip count, zero included, keeps the alternation); a task loop's body must also end with
the kind opposite to its first (the next task goes on alternating). Anything else: None.
"""

from __future__ import annotations

from ..model import ir
from . import completion
from .analysis import Analysis


def _idx(o: ir.Op) -> str:
    from .phases import linear

    return repr(tuple(linear(ix) for ix in o.barrier.index))


def _guard(o: ir.Op) -> tuple:
    return (repr(o.guard.thread), tuple(sorted(repr(c) for c in o.guard.uniform)), o.guard.exact)


def _request_barrier(an: Analysis, w: ir.Op, mine: frozenset) -> str | None:
    """X: the one barrier every signal of w's barrier answers (S waits on X[e] just before)."""
    from .phases import _carries_bytes, _other_blocks

    m, th = an.model, an.threads
    name = w.barrier.name
    if _carries_bytes(m, name):
        return None
    xs = set()
    sigs = [
        o
        for o in m.ops
        if o.barrier is not None and o.barrier.name == name and o.kind not in (ir.MBAR_WAIT, ir.MBAR_INIT)
    ]
    if not sigs:
        return None
    for s in sigs:
        if s.kind != ir.MBAR_ARRIVE or s.mbar is not None and (s.mbar.cta is not None or s.mbar.remote):
            return None
        if _other_blocks(s, w, an.solver_timeout_ms):
            return None
        ex = th.executing(s)
        if ex is None or ex & mine or not s.guard.exact:
            return None
        # the nearest earlier op of s's threads on any barrier, in s's loop body
        before = [
            o
            for o in m.ops
            if o.order < s.order
            and o.barrier is not None
            and o.loops == s.loops
            and (th.executing(o) or frozenset()) & ex
        ]
        waits = [o for o in before if o.kind == ir.MBAR_WAIT]
        if not waits:
            return None
        o = max(waits, key=lambda x: x.order)
        if th.executing(o) != ex or _guard(o) != _guard(s) or o.barrier.name == name:
            return None
        if _idx(o) != _idx(s):
            return None  # the answer goes to the element of the request
        # nothing on B between the request's wait and the answer (one answer per request)
        if any(x.order > o.order and x.barrier.name == name for x in before):
            return None
        xs.add(o.barrier.name)
    return xs.pop() if len(xs) == 1 else None


def offset(an: Analysis, w: ir.Op, prefix: tuple[int, ...], repeated: bool) -> int | None:
    """-1 or 0: w's use v waits for B's phase v - 1 (a use comes first) or v (a request does).
    `prefix`: the loops around the walk's region (the task loop last, or none); `repeated`: the
    region runs again (a task loop)."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None or w.barrier is None:
        return None
    x = _request_barrier(an, w, mine)
    if x is None:
        return None
    # a phase of B is one answer and a phase of X one request: both accounts established (their
    # own obligations say whether the counts match)
    acc = completion.accounts(an)
    if any(acc.get(n) is None or not acc[n].ok() for n in (w.barrier.name, x)):
        return None
    name = w.barrier.name
    elem = _idx(w)
    items = []
    for o in m.ops:
        if o.barrier is None or o.barrier.name not in (name, x) or o.kind == ir.MBAR_INIT:
            continue
        ex = th.executing(o)
        if o.barrier.name == x and o.kind != ir.MBAR_WAIT:
            # X is W's alone: every signal of it is W's request
            if o.kind != ir.MBAR_ARRIVE or ex != mine:
                return None
            kind = "X"
        elif o.barrier.name == name and o.kind == ir.MBAR_WAIT:
            if ex is None or (ex & mine and ex != mine):
                return None
            if ex != mine:
                continue
            kind = "B"
        else:
            continue
        if _idx(o) != elem or _guard(o) != _guard(w) or tuple(o.loops[: len(prefix)]) != prefix:
            return None
        if len(o.loops) > len(prefix) + 1:
            return None  # one loop level in the region only
        items.append((o.order, kind, o.loops[len(prefix)] if len(o.loops) > len(prefix) else None))
    items.sort()
    # tokens: a plain site, or a loop's run of sites (its body)
    tokens: list = []
    for _, kind, lp in items:
        if lp is None:
            tokens.append(kind)
        elif tokens and isinstance(tokens[-1], tuple) and tokens[-1][0] == lp:
            tokens[-1][1].append(kind)
        else:
            if any(isinstance(t, tuple) and t[0] == lp for t in tokens):
                return None  # a loop's sites interrupted by others
            tokens.append((lp, [kind]))
    if not tokens or not isinstance(tokens[0], str):
        return None
    first = tokens[0]
    last = None
    for t in tokens:
        if isinstance(t, str):
            if t == last:
                return None
            last = t
            continue
        body = t[1]
        if any(a == b for a, b in zip(body, body[1:], strict=False)) or body[0] == body[-1] or body[0] == last:
            return None
        # after the loop: `last` again whatever its trip count (body[-1] == last with two kinds)
    if repeated and last == first:
        return None
    return -1 if first == "B" else 0
