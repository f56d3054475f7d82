"""The start of a peer CTA as a happens-before event (issue 25, round 16).

A CTA's shared memory (its data and its mbarriers) exists from the CTA's start to its exit.
The CTAs of a cluster are co-scheduled, but the CUDA programming model does not promise that
a peer has started when a thread first runs: a thread of CTA A may touch CTA B's shared memory
(a `mapa` address, `cluster.map_shared_rank`, a remote arrive or a multicast into B) only
after something tells A that B runs. The closing half of the contract (B must not exit while
A still touches it) is the closing cluster barrier's; this module states the opening half.

What tells A that B has started, in the model:

* a cluster barrier completed by A's thread: `barrier.cluster.wait` (returns only once every
  thread of the cluster arrived, so with a `.relaxed` arrive as well: existence needs no
  release), `cluster.sync()`, a grid barrier;
* anything by which A may have observed an effect of B: an mbarrier wait, a spin loop, a call
  the model does not follow, a loop whose trip count the model does not know (it may have
  waited on data), a guard or a target rank the model cannot evaluate (it may depend on a
  value B wrote).

`early_peer_uses(an)` lists each remote access U (a shared-memory access with a CTA rank,
`AccessFacts.cta`; an mbarrier arrive / expect on a mapped or remote barrier; a multicast TMA
load) such that no op of the kinds above lies before U in program order, the loops around U
run their first iteration (constant trip counts >= 1), and for some rank r of a cluster of
known size, some thread t that runs U and, in that first iteration, U's uniform guard holds
and U names a CTA other than r. Such a U runs, in every execution, before anything that
would let CTA r know that the CTA it names is running: proved.

The obligation ("no remote access runs before its peer is known to run") is asked of a kernel
only when some remote access lies before the first op of the kinds above: a kernel with an
opening cluster barrier, the common case, asks nothing. `peer_start_undecided(an)` lists the
remote accesses there that could not be evaluated (a guard not modelled exactly, a loop around
it of unknown trip, a rank or guard reading a value the model does not know, a cluster of
unknown size) when none was proved early: coverage, never a finding.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# kinds of op that may tell a thread that a peer CTA runs (see the module's docstring)
_OBSERVES = (ir.MBAR_WAIT, ir.SPIN, ir.CALL, ir.EXIT)
_CLUSTER_BARRIERS = ("cluster", "cluster_wait", "grid")
_ENVS_MAX = 1 << 16


@dataclass(frozen=True)
class EarlyPeerUse:
    """A remote access run by CTA `rank` into CTA `target` before it can know `target` runs."""

    use: ir.Op
    rank: int
    target: int
    thread: int
    block_barrier: ir.Op | None  # the first block barrier before it, if any (orders one CTA only)


@dataclass(frozen=True)
class PeerStart:
    """What the start question decided about one kernel."""

    early: list[EarlyPeerUse]  # proved early uses (the first one only)
    asked: bool  # some remote access lies before the first op that may observe a peer
    undecided: list[tuple[ir.Op, str]]  # remote accesses there not evaluated, with why (none when early)


def early_peer_uses(an: Analysis) -> list[EarlyPeerUse]:
    return peer_start(an).early


def peer_start_undecided(an: Analysis) -> list[tuple[ir.Op, str]]:
    return peer_start(an).undecided


def peer_start(an: Analysis) -> PeerStart:
    return an.fact("cluster_start.peer_start", _peer_start)


def _cluster_size(m: ir.KernelModel) -> int | None:
    n = m.cluster.eval({}) if m.cluster is not None else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        return None
    return n


def _target(o: ir.Op) -> E.Expr | None:
    """The rank expression of the CTA whose shared memory `o` touches (None: its own CTA's, or
    not a remote access)."""
    if o.kind == ir.SMEM_ACCESS and o.access is not None:
        return o.access.cta
    if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.mbar is not None and o.mbar.cta is not None:
        return o.mbar.cta
    return None


def _multicast_mask(o: ir.Op) -> E.Expr | None:
    if o.kind == ir.TMA_LOAD and o.mbar is not None and o.mbar.multicast:
        return o.mbar.mask
    return None


def _observes(an: Analysis, x: ir.Op) -> bool:
    """May x, run before a remote access, tell its thread that a peer CTA runs?"""
    if x.kind == ir.SYNC and x.sync_kind in _CLUSTER_BARRIERS:
        return True
    if x.kind in _OBSERVES:
        return True
    for lid in x.loops:
        lp = an.model.loops.get(lid)
        if lp is None or _trip(lp) is None:
            return True  # a loop the model cannot count may have waited on data
    return False


def _trip(lp: ir.Loop) -> int | None:
    t = lp.trip.eval({}) if lp.trip is not None else None
    if not isinstance(t, int) or isinstance(t, bool) or t < 0:
        return None
    return t


def _first_iteration_envs(an: Analysis, o: ir.Op, exprs: list[E.Expr], threads: frozenset[int]) -> list[dict] | None:
    """The environments of o's first iteration (every loop counter 0; the loops around o run at
    least once) for each thread of `threads` that `exprs` read. None: a loop that may not run,
    a variable of another kind, or too many."""
    loops = {}
    for lid in o.loops:
        lp = an.model.loops.get(lid)
        t = _trip(lp) if lp is not None else None
        if lp is None or t is None or t < 1:
            return None
        loops[lp.counter.name] = lp
    by_thread = False
    for ex in exprs:
        for v in ex.free_vars():
            if v.name == "cta_rank":
                continue
            if v.kind == E.THREAD:
                by_thread = True
            elif not (v.kind == E.LOOP and v.name in loops):
                return None
    first = {name: 0 for name in loops}
    ts = sorted(threads) if by_thread else [min(threads)]
    if len(ts) > _ENVS_MAX:
        return None
    return [{**first, "tid": t, "tid_y": 0, "tid_z": 0} for t in ts]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _peer_start(an: Analysis) -> PeerStart:
    m = an.model
    n = _cluster_size(m)
    asked = False
    undecided: list[tuple[ir.Op, str]] = []
    block_barrier: ir.Op | None = None
    for u in sorted(m.ops, key=lambda o: o.order):
        if _observes(an, u):
            break  # every later op runs after it in program order
        if u.kind == ir.SYNC and u.sync_kind == "block" and block_barrier is None:
            block_barrier = u
        target, mask = _target(u), _multicast_mask(u)
        if target is None and mask is None:
            continue
        if n is None:  # no cluster size the model knows (none declared, or not a constant)
            asked = True
            undecided.append((u, "the cluster's size is not known"))
            continue
        asked = True
        if not u.guard.exact:
            undecided.append((u, "its guard is not modelled exactly"))
            continue
        threads = an.threads.issuers(u) if u.issuers_per_group else an.threads.executing(u)
        if not threads:
            continue
        expr = target if target is not None else mask
        assert expr is not None
        envs = _first_iteration_envs(an, u, [expr, *u.guard.uniform], threads)
        if envs is None:
            undecided.append(
                (
                    u,
                    "its first iteration is not known (a loop around it of unknown trip, or a rank or guard "
                    "that reads a value the model does not know)",
                )
            )
            continue
        hit, unknown = _first_hit(u, n, envs, target, mask)
        if hit is not None:
            rank, peer, thread = hit
            # the first one: every later access runs after it; the question is answered
            return PeerStart([EarlyPeerUse(u, rank, peer, thread, block_barrier)], True, [])
        if unknown:
            undecided.append((u, "the CTA it names is not known for every rank and thread"))
    return PeerStart([], asked, undecided)


def _first_hit(
    u: ir.Op, n: int, envs: list[dict], target: E.Expr | None, mask: E.Expr | None
) -> tuple[tuple[int, int, int] | None, bool]:
    """The first (rank, peer, thread) whose run of u names another CTA, and whether some
    (rank, thread) could not be evaluated."""
    unknown = False
    for rank, env in itertools.product(range(n), envs):
        e = {**env, "cta_rank": rank}
        held = [c.eval(e) for c in u.guard.uniform]
        if any(h is False for h in held):
            continue
        if not all(h is True for h in held):
            unknown = True
            continue
        v = target.eval(e) if target is not None else mask.eval(e) if mask is not None else None
        if not _is_int(v):
            unknown = True
            continue
        assert isinstance(v, int)
        if target is not None:
            if 0 <= v < n and v != rank:
                return (rank, v, env["tid"]), unknown
        else:
            peers = [j for j in range(n) if j != rank and v >> j & 1]
            if peers:
                return (rank, peers[0], env["tid"]), unknown
    return None, unknown
