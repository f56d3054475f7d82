"""Protocol exploration: warp roles as abstract programs, interleavings searched explicitly.

A *role* is a set of threads that execute the same completion-relevant ops on
the same barrier elements (same guard pattern): the producer thread, the lane-0
threads of the consumer warps, the other consumer lanes, ... Each role becomes
an abstract program of events -- wait(bar[e], p), arrive(bar[e], n),
expect(bar[e], bytes), load(bar[e], bytes), sync(id, count), barrive(id, count),
exit -- unrolled
with small concrete loop counts (runtime sizes are chosen so that every ring
wraps at least twice). Roles run in lock step inside themselves.

Named barriers (`bar.sync id, n` / `bar.arrive id, n` / `bar.red`, TK's `group<N>::sync(id)` /
`group<N>::arrive(id)`, `__syncthreads()` = barrier 0 over the block) follow the PTX
semantics: per id, the current generation counts arrivals per warp (a warp that executes the
instruction adds 32); `bar.arrive` adds and goes on, `bar.sync` adds and blocks until the
generation it arrived in completes; a generation completes when its arrivals reach the count,
and the barrier starts the next one at zero. A warpgroup MMA (`wgmma ... .sync.aligned`) is a
barrier of the warpgroup's own (ids from 1000 up).

The search is an explicit-state DFS over interleavings (a role runs its local
events atomically up to its next wait or barrier), memoised on the state,
bounded in states and in steps (events run), never by a clock: the same kernel
gets the same answer on any machine under any load, and an exploration that
reaches a bound is unknown (undecided coverage), never a finding. A state where no role can move and some role has
not finished is a *deadlock*: it is reachable, so it is a proof, and the path
to it is the trace. Unknown structure (guards over runtime values, unknown
trip counts, unknown init counts, ...) means no exploration and no finding.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ..model import expr as E
from ..model import ir
from ..model.fast_eval import evaluator
from . import completion
from .analysis import Analysis
from .happens_before import polls_other_blocks
from .threads import describe

MAX_STATES = 50_000
# events run over one exploration (every role's run from every state, the runs that cannot move
# included): a deterministic bound on its work, in place of a wall-clock cap
MAX_STEPS = 1_000_000
# the cluster race search's bounds (r17-remote): it runs for every DSMEM location left undecided
# in a kernel with remote arrivals, each access a step of its own; past them it decides nothing
CLUSTER_RACE_STATES = 10_000
CLUSTER_RACE_STEPS = 100_000
MAX_EVENTS = 4000
EVENT_KINDS = (
    ir.MBAR_INIT,
    ir.MBAR_WAIT,
    ir.MBAR_ARRIVE,
    ir.MBAR_EXPECT,
    ir.TMA_LOAD,
    ir.SYNC,
    ir.NAMED_ARRIVE,
    ir.MMA,
    ir.EXIT,
)
WARP = 32
MMA_IDS = 1000  # the barrier of warpgroup g's wgmma is id MMA_IDS + g (past the 16 hardware ids)
# the cluster exploration (`_cluster_size`): the most CTAs run side by side, and the stride of the
# barrier ids of one CTA's named barriers and warpgroup MMAs (CTA c's id i is i + CTA_IDS * c:
# below 32 hardware ids and warpgroups, so a named barrier stays below MMA_IDS)
CLUSTER_MAX = 8
CTA_IDS = 32
# the cluster race search (r17-remote): the id of the cluster barrier (`barrier.cluster`), above
# every CTA's ids, and the sync kinds it runs
CLUSTER_SID = 900
CLUSTER_SYNCS = ("cluster", "cluster_arrive", "cluster_wait")


@dataclass(frozen=True)
class Event:
    kind: str  # wait | arrive | expect | load | sync | barrive | exit
    op: ir.Op
    elem: tuple | None = None  # (barrier name, index...)
    parity: int | None = None
    arrivals: int = 0  # mbarrier arrivals; sync / barrive: threads counted (32 per warp)
    bytes: int = 0
    sync: tuple | None = None  # (id, count)
    block: bool = False  # sync: a barrier over every thread of the block (exited ones excepted)
    env: tuple = ()  # loop counters at this event
    # mem: (buffer name, write?, atomic?, ((element, lanes), ...)) -- a shared-memory access of
    # the race search (`races`); the element is the index tuple each of the lanes names
    mem: tuple | None = None
    # expect / load: the byte count as the model writes it when it is a value of the data (a
    # ragged tile's `rows * D * 4`); `bytes` is then SYM_BYTES per issuing thread (see
    # `_paired_bytes`)
    sym: str = ""
    # arrive: an `mbarrier.arrive_drop` (its arrivals also leave the expected count of every
    # later phase of the element)
    drop: bool = False
    # arrive / sync (the cluster race search, r17-remote): `.relaxed` -- it counts, releases nothing
    relaxed: bool = False


# the stand-in for a byte count the data decides, paired expect-to-load in one role: any positive
# value gives the same net transaction count per pair
SYM_BYTES = 1
# values the data is tried at to find the unit count and each count's multiple of it (each
# multiple is then proved for every value)
SYM_PROBES = (1, 2, 3, 4, 5, 7, 8, 16, 64)


@dataclass
class Role:
    name: str
    threads: frozenset[int]
    events: list[Event]
    cta: int = 0  # the CTA's rank in its cluster (the cluster exploration), else 0


@dataclass
class Deadlock:
    blocked: list[tuple[int, Event]]  # (role index, event it is blocked at)
    finished: list[int]
    exited: list[int]  # roles that left through an early return
    trace: list[tuple[int, Event, str]]  # (role index, event, outcome)
    state: dict
    # the first step of the trace that completes a phase of a barrier element another role lags on
    # (`_lagging`: it could pass its next wait there by waits alone, and misses the phase,
    # `_missed_phase`): (lagging role, element, the phase completed); None when no role lags so
    missed: tuple | None = None


@dataclass
class Exploration:
    status: str = "unknown"  # explored | unknown
    reason: str = ""
    roles: list[Role] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    deadlock: Deadlock | None = None
    states: int = 0
    steps: int = 0  # events run (bounded by MAX_STEPS)
    seconds: float = 0.0  # for the record only: nothing is decided by it
    counts: dict = field(default_factory=dict)  # element -> arrivals per phase (init count)
    rounds: int | None = None  # data-exit loops: rounds unrolled past their break (then the stop round)
    assumption: str = ""  # what the exploration assumed (stated in findings)
    cluster: int | None = None  # the CTAs of one cluster explored side by side (`_cluster_size`)
    race: MemRace | None = None  # the race search (`races`): two roles' conflicting accesses both enabled
    # the race search reached a state where no role can move and some have not finished (a
    # deadlock of its model: what lies past it is not explored)
    stuck: bool = False
    # the cluster race search (r17-remote): some role's lanes access one element with no release
    # of that role between (`_within_roles`), which the search does not ask: a race it reports
    # is still one, its "no race" proves nothing
    within: bool = False


@dataclass
class MemRace:
    """A reachable state at which role `a` can make access `ea` and role `b` access `eb` of one
    shared element, each without synchronising first: nothing orders the two."""

    a: int  # role index
    ea: Event
    thread_a: int
    b: int
    eb: Event
    thread_b: int
    element: tuple
    trace: list = field(default_factory=list)
    state: tuple = ()
    # `ea` was made already, and role `a` has not released since (`_unreleased`); False: both next
    unreleased: bool = False


def explore(an: Analysis) -> Exploration:
    return an.fact("protocol", _explore)


# ops that may order threads in a way the search does not model: no race search where they occur.
# (A PDL op is none: `griddepcontrol.wait` orders the waiting thread after the previous grid, and
# `launch_dependents` orders nothing; neither orders two threads of the block.)
RACE_BLIND = (ir.SPIN, ir.CALL)


def races(an: Analysis, names: frozenset[str], reduce: bool = True, cluster: bool = False) -> Exploration:
    """The race search over the shared scalars / arrays of scalars `names`: the same roles and
    barrier semantics as `explore` (mbarrier phases, named-barrier generations counted per warp,
    `__syncwarp(mask)` as a barrier of the mask's lanes), with the accesses as local events and
    roles split down to lanes that do different things. `ex.race`: a reachable state where two
    roles, of two different threads (two lanes of one warp too), can each access one element (one of them writing)
    before they synchronise again -- a proof of a race in the small instance explored, with the
    trace to it. No race and `status == "explored"`: none in that instance (not a proof for
    every size); anything else: unknown."""
    key = (
        "protocol.races:" + ",".join(sorted(names)) + ("" if reduce else ":unreduced") + (":cluster" if cluster else "")
    )
    return an.fact(key, lambda an_: _races(an_, names, reduce, cluster))


def _races(an: Analysis, names: frozenset[str], reduce: bool = True, cluster: bool = False) -> Exploration:
    t0 = time.perf_counter()
    ex = Exploration()
    m = an.model
    blind = [
        o
        for o in m.ops
        if (
            o.kind in RACE_BLIND
            and not _persistent_loop(m, o)
            and not _computes_only(m, o)
            and not polls_other_blocks(an, o)
        )
        or (
            o.kind == ir.SYNC
            and o.sync_kind not in ("block", "named", "group", "warp", "grid")
            and not (cluster and o.sync_kind in CLUSTER_SYNCS)
        )
        # an mbarrier op on a barrier the model does not name would be left out of the roles
        or (o.kind in (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.barrier is None)
        or o.barrier_unknown is not None
    ]
    drops = any(o.kind == ir.MBAR_ARRIVE and o.mbar is not None and o.mbar.drop for o in m.ops)
    if blind or any(o.unmodelled_barrier_use for o in m.ops) or drops:
        # (r9-i7async: the state carries an arrive_drop's lowered count, and the progress search
        # follows it; the race search does not take it yet: on the ragged kernels seen, 13 lane
        # roles, it runs to its step bound, minutes a kernel, deciding nothing)
        ex.reason = (
            f"`{blind[0].api}` may order threads in a way the search does not follow"
            if blind
            else "unmodelled barrier use (or an arrive_drop: the race search does not take it)"
        )
        return ex
    ops = [
        o
        for o in m.ops
        if _relevant(o)
        or (o.kind == ir.SYNC and o.sync_kind == "warp")
        or (o.kind == ir.SMEM_ACCESS and o.buffer is not None and o.buffer.name in names)
        or (cluster and o.kind == ir.SYNC and o.sync_kind in CLUSTER_SYNCS)
    ]
    if not any(o.kind in (ir.MBAR_WAIT, ir.NAMED_ARRIVE, ir.MBAR_ARRIVE) for o in ops):
        # barriers alone: the happens-before engine's own question (r12-token: mbarrier arrivals
        # that no thread waits on are explored, non-blocking events that order nothing; the
        # happens-before engine leaves a pair with one between undecided)
        ex.reason = "no waits"
        return ex
    if any(_data_exit(m, lid) for o in ops for lid in o.loops):
        for rounds in DATA_EXIT_ROUNDS + (3,):
            ex = Exploration()
            ex.rounds = rounds
            ex.assumption = (
                f"assuming every role's instruction loop runs the same {rounds} round"
                f"{'s' if rounds > 1 else ''} and then stops at its break"
            )
            _explore_with(an, ops, ex, rounds, memory=True, reduce=reduce, cluster=cluster)  # each round within bound
            if ex.race is not None or ex.status != "explored":
                break
    else:
        _explore_with(an, ops, ex, None, memory=True, reduce=reduce, cluster=cluster)
    ex.seconds = time.perf_counter() - t0
    return ex


def _persistent_loop(m: ir.KernelModel, o: ir.Op) -> bool:
    """A SPIN that marks a loop without a count left through a break on data (a persistent
    scheduler loop) whose iterations wait at a barrier: the search runs it by the rounds assumption
    (`DATA_EXIT_ROUNDS`), and its waits, not the exit test, order the threads. A loop that waits at
    no barrier is a poll on a flag: an order the search does not follow."""
    if o.kind != ir.SPIN or not o.loops or not _data_exit(m, o.loops[-1]):
        return False
    lid = o.loops[-1]
    return any(
        lid in q.loops
        and (q.kind == ir.MBAR_WAIT or (q.kind == ir.SYNC and q.sync_kind in ("block", "named", "group")))
        for q in m.ops
    )


def _computes_only(m: ir.KernelModel, o: ir.Op) -> bool:
    """A SPIN that marks a loop of unknown trip which only computes (`while (off[g + 1] <= t)
    g++;`, a scan of the kernel's input): its condition is evaluated, and the loop reads no
    memory but plain loads of global arrays no op of the kernel writes, and does not wait, arrive,
    store or call. It cannot observe another thread, so it orders nothing."""
    if o.kind != ir.SPIN or not o.loops or o.spin is None or o.spin.cond is None:
        return False
    lid = o.loops[-1]
    written = {
        q.global_access.base
        for q in m.ops
        if q.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL) and q.global_access is not None
    }
    for q in m.ops:
        if q is o or lid not in q.loops or q.kind == ir.REG_ACCESS:
            continue
        ga = q.global_access
        if not (
            q.kind == ir.GLOBAL_LOAD
            and ga is not None
            and ga.sem == "weak"
            and ga.form == "plain"
            and ga.base is not None
            and ga.base not in written
            and None not in written
        ):
            return False
    return True


def _race_at(roles: list[Role], pcs: tuple, marks: tuple = (), program_order: bool = False, memo: dict | None = None):
    """Two roles whose next accesses (before their next synchronising event) conflict: one
    element, one of them a write, not both atomic, two different threads (two lanes of one warp
    too: lanes are threads under independent thread scheduling, ordered only by a barrier). Else a role's
    next access that conflicts with an access another role has made since its last release
    (`_unreleased`): nothing the second can have acquired orders the first before it. The last
    item says which: False (both next), True (the first access made, not released).

    `memo` (one dict per search, over one list of roles): the answers this function composes,
    each a function of positions only, kept -- a role's next access run by its position, its
    unreleased accesses by its position and whether it has arrived, and `_conflict` of two runs
    by the two roles' positions. The search asks every state it visits; the positions repeat
    across states far more than the states do (issue 29, round 15: `_conflict` was a third of
    the costliest test's check, `idioms7:ad-plain-arrive-on-leave`). The same pairs are asked
    in the same order, so the answer is the one computed without it."""
    if memo is None:
        memo = {}
    nxt = []
    for i, r in enumerate(roles):
        evs = memo.get(("n", i, pcs[i]))
        if evs is None:
            evs = []
            j = pcs[i]
            while j < len(r.events) and r.events[j].kind == "mem":
                evs.append(r.events[j])
                j += 1
            memo[("n", i, pcs[i])] = evs
        if evs:
            nxt.append((i, evs))
    for x in range(len(nxt)):
        for y in range(x + 1, len(nxt)):
            (i, ei), (j, ej) = nxt[x], nxt[y]
            key = ("nn", i, pcs[i], j, pcs[j])
            hit = memo.get(key, memo)
            if hit is memo:
                hit = memo[key] = _conflict(ei, ej)
            if hit is not None:
                a, ta, b, tb, k = hit
                return (i, a, ta, j, b, tb, k, False)
    for i, r in enumerate(roles):
        arrived = (marks[i] if marks else -1) >= 0
        pkey = ("p", i, pcs[i], arrived, program_order)
        past = memo.get(pkey)
        if past is None:
            past = _unreleased(r, pcs[i], 0 if arrived else -1)
            if program_order:
                # (the reduced search makes access runs eagerly, so it meets as "made" what the
                # unreduced one meets as "next": the made ones are then asked in the order of the
                # next ones, first access first)
                past = past[::-1]
            memo[pkey] = past
        if not past:
            continue
        for j, ej in nxt:
            if j == i:
                continue
            key = ("pn", i, pcs[i], arrived, j, pcs[j])
            hit = memo.get(key, memo)
            if hit is memo:
                hit = memo[key] = _conflict(past, ej)
            if hit is not None:
                a, ta, b, tb, k = hit
                return (i, a, ta, j, b, tb, k, True)
    return None


def _conflict(ei: list[Event], ej: list[Event]):
    for a in ei:
        for b in ej:
            if a.mem[0] != b.mem[0] or not (a.mem[1] or b.mem[1]) or (a.mem[2] and b.mem[2]):
                continue
            kb = dict(b.mem[3])
            for k, la in a.mem[3]:
                lb = kb.get(k)
                if not lb:
                    continue
                for ta in la:
                    tb = next((t for t in lb if t != ta), None)
                    if tb is not None:
                        return (a, ta, b, tb, k)
    return None


def _within_roles(roles: list[Role]) -> bool:
    """Could two lanes of one role conflict on an element with no release of the role between
    (at any position, reachable or not: an over-approximation)? The search asks pairs of roles
    only (`_race_at`); the cluster race search (r17-remote) proves nothing where this holds."""
    for r in roles:
        for pc in range(len(r.events) + 1):
            nxt = []
            j = pc
            while j < len(r.events) and r.events[j].kind == "mem":
                nxt.append(r.events[j])
                j += 1
            if not nxt:
                continue
            if _conflict(nxt, nxt) is not None:
                return True
            past = _unreleased(r, pc, -1)
            if past and _conflict(past, nxt) is not None:
                return True
    return False


def _racy(roles: list[Role]) -> list[set[int]]:
    """Per role, the positions of its accesses that conflict with an access of another role:
    the pairs `_conflict([ea], [eb])` finds (one buffer and element, one of them a write, not both
    atomic, a lane of each that are two threads), met through an index by buffer and element
    instead of pair by pair (the same set: two accesses conflict only on an element both name)."""
    index: list[dict[tuple, list[tuple]]] = []
    for r in roles:
        by_elem: dict[tuple, list[tuple]] = {}
        for j, e in enumerate(r.events):
            if e.kind != "mem":
                continue
            assert e.mem is not None
            name, write, atomic, elems = e.mem
            for k, lanes in elems:
                by_elem.setdefault((name, k), []).append((j, write, atomic, lanes))
        index.append(by_elem)
    racy: list[set[int]] = [set() for _ in roles]
    for a in range(len(roles)):
        for b in range(a + 1, len(roles)):
            ib = index[b]
            for key, xs in index[a].items():
                ys = ib.get(key)
                if not ys:
                    continue
                for ja, wa, aa, la in xs:
                    for jb, wb, ab, lb in ys:
                        if not (wa or wb) or (aa and ab) or not la or not lb:
                            continue
                        # some lane of la and some lane of lb that are two threads
                        if len(la) > 1 or len(lb) > 1 or la[0] != lb[0]:
                            racy[a].add(ja)
                            racy[b].add(jb)
    return racy


def _releases(e: Event) -> bool:
    """A release of the role's earlier accesses to whoever acquires it: an mbarrier arrive
    (`arrive`, `arrive.expect_tx`), a named or block barrier (`bar.sync`, `bar.arrive`,
    `__syncwarp`, and the wgmma groups counted as one). Not an mbarrier wait (an acquire), not
    an `expect_tx` without an arrival, and not the complete_tx of a bulk copy the role issues:
    PTX's complete-tx is relaxed, and the copy carries the bytes it copies, not the issuing
    thread's own writes before it."""
    if e.relaxed:
        return False  # `.relaxed` (r17-remote): counted, no release (PTX: no memory ordering)
    if e.kind in ("arrive", "sync", "barrive"):
        return True
    return e.kind == "expect" and e.arrivals > 0


def _unreleased(r: Role, pc: int, mark: int) -> list[Event]:
    """The accesses role r has made since its last release, up to its pc (a role that has
    arrived at the `bar.sync` it waits at has released there: `mark` >= 0)."""
    if pc < len(r.events) and mark >= 0 and r.events[pc].kind == "sync":
        return []
    out = []
    j = min(pc, len(r.events)) - 1
    while j >= 0:
        e = r.events[j]
        if _releases(e):
            break
        if e.kind == "mem":
            out.append(e)
        j -= 1
    return out


# ------------------------------------------------------------ role building --


def _relevant(o: ir.Op) -> bool:
    if o.kind in (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD, ir.MBAR_INIT):
        return o.barrier is not None
    if o.kind == ir.SYNC:
        # a grid barrier is, within a block, its bar.sync 0 (cooperative groups' grid.sync():
        # __syncthreads, the gpu-scope exchange among the blocks, __syncthreads)
        return o.sync_kind in ("block", "named", "group", "grid")
    if o.kind == ir.NAMED_ARRIVE:
        return True
    if o.kind == ir.MMA and o.scope == "warpgroup":
        # wgmma is `.sync.aligned`: the four warps of a warpgroup meet there; a tcgen05 MMA is
        # issued by one thread and meets no one
        return o.mma is None or o.mma.family != "tcgen05"
    return o.kind == ir.EXIT


DATA_EXIT_ROUNDS = (1, 2)


def _data_exit(m: ir.KernelModel, lid: int) -> bool:
    """A `for (;;)` left only through `if (c) break;` on one block-uniform condition (an
    interpreter's `if (op == STOP) break;`): unrolled a bounded number of rounds. The same
    condition may be tested at several breaks (`if (t >= n) break;` before and after publishing):
    one value a round, so the round that stops leaves at the first of them it reaches."""
    lp = m.loops[lid]
    if not (lp.trip is None and lp.infinite and len(set(lp.continues)) == 1):
        return False
    if any(E.is_shared_copy(v) for v in lp.continues[0].free_vars()):
        # a stop value read from a shared scalar (a mailbox) is one value for every reader of a
        # round only when it is published behind a barrier each round: the loop must wait at
        # one (a loop that only re-reads a shared flag is a poll, which the rounds do not model)
        return any(
            lid in q.loops
            and (q.kind == ir.MBAR_WAIT or (q.kind == ir.SYNC and q.sync_kind in ("block", "named", "group")))
            for q in m.ops
        )
    return True


def _runtime_trip(m: ir.KernelModel, lid: int) -> bool:
    """A loop whose trip count is a runtime value (`for (i = 0; i < g.num_iters; ...)`): an
    init inside it re-arms the barrier every iteration (an interpreter's dynamic semaphores)."""
    lp = m.loops[lid]
    return lp.trip is not None and not isinstance(lp.trip.eval({}), int)


def _data_cond(c: E.Expr) -> bool:
    """A condition on values read from memory (`op == OP_STOP`, a cluster launch control
    response's `success`): not a function of the sizes. A CLC response is one value for the block
    (every role that queries the slot reads the same), so the rounds assumption -- every role's
    loop runs the same rounds -- is what the hardware does."""
    return bool(E.apps(c)) or any(
        v.kind == E.OPAQUE or (v.kind == E.PARAM and v.name.startswith(("?", "clc:"))) for v in c.free_vars()
    )


def _per_round(m: ir.KernelModel, lid: int) -> frozenset[str]:
    """The values a data-exit loop's stop test reads that its body sets anew every round (a task
    loop's `num_iters`, set by the user's setup for the task, tested by `if (num_iters < 0)
    break;` and run by the loops inside as their trip count): uniform names (no `.`, no call,
    not a launch index) in a stop test that does not read the loop's counter, which trip counts
    of loops nested in it also read. One value for every role in a round (the same setup on the
    same task): the search gives it the value chosen for the trip counts in the rounds that go
    on, and leaves it unknown in the round that stops (the break is then the rounds assumption's
    choice). Empty when the stop test is not of that form."""
    lp = m.loops[lid]
    if not _data_exit(m, lid):
        return frozenset()
    c = lp.continues[0]
    fv = c.free_vars()
    if _data_cond(c) or any(v.kind != E.PARAM for v in fv) or not fv:
        return frozenset()
    names = {v.name for v in fv}
    if any("." in n or "(" in n or "[" in n or ":" in n for n in names):
        return frozenset()
    inner = set()
    for q in m.loops.values():
        if q.trip is None or not _nested_in(m, q, lid):
            continue
        inner |= {v.name for v in q.trip.free_vars() if v.kind == E.PARAM}
    return frozenset(names) if names <= inner else frozenset()


def _own_cta(m: ir.KernelModel, o: ir.Op) -> bool:
    """A cluster launch control response in a launch of one CTA per cluster (`__cluster_dims__(1)`):
    "every CTA of the cluster" is this one, its barrier is the issuer's own."""
    if o.mbar is None or not o.mbar.clc or o.mbar.remote or o.mbar.cta is not None:
        return False
    v = m.cluster.eval({}) if m.cluster is not None else None
    return v == 1 and not isinstance(v, bool)


def _cluster_size(an: Analysis, ops: list[ir.Op]) -> int | None:
    """The CTAs of one cluster to explore side by side: the cluster's size (a constant, at most
    CLUSTER_MAX) when an op of the search depends on the CTA's rank (a condition, barrier index,
    parity or count that reads `cta_rank`) or signals a barrier of another CTA (a remote arrive,
    a copy completing on another CTA's barrier, a multicast, a commit to the CTA pair, a cluster
    launch control response). None: one CTA, as before (a kernel whose CTAs all run the same
    program on their own barriers: one CTA stands for each)."""
    m = an.model
    size = completion.cluster_size(m)
    if size is None or size > CLUSTER_MAX:
        return None
    for o in ops:
        b = o.mbar
        if b is not None and not _own_cta(m, o):
            if b.remote or b.cta is not None or b.mbar_cta is not None or b.multicast or b.clc:
                return size
            if b.tcgen05_commit and b.ncta == 2:
                return size
        exprs = [*o.guard.uniform, o.guard.thread, o.parity, o.count, o.bytes, o.sync_id]
        exprs += list(o.barrier.index) if o.barrier is not None else []
        if any(_reads_rank(x) for x in exprs):
            return size
    return None


def _reads_rank(x: E.Expr | None) -> bool:
    return x is not None and any(v.name == "cta_rank" for v in x.free_vars())


def _at_rank(ops: list[ir.Op], rank: int) -> list[ir.Op]:
    """The ops as the CTA of rank `rank` runs them, for `_roles`: `cta_rank` replaced by its
    value in the thread guards, barrier indices and barrier ids (one substitution per shared
    guard object, so that the ops of one `if` still share theirs)."""
    val = {"cta_rank": E.Const(rank)}
    guards: dict[int, ir.Guard] = {}
    out = []
    for o in ops:
        g = o.guard
        if _reads_rank(g.thread):
            g = guards.setdefault(id(o.guard), replace(o.guard, thread=E.substitute(o.guard.thread, val)))
        b = o.barrier
        if b is not None and any(_reads_rank(ix) for ix in b.index):
            b = replace(b, index=tuple(E.substitute(ix, val) for ix in b.index))
        sid = E.substitute(o.sync_id, val) if _reads_rank(o.sync_id) else o.sync_id
        out.append(
            o if (g is o.guard and b is o.barrier and sid is o.sync_id) else replace(o, guard=g, barrier=b, sync_id=sid)
        )
    return out


def _at_cta(elem: tuple, cta: int) -> tuple:
    """A barrier element in the cluster exploration: CTA `cta`'s copy of it."""
    return (f"{elem[0]}@cta{cta}",) + tuple(elem[1:])


def _nested_in(m: ir.KernelModel, q: ir.Loop, lid: int) -> bool:
    p = q.parent
    seen = 0
    while p is not None and seen < len(m.loops):
        if p == lid:
            return True
        p = m.loops[p].parent if p in m.loops else None
        seen += 1
    return False


def _stop_params(m: ir.KernelModel, lids: set, env: dict, rounds: int) -> dict | None:
    """Values for the launch/argument sizes in the evaluable stop conditions of data-exit loops
    such that each goes on in rounds 0..rounds-1 and stops in round `rounds`."""
    import itertools

    conds = []
    for lid in sorted(lids):
        lp = m.loops[lid]
        c = lp.continues[0]
        if _data_cond(c) or _per_round(m, lid):
            continue  # data, or a value set anew every round: scheduled by the assumption
        if any(v.kind == E.LOOP and v.name != lp.counter.name for v in c.free_vars()):
            return None
        conds.append((lp, c))
    names = sorted({v.name for _, c in conds for v in c.free_vars() if v.kind != E.LOOP and v.name not in env})
    if any(v.kind not in (E.PARAM, E.LOOP) for _, c in conds for v in c.free_vars()):
        return None
    if len(names) > 4:
        return None
    vals = range(0, 2 * rounds + 4)
    for combo in itertools.product(vals, repeat=len(names)):
        e2 = dict(env, **dict(zip(names, combo)))
        bad = False
        for n, v in zip(names, combo):
            if (n.startswith("gridDim.") or n.startswith("blockDim.")) and v < 1:
                bad = True
            if n.startswith("blockIdx."):
                g = e2.get("gridDim." + n.split(".", 1)[1])
                if g is not None and v >= g:
                    bad = True
        if bad:
            continue
        ok = True
        for lp, c in conds:
            for k in range(rounds + 1):
                r = c.eval(dict(e2, **{lp.counter.name: k}))
                if r is None or bool(r) != (k < rounds):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            return e2
    return None


def _choose_params(m: ir.KernelModel, ops: list[ir.Op], rounds: int | None = None) -> dict | None:
    """Concrete values for the runtime sizes in trip counts: every ring wraps twice. With
    `rounds`, data-exit loops run that many rounds past their break, then stop at it."""
    loops = {lid for o in ops for lid in o.loops}
    trips = []
    exits = set()
    for lid in loops:
        t = m.loops[lid].trip
        if t is None:
            if rounds is not None and _data_exit(m, lid):
                exits.add(lid)
                continue
            return None
        trips.append(t)
    env = _trip_params(m, trips)
    if env is not None and not exits:
        return env
    got = _stop_params(m, exits, env, rounds) if env is not None else None
    if got is None:
        # no instance of the one-value / few-names search: ask the solver for one (each size its
        # own value), checked again by evaluation below
        got = _solved_instance(m, trips, exits, rounds)
    if got is None and any(t.depends_on(E.THREAD) for t in trips):
        # none where a loop the sizes decide wraps a ring: one where a role's loop does (the
        # trip of `for (t = warp; t < n; t += 4)` beside constant loops only)
        got = _solved_instance(m, trips, exits, rounds, by_role=True)
    return got


# the bounds a solved instance's sizes are tried under, smallest first: instances stay small
INSTANCE_CAPS = (64, 1024, 1 << 14)


def _ring_target(m: ir.KernelModel) -> int:
    ring = 2
    for b in m.barriers.values():
        for d in b.dims:
            v = d.eval({})
            if isinstance(v, int) and v > ring:
                ring = v
    return min(2 * ring + 1, 9)


def _first_iteration(t: E.Expr) -> E.Expr:
    """A trip count read inside an outer loop (`n - 148 * cur`): its value in the outer loop's
    first iteration, the one a small instance is chosen by (the walk evaluates every iteration's)."""
    loops = {v.name: E.Const(0) for v in t.free_vars() if v.kind == E.LOOP}
    return E.substitute(t, loops) if loops else t


def _solved_instance(
    m: ir.KernelModel, trips: list, exits: set, rounds: int | None, by_role: bool = False
) -> dict | None:
    """One small launch in which every loop the roles run has at least one iteration, the longest
    makes every ring wrap twice (as `_trip_params`), and each data-exit loop whose stop test the
    sizes decide goes on for `rounds` rounds and stops in the next (as `_stop_params`): values
    for all the sizes at once, each its own (`min(8, rows / 16 - blockIdx.x * 8)` and
    `batches * depth` need different ones), found by z3 with launch constraints (launch
    dimensions at least 1, a block / cluster index below its grid dimension, every size in
    [0, 64], else [0, 1024], else [0, 2**14]). The answer is evaluated again with the model's own arithmetic and
    dropped unless every condition holds there: the instance is a launch the kernel can be given,
    so a deadlock found in it is one of that launch. None when there is none (or the solver's
    budget is spent). `by_role` (`_choose_params`' second try): the loop that wraps a ring may be
    a role's trip count at thread 0 instead of one the sizes alone decide."""
    import z3

    from .. import solver as S

    target = _ring_target(m)
    ts = [_first_iteration(t) for t in trips if not t.depends_on(E.THREAD)]
    # a role's trip count (`for (i = warp; i < n; i += 3)`): not negative for thread 0 (its sizes
    # get values; the walk evaluates it for each role)
    zero = {n: E.Const(0) for n in _TIDS}
    tt = [_first_iteration(E.substitute(t, zero)) for t in trips if t.depends_on(E.THREAD)]
    if any(t.depends_on(E.LOOP) or t.depends_on(E.THREAD) for t in ts + tt):
        return None
    conds: list[tuple[E.Expr, int, bool]] = []  # (stop test with its counter set, must hold?)
    for lid in sorted(exits):
        lp = m.loops[lid]
        c = lp.continues[0]
        if _data_cond(c) or _per_round(m, lid):
            continue
        if any(v.kind == E.LOOP and v.name != lp.counter.name for v in c.free_vars()):
            return None
        if any(v.kind not in (E.PARAM, E.LOOP) for v in c.free_vars()):
            return None
        assert rounds is not None
        for k in range(rounds + 1):
            conds.append((E.substitute(c, {lp.counter.name: E.Const(k)}), k, k < rounds))
    if not ts and not conds:
        return {}
    if any(v.kind not in (E.PARAM, E.OPAQUE) for t in ts + tt for v in t.free_vars()):
        return None
    zv = E.Z3Vars()
    try:
        zt = [E.as_int(t.to_z3(zv)) for t in ts]
        zr = [E.as_int(t.to_z3(zv)) for t in tt]
        zc = [(E.as_bool(c.to_z3(zv)), want) for c, _, want in conds]
    except (z3.Z3Exception, TypeError):
        return None
    s = S.limited(z3.Solver())
    for t in zt:
        s.add(t >= 1, t <= 3 * target)
    # `by_role`: the loop that makes a ring wrap may be a role's (thread 0's) trip count, never a
    # constant one (`for (s = 0; s < STAGES; s++)` of the inits, as written)
    wraps = [z for z, t in zip(zt, ts) if t.free_vars()] + [z for z, t in zip(zr, tt) if t.free_vars()]
    if by_role and wraps:
        s.add(z3.Or(*[t >= target for t in wraps]))
    elif zt:
        s.add(z3.Or(*[t >= target for t in zt]))
    for t in zr:
        s.add(t >= 0, t <= 3 * target)
    for c, want in zc:
        s.add(c if want else z3.Not(c))
    try:  # no division by zero: the instance is evaluated with the model's arithmetic after
        for x in ts + tt + [c for c, _, _ in conds]:
            for d in E.subexprs(x):
                if isinstance(d, E.Bin) and d.op in ("/", "%") and not isinstance(d.b, E.Const):
                    s.add(E.as_int(d.b.to_z3(zv)) != 0)
    except (z3.Z3Exception, TypeError):
        return None
    names = dict(zv.items())
    for name, v in names.items():
        if not z3.is_int(v):
            continue
        s.add(v >= (1 if name.startswith(("gridDim.", "blockDim.", "clusterDim.")) else 0))
        for pre in ("blockIdx.", "clusterIdx."):
            if name.startswith(pre):
                n = names.get("gridDim." + name[len(pre) :])
                if n is not None:
                    s.add(v < n)
    # the front end's unresolved reads of one source text (`?G.A.rows#4`, `?G.A.rows#52`: two
    # reads of `G.A.rows()` it could not name) are one value in any launch
    same: dict[str, list] = {}
    for name, v in names.items():
        if name.startswith("?") and "#" in name and z3.is_int(v):
            same.setdefault(name.rsplit("#", 1)[0], []).append(v)
    for vs in same.values():
        s.add(*[v == vs[0] for v in vs[1:]])
    cl = m.cluster.eval({}) if m.cluster is not None else None
    gx = names.get("gridDim.x")
    if isinstance(cl, int) and not isinstance(cl, bool) and cl > 1 and gx is not None:
        s.add(gx % cl == 0)  # a grid of whole clusters (the cluster's dimension along x)
        cx = names.get("clusterIdx.x")
        if cx is not None:
            s.add(cx * cl < gx)
    model = None
    # block 0 first (it runs in every launch, as `_trip_params` prefers), then any block; the
    # smallest sizes first
    firsts = [v == 0 for n, v in names.items() if n.startswith(("blockIdx.", "clusterIdx.")) and z3.is_int(v)]
    # every loop at least `target` iterations first (each ring wraps in every loop: a loop's
    # short corner, e.g. fewer k steps than a kernel's documented multiple, is tried only after)
    long_all = [z >= target for z, t in zip(zt, ts) if t.free_vars()]  # (constant trips stay as written)
    for cap in INSTANCE_CAPS:
        for pin in [firsts + long_all, firsts, long_all, []] if firsts else [long_all, []]:
            s.push()
            s.add(*[v <= cap for v in names.values() if z3.is_int(v)], *pin)
            if S.timed_check(s) == z3.sat:
                # the smallest instance, not z3's pick (which follows the process's history)
                model = S.smallest_model(s.assertions(), zv) or s.model()
            s.pop()
            if model is not None:
                break
        if model is not None:
            break
    if model is None:
        return None
    env: dict = {}
    for name, v in names.items():
        if z3.is_int(v):
            env[name] = model.eval(v, model_completion=True).as_long()
    vals = [t.eval(env) for t in ts]
    if any(not isinstance(x, int) or isinstance(x, bool) for x in vals):
        return None
    rvals = [t.eval(env) for t in tt]
    if any(not isinstance(x, int) or isinstance(x, bool) for x in rvals):
        return None
    wrapv = [v for v, t in zip(vals, ts) if t.free_vars()] + [v for v, t in zip(rvals, tt) if t.free_vars()]
    if vals and (min(vals) < 1 or max(vals) > 3 * target):
        return None
    if by_role and wrapv:
        if max(wrapv) < target:
            return None
    elif vals and max(vals) < target:
        return None
    for c, _, want in conds:
        r = c.eval(env)
        if r is None or bool(r) != want:
            return None
    return env


def _trip_params(m: ir.KernelModel, trips: list) -> dict | None:
    names = sorted({v.name for t in trips for v in t.free_vars() if v.kind in (E.PARAM, E.OPAQUE)})
    ring = 2
    for b in m.barriers.values():
        for d in b.dims:
            v = d.eval({})
            if isinstance(v, int) and v > ring:
                ring = v
    target = min(2 * ring + 1, 9)
    if not names:
        return {}
    # a block index is 0 when a size alone cannot make the trips wrap (block 0 runs in every
    # launch: `min(8, rows / 16 - blockIdx.x * 8)` is then the first block's share)
    # (and then, a launch of one block: `for (c = blockIdx.x; c < N; c += gridDim.x)`)
    fixed_sets = [
        {},
        {n: 0 for n in names if n.startswith("blockIdx.")},
        {n: (0 if n.startswith("blockIdx.") else 1) for n in names if n.startswith(("blockIdx.", "gridDim."))},
    ]
    cands = sorted({c * (2**e) for c in range(1, 13) for e in range(0, 14)})
    for fixed in fixed_sets:
        env = _trip_env(trips, names, cands, target, fixed)
        if env is not None:
            return env
    return None


def _trip_env(trips: list, names: list, cands: list, target: int, fixed: dict) -> dict | None:
    for x in cands:
        env = {n: fixed.get(n, x) for n in names}
        vals = [t.eval(env) for t in trips]
        if any(v is None for v in vals):
            continue
        if max(vals) >= target and max(vals) <= 3 * target and min(vals) >= 1:
            return env
    return None


_TIDS = frozenset(("tid", "tid_y", "tid_z"))


def _over_threads(e: E.Expr) -> bool:
    """Does `e` name a thread index (its value per thread can differ)?"""
    return any(v.name in _TIDS for v in e.free_vars())


def _roles(
    an: Analysis, ops: list[ir.Op], per_thread: bool = False, split: list | None = None
) -> list[tuple[frozenset[int], tuple]] | None:
    """Warps with the same participation in every op (a lane-0 arrive is its warp's op:
    the lanes of a warp pass a wait together). `per_thread` (the race search): threads with the
    same participation, so that the lanes of a warp that do different things (lane 0 arrives, the
    others only read) are roles of their own and may run apart (independent thread scheduling).

    Progress (r9-i7async): a warp whose lanes run two programs that may wait for each other is
    split into its lane classes (`_lane_split`: lane 0 a producer loop, lanes 1-31 a consumer
    loop); run as one role, the warp would run one loop after the other and wait for itself. The
    warps split are appended to `split` (their roles count a named barrier per lane, `_arrivals`,
    and meet at `__syncwarp`). A warp whose lane classes nest (lane 0 waits and arrives, the
    others only what lane 0 does too) stays one role, as before.

    A guard, barrier index or barrier id that names no thread index has one value for every
    thread: it is evaluated once per op, not once per thread (the answer is the same)."""
    n = an.threads.n
    if n is None or n < 1:
        return None
    if n % WARP and any(o.kind in (ir.SYNC, ir.NAMED_ARRIVE, ir.MMA) for o in ops):
        # a block with a partial warp (`<<<g, 1>>>`, one thread moving data with TMA): its
        # mbarrier events count threads, but what a warp of fewer than 32 threads contributes to
        # a counted barrier is not modelled
        return None
    per_op = []  # per op: (guard per thread or None when uniform, the uniform answer, idx, sid)
    for o in ops:
        gx = o.guard.thread
        uniform = None if _over_threads(gx) else _guard_at(gx, 0)
        if uniform is not None and uniform[0] is None:
            return None  # undecided for every thread: no roles
        ix_t = [ix for ix in (o.barrier.index if o.barrier else ())]
        idx1 = (
            None
            if any(_over_threads(ix) for ix in ix_t)
            else tuple(str(E.substitute(ix, {"tid": E.Const(0)})) for ix in ix_t)
        )
        sid1 = None
        if o.sync_id is not None and not _over_threads(o.sync_id):
            sid1 = str(E.substitute(o.sync_id, {"tid": E.Const(0)}))
        per_op.append((uniform, idx1, sid1))
    # an op's guard, barrier index and id per thread, evaluated once per expression object (the
    # ops of one `if` share their guard): the same answers as evaluating them op by op (keyed by
    # the object, not by equality: equal expressions may print their variables differently)
    guard_rows: dict[int, dict[int, tuple[bool | None, str | None]]] = {}
    text_rows: dict[tuple[int, ...], dict[int, tuple[str, ...]]] = {}
    rows = []
    for o, (uniform, idx1, sid1) in zip(ops, per_op):
        grow = None if uniform is not None else guard_rows.setdefault(id(o.guard.thread), {})
        ix_t = tuple(o.barrier.index) if o.barrier else ()
        irow = None if idx1 is not None else text_rows.setdefault(tuple(map(id, ix_t)), {})
        srow = None
        if o.sync_id is not None and sid1 is None:
            srow = text_rows.setdefault((id(o.sync_id),), {})
        rows.append((grow, irow, srow))
    # per op: the trip counts of its loops that name the thread (a ragged tail: `for (t = 0; t <
    # tiles_of(warp); t++)`); a trip that is a number per thread is part of the signature, so
    # warps of different trips are different roles (one role has one program)
    m = an.model
    trip_of = [
        [m.loops[lid].trip for lid in o.loops if m.loops[lid].trip is not None and _over_threads(m.loops[lid].trip)]
        for o in ops
    ]
    trip_rows: dict[tuple[int, int], int | None] = {}

    def trip_at(tr: E.Expr, t: int) -> int | None:
        k = (id(tr), t)
        if k not in trip_rows:
            v = tr.eval({"tid": t, "tid_y": 0, "tid_z": 0})
            trip_rows[k] = v if isinstance(v, int) and not isinstance(v, bool) else None
        return trip_rows[k]

    def at(row: dict, exprs: tuple[E.Expr, ...], t: int) -> tuple[str, ...]:
        got = row.get(t)
        if got is None:
            got = row[t] = tuple(str(E.substitute(ix, {"tid": E.Const(t)})) for ix in exprs)
        return got

    sigs: dict[tuple, list[int]] = {}
    units = (
        [range(t, t + 1) for t in range(n)]
        if per_thread
        else [range(WARP * w, min(WARP * w + WARP, n)) for w in range((n + WARP - 1) // WARP)]
    )

    def sig_of(unit) -> list | None:
        sig: list = []
        for o, (uniform, idx1, sid1), (grow, irow, srow), trs in zip(ops, per_op, rows, trip_of):
            lanes = []
            per_iter = set()
            for t in unit:
                for tr in trs:
                    v = trip_at(tr, t)
                    if v is not None:
                        per_iter.add(f"trip {tr} = {v}")
                if uniform is not None:
                    g, it = uniform
                else:
                    got = grow.get(t)  # type: ignore[union-attr]
                    if got is None:
                        got = grow[t] = _guard_at(o.guard.thread, t)  # type: ignore[index]
                    g, it = got
                if g is None:
                    return None
                if it is not None:
                    per_iter.add(it)
                if g:
                    lanes.append(t)
            if not lanes:
                sig.append(None)
                continue
            if idx1 is not None:
                idx = {idx1}
            else:
                ix_t = tuple(o.barrier.index) if o.barrier else ()
                idx = {at(irow, ix_t, t) for t in lanes}  # type: ignore[arg-type]
            if o.sync_id is None:
                sid: set = set()
            elif sid1 is not None:
                sid = {sid1}
            else:
                sid = {at(srow, (o.sync_id,), t)[0] for t in lanes}  # type: ignore[arg-type]
            if o.kind == ir.SMEM_ACCESS:
                idx = {()}  # the race search's accesses: each lane's element is evaluated per lane
            grp = _collective_group(o)
            if grp:
                # an op whose participants are the threads of one group (a warpgroup's wgmma):
                # its group is its barrier, as a named barrier's id is, so threads of two groups
                # are never one role (a role has one position; each group meets at its own step)
                sid = {("group", t // grp) for t in lanes}
            if len(idx) > 1 or len(sid) > 1:
                return None
            sig.append((len(lanes), idx.pop(), tuple(sid), tuple(sorted(per_iter))))
        return sig

    for unit in units:
        sig = sig_of(unit)
        if sig is None:
            return None
        partial = any(x is not None and x[0] < len(unit) for x in sig)
        parts = None if per_thread or not partial else _lane_split(ops, unit, sig_of)
        if parts is None:
            sigs.setdefault(tuple(sig), []).extend(unit)
            continue
        if parts is False:
            return None
        if split is not None:
            split.append(unit[0] // WARP)
        for lanes, lsig in parts:
            sigs.setdefault(("lanes",) + tuple(lsig), []).extend(lanes)
    return [(frozenset(ts), s) for s, ts in sigs.items()]


def _lane_split(ops: list[ir.Op], unit, sig_of):
    """The lane classes of one warp when they must be roles of their own in the progress search:
    two classes each running an op the other does not, one of those a wait (an mbarrier wait or a
    named / block barrier). None: the warp stays one role (its lanes do the same, or one class's
    ops are all the other's: the warp's program is that class's, the others' steps a subset at
    the same positions). False: a lane's signature not computable (no roles).

    Lanes are threads (independent thread scheduling since Volta): a warp whose lane 0 runs a
    producer loop and lanes 1-31 a consumer loop of the same ring runs the two loops side by
    side; one role for the warp would run them one after the other (a deadlock that is not there)."""
    classes: dict[tuple, list[int]] = {}
    for t in unit:
        ls = sig_of(range(t, t + 1))
        if ls is None:
            return False
        classes.setdefault(tuple(x is not None for x in ls), []).append(t)
    if len(classes) < 2:
        return None

    def blocking(o: ir.Op) -> bool:
        return o.kind == ir.MBAR_WAIT or (o.kind == ir.SYNC and o.sync_kind != "warp")

    keys = list(classes)
    need = False
    for a in keys:
        for b in keys:
            if a is b:
                continue
            only_a = [i for i, (x, y) in enumerate(zip(a, b)) if x and not y]
            only_b = [i for i, (x, y) in enumerate(zip(a, b)) if y and not x]
            if only_b and any(blocking(ops[i]) for i in only_a):
                need = True
    if not need:
        return None
    out = []
    for lanes in classes.values():
        ls = sig_of(lanes)
        if ls is None:
            return False
        out.append((lanes, ls))
    return out


def _collective_group(o: ir.Op) -> int | None:
    """Threads per group of an op that the threads of one group execute together, each group on
    its own (a warpgroup's wgmma: its 128 threads meet, like a barrier of their own: the event's
    id is `MMA_IDS` + the warpgroup); None for an op of a thread / warp, or whose participants an
    id names (a named barrier: the id is part of a role's signature already)."""
    if o.kind == ir.MMA:
        return 128
    return None


def _guard_at(g: E.Expr, t: int) -> tuple[bool | None, str | None]:
    """Does thread t run an op under thread guard g: (True/False, None); (True, the condition)
    for a condition on the iteration that the walk of the role's program decides per
    iteration (`if (i + 1 < T)` in a loop `for (i = c; ...)` whose start is the role's index:
    warps whose conditions differ are different roles); (None, None) when undecided."""
    v = g.eval({"tid": t, "tid_y": 0, "tid_z": 0})
    if v is not None:
        return bool(v), None
    gt = E.substitute(g, {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)})
    if g.depends_on(E.LOOP) and not gt.depends_on(E.THREAD):
        return True, str(gt)
    return None, None


def _role_name(m: ir.KernelModel, threads: frozenset[int], n: int | None, hints: set) -> str:
    d = describe(threads, n)
    hint = "/".join(sorted(h for h in hints if h))
    return f"{hint} ({d})" if hint else d


def _sync_id_of(an: Analysis, q: ir.Op):
    qe = an.threads.executing(q)
    if not qe:
        return None
    if q.kind == ir.MMA:
        return ("wg", min(qe) // 128)
    if q.sync_kind in ("block", "grid"):
        return ("bar", 0)
    v = q.sync_id.eval({"tid": min(qe), "tid_y": 0, "tid_z": 0}) if q.sync_id is not None else None
    return ("bar", v) if isinstance(v, int) else None


def _data_branch_sync(an: Analysis, o: ir.Op, c: E.Expr, ops: list[ir.Op]) -> bool:
    """`if (op == OP_MATMUL) { wgmma; warpgroup::sync(1); }`: a barrier under a branch on data
    that every thread meeting there executes from this one op under the same condition, and
    that guards nothing else the search sees. Taking the branch is then one consistent data
    world for all of them (their barrier is met in full or not at all)."""
    if o.kind not in (ir.MMA, ir.SYNC):
        return False
    ex_ = an.threads.executing(o)
    if not ex_:
        return False
    if o.kind == ir.MMA:
        if o.scope != "warpgroup" or len(ex_) != 128 or len({t // 128 for t in ex_}) != 1:
            return False
    else:
        if o.sync_kind not in ("named", "group"):
            return False
        full = {"tid": min(ex_), "tid_y": 0, "tid_z": 0}
        cnt = o.count.eval(full) if o.count is not None else None
        if cnt != len(ex_):
            return False
    sid = _sync_id_of(an, o)
    if sid is None or sid == ("bar", 0):
        return False
    for q in ops:
        if q is o or c not in q.guard.uniform:
            continue
        if q.kind not in (ir.MMA, ir.SYNC):
            return False  # the condition also steers barrier traffic
    for q in ops:
        if q is o or q.kind not in (ir.MMA, ir.SYNC, ir.NAMED_ARRIVE):
            continue
        qs = _sync_id_of(an, q)
        if qs is None and q.kind in (ir.SYNC, ir.NAMED_ARRIVE) and q.sync_kind != "block":
            return False
        if qs == sid and c not in q.guard.uniform:
            return False
    return True


def _unroll(
    an: Analysis,
    ops: list[ir.Op],
    threads: frozenset[int],
    params: dict,
    rounds: int | None = None,
    memory: bool = False,
    why: list | None = None,
    cluster: tuple[int, int] | None = None,
    lanes_split: bool = False,
    warp_apart: bool = False,
) -> list[Event] | None:
    """The events of the role of `threads`, in program order, loops unrolled. None when the
    program cannot be unrolled; `why` then gets the cause and the op (line) where it stopped.
    `cluster` (the cluster exploration): (this CTA's rank, the cluster's size): barrier elements
    are named with the CTA whose copy they are (`_at_cta`), an arrive / expect / copy lands on
    the copies `completion.destinations_at` names, named barriers are the CTA's own.
    `lanes_split`: some warp's lanes are in several roles (`_lane_split`): barriers are counted
    per lane where a warp is split (`_arrivals`) and `__syncwarp` is a barrier of its lanes.
    `warp_apart`: another role holds lanes of some but not all of this role's warps, so each
    warp's `__syncwarp` is a barrier of its own (`_emit_syncwarp`)."""
    m = an.model

    def no(o: ir.Op, cause: str) -> bool:
        if why is not None and not why:
            why.append(f"{cause} (`{o.api}`, line {o.location.row})")
        return False

    rep = min(threads)
    out: list[Event] = []
    symx: dict[int, E.Expr] = {}  # event index -> a byte count the data decides
    sched: dict = {}  # continues condition of a data-exit loop -> its value in this round

    def walk(seq: list[ir.Op], depth: int, env: dict) -> bool:
        i = 0
        while i < len(seq):
            o = seq[i]
            if len(o.loops) > depth:
                lid = o.loops[depth]
                j = i
                while j < len(seq) and len(seq[j].loops) > depth and seq[j].loops[depth] == lid:
                    j += 1
                lp = m.loops[lid]
                cur = {x: sim_value(v0, env) for x, v0, _, _, _ in lp.simulated}
                if rounds is not None and _data_exit(m, lid):
                    c = lp.continues[0]
                    fresh = _per_round(m, lid)
                    prev = None
                    for k in range(rounds + 1):
                        env2 = dict(env)
                        env2[lp.counter.name] = k
                        cur, prev = sim_step(lp, cur, prev, env2), env2
                        if k == rounds:
                            for n in fresh:  # the round that stops: its value is the stop's
                                env2.pop(n, None)
                        v = c.eval(dict(env2, tid=rep, tid_y=0, tid_z=0))
                        if v is not None and bool(v) != (k < rounds):
                            # its stop condition disagrees with the rounds assumed
                            return no(o, "a loop's stop condition disagrees with the rounds assumed")
                        sched[c] = k < rounds
                        ok = walk(seq[i:j], depth + 1, env2)
                        del sched[c]
                        if not ok:
                            return False
                    i = j
                    continue
                if sched and all(any(sched.get(c) is False for c in q.guard.uniform) for q in seq[i:j]):
                    i = j  # a loop after the break of the round that stops: not run
                    continue
                trip = lp.trip.eval(env) if lp.trip is not None else None
                if trip is None and lp.trip is not None and lp.trip.depends_on(E.THREAD):
                    # a trip count of the role (`for (i = c; i < T; i += 2)`, c the role's
                    # index): one value for all its threads, or the program is not the role's
                    trips = {lp.trip.eval(dict(env, tid=t, tid_y=0, tid_z=0)) for t in threads}
                    trip = trips.pop() if len(trips) == 1 else None
                if (
                    (not isinstance(trip, int) or trip < 0)
                    and lp.trip is not None
                    and not any(runs(q, env) for q in seq[i:j])
                ):
                    # a counted loop none of whose ops this role runs (`for (t = warp; t < n; t +=
                    # W)` of lane 0 of some warps, here the other lanes): its trip count (a finite
                    # one per thread) is not the role's to know; what it carries is unknown after it
                    for x, _v0, _, _, _ in lp.simulated:
                        env.pop(x, None)
                    i = j
                    continue
                if not isinstance(trip, int) or trip < 0:
                    return no(o, f"trip count {lp.trip} not known")
                prev = None
                for k in range(trip):
                    env2 = dict(env)
                    env2[lp.counter.name] = k
                    cur, prev = sim_step(lp, cur, prev, env2), env2
                    if not walk(seq[i:j], depth + 1, env2):
                        return False
                if lp.simulated:
                    env.update(sim_after(lp, cur, prev))
                i = j
                continue
            if not emit(o, env):
                return False
            if len(out) > MAX_EVENTS:
                return no(o, f"more than {MAX_EVENTS} events")
            i += 1
        return True

    def runs(q: ir.Op, env: dict) -> bool:
        # may a thread of the role run q (in some iteration of the loops around it)? False only
        # when a guard is false for every thread of the role whatever the loop counters are
        def false(v) -> bool:
            return v is not None and not v

        if any(false(c.eval(dict(env, tid=rep, tid_y=0, tid_z=0))) for c in q.guard.uniform):
            return False
        g = q.guard.thread
        return any(not false(g.eval(dict(env, tid=t, tid_y=0, tid_z=0))) for t in threads)

    def sim_value(e: E.Expr, env: dict):
        # a carried value the front end has no closed form for (`ir.Loop.simulated`), run with
        # the concrete sizes: one value for every thread of the role, else unknown (left out of
        # the environment: whatever reads it stops there with its own cause)
        ts = threads if e.depends_on(E.THREAD) else (rep,)
        vals = {e.eval(dict(env, tid=t, tid_y=0, tid_z=0)) for t in ts}
        v = vals.pop() if len(vals) == 1 else None
        return v if isinstance(v, int) else None

    def sim_step(lp: ir.Loop, cur: dict, prev: dict | None, env2: dict) -> dict:
        # the values at the start of this iteration: `cur` in the first, else the update over
        # the previous iteration's (`prev`: that iteration's environment). Each unknown is bound
        # in env2 only where the head the body sees then evaluates to that value
        if prev is not None:
            cur = {x: (sim_value(upd, prev) if cur.get(x) is not None else None) for x, _, upd, _, _ in lp.simulated}
        for x, _, _, _, head in lp.simulated:
            v = cur.get(x)
            if v is None:
                continue
            env2[x] = v
            if sim_value(head, env2) == v:
                continue
            # the head reads the unknown through an update (`k == 0 ? v0 : x ^ m`: x the value an
            # inner loop left in the previous iteration, `update_phasebit` after it): x is the
            # value under which the head reads v, solved through `^`, `+`, `-` and kept only when
            # the head then evaluates to v
            del env2[x]
            w = _solve_for(head, x, dict(env2, tid=rep, tid_y=0, tid_z=0), v)
            if w is not None:
                env2[x] = w
                if sim_value(head, env2) == v:
                    continue
                del env2[x]
            cur[x] = None
        return cur

    def sim_after(lp: ir.Loop, cur: dict, prev: dict | None) -> dict:
        # the values after the loop, under the unknowns that stand for them
        out = {}
        for x, _, upd, a, _ in lp.simulated:
            v = cur.get(x)
            if prev is not None and v is not None:
                v = sim_value(upd, prev)
            if a is not None and v is not None:
                out[a] = v
        return out

    def emit(o: ir.Op, env: dict) -> bool:
        if memory and o.kind == ir.SMEM_ACCESS:
            # an access whose executing threads are not known is left out of the race search
            emit_sync(o, env)
            return True
        return emit_sync(o, env)

    def emit_sync(o: ir.Op, env: dict) -> bool:
        full = dict(env, tid=rep, tid_y=0, tid_z=0)
        for c in o.guard.uniform:
            v = c.eval(full)
            if v is None:
                v = sched.get(c)
            if v is None and sched:
                # the branch that breaks (`if (idx >= n) { publish; break; }`): the negation of
                # the condition its round goes on under
                nv = sched.get(E.negate(c))
                v = None if nv is None else not nv
            if v is None and _data_cond(c) and _data_branch_sync(an, o, c, ops):
                v = True
            if v is None:
                return no(o, f"condition {c} not decided")
            if not v:
                return True
        if o.guard.thread.depends_on(E.LOOP) or (cluster is not None and _reads_rank(o.guard.thread)):
            lanes = set()
            for t in threads:
                g = o.guard.thread.eval(dict(env, tid=t, tid_y=0, tid_z=0))
                if g is None:
                    return no(o, "its threads per iteration not known")
                if g:
                    lanes.add(t)
        else:
            ex_ = an.threads.executing(o)
            if ex_ is None:
                return no(o, "its threads not known")
            lanes = ex_ & threads
        if not lanes:
            return True
        if not o.guard.exact:
            return no(o, "its guard not exact")
        full = dict(env, tid=min(lanes), tid_y=0, tid_z=0)
        ctr = tuple(sorted((k, v) for k, v in env.items() if k.startswith("k")))
        if o.kind == ir.EXIT:
            out.append(Event("exit", o, env=ctr))
            return True
        if memory and o.kind == ir.SMEM_ACCESS:
            if cluster is not None:
                return _emit_access(o, lanes, env, ctr, out, cluster, an.threads.n) or no(
                    o, "its element or target CTA not known"
                )
            return _emit_access(o, lanes, env, ctr, out)
        if (memory or lanes_split) and o.kind == ir.SYNC and o.sync_kind == "warp":
            return _emit_syncwarp(an, o, lanes, env, ctr, out, warp_apart) or no(o, "its lanes are not its mask's")
        split = memory or lanes_split
        arrivals = _arrivals(an, o, lanes, env) if split else WARP * len({t // WARP for t in lanes})
        if arrivals is None:
            return no(o, "its arrivals not known")
        if o.kind == ir.SYNC and o.sync_kind in CLUSTER_SYNCS:
            # the cluster race search (r17-remote): `barrier.cluster` over every thread of the
            # cluster; an arrive and the wait after it are joined into one sync (`_join_cluster`)
            if cluster is None or an.threads.n is None:
                return no(o, "a cluster barrier outside the cluster exploration")
            csync = (CLUSTER_SID, an.threads.n * cluster[1])
            if o.sync_kind == "cluster":
                out.append(Event("sync", o, arrivals=arrivals, sync=csync, env=ctr))
            elif o.sync_kind == "cluster_arrive":
                relaxed = o.sync is not None and o.sync.relaxed
                out.append(Event("barrive", o, arrivals=arrivals, sync=csync, env=ctr, relaxed=relaxed))
            else:
                out.append(Event("cwait", o, sync=csync, env=ctr))
            return True
        # the cluster exploration: CTA c's barrier ids are its own (`CTA_IDS`)
        off = CTA_IDS * cluster[0] if cluster is not None else 0
        if o.kind == ir.MMA:
            # a warpgroup MMA: its 128 threads execute it together, like a
            # barrier of their own (ids above the 16 hardware barrier ids)
            if cluster is not None and min(lanes) // 128 >= CTA_IDS:
                return no(o, "warpgroup beyond the cluster exploration's ids")
            out.append(Event("sync", o, arrivals=arrivals, sync=(MMA_IDS + min(lanes) // 128 + off, 128), env=ctr))
            return True
        if o.kind in (ir.SYNC, ir.NAMED_ARRIVE):
            kind = "block" if o.sync_kind == "grid" else o.sync_kind
            cnt = an.threads.n if kind == "block" else (o.count.eval(full) if o.count is not None else None)
            sid = o.sync_id.eval(full) if o.sync_id is not None else (0 if kind == "block" else None)
            if not isinstance(cnt, int) or not isinstance(sid, int) or cnt <= 0:
                return no(o, "barrier id or count not known")
            if cluster is not None:
                if not 0 <= sid < CTA_IDS:
                    return no(o, "barrier id beyond the cluster exploration's ids")
                sid += off
            # the hardware counts a barrier per warp: a warp any of whose lanes executes it
            # arrives with all its 32 threads
            ev = "sync" if o.kind == ir.SYNC else "barrive"
            # `__syncthreads()` / `everyone::sync(id)`: the block barrier without a count (an
            # inline `bar.sync 0;` is taken as an explicit count of every thread)
            block = ev == "sync" and kind == "block"
            out.append(Event(ev, o, arrivals=arrivals, sync=(sid, cnt), block=block, env=ctr))
            return True
        if (
            cluster is None
            and o.mbar is not None
            and (o.mbar.remote or o.mbar.cta is not None or o.mbar.multicast)
            and not _own_cta(m, o)
        ):
            return no(o, "an mbarrier op on another CTA's barrier")
        idx = tuple(ix.eval(full) for ix in o.barrier.index)
        if any(not isinstance(x, int) for x in idx):
            return no(o, "barrier index not known")
        elem = (o.barrier.name,) + idx
        dests = [elem]
        if cluster is not None:
            rank, size = cluster
            if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD):
                ds = completion.destinations_at(o, rank, size, full)
                if ds is None:
                    return no(o, "the CTAs whose barrier it signals not known")
            elif o.mbar is not None and (o.mbar.remote or o.mbar.cta is not None or o.mbar.multicast or o.mbar.clc):
                return no(o, "a wait or init on another CTA's barrier (not modelled)")
            else:
                ds = [rank]
            dests = [_at_cta(elem, d) for d in ds]
            elem = _at_cta(elem, rank)
        if o.issuers_per_group and o.group_warps > 0:
            k = len({t for t in lanes if t % (32 * o.group_warps) == 0})
        else:
            k = len(lanes)
        if o.kind == ir.MBAR_INIT:
            if any((rounds is not None and _data_exit(m, lid)) or _runtime_trip(m, lid) for lid in o.loops):
                # re-armed inside the instruction loop (invalidate + init): a reset
                c = o.count.eval(full) if o.count is not None else None
                if not isinstance(c, int):
                    return no(o, "init count not known")
                out.append(Event("init", o, elem, arrivals=c, env=ctr))
            return True
        if o.kind == ir.MBAR_WAIT:
            p = o.parity.eval(full) if o.parity is not None else None
            if p is None:
                return no(o, "wait parity not known")
            out.append(Event("wait", o, elem, parity=int(p) & 1, env=ctr))
        elif o.kind == ir.MBAR_ARRIVE:
            c = o.count.eval(full) if o.count is not None else 1
            if not isinstance(c, int) or k == 0:
                return k == 0
            drop = o.mbar is not None and o.mbar.drop
            # (the cluster race search: a `.relaxed` arrive releases nothing, `_releases`)
            rx = memory and cluster is not None and _relaxed_arrive(m, o)
            out.extend(Event("arrive", o, d, arrivals=k * c, env=ctr, drop=drop, relaxed=rx) for d in dests)
        elif o.kind == ir.MBAR_EXPECT:
            b = o.bytes.eval(full) if o.bytes is not None else None
            sym = _data_bytes(o.bytes, full) if not isinstance(b, int) else None
            if not isinstance(b, int) and sym is None:
                return no(o, "expected bytes not known")
            if k:
                nb = k * (SYM_BYTES if sym is not None else b)
                for d in dests:
                    if sym is not None:
                        symx[len(out)] = sym
                    out.append(
                        Event("expect", o, d, arrivals=k * o.expect_arrivals, bytes=nb, env=ctr, sym=str(sym or ""))
                    )
        elif o.kind == ir.TMA_LOAD:
            b = o.bytes.eval(full) if o.bytes is not None else None
            sym = _data_bytes(o.bytes, full) if not isinstance(b, int) else None
            if not isinstance(b, int) and sym is None:
                return no(o, "loaded bytes not known")
            if k:
                nb = k * (SYM_BYTES if sym is not None else b)
                for d in dests:
                    if sym is not None:
                        symx[len(out)] = sym
                    out.append(Event("load", o, d, bytes=nb, env=ctr, sym=str(sym or "")))
        return True

    if not walk(ops, 0, dict(params)):
        return None
    if any(e.kind == "cwait" or (e.sync is not None and e.sync[0] == CLUSTER_SID) for e in out):
        joined = _join_cluster(out)
        if joined is None:
            if why is not None and not why:
                why.append("a cluster barrier's arrive and wait with other events between (not modelled)")
            return None
        out = joined
    if not symx:
        return out
    paired, bad = _paired_bytes(out, symx)
    if bad is not None:
        no(bad.op, "expected bytes not known" if bad.kind == "expect" else "loaded bytes not known")
        return None
    return paired


def _join_cluster(evs: list[Event]) -> list[Event] | None:
    """The cluster race search's cluster barriers (r17-remote): each `barrier.cluster.arrive`
    directly followed in the role's program by its `barrier.cluster.wait` is one sync of every
    thread of the cluster (released or not as the arrive says); a wait without the arrive just
    before it, or an arrive not followed by its wait, is not modelled (None)."""
    out: list[Event] = []
    i = 0
    while i < len(evs):
        e = evs[i]
        if e.kind == "barrive" and e.sync is not None and e.sync[0] == CLUSTER_SID:
            if i + 1 >= len(evs) or evs[i + 1].kind != "cwait":
                return None
            out.append(Event("sync", e.op, arrivals=e.arrivals, sync=e.sync, env=e.env, relaxed=e.relaxed))
            i += 2
            continue
        if e.kind == "cwait":
            return None
        out.append(e)
        i += 1
    return out


def _relaxed_arrive(m: ir.KernelModel, o: ir.Op) -> bool:
    """An mbarrier arrive spelled `.relaxed` (PTX: no memory ordering) in a kernel with no fence
    of cluster scope or wider (`fence.acq_rel.cluster` before a relaxed arrive makes a release
    pattern; the race search has no fence events, so any such fence keeps every arrive a
    release: fewer races reported, none false)."""
    if o.mbar is None or o.mbar.sem != "relaxed":
        return False
    return not any(
        q.kind == ir.FENCE and q.fence_kind in ("membar_cluster", "membar_gl", "membar_sys", "membar_gpu")
        for q in m.ops
    )


def _solve_for(e: E.Expr, x: str, env: dict, v: int) -> int | None:
    """The value of the variable named x under which e evaluates to v in env, when e reaches x
    through conditionals env decides and `^`, `+`, `-` with operands env evaluates; else None.
    (The caller checks the answer by evaluating e.)"""
    while True:
        if isinstance(e, E.Var):
            return v if e.name == x else None
        if isinstance(e, E.Ite):
            c = e.c.eval(env)
            if c is None:
                return None
            e = e.t if c else e.e
            continue
        if isinstance(e, E.Bin) and e.op in ("^", "+", "-"):
            left = any(u.name == x for u in e.a.free_vars())
            right = any(u.name == x for u in e.b.free_vars())
            if left == right:
                return None
            c = (e.b if left else e.a).eval(env)
            if not isinstance(c, int) or isinstance(c, bool):
                return None
            if e.op == "^":
                v = v ^ c
            elif e.op == "+":
                v = v - c
            else:
                v = v + c if left else c - v
            e = e.a if left else e.b
            continue
        return None


def _data_bytes(b: E.Expr | None, env: dict) -> E.Expr | None:
    """The byte count `b` with the walk's values put in, when what is left is data or a value the
    front end could not resolve only (`?`-named: a tile's row count read from a descriptor, an
    unresolved `sizeof`); None otherwise."""
    if b is None:
        return None
    bs = E.substitute(b, {n: E.Const(v) for n, v in env.items() if isinstance(v, int)})
    fv = bs.free_vars()
    if not fv or any(v.kind not in (E.OPAQUE, E.PARAM) or not v.name.startswith("?") for v in fv):
        return None
    return bs


def _paired_bytes(evs: list[Event], symx: dict[int, E.Expr]) -> tuple[list[Event], Event | None]:
    """A role's byte counts that the data decides (`symx`: event index -> count) must pair up:
    on each barrier element, the counts of the role's expects and copies between two of its
    blocking events (a wait or a barrier, of any element) are integer multiples of one count B
    (proved for every value of the data) and add up to as much expected as copied. Then B's value
    does not matter: the role runs them in one step (nothing blocks between them), other roles
    see the phase's transaction count back where it was, and B = SYM_BYTES stands in for it. The
    events with their stand-in counts, and the first event that breaks the pairing (or None)."""
    from .. import solver as S

    out = list(evs)
    window: dict[tuple, list[tuple[int, E.Expr]]] = {}  # element -> (event index, count)

    def close() -> Event | None:
        for items in window.values():
            if len({x for _, x in items}) == 1:  # one count: each is one unit
                total = sum(1 if out[i].kind == "expect" else -1 for i, _ in items)
                if total:
                    return out[items[0][0]]
                continue
            names = sorted({v.name for x in items for v in x[1].free_vars()})
            probe = None  # one value of the data at which every count is positive
            for val in SYM_PROBES:
                env = {n: val * (j + 1) for j, n in enumerate(names)}
                vals = [x.eval(env) for _, x in items]
                if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals):
                    probe = env
                    break
            if probe is None:
                return out[items[0][0]]
            base = min((x for _, x in items), key=lambda x: x.eval(probe))
            b1 = base.eval(probe)
            total = 0
            for i, x in items:
                x1 = x.eval(probe)
                if not isinstance(x1, int) or isinstance(x1, bool) or x1 % b1:
                    return out[i]
                c = x1 // b1
                if x != base and S.always(E.binop("==", x, E.binop("*", E.Const(c), base))) is not True:
                    return out[i]
                e = out[i]
                total += c if e.kind == "expect" else -c
                out[i] = replace(e, bytes=(e.bytes // SYM_BYTES) * c * SYM_BYTES)
            if total:
                return out[items[0][0]]
        window.clear()
        return None

    for i, e in enumerate(evs):
        if i in symx:
            window.setdefault(e.elem, []).append((i, symx[i]))
        elif e.kind in ("wait", "sync") or (e.kind in ("expect", "load") and e.elem in window):
            # blocking, or a count of the data's and a known one on one element: not paired
            if e.kind in ("expect", "load"):
                return out, e
            bad = close()
            if bad is not None:
                return out, bad
    bad = close()
    return out, bad


WARP_SYNC_IDS = 2000  # `__syncwarp(mask)` of the warps from w up: id WARP_SYNC_IDS + w


def _lanes_of(an: Analysis, o: ir.Op, env: dict, warps: set[int]) -> set[int] | None:
    """The threads of `warps` that execute o in the iteration `env`."""
    if o.guard.thread.depends_on(E.LOOP):
        out = set()
        for w in warps:
            for t in range(WARP * w, WARP * w + WARP):
                g = o.guard.thread.eval(dict(env, tid=t, tid_y=0, tid_z=0))
                if g is None:
                    return None
                if g:
                    out.add(t)
        return out
    ex = an.threads.executing(o)
    return None if ex is None else {t for t in ex if t // WARP in warps}


def _arrivals(an: Analysis, o: ir.Op, lanes: set[int], env: dict) -> int | None:
    """Threads counted at a barrier when the role's `lanes` execute it and roles may split a warp
    (the race search): a warp whose executing lanes are all in the role arrives with its 32
    threads (the hardware counts warps); a warp that executes it in full but whose lanes are in
    several roles is counted per lane, so it arrives with 32 once every lane has (PTX: a
    `barrier.sync` waits for the warp's other non-exited threads). None: a warp executing it in
    part, its lanes in several roles (not modelled)."""
    warps = {t // WARP for t in lanes}
    all_ex = _lanes_of(an, o, env, warps)
    if all_ex is None:
        return None
    n = 0
    for w in warps:
        mine = {t for t in lanes if t // WARP == w}
        theirs = {t for t in all_ex if t // WARP == w}
        if theirs <= mine:
            n += WARP
        elif len(theirs) == WARP:
            n += len(mine)
        else:
            return None
    return n


def _emit_syncwarp(
    an: Analysis, o: ir.Op, lanes: set[int], env: dict, ctr: tuple, out: list, apart: bool = False
) -> bool:
    """`__syncwarp(mask)`: a barrier of the lanes in mask of each warp (they wait for each other);
    the warps a role's lanes are in meet as one barrier (roles run in lock step, so a role in
    several warps reaches each warp's barrier at once). The executing lanes must be the mask's.
    `apart`: the roles of these warps do not all hold the same warps (lane 0 of warp 0 alone,
    lanes 1-31 of warps 0-3 together): one barrier per warp, met in the order of the warps (every
    role meets its warps' barriers in that one order, so the sequence adds no wait cycle)."""
    warps = {t // WARP for t in lanes}
    all_ex = _lanes_of(an, o, env, warps)
    if all_ex is None or not lanes <= all_ex:
        return False
    mask = o.sync.mask if o.sync is not None else None
    mv = 0xFFFFFFFF if mask is None else mask.eval(dict(env, tid=min(lanes), tid_y=0, tid_z=0))
    if not isinstance(mv, int) or isinstance(mv, bool):
        return False
    for w in warps:
        in_mask = {WARP * w + i for i in range(WARP) if (mv >> i) & 1}
        if {t for t in all_ex if t // WARP == w} != in_mask:
            return False  # lanes of the mask that never arrive, or lanes outside it: not modelled
    if apart:
        for w in sorted(warps):
            mine = sum(1 for t in lanes if t // WARP == w)
            theirs = sum(1 for t in all_ex if t // WARP == w)
            out.append(Event("sync", o, arrivals=mine, sync=(WARP_SYNC_IDS + w, theirs), env=ctr))
        return True
    out.append(Event("sync", o, arrivals=len(lanes), sync=(WARP_SYNC_IDS + min(warps), len(all_ex)), env=ctr))
    return True


def _emit_access(
    o: ir.Op,
    lanes: set[int],
    env: dict,
    ctr: tuple,
    out: list,
    cluster: tuple[int, int] | None = None,
    n: int | None = None,
) -> bool:
    """A generic access of a shared scalar / element: the element each lane names. An index that
    does not evaluate (data, an unmodelled value) leaves the access out of the race search: it
    can be in no race this search reports.

    `cluster` (the cluster race search, r17-remote: this CTA's rank, the cluster's size; `n` the
    block's threads): the element is the copy of the CTA the access lands in (its own, or the
    one `access.cta` names per lane: `mapa`, `map_shared_rank`), the lanes are numbered across
    the cluster (rank * n + tid: the threads of two CTAs are two threads), and an access whose
    element or CTA does not evaluate is refused (False: the search would prove nothing of it)."""
    if o.buffer is None or o.access is None or o.access_mode not in ("read", "write"):
        return True
    if cluster is not None and (n is None or o.access.complete_tx):
        return False  # (an st.async's bytes complete on the peer's barrier: not a generic access)
    by_key: dict[tuple, list[int]] = {}
    # each index compiled once for the lanes (model/fast_eval.py: the values `eval` gives), one
    # environment whose `tid` each lane sets (eval reads it, never writes it)
    fs = [evaluator(ix) for ix in o.buffer.index]
    fc = evaluator(o.access.cta) if cluster is not None and o.access.cta is not None else None
    vals = dict(env, tid=0, tid_y=0, tid_z=0)
    for t in sorted(lanes):
        vals["tid"] = t
        key = tuple(f(vals) for f in fs)
        if any(not isinstance(x, int) or isinstance(x, bool) for x in key):
            return cluster is None
        if cluster is not None:
            assert n is not None
            c = fc(vals) if fc is not None else cluster[0]
            if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c < cluster[1]:
                return False
            key = (c,) + key
            t = cluster[0] * n + t
        by_key.setdefault(key, []).append(t)
    mem = (
        o.buffer.name,
        o.access_mode == "write",
        bool(o.access.atomic),
        tuple((k, tuple(v)) for k, v in by_key.items()),
    )
    out.append(Event("mem", o, env=ctr, mem=mem))
    return True


def _init_counts(an: Analysis, params: dict) -> dict | None:
    m = an.model
    counts = {}
    for o in m.ops_of(ir.MBAR_INIT):
        if o.barrier is None or o.count is None:
            return None
        if any(_data_exit(m, lid) for lid in o.loops):
            continue  # a reset inside an instruction loop: an event of its role
        c = o.count.eval(params)  # the model's count already includes the tx arrivals
        t = 0
        if not isinstance(c, int):
            return None
        trips = [m.loops[lid] for lid in o.loops]
        envs = [dict(params)]
        for lp in trips:
            tv = lp.trip.eval(params) if lp.trip is not None else None
            if not isinstance(tv, int):
                return None
            envs = [dict(e, **{lp.counter.name: k}) for e in envs for k in range(tv)]
        per_thread = any(ix.depends_on(E.THREAD) for ix in o.barrier.index)
        execs = an.threads.executing(o) if per_thread else None
        if per_thread and not execs:
            return None
        for env in envs:
            # an index over the thread (`init(bar[warpid()])` by each warp's leader): the element
            # each executing thread initialises
            tenvs = [dict(env, tid=t, tid_y=0, tid_z=0) for t in sorted(execs)] if execs else [env]
            for te in tenvs:
                idx = tuple(ix.eval(te) for ix in o.barrier.index)
                if any(not isinstance(x, int) for x in idx):
                    return None
                counts[(o.barrier.name,) + idx] = c + t
    return counts


# --------------------------------------------------------------- the search --


def _explore(an: Analysis) -> Exploration:
    ex = _explore_model(an)
    if ex.deadlock is not None and ex.cluster:
        # the cluster exploration leaves the cluster barriers (barrier.cluster arrive / wait) out,
        # as the one-CTA search does: its runs include schedules those barriers forbid, so its
        # "no deadlock" holds for the code, but a deadlock it reaches need not (unknown, never a
        # finding)
        ex.deadlock = None
        ex.status = "unknown"
        ex.reason = (
            f"a deadlock of the {ex.cluster}-CTA model only (its cluster barriers are not in the search): "
            "not established"
        )
        return ex
    why = an.model.progress_approx
    if ex.deadlock is not None and why:
        # the model runs a schedule the code may leave (two duties the template polls, run one
        # after the other): a deadlock of the model is no deadlock of the code; unknown
        ex.deadlock = None
        ex.status = "unknown"
        ex.reason = f"a deadlock of the model only: {why}"
    return ex


def _explore_model(an: Analysis) -> Exploration:
    t0 = time.perf_counter()
    ex = Exploration()
    m = an.model
    ops = [o for o in m.ops if _relevant(o)]
    if not any(
        o.kind in (ir.MBAR_WAIT, ir.NAMED_ARRIVE) or (o.kind == ir.SYNC and o.sync_kind == "named") for o in ops
    ):
        # block and group barriers alone are the divergent-barrier rule's static question; a named barrier with
        # its own count, a bar.arrive (a turn handed to another group) or an mbarrier wait needs the interleavings
        ex.reason = "no waits"
        return ex
    blind = [o for o in m.ops if o.unmodelled_barrier_use or o.barrier_unknown is not None]
    if blind:
        # a call tkcheck does not model may signal any barrier it was given; an op on a barrier
        # the front end could not name (a helper past the inlining bound, an asm statement of a
        # macro not read) may signal any barrier at all
        ex.reason = f"mbarrier passed to {blind[0].api} (line {blind[0].location.row}), which is not modelled"
        return ex
    if any(_data_exit(m, lid) for o in ops for lid in o.loops):
        # an instruction / task stream: unroll each such loop a few rounds past its break and
        # stop at the break in the next, every role alike (stated with every finding)
        last = ex
        for rounds in DATA_EXIT_ROUNDS:
            ex_r = Exploration()
            ex_r.rounds = rounds
            ex_r.assumption = (
                f"assuming every role's instruction loop runs the same {rounds} round"
                f"{'s' if rounds > 1 else ''} and then stops at its break"
            )
            _explore_with(an, ops, ex_r, rounds)
            if ex_r.deadlock is not None:
                ex_r.seconds = time.perf_counter() - t0
                return ex_r
            if ex_r.status != "explored":
                ex_r.seconds = time.perf_counter() - t0
                return ex_r
            last = ex_r
        last.seconds = time.perf_counter() - t0
        return last
    _explore_with(an, ops, ex, None)
    ex.seconds = time.perf_counter() - t0
    return ex


def _explore_with(
    an: Analysis,
    ops: list[ir.Op],
    ex: Exploration,
    rounds: int | None,
    memory: bool = False,
    reduce: bool = True,
    cluster: bool = False,
):
    m = an.model
    params = _choose_params(m, ops, rounds)
    if params is None:
        ex.reason = "trip counts not concretisable"
        return
    ex.params = params
    counts = _init_counts(an, params)
    if counts is None:
        ex.reason = "init counts unknown"
        return
    size = None if memory and not cluster else _cluster_size(an, ops)
    if cluster and size is None:
        ex.reason = "no cluster exploration (its size is not known, or no op signals another CTA)"
        return
    if size is not None:
        # every CTA of the cluster has its own copy of each barrier, initialised alike
        if any(completion.ranks_running(o, size) != list(range(size)) for o in m.ops_of(ir.MBAR_INIT)):
            ex.reason = "a barrier initialised in some CTAs of the cluster only (not modelled)"
            return
        counts = {_at_cta(e, c): v for c in range(size) for e, v in counts.items()}
        ex.cluster = size
    ex.counts = counts
    roles = []
    role_hints: dict[tuple, set] = {}
    for cta in range(size) if size is not None else (None,):
        # the roles of CTA `cta`: its rank put into the ops' thread guards, indices and ids
        split: list[int] = []
        # (the cluster exploration: an init that makes no event -- one before the loops, whose
        # count is the element's initial state -- tells no warp apart; a warp that differs from the
        # others only in initialising the barriers runs their program, as one role with them)
        role_ops = ops if cta is None else [o for o in _at_rank(ops, cta) if not _silent_init(m, o, rounds)]
        groups = _roles(an, role_ops, per_thread=memory, split=split)
        if groups is None:
            ex.reason = "roles not computable"
            return
        # a warp split by lanes (`_lane_split`): its roles meet at `__syncwarp` (a barrier of its lanes)
        lane_ops = [o for o in m.ops if _relevant(o) or (o.kind == ir.SYNC and o.sync_kind == "warp")] if split else ops
        warpsets = [frozenset(t // WARP for t in ts) for ts, _ in groups]
        for threads, _ in sorted(groups, key=lambda g: min(g[0])):
            why: list[str] = []
            env = params if cta is None else dict(params, cta_rank=cta)
            in_split = bool(split) and any(t // WARP in split for t in threads)
            ws = frozenset(t // WARP for t in threads)
            apart = any(v != ws and v & ws for v in warpsets)
            evs = _unroll(
                an,
                lane_ops if in_split else ops,
                threads,
                env,
                rounds,
                memory,
                why,
                None if cta is None else (cta, size),
                lanes_split=bool(split),
                warp_apart=apart,
            )
            if evs is None:
                ex.reason = "a role's program could not be unrolled" + (f": {why[0]}" if why else "")
                return
            if not evs:
                continue
            hints = {
                o.role_hint
                for o in m.ops
                if o.role_hint and an.threads.executing(o) is not None and threads <= an.threads.executing(o)
            }
            if not hints and not memory:  # (the race search names roles by their threads: lanes of one warp differ)
                kinds = {e.kind for e in evs}
                hints = {"producer"} if kinds & {"expect", "load"} else ({"consumer"} if "wait" in kinds else set())
            name = _role_name(m, threads, an.threads.n, hints)
            if cta is not None:
                name = f"CTA {cta}: {name}"
            role_hints[threads, cta or 0] = hints
            roles.append(Role(name, threads, evs, cta or 0))
    for r in roles:
        for e in r.events:
            if e.elem is not None and e.elem not in counts:
                ex.reason = f"barrier element {e.elem} used but never initialised"
                return
            if e.kind == "init" and e.arrivals != counts[e.elem]:
                ex.reason = f"barrier element {e.elem} re-initialised with another count"
                return
    # one named barrier id with two thread counts: PTX leaves the barrier undefined (the named-barrier count contract's
    # static question); no progress claim is made on such a kernel
    bar_counts: dict[int, set[int]] = {}
    for r in roles:
        for e in r.events:
            if e.kind in ("sync", "barrive") and not e.block and e.sync is not None:
                bar_counts.setdefault(e.sync[0], set()).add(e.sync[1])
    mixed = sorted(sid for sid, cs in bar_counts.items() if len(cs) > 1)
    if mixed and memory:
        ex.reason = f"named barrier {mixed[0]} used with two thread counts (undefined)"
        return
    # (the deadlock search runs such a barrier: each generation takes the count of its first
    # arrival, and an arrival with another count in that generation ends the search unknown,
    # `_generation_count`; the reduced search past the bound is not run, `_LocalSteps` takes
    # arrivals at one barrier as commuting, which they are not when their counts differ)
    if not memory:

        def rename(threads: frozenset[int], cta: int) -> str:
            hints = set().union(*(h for (ts, c), h in role_hints.items() if c == cta and ts <= threads))
            name = _role_name(m, threads, an.threads.n, hints)
            return f"CTA {cta}: {name}" if size is not None else name

        roles = _merge_pure_waiters(roles, _whole_count_syncs(roles), rename)
    roles = _merge_mma_runs(roles)
    if not memory:
        roles = _merge_whole_generations(roles, _whole_count_syncs(roles))
    ex.roles = roles
    if memory and cluster:
        ex.within = _within_roles(roles)
    _search(ex, roles, counts, memory, reduce, lanes_per_cta=an.threads.n if memory and cluster else None)
    # (the cluster exploration's deadlocks are not established anyway, `_explore`; its prompt
    # search only tells a lagging warp's deadlock apart, where the cluster barrier left out is the
    # opening handshake alone, `_cluster_barrier_opens`)
    prompt_ok = size is None or _cluster_barrier_opens(an, ops)
    if not memory and prompt_ok and ex.deadlock is not None and ex.deadlock.missed is not None:
        _prompt_search(ex, roles, counts)
    if not memory and not mixed and ex.status == "unknown" and ex.reason == "exploration bound reached":
        # past the bound of the full interleaving: again, one event per step with the
        # partial-order reduction (`_LocalSteps`, the persistent-set argument for deadlocks)
        full = (ex.states, ex.steps)
        ex.status, ex.reason, ex.states, ex.steps = "unknown", "", 0, 0
        _search(ex, roles, counts, False, reduce, stepwise=True)
        if ex.status != "explored":
            ex.reason = "exploration bound reached"
            ex.states, ex.steps = max(full[0], ex.states), max(full[1], ex.steps)
        elif prompt_ok and ex.deadlock is not None and ex.deadlock.missed is not None:
            _prompt_search(ex, roles, counts)


def _silent_init(m: ir.KernelModel, o: ir.Op, rounds: int | None) -> bool:
    """An mbarrier init `_unroll` makes no event of: not re-armed inside an instruction loop or a
    loop of run-time trip (the element's count is the search's initial state)."""
    return o.kind == ir.MBAR_INIT and not any(
        (rounds is not None and _data_exit(m, lid)) or _runtime_trip(m, lid) for lid in o.loops
    )


def _cluster_barrier_opens(an: Analysis, ops: list[ir.Op]) -> bool:
    """The cluster barrier (`barrier.cluster.arrive` / `.wait`, left out of the cluster exploration)
    is one opening handshake: one arrive (or sync) by every thread of the block, outside any loop
    and branch, before any wait on it; waits outside loops, no thread at two of them; and each op
    of the search (but an init) run by a thread after a wait of that thread in the same branch
    (the wait earlier in program order, its conditions a part of the op's, its threads a superset).
    Then no op of the search runs before every thread of the cluster has arrived, and from then on
    every thread's wait passes: a role of the code is free to pass its waits exactly where its
    role in the search (which has no cluster barrier) is, so the search without a starved warp
    (`_prompt_search`) covers every schedule of the code in which no warp is starved at passable
    waits: none found there, a deadlock of the cluster model needs a starved warp."""
    m = an.model
    cl = [o for o in m.ops if o.kind == ir.SYNC and o.sync_kind in ("cluster", "cluster_arrive", "cluster_wait")]
    arrives = [o for o in cl if o.sync_kind in ("cluster", "cluster_arrive")]
    waits = [o for o in cl if o.sync_kind in ("cluster", "cluster_wait")]
    if len(arrives) != 1 or not waits or any(o.loops for o in cl):
        return False
    (a,) = arrives
    if a.guard.uniform or an.threads.executing(a) != frozenset(range(an.threads.n)):
        return False
    wsets = []
    for w in waits:
        tw = an.threads.executing(w)
        if tw is None or w.order < a.order or any(tw & t for t in wsets):
            return False
        wsets.append(tw)
    for o in ops:
        if o.kind == ir.MBAR_INIT:
            continue
        to = an.threads.executing(o)
        if to is None:
            return False
        if not any(
            w.order < o.order and to <= tw and set(w.guard.uniform) <= set(o.guard.uniform)
            for w, tw in zip(waits, wsets)
        ):
            return False
    return True


def _whole_count_syncs(roles: list[Role]) -> tuple[int, ...]:
    """Named barriers (`bar.sync id, n`, not the block barrier) and warpgroup MMA barriers whose every
    generation needs every role that uses it: no `bar.arrive` on the id, one count, each role
    arriving with the same number of threads at every sync of the id, and those numbers summing
    to the count (the warps of one warpgroup split into roles that meet at `warpgroup::sync`).
    A role blocks at its sync until the generation completes, so it arrives once per generation:
    the k-th generation is every role's k-th sync, as at a warpgroup's MMA barrier
    (`_merge_mma_runs` merges their back-to-back runs alike)."""
    users: dict[int, dict[int, set[tuple[int, int]]]] = {}
    bad: set[int] = set()
    for i, r in enumerate(roles):
        for e in r.events:
            if e.kind not in ("sync", "barrive") or e.sync is None:
                continue
            sid, cnt = e.sync
            if sid >= WARP_SYNC_IDS:
                continue
            if e.kind == "barrive" or e.block:
                bad.add(sid)
                continue
            users.setdefault(sid, {}).setdefault(i, set()).add((e.arrivals, cnt))
    out = []
    for sid, per in sorted(users.items()):
        if sid in bad or any(len(v) != 1 for v in per.values()):
            continue
        pairs = [next(iter(v)) for v in per.values()]
        if len({c for _, c in pairs}) == 1 and sum(a for a, _ in pairs) == pairs[0][1]:
            out.append(sid)
    return tuple(out)


def _merge_pure_waiters(roles: list[Role], sids: tuple[int, ...], rename) -> list[Role]:
    """The deadlock search's merge of roles of one CTA that only wait: roles whose programs are the
    same mbarrier waits and syncs at barriers of `sids` (`_whole_count_syncs`: every generation
    needs every user role) or at the block barrier (every generation needs each of them until it
    has finished, and they finish their programs, the same, alike), in the same order, nothing
    else, run as one role of their threads (a sync's arrivals summed). Exact for deadlocks. Such a
    role enables no other role's step but at a sync, whose generation needs every one of them: a
    schedule of the roles apart, with each
    event of the merged program taken when the later of them takes it, is a schedule (a wait the
    later one passes is passable then; a generation completes at its last arrival either way), and
    it reaches a state where no role can move from any such state of the roles apart: the merged
    role stops at the first event where one of them stopped (a wait neither passes, a sync whose
    generation the stopped one never joins), and the events the other made past it are waits, which
    change nothing, and arrivals at a generation that cannot complete. Conversely the merged role's
    runs are runs of the roles apart. (The warps of a consumer warpgroup split into roles by an
    extra arrive of one warp: the others wait and sync alike.)"""
    sidset = set(sids)

    def key(r: Role):
        if not r.events:
            return None
        out = []
        for e in r.events:
            if e.kind == "wait":
                out.append(("wait", id(e.op), e.elem, e.parity, e.env))
            elif e.kind == "sync" and e.sync is not None and (e.sync[0] in sidset or e.block):
                out.append(("sync", id(e.op), e.sync, e.block, e.env))
            else:
                return None
        return (r.cta, tuple(out))

    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(roles):
        k = key(r)
        if k is not None:
            groups.setdefault(k, []).append(i)
    merged: dict[int, Role] = {}
    gone: set[int] = set()
    for ix in groups.values():
        if len(ix) < 2:
            continue
        threads = frozenset().union(*(roles[i].threads for i in ix))
        evs = [
            replace(e, arrivals=sum(roles[i].events[j].arrivals for i in ix)) if e.kind == "sync" else e
            for j, e in enumerate(roles[ix[0]].events)
        ]
        merged[ix[0]] = Role(rename(threads, roles[ix[0]].cta), threads, evs, roles[ix[0]].cta)
        gone.update(ix[1:])
    if not merged:
        return roles
    return [merged.get(i, r) for i, r in enumerate(roles) if i not in gone]


def _merge_whole_generations(roles: list[Role], sids: tuple[int, ...]) -> list[Role]:
    """The deadlock search's merge of back-to-back syncs at a named barrier whose k-th generation
    is every user role's k-th sync there (`_whole_count_syncs`): generation k (k >= 1) is dropped
    when, in every user role, its sync comes right after the sync of generation k - 1. Exact for
    deadlocks: once generation k - 1 completes, every user role can pass it and its next event is
    its arrival at generation k, so every user role arrives there and none is blocked at it in
    any reachable state where no role can move; the states before and after are those of the
    roles without it. (Back-to-back `warpgroup::sync(1)` of a warpgroup whose warps are split into
    roles by an extra arrive of one warp: runs of different lengths in different roles, which
    `_merge_mma_runs` leaves alone.)"""
    drop: dict[int, set[int]] = {}
    for sid in sids:
        pos = {
            i: [j for j, e in enumerate(r.events) if e.kind == "sync" and e.sync is not None and e.sync[0] == sid]
            for i, r in enumerate(roles)
        }
        pos = {i: p for i, p in pos.items() if p}
        n = min((len(p) for p in pos.values()), default=0)
        for k in range(1, n):
            if all(p[k] == p[k - 1] + 1 for p in pos.values()):
                for i, p in pos.items():
                    drop.setdefault(i, set()).add(p[k])
    if not drop:
        return roles
    return [
        Role(r.name, r.threads, [e for j, e in enumerate(r.events) if j not in drop.get(i, ())], r.cta)
        if i in drop
        else r
        for i, r in enumerate(roles)
    ]


def _merge_mma_runs(roles: list[Role]) -> list[Role]:
    """Back-to-back MMAs of one warpgroup (`for (kk = 0; kk < 4; kk++) wgmma`) as one meeting, when
    that is exact: a warpgroup's MMA barrier completes a generation only when every role of the
    warpgroup has arrived (the roles are disjoint parts of its 128 threads), so when every role
    that meets there runs its MMAs in runs of the same lengths, with nothing between the MMAs of a
    run, the roles pass each run together or all stop at its first MMA: one event per run has the
    same reachable blocked states. Otherwise the roles are left as they are."""

    def runs(evs: list[Event], sid: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []  # (first event index, length)
        for i, e in enumerate(evs):
            if e.kind == "sync" and e.sync is not None and e.sync[0] == sid:
                if out and out[-1][0] + out[-1][1] == i:
                    out[-1] = (out[-1][0], out[-1][1] + 1)
                else:
                    out.append((i, 1))
        return out

    sids = {e.sync[0] for r in roles for e in r.events if e.kind == "sync" and e.sync and e.sync[0] >= MMA_IDS}
    drop: dict[int, set[int]] = {}
    for sid in sorted(sids):
        per = {i: runs(r.events, sid) for i, r in enumerate(roles)}
        per = {i: rs for i, rs in per.items() if rs}
        shapes = {tuple(n for _, n in rs) for rs in per.values()}
        if len(shapes) != 1 or all(n == 1 for n in next(iter(shapes))):
            continue
        for i, rs in per.items():
            drop.setdefault(i, set()).update(j for first, n in rs for j in range(first + 1, first + n))
    if not drop:
        return roles
    return [
        Role(r.name, r.threads, [e for j, e in enumerate(r.events) if j not in drop.get(i, ())], r.cta)
        if i in drop
        else r
        for i, r in enumerate(roles)
    ]


def _search(
    ex: Exploration,
    roles: list[Role],
    counts: dict,
    memory: bool = False,
    reduce: bool = True,
    stepwise: bool = False,
    prompt: bool = False,
    lanes_per_cta: int | None = None,
):
    """The interleavings of the roles' programs from the initial state: the race search
    (`memory`) stops at the first reachable race, the deadlock search at the first state where no
    role can move (`ex.deadlock`). `stepwise` (the deadlock search past its bound, `_explore_with`):
    one event per step and `_LocalSteps`' reduction. A state's only successor is then the step of a
    role that commutes with every step the others can make before it and stays enabled: a
    persistent set of one, and a search over persistent sets reaches every deadlock the full
    search reaches (Godefroid 1996, thm. 4.3; the state graph has no cycle). `_LocalSteps`' second
    condition (racy accesses kept live) holds trivially: the deadlock search has no accesses.
    `prompt` (`_prompt_search`): only the schedules where a role lagging on an element
    (`_lagging`) takes its waits before the element completes its next phase (no reduction beside
    it: a subset of the schedules, each of them a schedule of the code, and a state is terminal
    there only when it is terminal in the full search, since a lagging role can always move)."""
    elems = sorted(counts)
    eidx = {e: i for i, e in enumerate(elems)}
    sizes = [len(r.threads) for r in roles]
    max_states, max_steps = (CLUSTER_RACE_STATES, CLUSTER_RACE_STEPS) if lanes_per_cta else (MAX_STATES, MAX_STEPS)
    # state: (pcs, sync-arrival marks, barrier states, sync states)
    # barrier state per element: (completed, pending arrivals, pending tx, arrivals dropped: the
    # expected count of the next phases is the init count less these, `_complete`)
    init_b = tuple((0, counts[e], 0, 0) for e in elems)
    start = (tuple(0 for _ in roles), tuple(-1 for _ in roles), init_b, ())
    visited = set()
    # (the prompt search's states carry the solo run: keyed whole, no symmetry)
    if prompt or (memory and not lanes_per_cta):
        key = lambda st: st  # noqa: E731
    else:
        # (the race search of a cluster, r17-remote: renamings of the ranks only, event by
        # event -- it stops after every event -- with the accesses' CTAs and lanes renamed too)
        key = _symmetry(roles, elems, stepwise or memory, counts, lanes_per_cta if memory else None)
    por = _LocalSteps(roles) if (memory or stepwise) and reduce else None
    # a path is a chain (previous chain, steps): extending it costs nothing, a trace is spelled
    # out only for the deadlock or race found
    # the prompt search's state ends with the solo run: (the role that took the last steps, the
    # elements whose phases it completed since another role last stepped), `_run_role`'s `own`
    stack: deque[tuple[tuple, tuple | None]] = deque([(start + ((-1, frozenset()),) if prompt else start, None)])
    # the race search goes breadth first: the first race it reaches has the shortest trace
    pop = stack.popleft if memory else stack.pop
    steps_run = 0
    race_memo: dict = {}  # `_race_at`'s answers by positions, for this search's roles
    while stack:
        if len(visited) > max_states or steps_run > max_steps:
            ex.status = "unknown"
            ex.reason = "exploration bound reached"
            ex.states = len(visited)
            ex.steps = steps_run
            return
        state, path = pop()
        k = key(state)
        if k in visited:
            continue
        visited.add(k)
        solo = None
        if prompt:
            solo, state = state[4], state[:4]
        pcs, marks, bars, syncs = state
        if memory:
            race = _race_at(roles, pcs, marks, por is not None, race_memo)
            if race is not None:
                a, ea, ta, b, eb, tb, elem, made = race
                ex.race = MemRace(a, ea, ta, b, eb, tb, elem, trace=_trace(path), state=state, unreleased=made)
                ex.status = "explored"
                ex.states = len(visited)
                return
        moved = False
        succ = []
        succ_roles: list[int] = []
        # threads that have left the kernel: a block-wide barrier waits for the others only
        # (per CTA of the cluster exploration: a block barrier is its CTA's)
        gone: dict[int, int] = {}
        for i, r in enumerate(roles):
            if pcs[i] >= len(r.events):
                gone[r.cta] = gone.get(r.cta, 0) + sizes[i]
        # the partial-order reduction (`_LocalSteps`): a role whose next step commutes with
        # everything the others can still do, and keeps every access it can race with, is the
        # state's one successor; else every role's step
        # (the candidates are made as they are tried: the first one taken ends the tries, and the
        # later ones cost a `_reach` each)
        tries = itertools.chain(
            ((ri, True) for ri in (por.candidates(state, eidx) if por is not None else ())),
            ((ri, False) for ri in range(len(roles))),
        )
        lags = _lagging(roles, state, eidx) if prompt else None
        for ri, only in tries:
            r = roles[ri]
            own = solo[1] if solo is not None and solo[0] == ri else frozenset()
            try:
                res = _run_role(
                    ri,
                    r,
                    state,
                    eidx,
                    gone.get(r.cta, 0),
                    counts,
                    elems,
                    memory,
                    por is not None,
                    stepwise,
                    lags,
                    own,
                )
            except _NotModelled as exc:
                ex.status = "unknown"
                ex.reason = str(exc)
                ex.states = len(visited)
                ex.steps = steps_run
                return
            steps_run += 1
            if res is None or (only and not por.keeps(ri, state, res[0])):
                continue
            nstate, steps = res
            steps_run += len(steps)
            moved = True
            if prompt:
                done = own | {e.elem for _, e, out in steps if out.startswith("completes phase")}
                nstate = nstate + ((ri, frozenset(done)),)
            succ.append((nstate, (path, steps)))
            succ_roles.append(ri)
            if only:
                break
        if stepwise and por is not None and len(succ) > 1:
            # no one step commutes with everything: the smallest persistent set of roles
            # (`_LocalSteps.persistent`), the others' steps left for later states
            keep = por.persistent(state, succ_roles)
            if len(keep) < len(succ):
                succ = [s for s, ri in zip(succ, succ_roles) if ri in keep]
        if not moved:
            if memory and not all(pcs[i] >= len(r.events) for i, r in enumerate(roles)):
                ex.stuck = True
            if memory or all(pcs[i] >= len(r.events) for i, r in enumerate(roles)):
                continue  # (the race search goes on past a deadlock: the deadlock rules report it)
            blocked = [(i, r.events[pcs[i]]) for i, r in enumerate(roles) if pcs[i] < len(r.events)]
            finished = [i for i, r in enumerate(roles) if pcs[i] >= len(r.events)]
            ex_roles = [i for i in finished if roles[i].events and roles[i].events[-1].kind == "exit"]
            ex.deadlock = Deadlock(
                blocked,
                finished,
                ex_roles,
                _trace(path),
                # (completed, pending arrivals, pending tx) per element: the dropped count stays inside
                {"barriers": {elems[i]: b[:3] for i, b in enumerate(bars)}, "syncs": dict(syncs)},
                None if prompt else _missed_phase(roles, path, start, eidx, counts, elems, por is not None, stepwise),
            )
            ex.status = "explored"
            ex.states = len(visited)
            ex.steps = steps_run
            return
        for s in succ if memory else reversed(succ):
            if key(s[0]) not in visited:
                stack.append(s)
    ex.status = "explored"
    ex.states = len(visited)
    ex.steps = steps_run


# the event kinds as `_LocalSteps._reach` reads them (`_compiled`); _K_RUN: the steps from a
# position up to the role's next wait / sync / exit, none of which can stop the role
_K_WAIT, _K_SYNC, _K_BARRIVE, _K_WRITE, _K_EXIT, _K_OTHER, _K_RUN = range(7)
_NO_SYNC = (0, 0)  # a named barrier id no role has arrived at: (arrived, generation)


def _runs_of(evs: list[tuple]) -> list[tuple]:
    """A role's compiled events with each one that cannot stop `_reach` (a write, a bar.arrive, any
    other step but a wait, a sync or an exit) replaced by `(_K_RUN, next, writes, wi, barrives, bi)`:
    `next` the position of the role's next wait / sync / exit (or its end), `writes` the elements
    written and `barrives` the (id, arrivals) of the bar.arrives between the run's first event and
    `next`, in program order, shared by every position of the run; `wi` / `bi` the first of them at
    or after this position. The fixpoint adds `writes[wi:]` and `barrives[bi:]` and moves to `next`:
    what it did one event at a time (a write and a bar.arrive only add; nothing in between reads)."""
    out: list[tuple] = list(evs)
    n = len(evs)
    i = 0
    while i < n:
        if evs[i][0] in (_K_WAIT, _K_SYNC, _K_EXIT):
            i += 1
            continue
        j = i
        while j < n and evs[j][0] not in (_K_WAIT, _K_SYNC, _K_EXIT):
            j += 1
        ws = tuple(e[1] for e in evs[i:j] if e[0] == _K_WRITE)
        bs = tuple((e[1], e[2]) for e in evs[i:j] if e[0] == _K_BARRIVE)
        wi = bi = 0
        for p in range(i, j):
            out[p] = (_K_RUN, j, ws, wi, bs, bi)
            k = evs[p][0]
            wi += k == _K_WRITE
            bi += k == _K_BARRIVE
        i = j
    return out


class _LocalSteps:
    """The race search's partial-order reduction, exact for its question (a reachable state where
    two roles' accesses of one element are unordered). A role's next step is taken as the state's
    only successor when (1) it commutes with every step every other role can make before it: the
    pass of a barrier generation that has completed (only the role's position moves, and nothing
    can undo the completion), an exit, or a step on a barrier element / named barrier id that no
    other role touches within its remaining program or within `_reach` of it while this role is
    held (waits of two roles on one element commute: neither changes it; arrivals at one named
    barrier commute when the others cannot complete the generation without this role nor pass its
    count, with `_run_role(split=True)`); a step that ends the role's program changes the count a
    block-wide barrier waits for, so it commutes only when no other role still meets one; and
    (2) it keeps every access of the role that can race with another role's live (those it can
    make next and those it made and has not released, `_race_at`): no release after racy
    accesses. Access runs are not taken eagerly (that would meet a race with both accesses next
    as one with the first made: another witness). The state graph has no cycle (each step moves a
    role's position or its arrival mark forward), so no cycle proviso is needed. Why no race is
    lost: a race reachable without the step (which stays enabled; the others' steps on the way
    commute with it) is still a race after it, of the same two accesses. A race reached with it
    was reachable before."""

    def __init__(self, roles: list[Role]):
        self.roles = roles
        self.last_touch: list[dict] = []
        self.last_write: list[dict] = []
        self.last_block: list[int] = []
        for r in roles:
            touch: dict = {}
            write: dict = {}
            block = -1
            for j, e in enumerate(r.events):
                o = _footprint(e)
                if o is not None:
                    touch[o] = j
                    if e.kind != "wait":
                        write[o] = j
                if e.kind == "sync" and e.block:
                    block = j
            self.last_touch.append(touch)
            self.last_write.append(write)
            self.last_block.append(block)
        # the accesses of each role that conflict with an access of another role
        self.racy: list[set[int]] = _racy(roles)
        self._live: dict = {}
        self.sizes = [len(r.threads) for r in roles]
        self._code: list[list[tuple]] | None = None  # `_compiled`, for the search's eidx
        self._code_eidx: dict | None = None
        # positions of each role's steps on each barrier element / named barrier id
        self.pos_touch: list[dict] = []
        self.pos_write: list[dict] = []
        for r in roles:
            pos_t: dict = {}
            pos_w: dict = {}
            for j, e in enumerate(r.events):
                o = _footprint(e)
                if o is not None:
                    pos_t.setdefault(o, []).append(j)
                    if e.kind != "wait":
                        pos_w.setdefault(o, []).append(j)
            self.pos_touch.append(pos_t)
            self.pos_write.append(pos_w)

    def candidates(self, state, eidx: dict) -> Iterator[int]:
        """Roles whose next step is independent of every step the others can make before it
        (condition 1 but for the end of the program): by its kind, or because no other role's
        remaining program touches what it touches, or because none can reach such a step while
        this role stays where it is (`_reach`). Yielded in a fixed order (those decided without
        `_reach` first, then the others, each by role), each when asked for: the search takes
        the first that moves and keeps its accesses, and asks for no more (issue 29: most of the
        `_reach` calls were for candidates never tried)."""
        pcs, marks, _, syncs = state
        out = []
        later = []
        for ri, r in enumerate(self.roles):
            pc = pcs[ri]
            if pc >= len(r.events):
                continue
            e = r.events[pc]
            if e.kind == "mem":
                # an access run commutes with everything, but taken eagerly it turns a race the
                # unreduced search meets with both accesses next into one met with this one made
                # (another witness, another message): access runs are interleaved in full
                continue
            if e.kind == "exit":
                out.append(ri)
                continue
            if e.kind == "sync" and marks[ri] >= 0:
                gen = next((g for sid, (_, g) in syncs if sid == e.sync[0]), 0)
                if gen > marks[ri]:
                    out.append(ri)  # the pass of a completed generation
                continue
            o = _footprint(e)
            if o is None:
                continue
            last = self.last_touch if e.kind != "wait" else self.last_write
            if not (e.kind == "sync" and e.block) and all(
                j == ri or last[j].get(o, -1) < pcs[j] for j in range(len(self.roles))
            ):
                out.append(ri)
            else:
                later.append((ri, e, o))
        yield from out
        for ri, e, o in later:
            if e.kind not in ("sync", "barrive") and o[0] == "B":
                # a barrier element's step: a candidate when no other role makes a step on it
                # before `_reach` holds it (the `_runs` question below, asked as the fixpoint
                # runs: it stops at the first such step; nearly every such question is answered
                # "touched", 176,932 of 176,939 on fixtures/completion/ptx_arrive_drop_ragged.cu)
                if self._touched_while_held(state, ri, eidx, o, writes_only=e.kind == "wait"):
                    continue
                yield ri
                continue
            rc, avail, finish = self._reach(state, ri, eidx)
            others = [j for j in range(len(self.roles)) if j != ri]
            if e.kind in ("sync", "barrive"):
                # arrivals commute when no other role can complete the generation without this
                # one and all of them together do not pass its count (`_run_role`'s split
                # completion); a block-wide count moves with every role that ends, so none may
                sid, cnt = e.sync
                arrived = next((a for x, (a, _) in syncs if x == sid), 0)
                need = cnt - sum(len(r.threads) for j, r in enumerate(self.roles) if pcs[j] >= len(r.events))
                need = need if e.block else cnt
                if (e.block and finish) or arrived + avail.get(sid, 0) + e.arrivals > need:
                    continue
                if all(not self._runs(j, o, pcs[j], rc[j], writes_only=False, arrivals=False) for j in others):
                    yield ri
                continue
            writes = e.kind != "wait"
            if all(not self._runs(j, o, pcs[j], rc[j], writes_only=not writes, arrivals=True) for j in others):
                yield ri

    def _runs(self, j: int, o, lo: int, hi: int, writes_only: bool, arrivals: bool) -> bool:
        """Role j may make a step on o at a position in lo..hi - 1, or (`arrivals`) arrive at
        the barrier it stops at, hi, while `_reach` holds another role still. Arrivals at a named
        barrier id are left out when not `arrivals` (the caller proved they commute)."""
        evs = self.roles[j].events
        if o[0] == "S" and not arrivals:
            # only the passes of a completed generation could matter; `_reach` lets none through
            # at this id without the held role, and passes of earlier ones commute
            return False
        pos = (self.pos_write if writes_only else self.pos_touch)[j].get(o, ())
        if _within(pos, lo, hi - 1):
            return True
        return arrivals and o[0] == "S" and hi < len(evs) and evs[hi].kind == "sync" and evs[hi].sync[0] == o[1]

    def _touched_while_held(self, state, fi: int, eidx: dict, o, writes_only: bool) -> bool:
        """Some role j other than fi makes a step on barrier element o (a write, when
        `writes_only`) at a position in pcs[j] .. rc[j] - 1, rc being `_reach(state, fi)`'s:
        `_runs(j, o, pcs[j], rc[j], writes_only, arrivals=True)` for some j (its last clause is
        for a named barrier id only). The fixpoint only moves positions forward, so it stops as
        soon as one passes the first such step of its role."""
        pcs = state[0]
        big = 1 << 60
        stop = []
        for j in range(len(self.roles)):
            pos = (self.pos_write if writes_only else self.pos_touch)[j].get(o, ())
            i = bisect.bisect_left(pos, pcs[j])
            stop.append(pos[i] if i < len(pos) and j != fi else big)
        got = self._fixpoint(state, fi, eidx, stop)
        # (an exit moves a position to the end without a step: the final positions are asked too)
        return got is None or any(r > t for r, t in zip(got[0], stop))

    def _reach(self, state, fi: int, eidx: dict) -> tuple[list[int], dict, bool]:
        """`_reach_reference`'s answer, computed over each role's events compiled once per search
        (`_compiled`: tuples instead of Event attributes, the element's index instead of its name)
        -- the search calls it several times a state, and it was most of a race search's time
        (issue 29: `fixtures/completion/ptx_arrive_drop_ragged.cu`). The same fixpoint, step by
        step: every branch below is the reference's branch of the same event kind."""
        got = self._fixpoint(state, fi, eidx, None)
        assert got is not None
        return got

    def _fixpoint(self, state, fi: int, eidx: dict, stop: list[int] | None):
        """`_reach`'s fixpoint; with `stop`, None as soon as a role x's position passes stop[x]
        (positions only move forward: its final one would pass it too)."""
        code = self._compiled(eidx)
        pcs, marks, bars, syncs = state
        syncd_get = dict(syncs).get
        n = len(code)
        sizes = self.sizes
        rc = list(pcs)
        written: set = set()
        avail: dict = {}
        avail_get = avail.get
        counted = [False] * n
        gone = sum(sizes[x] for x in range(n) if pcs[x] >= len(code[x]))
        changed = True
        while changed:
            changed = False
            for x in range(n):
                if x == fi:
                    continue
                evs = code[x]
                end = len(evs)
                r = rc[x]
                if r >= end:
                    if pcs[x] < end and not counted[x]:
                        counted[x] = True  # (a finished role: its threads leave the block-wide count)
                        gone += sizes[x]
                        changed = True
                    continue
                px, held = pcs[x], marks[x] >= 0
                moved = False
                while r < end:
                    e = evs[r]
                    k = e[0]
                    if k == _K_WAIT:
                        if bars[e[1]][0] % 2 == e[2] and e[3] not in written:
                            break
                    elif k == _K_RUN:
                        # the steps up to the next wait / sync / exit (e[1]) at once: what they
                        # write and the bar.arrives they make, from this position on (`_runs_of`)
                        _, r, ws, wi, bs, bi = e
                        if wi < len(ws):
                            written.update(ws[wi:] if wi else ws)
                        for sid, a in bs[bi:] if bi < len(bs) else ():
                            avail[sid] = avail.get(sid, 0) + a
                        counted[x] = False
                        moved = True
                        continue
                    elif k == _K_SYNC:
                        sid = e[1]
                        arrived, gen = syncd_get(sid, _NO_SYNC)
                        if r == px and held:  # at its mark: passes a completed generation
                            if gen <= marks[x] and arrived + avail_get(sid, 0) < (e[2] - gone if e[3] else e[2]):
                                break
                        else:
                            if counted[x]:
                                have = avail_get(sid, 0)
                            else:
                                have = avail[sid] = avail_get(sid, 0) + e[4]
                                counted[x] = True
                            if arrived + have < (e[2] - gone if e[3] else e[2]):
                                break
                    elif k == _K_EXIT:
                        r = end
                        break
                    # (a write, a bar.arrive or another step is inside a _K_RUN: never met here)
                    r += 1
                    counted[x] = False
                    moved = True
                rc[x] = r
                if moved:
                    changed = True
                    if stop is not None and r > stop[x]:
                        return None
                if r >= end and px < end and not counted[x]:
                    counted[x] = True  # (a finished role: its threads leave the block-wide count)
                    gone += sizes[x]
                    changed = True
        finish = any(rc[x] >= len(code[x]) > pcs[x] for x in range(n) if x != fi)
        return rc, avail, finish

    def _compiled(self, eidx: dict) -> list[list[tuple]]:
        """Each role's events as `_reach` reads them: (kind, ...) with the kind a small int and
        the fields the kind needs (a wait: its element's index, parity, element; a sync: id,
        count, block?, arrivals; a bar.arrive: id, arrivals; an arrival / expect / load / init:
        its element; any other event: nothing it reads). An event that cannot stop the role (all
        but a wait, a sync and an exit) is then a `_K_RUN` of the steps from it to the role's next
        wait / sync / exit (`_runs_of`): the fixpoint makes them in one go (issue 29: nearly every
        `_reach` runs each role to its end, and two thirds of the events were accesses and
        arrivals, a loop turn each)."""
        if self._code is not None and self._code_eidx is eidx:
            return self._code
        out = []
        for r in self.roles:
            evs: list[tuple] = []
            for e in r.events:
                k = e.kind
                if k == "wait":
                    evs.append((_K_WAIT, eidx[e.elem], e.parity, e.elem))
                elif k == "sync":
                    evs.append((_K_SYNC, e.sync[0], e.sync[1], e.block, e.arrivals))
                elif k == "barrive":
                    evs.append((_K_BARRIVE, e.sync[0], e.arrivals))
                elif k in ("arrive", "expect", "load", "init"):
                    evs.append((_K_WRITE, e.elem))
                elif k == "exit":
                    evs.append((_K_EXIT,))
                else:
                    evs.append((_K_OTHER,))
            out.append(_runs_of(evs))
        self._code, self._code_eidx = out, eidx
        return out

    def _reach_reference(self, state, fi: int, eidx: dict) -> tuple[list[int], dict, bool]:
        """An over-approximation of how far each role can run while role fi stays where it is:
        the first event of each role it may not get past. A wait may pass if it can now or some
        role may still write its element; a named / block barrier if the arrivals the others may
        still make (every generation counted at once) reach its count.

        The definition `_reach` computes faster (tests/test_race_reduction.py holds the two
        equal on every state the searches of the fixtures visit)."""
        pcs, marks, bars, syncs = state
        syncd = dict(syncs)
        roles = self.roles
        n = len(roles)
        rc = list(pcs)
        written: set = set()
        avail: dict = {}
        counted = [False] * n
        gone = sum(len(r.threads) for x, r in enumerate(roles) if pcs[x] >= len(r.events))
        changed = True
        while changed:
            changed = False
            for x in range(n):
                if x == fi:
                    continue
                evs = roles[x].events
                while rc[x] < len(evs):
                    e = evs[rc[x]]
                    k = e.kind
                    if k == "wait":
                        if bars[eidx[e.elem]][0] % 2 == e.parity and ("B", e.elem) not in written:
                            break
                    elif k == "sync":
                        sid, cnt = e.sync
                        arrived, gen = syncd.get(sid, (0, 0))
                        if not (rc[x] == pcs[x] and marks[x] >= 0 and gen > marks[x]):
                            if not counted[x] and not (rc[x] == pcs[x] and marks[x] >= 0):
                                avail[sid] = avail.get(sid, 0) + e.arrivals
                                counted[x] = True
                            need = cnt - gone if e.block else cnt
                            if arrived + avail.get(sid, 0) < need:
                                break
                    elif k == "barrive":
                        avail[e.sync[0]] = avail.get(e.sync[0], 0) + e.arrivals
                    elif k in ("arrive", "expect", "load", "init"):
                        written.add(("B", e.elem))
                    elif k == "exit":
                        rc[x] = len(evs)
                        break
                    rc[x] += 1
                    counted[x] = False
                    changed = True
                if rc[x] >= len(evs) and pcs[x] < len(evs) and not counted[x]:
                    counted[x] = True  # (a finished role: its threads leave the block-wide count)
                    gone += len(roles[x].threads)
                    changed = True
        finish = any(rc[x] >= len(roles[x].events) > pcs[x] for x in range(n) if x != fi)
        return rc, avail, finish

    def persistent(self, state, enabled: list[int]) -> set[int]:
        """The deadlock search's persistent set of more than one role (round 16): from each enabled
        role as a seed, the set T of roles closed under "may interact": for a role of T, every
        other role whose remaining program (from its position to its end) has an event dependent
        with the role's next event joins T -- a write to the element it waits on (an arrival, an
        expect, a copy, an init: it may enable the wait, or disable a wait that passes by
        completing the next phase), any event on the element it writes (a wait it may enable or
        disable, a write that does not commute with it where a phase completes in between), any
        sync or arrive on the named barrier it arrives at (its generation), every role of the CTA
        for a block-wide barrier (an end of a program moves its count), and, for a step that ends
        the role's program, every role of the CTA that still meets a block-wide barrier. The pass
        of a completed generation depends on nothing. No role outside T can, by any sequence of its
        own steps, enable, disable or fail to commute with a step of T (their events on T's
        objects are all inside T), so the enabled steps of T are a persistent set (Godefroid 1996,
        def. 4.1 via the stubborn-set closure of alg. 4.3 at the granularity of roles, whose future
        events are over-approximated by their whole remaining programs); the state graph has no
        cycle, so a search over such sets reaches every deadlock the full search reaches (thm.
        4.3). The smallest T over the seeds (ties: the first) is the state's successors."""
        pcs, marks, _, syncs = state
        roles = self.roles
        n = len(roles)
        live = [j for j in range(n) if pcs[j] < len(roles[j].events)]

        def has(j: int, o, writes_only: bool) -> bool:
            pos = (self.pos_write if writes_only else self.pos_touch)[j].get(o, ())
            return _within(pos, pcs[j], len(roles[j].events) - 1)

        def deps(i: int) -> set[int]:
            r = roles[i]
            e = r.events[pcs[i]]
            out: set[int] = set()
            others = [j for j in live if j != i]
            if e.kind == "sync" and marks[i] >= 0:
                gen = next((g for sid, (_, g) in syncs if sid == e.sync[0]), 0)
                if gen > marks[i]:
                    return out  # the pass of a completed generation
            if e.kind == "sync" and e.block:
                return {j for j in others if roles[j].cta == r.cta}
            o = _footprint(e)
            if o is not None:
                out.update(j for j in others if has(j, o, writes_only=e.kind == "wait"))
            elif e.kind != "exit":
                return set(others)  # (an event the closure does not know: everyone)
            if e.kind == "exit" or pcs[i] == len(r.events) - 1:
                out.update(j for j in others if roles[j].cta == r.cta and self.last_block[j] >= pcs[j])
            return out

        memo: dict[int, set[int]] = {}
        best: set[int] | None = None
        en = set(enabled)
        for seed in enabled:
            t = {seed}
            todo = [seed]
            while todo:
                i = todo.pop()
                d = memo.get(i)
                if d is None:
                    d = memo[i] = deps(i)
                for j in d - t:
                    t.add(j)
                    todo.append(j)
                if best is not None and len(t & en) >= len(best):
                    break
            k = t & en
            if best is None or len(k) < len(best):
                best = k
                if len(best) == 1:
                    break
        return best if best is not None else en

    def keeps(self, ri: int, state, nstate) -> bool:
        """The step of role ri from `state` to `nstate` ends no other role's block-wide barrier
        count and keeps every racy access of the role live (condition 2)."""
        r = self.roles[ri]
        pcs, marks = state[0], state[1]
        npc = nstate[0][ri]
        if npc >= len(r.events) and any(
            j != ri and pcs[j] < len(self.roles[j].events) and self.last_block[j] >= pcs[j]
            for j in range(len(self.roles))
        ):
            return False
        return self.live(ri, pcs[ri], marks[ri]) <= self.live(ri, npc, nstate[1][ri])

    def live(self, ri: int, pc: int, mark: int) -> frozenset[int]:
        """The racy accesses role ri can make next or has made without releasing (`_race_at`)."""
        k = (ri, pc, mark >= 0)
        got = self._live.get(k)
        if got is None:
            r, racy = self.roles[ri], self.racy[ri]
            out = set()
            j = pc
            while j < len(r.events) and r.events[j].kind == "mem":
                out.add(j)
                j += 1
            if not (pc < len(r.events) and mark >= 0 and r.events[pc].kind == "sync"):
                j = min(pc, len(r.events)) - 1
                while j >= 0 and not _releases(r.events[j]):
                    out.add(j)
                    j -= 1
            got = self._live[k] = frozenset(out & racy)
        return got


def _within(positions, lo: int, hi: int) -> bool:
    """Some position in lo..hi (both included) of the sorted list."""
    i = bisect.bisect_left(positions, lo)
    return i < len(positions) and positions[i] <= hi


def _footprint(e: Event):
    """The shared object of the search's state a step of event e reads or writes: a barrier
    element, a named barrier id; None for an access or an exit."""
    if e.kind in ("wait", "arrive", "expect", "load", "init"):
        return ("B", e.elem)
    if e.kind in ("sync", "barrive") and e.sync is not None:
        return ("S", e.sync[0])
    return None


def _symmetry(
    roles: list[Role],
    elems: list | None = None,
    stepwise: bool = True,
    counts: dict | None = None,
    lanes: int | None = None,
):
    """The key a state is visited under: roles with the same program (the same events, the same
    number of threads: warps that differ only in what the search does not see) are interchangeable,
    so a state and the one with two such roles' (pc, generation mark) swapped have the same
    successors up to that swap and the same deadlocks. The key sorts those pairs within each
    class of such roles (an exact reduction: what is reachable is kept, up to the swap).

    The cluster exploration (r17-remote): a renaming pi of the CTA ranks under which every CTA's
    roles are another CTA's (`_rank_automorphisms`) maps the whole state -- positions, barrier
    elements' copies, named-barrier ids -- to a state with the same successors up to that
    renaming and the same deadlocks; the key is the least image over those renamings (each an
    automorphism of the system, so two states of one key are images of each other: exact). In
    the cluster race search (`lanes`: the threads of a CTA) an access's element copy and lanes
    are renamed too, so a race maps to a race. When
    every exchange of two neighbouring ranks is one, every renaming is (they generate them all):
    the state is then one block per CTA and the key sorts the blocks (`_block_key`)."""
    inner = _role_symmetry(roles)
    if elems is None or counts is None:
        return inner
    ctas = sorted({r.cta for r in roles})
    n = len(ctas)
    if n < 2 or ctas != list(range(n)):
        return inner
    swaps = [tuple(c + 1 if c == a else a if c == a + 1 else c for c in range(n)) for a in range(n - 1)]
    if len(_rank_automorphisms(roles, elems, stepwise, counts, swaps, aligned=True, lanes=lanes)) == len(swaps):
        blocks = _block_key(roles, elems, n)
        if blocks is not None:
            return lambda st: blocks(inner(st))
    autos = _rank_automorphisms(roles, elems, stepwise, counts, _rank_candidates(n), lanes=lanes)
    if not autos:
        return inner

    def key(st):
        best = inner(st)
        pcs, marks, bars, syncs = st
        for sigma, eperm, smap in autos:
            p, mk = [0] * len(pcs), [0] * len(pcs)
            for i, j in enumerate(sigma):
                p[j], mk[j] = pcs[i], marks[i]
            b = [bars[0]] * len(bars)
            for i, j in enumerate(eperm):
                b[j] = bars[i]
            sy = tuple(sorted((smap(sid), v) for sid, v in syncs))
            k = inner((tuple(p), tuple(mk), tuple(b), sy))
            if k < best:
                best = k
        return best

    return key


def _block_key(roles: list[Role], elems: list, n: int):
    """The key of a cluster exploration whose every renaming of ranks is an automorphism, with
    CTA c's j-th role mapped to CTA pi(c)'s j-th role and element `x@cta c` to `x@cta pi(c)`: a
    renaming moves CTA c's block (its roles' positions and marks, its elements' states, its
    barrier ids' states) to position pi(c) and changes nothing else, so the sorted blocks are
    the least image over all n! renamings."""
    by_cta: list[list[int]] = [[] for _ in range(n)]
    for i, r in enumerate(roles):
        by_cta[r.cta].append(i)
    el: list[list[tuple]] = [[] for _ in range(n)]
    for j, e in enumerate(elems):
        p = _cta_of_elem(e)
        if p is None or not 0 <= p[1] < n:
            return None
        el[p[1]].append(((p[0],) + tuple(e[1:]), j))
    if len({len(x) for x in by_cta}) != 1 or len({tuple(k for k, _ in sorted(x)) for x in el}) != 1:
        return None
    epos = [[j for _, j in sorted(x)] for x in el]

    def key(st):
        pcs, marks, bars, syncs = st
        sy: list[list] = [[] for _ in range(n)]
        whole = []  # the cluster barrier's state: one for every CTA
        for sid, v in syncs:
            base, c = _cta_of_sid(~sid if sid < 0 else sid)
            if 0 <= c < n:
                sy[c].append((sid < 0, base, v))
            else:
                whole.append((sid, v))
        return tuple(whole), tuple(
            sorted(
                (
                    tuple(pcs[i] for i in by_cta[c]),
                    tuple(marks[i] for i in by_cta[c]),
                    tuple(bars[j] for j in epos[c]),
                    tuple(sorted(sy[c])),
                )
                for c in range(n)
            )
        )

    return key


def _rename_mem(mem: tuple, pi: tuple, lanes: int | None) -> tuple:
    """An access event's (buffer, write, atomic, ((element, lanes), ...)) with the ranks renamed:
    the element's CTA (its first index in the cluster race search, `_emit_access`) and each
    lane (rank * lanes + tid)."""
    if lanes is None:
        return mem
    items = tuple(
        ((pi[k[0]],) + tuple(k[1:]), tuple(pi[t // lanes] * lanes + t % lanes for t in ls)) for k, ls in mem[3]
    )
    return (mem[0], mem[1], mem[2], items)


def _cta_of_elem(elem: tuple) -> tuple[str, int] | None:
    name, at, c = str(elem[0]).rpartition("@cta")
    return (name, int(c)) if at and c.isdigit() else None


def _cta_of_sid(sid: int) -> tuple[int, int]:
    """A barrier id of the cluster exploration as (base, CTA): CTA c's named barrier i is
    i + CTA_IDS * c, its warpgroup g's MMA MMA_IDS + g + CTA_IDS * c (`_unroll`)."""
    if sid >= MMA_IDS:
        return MMA_IDS + (sid - MMA_IDS) % CTA_IDS, (sid - MMA_IDS) // CTA_IDS
    return sid % CTA_IDS, sid // CTA_IDS


def _rank_candidates(n: int) -> list[tuple[int, ...]]:
    """Renamings of the ranks 0..n-1 tried as automorphisms: every permutation for n <= 4; for
    larger clusters the rotations (`(c + k) % n`, rings), the reflections (`(k - c) % n`) and,
    n a power of two, the exchanges (`c ^ k`, pairs and butterflies). Each is kept only if
    it is one (`_rank_automorphisms`); trying fewer only reduces less."""
    if n <= 4:
        out = set(itertools.permutations(range(n)))
    else:
        out = {tuple((c + k) % n for c in range(n)) for k in range(n)}
        out |= {tuple((k - c) % n for c in range(n)) for k in range(n)}
        if n & (n - 1) == 0:
            out |= {tuple(c ^ k for c in range(n)) for k in range(n)}
    out.discard(tuple(range(n)))
    return sorted(out)


def _rank_automorphisms(
    roles: list[Role],
    elems: list,
    stepwise: bool,
    counts: dict,
    candidates: list,
    aligned: bool = False,
    lanes: int | None = None,
) -> list:
    """The renamings pi among `candidates` that map the search onto itself: every role of CTA c
    has a role of CTA pi(c) with the same threads whose program is c's with every barrier
    element's copy `@cta d` renamed `@cta pi(d)` and every barrier id of CTA d made CTA pi(d)'s,
    and the elements' init counts agree. Programs are compared event by event -- or, in the
    search that runs a role from one wait to the next in one step (not `stepwise`), the events
    between two waits compared per barrier element and id in their order, since events on
    different elements commute and no state of that search stops between them: a 4-CTA
    all-gather whose CTAs arrive on the peers' barriers in the order 0, 1, 2, 3 is symmetric
    there. `aligned`: CTA c's j-th role must be CTA pi(c)'s j-th (`_block_key`). Each as (role
    map, element map over `elems`' positions, id map)."""
    eidx = {e: i for i, e in enumerate(elems)}
    if any(_cta_of_elem(e) is None for e in elems):
        return []
    if lanes is None and any(e.mem is not None for r in roles for e in r.events):
        return []  # (accesses: only with their lanes renamed)
    by_cta: dict[int, list[int]] = {}
    for i, r in enumerate(roles):
        by_cta.setdefault(r.cta, []).append(i)
    out = []
    plain: list = []  # each role's signature, not renamed
    for pi in candidates:

        def ren_elem(e, pi=pi):
            if e is None:
                return None
            name, c = _cta_of_elem(e) or ("", -1)
            return e if c < 0 else (f"{name}@cta{pi[c]}",) + tuple(e[1:])

        def ren_sid(sid, pi=pi):
            if sid < 0:
                return ~ren_sid(~sid)  # (an open generation's count, `_open_generation`)
            base, c = _cta_of_sid(sid)
            return base + CTA_IDS * pi[c] if 0 <= c < len(pi) else sid  # (the cluster barrier: one)

        eperm = []
        ok = True
        for e in elems:
            f = ren_elem(e)
            if f not in eidx or counts.get(f) != counts.get(e):
                ok = False
                break
            eperm.append(eidx[f])
        if not ok or sorted(eperm) != list(range(len(elems))):
            continue

        def sig(r: Role, rename: bool, pi=pi, ren_elem=ren_elem, ren_sid=ren_sid):
            segs: list = []
            run: dict = {}
            for e in r.events:
                elem = ren_elem(e.elem) if rename else e.elem
                sync = (ren_sid(e.sync[0]), e.sync[1]) if rename and e.sync is not None else e.sync
                mem = _rename_mem(e.mem, pi, lanes) if rename and e.mem is not None else e.mem
                if mem is not None:
                    mem = (mem[0], mem[1], mem[2], tuple(sorted(mem[3])))
                t = (
                    e.kind,
                    e.op.order,
                    elem,
                    e.parity,
                    e.arrivals,
                    e.bytes,
                    sync,
                    e.block,
                    e.sym,
                    e.drop,
                    e.relaxed,
                    mem,
                )
                if stepwise or e.kind in ("wait", "sync", "exit") or e.mem is not None:
                    if run:
                        segs.append(tuple(sorted(((k, tuple(v)) for k, v in run.items()), key=repr)))
                        run = {}
                    segs.append(t)
                else:
                    run.setdefault(repr(elem if elem is not None else sync), []).append(t)
            if run:
                segs.append(tuple(sorted(((k, tuple(v)) for k, v in run.items()), key=repr)))
            return (len(r.threads), tuple(segs))

        if not plain:
            plain.extend(sig(r, False) for r in roles)  # (the same for every pi)
        sigma = [-1] * len(roles)
        if aligned:
            for c, ix in by_cta.items():
                jx = by_cta.get(pi[c], [])
                if len(jx) != len(ix) or any(sig(roles[i], True) != plain[j] for i, j in zip(ix, jx)):
                    ok = False
                    break
                for i, j in zip(ix, jx):
                    sigma[i] = j
        else:
            want: dict = {}
            for j, r in enumerate(roles):
                want.setdefault((r.cta, plain[j]), []).append(j)
            for i, r in enumerate(roles):
                cands = want.get((pi[r.cta], sig(r, True)))
                if not cands:
                    ok = False
                    break
                sigma[i] = cands.pop()
        if ok:
            out.append((tuple(sigma), tuple(eperm), ren_sid))
    return out


def _role_symmetry(roles: list[Role]):
    sig: dict = {}
    for i, r in enumerate(roles):
        ev = tuple(
            (e.kind, id(e.op), e.elem, e.parity, e.arrivals, e.bytes, e.sync, e.block, e.mem, e.sym, e.drop)
            for e in r.events
        )
        sig.setdefault((len(r.threads), r.cta, ev), []).append(i)
    classes = [ix for ix in sig.values() if len(ix) > 1]
    if not classes:
        return lambda st: st

    def key(st):
        pcs, marks, bars, syncs = st
        p, mk = list(pcs), list(marks)
        for ix in classes:
            pairs = sorted((pcs[i], marks[i]) for i in ix)
            for i, (a, b) in zip(ix, pairs):
                p[i], mk[i] = a, b
        return (tuple(p), tuple(mk), bars, syncs)

    return key


def _trace(path: tuple | None) -> list:
    """The steps of a path chain (previous chain, steps), first to last."""
    parts = []
    while path is not None:
        path, steps = path
        parts.append(steps)
    return [st for steps in reversed(parts) for st in steps]


def _complete(b, count, e: Event | None = None):
    """The phase completes when no arrival and no byte is pending; the next phase then expects the
    init count less the arrivals dropped so far (`mbarrier.arrive_drop`: PTX decrements the
    expected count of the current and later phases; the current one still takes the dropping
    arrival, completion._ragged_account counts it so). A phase that expects no arrival (every
    arrival dropped) is left alone: a later event on the element is not modelled (`_dead`)."""
    done, pend, tx, dropped = b
    if pend <= 0 and tx == 0:
        nxt = count - dropped
        if nxt <= 0:
            return (done + 1, 0, 0, dropped)
        return (done + 1, nxt + pend, 0, dropped)
    return b


def _dead(b, count, e: Event) -> None:
    """An event on a barrier element whose every arrival was dropped (its phases expect none):
    PTX leaves such a phase undefined (the accounts report the drop); the search stops."""
    if b[3] and count - b[3] <= 0:
        raise _NotModelled(
            f"`{e.op.api}` (line {e.op.location.row}) on a barrier whose phases expect no arrival after arrive_drop"
        )


class _NotModelled(Exception):
    """A state the roles cannot represent: the search ends unknown with this reason."""


def _split_arrival(e: Event, arrived: int, need: int) -> None:
    """A role of several warps arriving at a named barrier whose open generation completes with
    only some of them (`bar.sync 1, 128` met by two warpgroups, a role of three warps arriving to
    64): the hardware counts each warp, so the warps that come after the count open the next
    generation, while the role has one position for all its warps. Not modelled: unknown, never
    a generation completed with the rest of the role's arrivals dropped (a false deadlock)."""
    if not e.block and arrived < need < arrived + e.arrivals:
        sid = e.sync[0] if e.sync is not None else None
        what = f"the MMA of warpgroup {sid - MMA_IDS}" if sid is not None and sid >= MMA_IDS else f"named barrier {sid}"
        raise _NotModelled(
            f"the warps of one role arrive across two generations of {what} (line {e.op.location.row}; not modelled)"
        )


def _generation_count(syncs: dict, e: Event, arrived: int) -> None:
    """An arrival (`bar.sync` / `bar.arrive`) at a named barrier whose open generation already
    has arrivals made with another thread count: PTX leaves that generation undefined; the
    search ends unknown. (A barrier id used with two counts in distinct generations, one
    group's `bar.sync 0, 256` completed before another's `bar.sync 0, 128`, is defined: each
    generation expects the count its arrivals name.) The open generation's count is kept
    under the key `~sid` while it has arrivals (`_open_generation`); the block barrier, whose
    count moves with the threads that exited, is left out."""
    if e.block or e.sync is None or arrived <= 0:
        return
    sid, cnt = e.sync
    opened = syncs.get(~sid)
    if opened is not None and opened[0] != cnt:
        raise _NotModelled(
            f"named barrier {sid} met with {opened[0]} and {cnt} threads in one generation "
            f"(line {e.op.location.row}; undefined in PTX)"
        )


def _open_generation(syncs: dict, e: Event, arrived: int) -> None:
    """Keep the count of a named barrier's open generation (`_generation_count`)."""
    if e.block or e.sync is None:
        return
    sid, cnt = e.sync
    if arrived > 0:
        syncs.setdefault(~sid, (cnt, 0))
    else:
        syncs.pop(~sid, None)


def _run_role(
    ri,
    r: Role,
    state,
    eidx,
    gone,
    counts,
    elems,
    memory: bool = False,
    split: bool = False,
    stepwise: bool = False,
    lags: tuple | None = None,
    own: frozenset = frozenset(),
):
    """Run role ri from its pc through local events up to and including one wait/sync.
    None when it cannot move. `memory` (the race search): shared-memory accesses are local
    events, and the run stops after every synchronising event, so that each state shows every
    role's next accesses (those it can make before it synchronises again); `stepwise` stops
    there too (a step is one event, what `_LocalSteps` judges by the role's next event).
    `lags` (the prompt search, `_lagging`): a step that would complete a phase of an element
    another role lags on is not taken (the role stops before it; the lagging role can move, so no
    state is made terminal), unless this role completed the element's previous phase in its solo
    run (`own`: the elements whose phases it completed since another role last stepped)."""
    own = set(own)
    pcs, marks, bars, syncs = state
    pc = pcs[ri]
    if pc >= len(r.events):
        return None
    bars = list(bars)
    syncs = dict(syncs)
    marks = list(marks)
    steps = []
    first = True
    while pc < len(r.events):
        e = r.events[pc]
        if (memory or stepwise) and steps and (e.kind != "mem" or steps[-1][1].kind != "mem"):
            break  # a run of accesses, or one synchronising event
        if e.kind == "mem":
            steps.append((ri, e, "writes" if e.mem[1] else "reads"))
            pc += 1
            first = False
            continue
        if e.kind == "wait":
            i = eidx[e.elem]
            done = bars[i][0]
            if done % 2 == e.parity:
                _dead(bars[i], counts[elems[i]], e)
                if first:
                    return None
                break
            steps.append((ri, e, "passes" + (" (fresh barrier)" if done == 0 else f" (phase {done - 1} completed)")))
            pc += 1
            first = False
            break
        if e.kind == "barrive":
            # bar.arrive: counted in the current generation, no wait
            sid, cnt = e.sync
            arrived, gen = syncs.get(sid, (0, 0))
            _split_arrival(e, arrived, cnt)
            _generation_count(syncs, e, arrived)
            arrived += e.arrivals
            if arrived >= cnt:
                gen, arrived = gen + 1, 0
            syncs[sid] = (arrived, gen)
            _open_generation(syncs, e, arrived)
            steps.append((ri, e, "completes the barrier" if arrived == 0 else ""))
            pc += 1
            first = False
            continue
        if e.kind == "sync":
            sid, cnt = e.sync
            # a barrier over the whole block (`__syncthreads()`, `bar.sync 0`) waits for the
            # threads that have not exited (PTX: "non-exited threads of all other warps")
            need = cnt - gone if e.block else cnt
            arrived, gen = syncs.get(sid, (0, 0))
            if marks[ri] < 0:
                _split_arrival(e, arrived, need)
                _generation_count(syncs, e, arrived)
                arrived += e.arrivals
                marks[ri] = gen
                if split:
                    # (the reduced race search: the arrival that completes the generation is a
                    # step of its own, its pass another, so that arrivals commute, `_LocalSteps`)
                    if arrived >= need:
                        gen, arrived = gen + 1, 0
                    syncs[sid] = (arrived, gen)
                    _open_generation(syncs, e, arrived)
                    steps.append(
                        (
                            ri,
                            e,
                            "arrives, completes the barrier" if gen > marks[ri] else "arrives, waits for the others",
                        )
                    )
                    break
            if marks[ri] == gen and arrived >= need:
                gen, arrived = gen + 1, 0
            syncs[sid] = (arrived, gen)
            _open_generation(syncs, e, arrived)
            if gen > marks[ri]:
                marks[ri] = -1
                steps.append((ri, e, "passes"))
                pc += 1
                first = False
                continue
            if first and (arrived, gen) == dict(state[3]).get(sid, (0, 0)):
                return None
            steps.append((ri, e, "arrives, waits for the others"))
            break
        if e.kind == "exit":
            steps.append((ri, e, "exits"))
            pc = len(r.events)
            break
        i = eidx[e.elem]
        if e.kind == "init":
            bars[i] = (0, counts[elems[i]], 0, 0)
            steps.append((ri, e, "re-initialises it"))
            pc += 1
            first = False
            continue
        done, pend, tx, dropped = bars[i]
        _dead(bars[i], counts[elems[i]], e)
        if e.kind == "arrive":
            pend -= e.arrivals
            if e.drop:
                dropped += e.arrivals
        elif e.kind == "expect":
            pend -= e.arrivals
            tx += e.bytes
        elif e.kind == "load":
            tx -= e.bytes
        nb = _complete((done, pend, tx, dropped), counts[elems[i]], e)
        if nb[0] > done and lags is not None:
            if elems[i] not in own and _lagger(lags, ri, i) is not None:
                if first:
                    return None
                break
            own.add(elems[i])
        bars[i] = nb
        steps.append((ri, e, f"completes phase {done}" if nb[0] > done else ""))
        pc += 1
        first = False
    npcs = list(pcs)
    npcs[ri] = pc
    nstate = (tuple(npcs), tuple(marks), tuple(bars), tuple(sorted(syncs.items())))
    if nstate == state:
        return None
    return nstate, steps


def _lagging(roles: list[Role], state, eidx: dict) -> tuple:
    """Per role, the barrier elements it lags on: the elements of the waits it can reach and pass
    in this state by waits alone (from its position: a sync whose generation has completed, whose
    pass it has still to take, then waits that pass now, the first wait on each element), doing
    nothing else on the way. Such a role needs nothing from any other role to leave those waits:
    only the scheduler keeps it there."""
    pcs, marks, bars, syncs = state
    sy = dict(syncs)
    out = []
    for ri, r in enumerate(roles):
        pc = pcs[ri]
        got: set[int] = set()
        if pc < len(r.events) and r.events[pc].kind == "sync" and r.events[pc].sync is not None:
            if not (marks[ri] >= 0 and sy.get(r.events[pc].sync[0], (0, 0))[1] > marks[ri]):
                out.append(frozenset())
                continue
            pc += 1
        while pc < len(r.events):
            e = r.events[pc]
            if e.kind != "wait":
                break
            i = eidx[e.elem]
            if i in got or bars[i][0] % 2 == e.parity:
                break
            got.add(i)
            pc += 1
        out.append(frozenset(got))
    return tuple(out)


def _lagger(lags: tuple, ri: int, i: int) -> int | None:
    """A role other than ri that lags on element i (`_lagging`), else None."""
    for j, g in enumerate(lags):
        if j != ri and i in g:
            return j
    return None


def _missed_phase(roles, path, start, eidx, counts, elems, split: bool, stepwise: bool) -> tuple | None:
    """The first step of the path (the deadlock search's chain of role runs) that completes a phase
    of an element another role lags on (`_lagging`): that role, not having taken the waits it could
    take, then finds the next phase at its wait there (a wait on parity p passes while the count
    of completed phases has the other parity). (lagging role, element, phase completed), or None
    when no role of the path lags so. The runs are replayed from `start` (each run is deterministic
    given its state and role)."""
    runs = []
    while path is not None:
        path, steps = path
        runs.append(steps)
    state = start
    sizes = [len(r.threads) for r in roles]
    runner, own = -1, set()
    for steps in reversed(runs):
        ri = steps[0][0]
        if ri != runner:
            runner, own = ri, set()
        pcs = state[0]
        lags = _lagging(roles, state, eidx)
        for _, e, out in steps:
            if out.startswith("completes phase"):
                done = int(out.split()[2])
                j = _lagger(lags, ri, eidx[e.elem])
                if j is not None and e.elem not in own:
                    return (j, e.elem, done)
                own.add(e.elem)
        gone = sum(sizes[k] for k, r in enumerate(roles) if pcs[k] >= len(r.events) and r.cta == roles[ri].cta)
        res = _run_role(ri, roles[ri], state, eidx, gone, counts, elems, False, split, stepwise)
        if res is None or res[1] != steps:
            return None  # (not replayed: never so, the runs are deterministic)
        state = res[0]
    return None


def _prompt_search(ex: Exploration, roles: list[Role], counts: dict) -> None:
    """A deadlock whose trace has a role lag past a phase (`Deadlock.missed`): the role could have
    taken its waits on an element by waits alone (`_lagging`) and did not before the element
    completed its next phase, so its wait there then blocks on a phase the other roles may never
    complete (two phases of one parity bit). The schedule is one of the hardware's (nothing bounds
    how long a warp stays at a passable `try_wait`), but a GPU runs it only if that warp is starved
    while the other roles run a whole phase of the barrier: it depends on the warp scheduler, which
    the model does not know. The search is run again with prompt laggers only
    (`_search(prompt=True)`): a deadlock found there needs no role starved at passable waits (it
    replaces the first one); none found leaves progress undecided with the reason, never a
    finding."""
    d = ex.deadlock
    assert d is not None and d.missed is not None
    j, elem, phase = d.missed
    again = Exploration()
    _search(again, roles, counts, prompt=True)
    ex.states += again.states
    ex.steps += again.steps
    if again.deadlock is not None:
        ex.deadlock = again.deadlock
        return
    ex.deadlock = None
    ex.status = "unknown"
    ex.reason = (
        f"a deadlock only when {roles[j].name}, free to pass its waits, has not reached its wait on"
        f" '{elem_str(elem)}' when that barrier completes phase {phase}, past the phase the wait is for"
        " (a warp starved by the scheduler for a whole phase)"
        + (" and the search without such a starved warp reached its bound" if again.status != "explored" else "")
        + ": not established"
    )


# ------------------------------------------------------------- explanations --


def signals_left(ex: Exploration, ri_blocked: int, elem) -> list[int]:
    """Roles that still have an arrive/expect/load on `elem` ahead of their pc."""
    d = ex.deadlock
    out = []
    pcs = {}
    for i, e in d.blocked:
        pcs[i] = ex.roles[i].events.index(e) if e in ex.roles[i].events else None
    for i, r in enumerate(ex.roles):
        if i == ri_blocked or i in d.finished:
            continue
        start = _pc_of(ex, i)
        if any(e.elem == elem and e.kind in ("arrive", "expect", "load") for e in r.events[start:]):
            out.append(i)
    return out


def arrivals_left(ex: Exploration, ri_blocked: int, sid: int) -> list[int]:
    """Roles that can still arrive at named barrier `sid` in the generation the blocked role
    waits for (a bar.sync or bar.arrive ahead of their pc). A role blocked at a bar.sync of `sid`
    has arrived in that generation already and waits for it to complete, so what follows that
    sync comes in a later generation: it is not counted (two roles of one warpgroup blocked at
    its MMA, a third that never comes: no role left)."""
    d = ex.deadlock
    out = []
    for i, r in enumerate(ex.roles):
        if i == ri_blocked or i in d.finished:
            continue
        start = _pc_of(ex, i)
        here = r.events[start]
        if here.kind == "sync" and here.sync[0] == sid:
            continue
        if any(e.kind in ("sync", "barrive") and e.sync[0] == sid for e in r.events[start:]):
            out.append(i)
    return out


def barrier_threads(ex: Exploration, sid: int) -> int:
    """The most threads that can ever be counted in one generation of named barrier `sid`:
    every role that uses it, with the warps of its widest use."""
    total = 0
    for r in ex.roles:
        ws = [e.arrivals for e in r.events if e.kind in ("sync", "barrive") and e.sync[0] == sid]
        total += max(ws, default=0)
    return total


def sync_state(ex: Exploration, sid: int) -> tuple[int, int]:
    """(threads arrived in the current generation, generations completed) at the deadlock."""
    return ex.deadlock.state["syncs"].get(sid, (0, 0))


def blocked_on(e: Event) -> str:
    """What a blocked event waits for, in words."""
    if e.kind == "wait":
        return f"'{elem_str(e.elem)}'"
    if e.sync is not None and e.sync[0] >= MMA_IDS:
        return f"the MMA of warpgroup {e.sync[0] - MMA_IDS} (its other warps)"
    return f"named barrier {e.sync[0]}" if e.sync is not None else e.op.api


def _pc_of(ex: Exploration, i: int) -> int:
    for j, e in ex.deadlock.blocked:
        if j == i:
            return ex.roles[i].events.index(e)
    return len(ex.roles[i].events)


def elem_str(elem) -> str:
    return elem[0] + "".join(f"[{x}]" for x in elem[1:])


def event_text(e: Event) -> str:
    if e.kind == "wait":
        return f"wait({elem_str(e.elem)}, {e.parity})"
    if e.kind == "arrive":
        return f"arrive({elem_str(e.elem)}) x{e.arrivals}"
    if e.kind == "expect":
        return f"expect({elem_str(e.elem)}, {e.sym or e.bytes} B) +{e.arrivals} arrival(s)"
    if e.kind == "load":
        return f"load -> {elem_str(e.elem)} ({e.sym or e.bytes} B)"
    if e.kind in ("sync", "barrive"):
        if e.sync[0] >= MMA_IDS:
            return f"{e.op.api} (warpgroup {e.sync[0] - MMA_IDS}, {e.sync[1]} threads)"
        return f"{e.op.api}(id {e.sync[0]}, {e.sync[1]} threads) +{e.arrivals}"
    if e.kind == "init":
        return f"init({elem_str(e.elem)}, {e.arrivals})"
    return e.op.api


# ------------------------------------------------------------ spin waits ----


@dataclass
class SpinNever:
    """A spin loop on a flag in global memory that no block can ever leave: the first block to
    leave any spin on that flag would see the flag's initial value, and the loop's condition
    keeps every block spinning at that value."""

    spin: ir.Op  # the SPIN head
    poll: ir.Op  # the load whose value the condition tests
    flag: str  # the kernel pointer the flag is in
    raises: list[ir.Op]  # the ops that write the flag (each after a pass of the spin)
    initial: int  # the value the flag is taken to start at
    # set when the argument is element-wise (`_unwritten_element`): the element of the flag the
    # poll names in the first iteration of the loops around the spin, which no write of the kernel
    # ever names, and the values (block-uniform unknowns, launch values) under which a block
    # reaches that poll
    element: int | None = None
    reached_with: dict[str, int] | None = None


@dataclass
class SpinOwnStore:
    """A wait for a change of a word right after the waiting thread's own store of it, with no
    other thread of the grid writing the word: the value stays the one stored, at which the loop
    goes on (`gen.store(r + 1); ...; gen.wait(r + 1)`, a C++20 wait returning once the value
    differs from its argument)."""

    spin: ir.Op  # the SPIN head
    poll: ir.Op  # the load whose value the condition tests
    flag: str  # the kernel pointer the word is in
    store: ir.Op  # the waiting thread's own last store of the word before the spin
    value: E.Expr  # the value it stores


@dataclass
class SpinFacts:
    never: list[SpinNever] = field(default_factory=list)
    # spins right after the spinning thread's own store of the only writer's word (a wait for a
    # change nobody makes): a hang
    own_store: list[SpinOwnStore] = field(default_factory=list)
    # spins that are the wait of a hand-written grid barrier (checks/grid_barriers.py): an
    # instance no block's arrival releases, and the spins proved left by every block
    counter_hangs: list = field(default_factory=list)  # grid_barriers.CounterHang
    # waits for a count of a counter the rounds' additions never reach in the first round
    # (checks/counted_waits.py): a hang
    count_hangs: list = field(default_factory=list)  # counted_waits.CountHang
    proved: list[ir.Op] = field(default_factory=list)
    # spins left by a `break` on a loaded value that no value of the flag lets them take
    # (checks/versions.spin_exit): a hang
    unreached: list = field(default_factory=list)  # versions.SpinUnreached
    # spins in a loop that wait on epoch flags (checks/epochs.py) at which a block of the
    # launch's instance is left for ever
    epoch_hangs: list = field(default_factory=list)  # epochs.EpochHang
    # spins on a plain load of a global word that the compiler may hoist out of the loop, at a
    # first look that may see the word's value before the launch (checks/awaited_values.py): a hang
    hoisted: list = field(default_factory=list)  # awaited_values.HoistedPoll
    # (spin head, why the argument does not apply): coverage, never a finding
    undecided: list[tuple[ir.Op, str]] = field(default_factory=list)


def spin_waits(an: Analysis) -> SpinFacts:
    """The progress of spin loops on global flags, across the blocks of the grid.

    A spin `while (cond(v))` on a value `v` loaded from a flag F (a kernel pointer the kernel
    writes only with atomics or stores that come after a pass of that spin in the same block:
    after it in the spinning thread, or after a block-wide barrier) blocks until some block
    makes `cond` false. Every write of F then follows some block's pass of the spin, so the
    first block to pass it reads F's initial value -- taken to be 0, the host zeroing its
    semaphores before the launch (a kernel that resets F itself writes it before a pass and is
    undecided). When no block of the grid can leave the loop at that value (z3: `cond(0)` for
    every value of the block index, launch values and other unknowns), no block ever passes it
    and every block spins: a wait that no path satisfies. Symbolic over the blocks: no block is simulated, and the
    argument holds for every grid size. Undecided when F is written elsewhere (a write not
    after the spin, a write through an unknown address, an unmodelled call), when the loop can
    end otherwise (a `break`, a `return`), or when the condition reads anything but the flag and
    launch values."""
    return an.fact("protocol.spin_waits", _spin_waits)


def _counter_barrier_wait(an: Analysis, sp: ir.Op):
    """The spin as the wait of a hand-written grid barrier (an arrival counter and a word the
    last arriver raises, checks/grid_barriers.py): ("hang", CounterHang) | ("proved", None) |
    ("undecided", why) | None when the spin is no such wait."""
    from . import grid_barriers

    facts = grid_barriers.barriers(an)
    for h in facts.hangs:
        if h.barrier.spin is sp:
            return "hang", h
    if id(sp) in facts.proved:
        return "proved", None
    if id(sp) in facts.undecided and any(b.spin is sp for b in facts.barriers):
        return "undecided", facts.undecided[id(sp)]
    return None


def _epoch_wait(an: Analysis, sp: ir.Op, out: SpinFacts) -> bool:
    """A spin inside a loop that waits on an epoch flag (checks/epochs.py): its progress is the
    epoch engine's run of the launch's instance -- a hang there, or coverage saying what was run
    (no proof for other grids or trip counts). False when the spin is no epoch wait."""
    from . import epochs

    facts = epochs.epochs(an)
    if not any(w.spin is sp for w in facts.waits):
        return False
    hangs = [h for h in facts.hangs if h.wait.spin is sp]
    if hangs:
        out.epoch_hangs.extend(hangs)
        return True
    why = next((w for s, w in facts.undecided if s is sp), None)
    if why is None and facts.hangs:
        why = "epoch flags: the launch's instance hangs at another wait"
    if why is None:
        why = next((w for s, w in facts.explored if s is sp), "epoch flags: not run")
    out.undecided.append((sp, why))
    return True


def _asked_elsewhere(m: ir.KernelModel, sp: ir.Op, body: list[ir.Op]) -> bool:
    """A spin whose progress another question owns, or that has none to ask: a lock's spin on a
    read-modify-write (checks/locks.py), a persistent loop whose iterations wait at barriers (the
    roles' exploration runs it, `_persistent_loop`), a loop that only computes over the kernel's
    input (`_computes_only`: it waits for no thread)."""
    from .locks import RMW_TAKES

    if any(
        o.kind == ir.GLOBAL_SIGNAL and o.global_access is not None and o.global_access.atomic in RMW_TAKES for o in body
    ):
        return True
    return _persistent_loop(m, sp) or _computes_only(m, sp)


def _one_grid_thread(an: Analysis, o: ir.Op) -> bool:
    """o runs on one thread of the whole grid: one thread of its block (exact guard), in one
    block (z3: its block-uniform conditions pin `blockIdx.x`) of a one-dimensional launch (every
    launch of the kernel by this file's host code gives an integer number of blocks, and the
    kernel names no other block index)."""
    from .. import solver

    m = an.model
    ex = an.threads.executing(o) if o.guard.exact else None
    if not ex or len(ex) != 1 or not o.guard.uniform or any(u.is_opaque() for u in o.guard.uniform):
        return False
    launches = m.grid.launches_of(m.name) if m.grid is not None else []
    if not launches or any(g.blocks is None for _, g in launches):
        return False
    conds = list(o.guard.uniform)
    names = {v.name for c in conds for v in c.free_vars()}
    if any(n.startswith(("blockIdx.", "clusterid", "cluster_ctarank")) and n != "blockIdx.x" for n in names):
        return False
    if any(v.kind != E.PARAM for c in conds for v in c.free_vars()):
        return False
    b1, b2 = E.Var("blockIdx.x#1", E.PARAM), E.Var("blockIdx.x#2", E.PARAM)
    c1 = [E.substitute(c, {"blockIdx.x": b1}) for c in conds]
    c2 = [E.substitute(c, {"blockIdx.x": b2}) for c in conds]
    return solver.always(E.binop("==", b1, b2), assume=tuple(c1 + c2)) is True


def _own_store_wait(an: Analysis, sp: ir.Op, poll: ir.Op, writes: list[ir.Op]) -> SpinOwnStore | None:
    """The spin `while (cond(ld(F)))` right after its thread's own store of F, when every write of
    F in the kernel is made by that one thread of the grid (`_one_grid_thread`) and the last one
    before the spin (same iteration of the loops around both, no exit or unmodelled call between)
    stores a value v with `cond(v)` true (z3): while the thread spins nobody writes F, so every poll
    reads v (a thread's load after its own store reads it or a later write in the word's order)
    and the loop never ends. None: not this shape, or not proved."""
    from .. import solver

    m = an.model
    facts, ga = sp.spin, poll.global_access
    if facts is None or facts.cond is None or facts.breaks or ga is None or ga.where is None or not ga.result:
        return None
    if not sp.guard.exact or any(o.kind == ir.CALL for o in m.ops):
        return None
    lid = sp.loops[-1]
    if any(o.kind in (ir.EXIT, ir.CALL) for o in m.ops if lid in o.loops):
        return None
    mine = []
    for w in writes:
        wga = w.global_access
        if w.kind == ir.TMA_STORE or wga is None or wga.base is None:
            return None
        if wga.base != ga.base:
            continue
        if wga.where != ga.where or not _one_grid_thread(an, w):
            return None
        mine.append(w)
    outer = sp.loops[:-1]
    before = [w for w in mine if w.order < sp.order and w.loops == outer]
    if not before or len({an.threads.executing(w) for w in mine}) != 1:
        return None
    st = max(before, key=lambda w: w.order)
    sga = st.global_access
    assert sga is not None
    if sga.atomic != "st" or len(sga.operands) != 1:
        return None
    if set(st.guard.uniform) != set(sp.guard.uniform) and not set(sp.guard.uniform) <= set(st.guard.uniform):
        return None
    if (an.threads.executing(st) or frozenset()) - (an.threads.executing(sp) or frozenset()):
        return None
    # nothing between the store and the spin may skip the spin or write the word another way
    if any(st.order < w.order < sp.order for w in mine):
        return None  # another store of the word (in a loop or branch of its own) between
    for o in m.ops:
        if st.order < o.order < sp.order and (o.kind in (ir.EXIT, ir.CALL) or (o.kind == ir.SPIN and o is not sp)):
            return None
    for l in outer:
        lp = m.loops.get(l)
        if lp is None or lp.continues:
            return None
    v = sga.operands[0]
    stays = E.substitute(facts.cond, {ga.result: v})
    if solver.always(stays, assume=(*st.guard.uniform,)) is not True:
        return None
    return SpinOwnStore(sp, poll, ga.base or "", st, v)


def _runs_first_iteration(sp: ir.Op, poll: ir.Op) -> bool:
    """Does every thread that runs the spin `sp` make the poll in the spin's first iteration? An
    exact guard says so; so does one made inexact by the spin's own loop alone (`Guard.exits` ==
    the spin's loop: the body of `do { w = ld(&f[p]); } while (...)`, which runs in every iteration
    the thread has not left yet, the first included), when the rest of it is the spin's guard."""
    g = poll.guard
    if g.exact:
        return True
    return (
        bool(sp.loops)
        and g.exits == (sp.loops[-1],)
        and not g.opaque
        and g.thread == sp.guard.thread
        and g.uniform == sp.guard.uniform
    )


def _unwritten_element(
    an: Analysis, sp: ir.Op, poll: ir.Op, body: list[ir.Op], writes: list[ir.Op]
) -> SpinNever | None:
    """A spin inside loops or under block-uniform conditions (the look-back of a single-pass scan:
    `for (p = tile - 1; p >= 0; --p) while (ld_acquire(&flag[p]) == 0) {}`), argued element-wise:
    some block reaches the poll in the first iteration of every loop around the spin (z3: a
    witness of the spin's block-uniform guard and the loops' conditions at counter 0, over the
    block index, launch values and the block-uniform unknowns, e.g. a ticket drawn from an
    atomic), naming element e of the flag there; no write of the kernel ever names element e
    (z3, for every thread, block and iteration: each write's guard and index == e unsatisfiable);
    so F[e] keeps its value before the launch, taken to be 0 (the host zeroes its flags, as for
    `SpinNever`), and the loop's condition holds at 0 (for every value of the rest): that block
    never leaves the spin. None when any step is not proved (the spin stays undecided): a loop
    that can end otherwise, an unmodelled call or a write whose address is not known, a poll
    or write index not known, a guard that is not exact."""
    from .. import solver

    facts = sp.spin
    ga = poll.global_access
    if facts is None or facts.cond is None or facts.breaks or ga is None or ga.result is None or ga.index is None:
        return None
    if not sp.guard.exact or not _runs_first_iteration(sp, poll) or any(o.kind in (ir.EXIT, ir.CALL) for o in body):
        return None
    if any(o.kind == ir.CALL for o in an.model.ops) or not an.threads.executing(sp):
        return None
    cont = E.substitute(facts.cond, {ga.result: E.Const(0)})
    if solver.always(cont, assume=(sp.guard.thread,)) is not True:
        return None
    from .awaited_values import first_iteration

    first = first_iteration(an.model, sp)
    if first is None:
        return None
    env, conds = first
    idx = E.substitute(ga.index, env)
    if idx.is_opaque() or any(c.is_opaque() for c in conds) or idx.depends_on(E.THREAD) or idx.depends_on(E.LOOP):
        return None
    if any(c.depends_on(E.LOOP) or c.depends_on(E.THREAD) for c in conds):
        return None
    seen = solver.witness(E.conj(*conds, E.binop(">=", idx, E.Const(0))), an.solver_timeout_ms)
    if seen is None:
        return None
    e = idx.eval(seen)
    if not isinstance(e, int) or isinstance(e, bool):
        return None
    for w in writes:
        wga = w.global_access
        if w.kind == ir.TMA_STORE or wga is None or wga.base is None:
            return None  # a write whose address is not known may be the flag's
        if wga.base != ga.base:
            continue
        if wga.index is None or wga.index.is_opaque() or w.guard.blind:
            return None
        names = E.conj(w.guard.thread, *w.guard.uniform, E.binop("==", wga.index, E.Const(e)))
        if solver.always(E.negate(names), an.solver_timeout_ms) is not True:
            return None
    shown = {k: v for k, v in seen.items() if isinstance(v, int) and not isinstance(v, bool)}
    return SpinNever(sp, poll, ga.base, [], 0, element=e, reached_with=shown)


def _spin_waits(an: Analysis) -> SpinFacts:
    from .. import solver

    out = SpinFacts()
    m = an.model
    ops = m.ops
    spins = [o for o in ops if o.kind == ir.SPIN]
    if not spins:
        return out
    writes = [o for o in ops if o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE, ir.TMA_STORE)]
    for sp in spins:
        facts = sp.spin
        if not sp.loops:
            continue
        lid = sp.loops[-1]
        body = [o for o in ops if lid in o.loops]

        def undecided(why: str, sp: ir.Op = sp) -> None:
            out.undecided.append((sp, why))

        if _asked_elsewhere(m, sp, body):
            continue
        from .awaited_values import covered_wait

        if covered_wait(an, sp):
            continue  # `a.wait(v)` in a spin on the same word: that spin's question
        if facts is not None and facts.cond is not None:
            from .counted_waits import count_hang

            ch = count_hang(an, sp)
            if ch is not None:
                out.count_hangs.append(ch)
                continue
        if facts is None or facts.cond is None:
            # a loop left by a `break` on data (`for (;;) { ...; if (s == last) break; }`): a
            # wait for a value of the word it loads, against the values the kernel's stores of
            # that word write (checks/versions.spin_exit); what it cannot settle stays open
            from .versions import spin_exit

            verdict, what = spin_exit(an, sp, body)
            if verdict == "never":
                out.unreached.append(what)
            elif verdict == "proved":
                out.proved.append(sp)
            else:
                undecided(what)
            continue
        polls = [o for o in body if o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) and o.global_access is not None]
        results = {o.global_access.result: o for o in polls if o.global_access.result}  # type: ignore[union-attr]
        names = {v.name for v in facts.cond.free_vars()}
        read = [results[n] for n in names if n in results]
        if len(read) != 1:
            # a value carried from the body's last load (`v = a.load(); while (v != x) { a.wait(v);
            # v = a.load(); }`): a test of one word's value, asked against the values stored
            from .awaited_values import awaited_never, hoisted_poll, word_poll

            hp = hoisted_poll(an, sp)
            if hp is not None:
                out.hoisted.append(hp)
                continue
            wp = word_poll(an, sp)
            if wp is not None:
                aw = awaited_never(an, wp)
                if aw.never:
                    from .versions import SpinUnreached

                    wga = wp.poll.global_access
                    assert wga is not None and wga.base is not None and wga.result is not None
                    shown = E.negate(E.substitute(wp.cond, {wga.result: E.Var(f"{wga.base}[...]", E.OPAQUE)}))
                    out.unreached.append(
                        SpinUnreached(
                            sp, wp.poll, wga.base, shown, [w for w, _v in aw.writes], 0, aw.block, by_condition=True
                        )
                    )
                else:
                    undecided(aw.why)
                continue
            # two loads of one word (`do { s1 = v; ...; s2 = v; } while (s1 != s2)`): the loop
            # ends once the writers' last value is there, when that value leaves it
            from .versions import spin_exit

            if read and spin_exit(an, sp, body, facts.cond)[0] == "proved":
                out.proved.append(sp)
            else:
                undecided("its condition is no test of one value loaded from global memory")
            continue
        poll = read[0]
        ga = poll.global_access
        assert ga is not None
        flag = ga.base
        if poll.kind != ir.GLOBAL_LOAD or flag is None:
            undecided("the flag's address is not known")
            continue

        own = _own_store_wait(an, sp, poll, writes)
        if own is not None:
            out.own_store.append(own)
            continue
        gb = _counter_barrier_wait(an, sp)
        if gb is not None:
            verdict, what = gb
            if verdict == "hang":
                out.counter_hangs.append(what)
            elif verdict == "proved":
                out.proved.append(sp)
            else:
                undecided(f"the wait of a grid barrier: {what}")
            continue
        if len(sp.loops) > 1 and _epoch_wait(an, sp, out):
            continue
        if len(sp.loops) != 1 or sp.guard.uniform or not sp.guard.exact:
            never = _unwritten_element(an, sp, poll, body, writes)
            if never is not None:
                out.never.append(never)
            else:
                undecided("a spin inside a loop or under a block-uniform condition")
            continue
        if facts.breaks or any(o.kind in (ir.EXIT, ir.CALL) for o in body):
            undecided("the loop can end otherwise (a break, a return or an unmodelled call)")
            continue
        # other values in the condition (the block's index, launch values, unknowns) are taken
        # for all their values: a condition that keeps the loop going for every one of them does
        # so for the real ones
        spinners = an.threads.executing(sp)
        if not spinners:
            continue
        end = max(o.order for o in body)
        raises, ok = [], True
        if any(o.kind == ir.CALL for o in ops):
            undecided("an unmodelled call may write the flag")
            continue
        for w in writes:
            wga = w.global_access
            if w.kind == ir.TMA_STORE or wga is None or wga.base is None:
                ok = False  # a write whose address is not known may be the flag's
                break
            if wga.base != flag:
                continue
            if w.order <= end or lid in w.loops or not w.guard.exact:
                ok = False
                break
            tw = an.threads.executing(w)
            between = [o for o in ops if end < o.order < w.order]
            after_pass = tw is not None and tw <= spinners
            if not after_pass:
                # a barrier of the whole block between: every writer passes it after the spinner
                after_pass = any(
                    o.kind == ir.SYNC
                    and o.sync_kind == "block"
                    and o.guard.exact
                    and not o.loops
                    and an.threads.executing(o) == frozenset(range(an.threads.n or 0))
                    for o in between
                )
            if not after_pass:
                ok = False
                break
            raises.append(w)
        if not ok:
            undecided("the flag is written where no pass of the spin comes first")
            continue
        if not raises:
            # nobody in this kernel writes the flag: another kernel or the host may, which this
            # model does not see -- open, never a pass
            undecided("no thread of this kernel writes the flag (the host or another kernel may)")
            continue
        init = 0
        cont = E.substitute(facts.cond, {ga.result: E.Const(init)})  # type: ignore[dict-item]
        assume = (sp.guard.thread,) if sp.guard.thread is not None else ()
        if solver.always(cont, assume=assume) is True:
            out.never.append(SpinNever(sp, poll, flag, raises, init))
        else:
            undecided("a block may pass first; the turns of the later blocks are not followed")
    return out
