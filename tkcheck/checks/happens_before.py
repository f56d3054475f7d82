"""Happens-before over the memory events of a kernel: shared scalars and global memory.

The events are the model's memory ops: generic loads and stores of `__shared__` scalars and
arrays of scalars (SMEM_ACCESS via "scalar" / "element"), of global memory (GLOBAL_LOAD,
GLOBAL_STORE, TMA_STORE), atomics (GLOBAL_SIGNAL, SMEM_ACCESS with `atomic`), fences (FENCE)
and spin loops (SPIN). Synchronises-with edges come from

* block barriers: `__syncthreads()` / `everyone::sync(id)` / `group<N>::sync(id)` /
  `bar.sync` -- two threads are ordered by a barrier both take part in (one site both run,
  or two sites of the same id, the writer's side possibly a `bar.arrive`);
* mbarriers, named arrives, spin loops, unmodelled calls and global atomics: they may order
  (an arrive -> wait chain, a flag), and which phase pairs with which is not asked here, so a
  pair with one of them between its ends is *undecided* (coverage), never a finding;
* release -> acquire through global memory (per the PTX memory model: a `fence.sc`/`acq_rel`
  at gpu scope -- `__threadfence()` -- followed by a relaxed atomic is a release pattern; a
  relaxed atomic or load followed by that fence is an acquire pattern; `.release`/`.acquire`
  atomics and loads are one by themselves).

Queries, per loop iteration (the same iteration of the loops both ends are in, and for a loop
proved to run twice, the next iteration):

* `shared_races(an)`: a write and a read of the same `__shared__` scalar location by threads of
  different warps, not both atomic, with no happens-before path between them: *proved* when
  every op between the two (on the path through the loop's back edge for the next iteration)
  is modelled and no barrier both threads take part in is among them; undecided otherwise.
* `publications(an)`: global data written (plain stores, `warpgroup::store` to a global layout,
  float atomics) and then announced by an integer atomic on a counter (relaxed), where no
  release orders the data before the counter (neither a gpu-scope fence on the path from the
  data to the counter, nor a release atomic). The writer and the signalling thread are the same
  thread, or threads a block barrier between them orders. A kernel that never reads what it
  counts (no last-arriver test on the atomic's old value, no spin loop) is undecided: a work
  counter announces nothing.
* `acquisitions(an)`: global data read after the thread observed a counter (the old value of a
  relaxed atomic tested by a branch -- directly, or through a `__shared__` flag set from it --
  or a spin loop on a relaxed/volatile load) with no acquire ordering between the observation
  and the read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from . import cluster_handoff, epochs, ragged, shared_handoff, tickets
from .paths import flow, index_key, keys_may_alias

# ops that may synchronise two threads in ways this engine does not pair (phases, flags):
# between the ends of a pair they leave it undecided
MAY_ORDER = (
    ir.MBAR_ARRIVE,
    ir.MBAR_WAIT,
    ir.MBAR_EXPECT,
    ir.NAMED_ARRIVE,
    ir.CALL,
    ir.EXIT,
    ir.SPIN,
    ir.GLOBAL_SIGNAL,
    ir.GLOBAL_LOAD,
)
# (a PDL op orders a thread after the previous grid, never after another thread of this grid)
# gpu-scope (or wider) fences: `__threadfence()`, `fence.sc/acq_rel.gpu`, `membar.sys`
GPU_FENCES = ("membar_gl", "membar_sys", "membar_gpu")
RELEASE_SEMS = ("release", "acq_rel")
ACQUIRE_SEMS = ("acquire", "acq_rel")
# the spellings of atomics on global memory: CUDA's atomicAdd & co, PTX red / atom / st.release,
# a libcu++ / C++ atomic object's member call
ATOMIC_FORMS = ("atomic", "ptx", "object")


@dataclass
class Race:
    """Two accesses of one shared location with no happens-before between them."""

    first: ir.Op  # earlier in the order the witness runs them
    second: ir.Op
    first_thread: int
    second_thread: int
    next_iteration: bool = False  # `second` runs in the iteration after `first`'s
    # from the race search (`protocol.races`): the loop counters of each end, the role names and
    # the interleaving that reaches the state where both can run
    search: dict | None = None
    # an access asked per iteration of its own inner loops (`_race_into_inner_loop`): the loop
    # variables' values at the racing iteration, outermost first
    inner: tuple[tuple[str, int | str], ...] = ()
    inner_first: bool = False  # that access is `first` (else `second`)
    # two lanes of one warp: the `__syncwarp(mask)` ops between that both lanes execute but whose
    # mask leaves one of them out (a barrier too narrow for the pair: the scope contract's)
    narrow: tuple[ir.Op, ...] = ()
    # the accesses are in different loops (`_across_loops`): `second` in the first iteration of
    # its own loops, after `first`'s last
    across_loops: bool = False
    # the accesses run under conditions over the lanes' inputs (a leader elected from a run-time
    # mask): the input under which they race (`_race_for_an_input`); "" for every input
    input: str = ""
    element: str = ""  # under that input, the element both name (`cnt_s[0]`)
    # the two accesses are in a loop each thread leaves at its own iteration (`checks/ragged.py`):
    # each end's iteration, the split barrier asked and the launches the race needs
    ragged: "ragged.RaggedPair | None" = None


@dataclass
class Publication:
    """Global data `data` written, then a counter raised by `signal`, with no release between."""

    data: ir.Op
    signal: ir.Op
    data_thread: int
    signal_thread: int
    writers: frozenset[int] = frozenset()  # every thread that writes the data
    gathered: bool = False  # a block barrier between gathers the writers' stores before the signal
    # "relaxed": the signal is relaxed and nothing releases the data; "unordered": the signal
    # releases (a release atomic, a fence before it), but data_thread's stores are not ordered
    # before the signalling thread's release by any barrier (release is cumulative only over
    # what happens before it); "scope": the signal releases at a scope that stops at the block
    # (`thread_scope_block`, `.cta`), which orders nothing for the other blocks that read the count;
    # "after": the data is stored after the signal's release, by the signalling thread, and no
    # later release of that thread publishes it; "after-counter": the data is written (by any
    # thread of the block) after the block's counter, whose old value tells the last block that
    # every block is done, and the last block reads it after that test with nothing that waits
    # for the write; "reset-after" / "reset-relaxed": a grid
    # barrier's counter reset after the raise that releases the waiters, or not released before
    # it (checks/grid_barriers.py)
    why: str = "relaxed"


@dataclass
class Acquisition:
    """A read of global data after observing a counter, with no acquire between."""

    observe: ir.Op  # the atomic / the polling load
    read: ir.Op
    thread: int
    # "last-arriver" | "spin" | "not-propagated" (the poll acquires; `thread` is not ordered after it)
    # | "none" (no acquire on the reading block's path at all; `observe` is the other blocks' write)
    how: str
    poller: int | None = None  # the thread that observed the flag, when it is not `thread`
    # "not-propagated-write": `read` is a write of data other blocks read before the barrier
    # (`earlier`, their read), by a thread no barrier orders after the poll
    earlier: ir.Op | None = None


@dataclass
class MemoryFacts:
    races: list[Race] = field(default_factory=list)
    publications: list[Publication] = field(default_factory=list)
    acquisitions: list[Acquisition] = field(default_factory=list)
    # reads of published data by threads that no barrier orders after the thread whose poll
    # acquired (the acquire orders that thread only): the sync-scope side of a flag
    unpropagated: list[Acquisition] = field(default_factory=list)
    undecided: list[tuple[ir.Op, ir.Op, str]] = field(default_factory=list)  # (a, b, why)
    # races on distributed shared memory: a CTA's access of its own shared memory and a peer
    # CTA's access of it (`cluster.map_shared_rank`) with no cluster barrier between
    dsmem_races: list[Race] = field(default_factory=list)
    # two peer CTAs' accesses of one element of a third (or of one of the two) CTA's shared memory,
    # both through `mapa` addresses, one a write, not both atomic, with no cluster barrier between
    # (`_dsmem_peers`): first_thread / second_thread are (rank, thread) pairs flattened as
    # rank * block size + thread; `input` the input data under which they meet
    dsmem_peer_races: list[Race] = field(default_factory=list)
    # accesses of a shared element in two loops handed off through volatile shared indices
    # (`shared_handoff.order`) that no index orders
    handoff_races: list = field(default_factory=list)
    # a write and a read under a test of a block-scope ticket (`checks/tickets.py`) that the
    # ticket's release -> acquire does not order
    ticket_races: list = field(default_factory=list)
    # the locations whose ordering was asked (coverage's obligations): ("shared", buffer name)
    # per shared scalar written and read, ("global", id(signal op)) per counter raised after data,
    # ("lock", base, where) per word of global data in a kernel with a spin lock
    examined: set[tuple] = field(default_factory=set)
    # a word of global data accessed outside every held region of the kernel's spin locks, with
    # a store (checks/locks.py: the lock's release -> acquire chain orders only what it holds)
    unprotected: list = field(default_factory=list)
    # global data read after the reading side stored the flag that hands it back to a writer
    # which waits (acquires) on that flag before overwriting it (`_read_after_handback`)
    handbacks: list[HandBack] = field(default_factory=list)


@dataclass
class HandBack:
    """`read` of global data by `thread` after `release` (the last store of the flag in the
    iteration, by `thread` or a lane of the same role) hands the data back to `write`, which
    runs after a spin on that flag: the write may come before the read."""

    release: ir.Op
    read: ir.Op
    write: ir.Op
    thread: int


def memory(an: Analysis) -> MemoryFacts:
    return an.fact("happens_before.memory", _memory)


def _memory(an: Analysis) -> MemoryFacts:
    out = MemoryFacts()
    _shared(an, out)
    _shared_by_search(an, out)
    _dsmem(an, out)
    _dsmem_peers(an, out)
    _publish(an, out)
    _acquire(an, out)
    _spin_acquire(an, out)
    _publish_cumulative(an, out)
    _publish_after_release(an, out)
    _publish_after_release_in_loop(an, out)
    _publish_after_counter(an, out)
    _read_without_acquire(an, out)
    _read_before_acquire(an, out)
    _read_after_handback(an, out)
    _acquire_scope(an, out)
    _counter_resets(an, out)
    _release_scope_writes(an, out)
    _locked(an, out)
    _unknown_targets(an, out)
    return out


def _unknown_targets(an: Analysis, out: MemoryFacts) -> None:
    """Accesses through a pointer whose target the model does not follow (UNKNOWN_ACCESS: a
    local pointer a loop swaps, rotates or advances in a way the walk does not solve). No pair
    is asked of them: each is an undecided obligation at its own line, and every location of its
    memory the engine examined -- a shared location among the pointer's candidate objects when
    they are known, any global question -- is undecided too unless a race was proved on it (the
    unknown access may be the other end of an unordered pair). Never a finding."""
    unknown = [o for o in an.model.ops if o.kind == ir.UNKNOWN_ACCESS]
    if not unknown:
        return
    raced = {r.first.buffer.name for r in out.races if r.first.buffer is not None}
    reps: dict = {}
    for o in an.model.ops:
        if o.kind == ir.SMEM_ACCESS and o.buffer is not None:
            reps.setdefault(("shared", o.buffer.name), o)
        reps.setdefault(("global", id(o)), o)
    for u in unknown:
        assert u.buffer is not None and u.access is not None
        space = (u.access.via or "").split(" ")[0]
        cands = {r.name for r in u.operands}
        why = an.model.pointer_unknowns.get(u.buffer.name, f"the target of `{u.buffer.name}` is not followed")
        out.undecided.append((u, u, why))
        for key in sorted(out.examined, key=str):
            if key[0] != space or (rep := reps.get(key)) is None:
                continue
            if space == "shared" and (key[1] in raced or (cands and key[1] not in cands)):
                continue
            out.undecided.append((rep, u, f"the {u.api} at line {u.location.row} may access it ({why})"))


def _release_scope_writes(an: Analysis, out: MemoryFacts) -> None:
    """The write side of `_acquire_scope`: a spin whose poll acquires a flag the kernel raises
    (a grid barrier's wait) also tells the block that every other block is done with the data it
    read before arriving. A thread other than the poller that then overwrites such data -- data
    the kernel reads before the spin, in the same iteration of the loops around it, that is not
    each thread's own (`thread_private`) -- must be ordered after the poll by a barrier both take
    part in: later in the same iteration, or (a loop proved to run twice) in the next iteration
    before the spin. Else it may overwrite a value another block has not read yet (write after
    read across blocks). Asked only on paths whose ops are all modelled."""
    fl = flow(an)
    touched = _touched_bases(fl)
    if not any(o.kind == ir.SPIN for o in fl.ops):
        return
    raised = {ga.base for o in fl.ops if _is_counter(o) and (ga := _ga(o)) is not None and ga.base is not None}
    m = an.model
    for sp in fl.ops:
        if sp.kind != ir.SPIN or len(sp.loops) < 2:
            continue
        lid = sp.loops[-1]
        polls = [p for p in _polls(fl, lid) if p.guard.exact and _acquires(p)]
        if not polls:
            continue
        poll = polls[0]
        flag = _ga(poll).base  # type: ignore[union-attr]
        if flag is None or flag not in raised:
            continue
        tp = an.threads.executing(poll)
        if not tp:
            continue
        t_poll = min(tp)
        outer = sp.loops[:-1]
        lp = m.loops.get(outer[-1])
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if not isinstance(trip, int) or trip < 2:
            continue
        body = [o for o in fl.ops if lid in o.loops]
        end = max(o.order for o in body)
        level = [o for o in fl.ops if o.loops[: len(outer)] == outer]
        for w in fl.ops:
            ga = _ga(w)
            if w.kind != ir.GLOBAL_STORE or ga is None or ga.base is None or ga.base in (flag,) or not w.guard.exact:
                continue
            if w.loops[: len(outer)] != outer or lid in w.loops or not set(w.guard.uniform) <= set(sp.guard.uniform):
                continue
            tw = an.threads.executing(w)
            if not tw or not (tw - tp):
                continue
            reads = [
                r
                for r in level
                if _is_data_read(r) and (rga := _ga(r)) is not None and rga.base == ga.base and r.order < sp.order
            ]
            if not reads or thread_private(an, ga.base):
                continue
            if w.order > end:
                between = [o for o in level if end < o.order < w.order]
            else:
                between = [o for o in level if o.order > end] + [o for o in level if o.order < w.order]
            if any(o.kind in (ir.SYNC, ir.NAMED_ARRIVE) and o.loops != outer for o in between):
                out.undecided.append((poll, w, "a barrier in a loop between"))
                break
            if any(may_order(o, touched) for o in between):
                out.undecided.append((poll, w, "an op that may synchronise between"))
                break
            writer, unknown = _first_unordered(an, between, tw - tp, t_poll, fixed_first=True)
            if unknown:
                out.undecided.append((poll, w, "a barrier whose order is not followed"))
                break
            if writer is not None:
                out.unpropagated.append(
                    Acquisition(poll, w, writer, "not-propagated-write", poller=t_poll, earlier=reads[0])
                )
                break


def _counter_resets(an: Analysis, out: MemoryFacts) -> None:
    """A grid barrier's releaser resets the arrival counter after raising the flag the others
    wait on, or with no release between the reset and the raise (checks/grid_barriers.py): a
    released block's next arrival on the counter follows its observation of the flag, and a
    reset not ordered before the raise may come after that arrival in the counter's order and
    erase it. The reset is the data the raise should publish."""
    from . import grid_barriers

    for lr in grid_barriers.barriers(an).late_resets:
        ts = an.threads.executing(lr.reset)
        if not ts or not lr.reset.guard.exact or not lr.raise_.guard.exact:
            continue
        t = min(ts)
        out.examined.add(("global", id(lr.raise_)))
        out.publications.append(Publication(lr.reset, lr.raise_, t, t, ts, False, "reset-" + lr.why))


def _locked(an: Analysis, out: MemoryFacts) -> None:
    """Global data and the kernel's spin locks (checks/locks.py): accesses held by one lock are
    ordered by its release -> acquire chain; a store and an access of one word outside it, in
    every block, race between blocks."""
    from . import locks

    races, asked, undecided = locks.unprotected(an)
    out.unprotected += races
    out.examined |= asked
    out.undecided += [(o, o, why) for o, why in undecided]


# ---------------------------------------------------------------- shared ----


def _is_shared_scalar_access(an: Analysis, o: ir.Op) -> bool:
    """A generic access of a `__shared__` scalar or of an element of a `__shared__` array of
    scalars (not of a tile: tiles are the sync-scope checks')."""
    if o.kind != ir.SMEM_ACCESS or o.buffer is None or o.access is None:
        return False
    if o.access.cta is not None:
        return False  # another CTA's shared memory (map_shared_rank): `_dsmem`'s question
    if o.access.via == "scalar":
        return True
    return o.access.via == "element" and o.buffer.name not in an.model.buffers


def _barrier_key(o: ir.Op):
    """The hardware barrier a SYNC / NAMED_ARRIVE waits at, as a comparable key; None: unknown."""
    if o.kind == ir.SYNC:
        k = o.sync_kind
        if k in ("cluster", "grid"):
            # every thread of the cluster / of the grid (cooperative groups' grid.sync())
            return (k,)
        if k == "block" and (o.sync is not None and o.sync.syncthreads):
            return ("bar", 0)
        if k in ("block", "named"):
            v = o.sync_id.eval({}) if o.sync_id is not None else (0 if k == "block" else None)
            return ("bar", v) if isinstance(v, int) and not isinstance(v, bool) else None
        return None
    if o.kind == ir.NAMED_ARRIVE:
        v = o.sync_id.eval({}) if o.sync_id is not None else None
        return ("bar", v) if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _barrier_key_of(o: ir.Op, t: int):
    """The barrier o names as thread t runs it: an id computed from the thread index
    (`bar.sync 2 + warpgroup`, TK's `turn[c]`) is evaluated for t; None: unknown."""
    if o.kind in (ir.SYNC, ir.NAMED_ARRIVE) and o.sync_id is not None and o.sync_id.depends_on(E.THREAD):
        v = o.sync_id.eval({"tid": t})
        return ("bar", v) if isinstance(v, int) and not isinstance(v, bool) else None
    return _barrier_key(o)


def _ordered_by_barrier(an: Analysis, between: list[ir.Op], t1: int, t2: int) -> bool | None:
    """Is there, among `between` (program order), a barrier t1 passes (or arrives at) and t2
    waits at, with the same id? None: a barrier there whose threads or id are not known."""
    seen1: set = set()
    for o in between:
        if o.kind not in (ir.SYNC, ir.NAMED_ARRIVE):
            continue
        if o.kind == ir.SYNC and o.sync_kind in ("warp", "cluster_arrive", "cluster_wait"):
            if o.sync_kind == "warp":
                if t1 // 32 != t2 // 32:
                    continue  # orders lanes of one warp only
                both = _warp_sync_orders(an, o, t1, t2)
                if both is None:
                    return None
                if both:
                    return True
                continue
            # the split cluster barrier: t1's arrive (with its default .release) and then t2's
            # wait (.acquire), every thread of the block taking part in both (the wait returns
            # once every thread of the cluster arrived); a relaxed arrive releases nothing
            ex = an.threads.executing(o)
            if ex is None or not o.guard.exact or an.threads.n is None or len(ex) < an.threads.n:
                return None
            if o.sync_kind == "cluster_arrive":
                if o.sync is not None and o.sync.relaxed:
                    return None
                seen1.add(("cluster_split",))
            elif ("cluster_split",) in seen1:
                return True
            continue
        ex = an.threads.executing(o)
        if ex is None or not o.guard.exact:
            return None
        if (
            o.kind == ir.SYNC
            and o.sync_kind in ("block", "grid")
            and an.threads.n is not None
            and len(ex) < an.threads.n
        ):
            # a block-wide barrier some threads never reach (the divergent-barrier contract's): what it orders is not defined
            return None
        for t in (t1, t2):
            if t in ex and _barrier_key_of(o, t) is None:
                return None
        if t1 not in ex and t2 not in ex and _barrier_key(o) is None:
            return None  # a barrier of other threads whose id is not known: as before, undecided
        if t1 in ex:
            seen1.add(_barrier_key_of(o, t1))
        if o.kind == ir.SYNC and t2 in ex and _barrier_key_of(o, t2) in seen1:
            return True
    return False


def _first_barrier_orders_all(an: Analysis, between: list[ir.Op]) -> bool:
    """The first barrier among `between` is a `__syncthreads()` every thread of the block reaches
    (exact guard, a fixed id): `_ordered_by_barrier` then answers True for every pair of threads
    at that barrier, before any later one is read. Asked once instead of per pair of thread
    classes, which with element-wise accesses of a large block is one class per thread (a
    32 x 32 block: a million pairs)."""
    n = an.threads.n
    for o in between:
        if o.kind not in (ir.SYNC, ir.NAMED_ARRIVE):
            continue
        if o.kind != ir.SYNC or o.sync_kind != "block" or not o.guard.exact or n is None:
            return False
        if o.sync_id is not None and o.sync_id.depends_on(E.THREAD):
            return False
        ex = an.threads.executing(o)
        return ex is not None and len(ex) == n and _barrier_key(o) is not None
    return False


def in_warp_mask(o: ir.Op, t: int) -> bool | None:
    """Is thread t's lane in the member mask of `__syncwarp(mask)` o (as t runs it)? None: the
    mask is not known (`warp_collectives.member_mask`, the one reading of a mask)."""
    from .warp_collectives import member_mask

    mv = member_mask(o, t)
    return None if mv is None else bool((mv >> (t % 32)) & 1)


def _warp_sync_orders(an: Analysis, o: ir.Op, t1: int, t2: int) -> bool | None:
    """Does `__syncwarp(mask)` o order lanes t1 and t2 of one warp? PTX `bar.warp.sync`
    guarantees memory ordering among the threads participating in it: both must execute it and
    both lanes be in its member mask (a lane outside the mask that executes it is undefined
    behaviour and waits for no one). None: its threads or its mask are not known."""
    ex = an.threads.executing(o)
    if ex is None or not o.guard.exact:
        return None
    if t1 not in ex or t2 not in ex:
        return False
    m1, m2 = in_warp_mask(o, t1), in_warp_mask(o, t2)
    if m1 is None or m2 is None:
        return None
    return m1 and m2


def _chain_possible(an: Analysis, between: list[ir.Op], t1: int, t2: int) -> bool:
    """Does t1 take part in a barrier (sync or arrive) that comes before a barrier t2 waits at,
    among `between`? Then a third thread in both may order t1 before t2 (a chain of barriers).
    A `__syncwarp` is a link only for two lanes of one warp (it orders nothing across warps)."""
    t1_signalled = False
    same_warp = t1 // 32 == t2 // 32
    for o in between:
        if o.kind not in (ir.SYNC, ir.NAMED_ARRIVE):
            continue
        if o.kind == ir.SYNC and o.sync_kind == "warp":
            if not same_warp:
                continue
            ex = an.threads.executing(o) or frozenset()
            ex = frozenset(t for t in ex if in_warp_mask(o, t) is not False)
        else:
            ex = an.threads.executing(o) or frozenset()
        if t1_signalled and o.kind == ir.SYNC and t2 in ex:
            return True
        if t1 in ex:
            t1_signalled = True
    return False


def _may_hand_over(an: Analysis, after: list[ir.Op], before: list[ir.Op], t_from: int, t_to: int) -> bool | None:
    """Can a barrier hand-over order thread t_from's iteration k after an op before thread t_to's
    iteration k before an op? It can when t_from signals a barrier after its op that t_to does not
    pass there (a `bar.arrive`, or a `bar.sync` of other threads) and t_to waits at the same barrier
    before its op: in turn-taking code (a ping-pong through named barriers) t_to's iteration k
    starts after t_from's has ended. Which generation the wait observes is not matched here, so
    such a pair is neither ordered nor a race: coverage. A barrier both pass after the first op is
    one instance, reached by t_to after its own op: it orders nothing this way. None: a barrier
    whose threads or id are not known."""
    signalled: set = set()
    for o in after:
        if o.kind not in (ir.SYNC, ir.NAMED_ARRIVE) or (o.kind == ir.SYNC and o.sync_kind == "warp"):
            continue
        ex = an.threads.executing(o)
        if ex is None:
            return None
        if t_from in ex and t_to not in ex:
            key = _barrier_key_of(o, t_from)
            if key is None:
                return None
            signalled.add(key)
    if not signalled:
        return False
    for o in before:
        if o.kind != ir.SYNC or o.sync_kind == "warp":
            continue
        ex = an.threads.executing(o)
        if ex is None:
            return None
        if t_to in ex:
            key = _barrier_key_of(o, t_to)
            if key is None or key in signalled:
                return True
    return False


def _shared(an: Analysis, out: MemoryFacts) -> None:
    fl = flow(an)
    n = an.threads.n
    if n is None:
        return
    acc = [o for o in fl.ops if _is_shared_scalar_access(an, o)]
    by_name: dict[str, list[ir.Op]] = {}
    for o in acc:
        assert o.buffer is not None
        by_name.setdefault(o.buffer.name, []).append(o)
    for ops in by_name.values():
        writes = [o for o in ops if o.access_mode == "write"]
        # an atomic read-modify-write (`atomicAdd(&s[k], v)`) reads the element too: a plain
        # write of another thread that no barrier orders against it races with its read
        reads = [o for o in ops if o.access_mode == "read" or (o.access is not None and o.access.atomic)]
        if not writes or not reads:
            continue
        out.examined.add(("shared", writes[0].buffer.name))
        found = False
        for w in writes:
            for r in reads:
                if found:
                    break
                a = w.access
                b = r.access
                if a is not None and b is not None and a.atomic and b.atomic:
                    continue
                if w.buffer.name in shared_handoff.handoffs(an).indices:
                    continue  # an index of a hand-off: volatile (relaxed, morally strong) accesses race
                    # with none, and which value a poll may see is the hand-off engine's question
                tw, tr = an.threads.executing(w), an.threads.executing(r)
                if tw is not None and tr is not None and len(tw | tr) <= 1:
                    continue  # one thread (or none): program order. Two lanes of one warp are
                    # two threads (independent thread scheduling): asked like two warps
                rp = ragged.pair(an, w, r)
                if rp is True:
                    continue  # ordered in every pair of iterations of a loop threads leave on their own
                if rp == ragged.UNKNOWN:
                    out.undecided.append((w, r, "in a loop each thread leaves at its own iteration: not decided"))
                    continue
                if isinstance(rp, ragged.RaggedPair):
                    out.races.append(
                        Race(
                            rp.first,
                            rp.second,
                            rp.first_thread,
                            rp.second_thread,
                            next_iteration=rp.first_iteration != rp.second_iteration,
                            narrow=rp.narrow,
                            ragged=rp,
                        )
                    )
                    found = True
                    continue
                if ragged.ordered_into_loop(an, w, r):
                    continue  # a write before a loop threads leave on their own, a barrier between
                through_ticket = tickets.pair(an, fl, w, r)
                if through_ticket == "ordered":
                    continue  # released before an arrival the reader's ticket acquires
                if isinstance(through_ticket, tickets.TicketRace):
                    out.ticket_races.append(through_ticket)
                    found = True
                    continue
                if not w.guard.exact or not r.guard.exact:
                    chosen = _race_for_an_input(an, fl, w, r)
                    if chosen is not None:
                        out.races.append(chosen)
                        found = True
                        continue
                    if _ordered_for_every_input(an, fl, w, r):
                        continue
                chosen = _race_for_input_data(an, fl, w, r, tw, tr)
                if chosen is not None:
                    out.races.append(chosen)
                    found = True
                    continue
                if _ask_pair(an, fl, w, r, tw, tr, out):
                    found = True


def _race_for_an_input(an: Analysis, fl, w: ir.Op, r: ir.Op) -> Race | None:
    """Accesses run under conditions over the lanes' inputs and a leader test
    (`warp_collectives.instances`): asked under one input that fixes who runs them and which
    element they name (for an exact other end, the element one of its threads names). A race of
    those instances is a race of the kernel for that input (`Race.input`). Anything else: None
    (the pair stays undecided, as before)."""
    from .warp_collectives import instances

    exact = [o for o in (w, r) if o.guard.exact]
    targets: list = [None]
    if exact:
        te = an.threads.executing(exact[0])
        if not te:
            return None
        targets = [(exact[0], t) for t in sorted(te)[:2]]
    for tg in targets:
        inst = instances(an, [w, r], tg)
        if inst is None:
            continue
        by = {id(i.original): i for i in inst}
        w2 = by[id(w)].op if id(w) in by else w
        r2 = by[id(r)].op if id(r) in by else r
        fl.alias(w2, w)
        fl.alias(r2, r)
        tw2, tr2 = an.threads.executing(w2), an.threads.executing(r2)
        scratch = MemoryFacts()
        if not tw2 or not tr2 or not _ask_pair(an, fl, w2, r2, tw2, tr2, scratch) or not scratch.races:
            continue
        race = scratch.races[0]
        race.element = str(w2.buffer if w2 is not w else r2.buffer)
        back = {id(w2): w, id(r2): r}
        race.first = back.get(id(race.first), race.first)
        race.second = back.get(id(race.second), race.second)
        race.input = inst[0].input_text
        return race
    return None


def _race_for_input_data(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr) -> Race | None:
    """Accesses whose elements are computed from the launch's input data (`inputs`: `cnt[(key
    >> 4) & 15]` with `key` loaded from a pointer no thread writes): asked under one uniform
    input (every element of the pointer holds one value c, `inputs.uniform`) chosen so that some
    thread of each end names one element (z3: a value c with equal indices, per pair of the
    ends' per-thread indices). The instantiated pair is asked as any other (`_ask_pair`: threads,
    barriers, loops); a race of it is a race of the kernel for that input (`Race.input` names
    the values). No race under the inputs tried: None, and the pair is asked as before (an
    undecided element question stays undecided: one family of inputs proves no order)."""
    from . import inputs
    from .. import solver
    from .paths import per_thread_indices

    if w.buffer is None or r.buffer is None or not tw or not tr:
        return None
    ins = inputs.inputs_of(an, (*w.buffer.index, *r.buffer.index))
    if ins is None:
        return None
    sub = inputs.uniform(ins)
    chosen = {v.name: v for v in sub.values() if isinstance(v, E.Var)}
    bounds = tuple(E.binop("<=", v, E.Const(inputs.INPUT_MAX)) for v in chosen.values())
    iw = [tuple(E.substitute(x, sub) for x in ix) for ix in per_thread_indices(w.buffer.index, tw)][:32]
    irr = [tuple(E.substitute(x, sub) for x in ix) for ix in per_thread_indices(r.buffer.index, tr)][:32]
    tried: set = set()
    for a in iw:
        for b in irr:
            if len(a) != len(b) or len(tried) >= 4:
                continue
            eq = E.conj(*(E.binop("==", x, y) for x, y in zip(a, b)))
            if not any(v.name in chosen for v in eq.free_vars()):
                continue  # the input decides neither element here: the element question as before
            got = solver.witness(eq, assume=bounds)
            if got is None:
                continue
            values = {n: got.get(n) for n in chosen}
            if any(not isinstance(x, int) or isinstance(x, bool) for x in values.values()):
                continue
            key = tuple(sorted(values.items()))
            if key in tried:
                continue
            tried.add(key)
            inst = {name: E.Const(values[v.name]) for name, v in sub.items() if isinstance(v, E.Var)}
            w2 = replace(w, buffer=replace(w.buffer, index=tuple(E.substitute(x, inst) for x in w.buffer.index)))
            r2 = replace(r, buffer=replace(r.buffer, index=tuple(E.substitute(x, inst) for x in r.buffer.index)))
            fl.alias(w2, w)
            fl.alias(r2, r)
            scratch = MemoryFacts()
            if not _ask_pair(an, fl, w2, r2, tw, tr, scratch) or not scratch.races:
                continue
            race = scratch.races[0]
            back = {id(w2): w, id(r2): r}
            race.first = back.get(id(race.first), race.first)
            race.second = back.get(id(race.second), race.second)
            shown = sorted({iv.base: iv.load for iv in ins.values()}.items())
            race.input = ", ".join(
                f"every element of `{base}` holds {values[f'input:{base}']} (read by `{ld.global_access.text}`,"
                f" line {ld.location.row})"
                if ld.global_access is not None
                else f"every element of `{base}` holds {values[f'input:{base}']}"
                for base, ld in shown
            )
            race.element = str(w2.buffer if w2.buffer != w.buffer else r2.buffer)
            return race
    return None


def _ordered_for_every_input(an: Analysis, fl, w: ir.Op, r: ir.Op) -> bool:
    """Proved ordered whoever runs them: each access asked as if every thread its thread guard
    admits ran it in every iteration (a superset of who does, for any input; conditions that
    are no expression excluded), and the barriers between order every such pair, whichever
    elements they name."""
    sup = []
    for o in (w, r):
        if o.guard.exact:
            sup.append(o)
            continue
        if o.guard.blind or an.threads.satisfying(o.guard.thread) is None:
            return False
        sup.append(replace(o, guard=ir.Guard(o.guard.thread, o.guard.uniform, True, ())))
    w2, r2 = sup
    fl.alias(w2, w)
    fl.alias(r2, r)
    tw2, tr2 = an.threads.executing(w2), an.threads.executing(r2)
    if not tw2 or not tr2:
        return False
    scratch = MemoryFacts()
    return (
        not _ask_pair(an, fl, w2, r2, tw2, tr2, scratch)
        and not scratch.undecided
        and not scratch.races
        and not scratch.handoff_races
    )


def _decided_by_steps(an: Analysis, o: ir.Op, race_free: bool = False) -> bool:
    """Every access of o's buffer was run step by step over the kernel's loops, each thread's
    guard and element evaluated (`loop_steps.simulate`): its pairs are decided there. With
    `race_free`, only a buffer the run found no race on: every pair of it proved ordered."""
    from .loop_steps import simulate

    facts = simulate(an)
    if facts is None or o.buffer is None or o.buffer.name not in facts.buffers:
        return False
    name = o.buffer.name
    return not race_free or not any(r.first.buffer is not None and r.first.buffer.name == name for r in facts.races)


def _uniform_blocks(an: Analysis, fl, w: ir.Op, r: ir.Op) -> str | None:
    """Two accesses of one block's shared memory under different block-uniform conditions
    (`if (tile == 0) { if (tid == 0) x = 0; } else ...` and every thread's read of x): asked in
    the blocks that run both, those where the union U of their conditions holds. "never": no
    block does (z3: U unsatisfiable; only outside loops, over values each named once per read:
    a condition over a value read again in each iteration, or over a `__shared__` flag named by
    the flag and not by the read, may hold at one access and fail at the other). "both": some
    block does, and every barrier or arrive that may lie between them (in program order between
    them, or in a loop around either) runs under conditions U implies (a subset of U), so in
    such a block the pair is the question `_race_in` asks. None: anything else (undecided)."""
    from .. import solver

    union = tuple(dict.fromkeys((*w.guard.uniform, *r.guard.uniform)))
    names = {v for c in union for v in c.free_vars()}
    plain = all(v.kind != E.OPAQUE and not v.name.startswith("?shared:") for v in names)
    if not plain or any(v.kind == E.LOOP for v in names):
        # a condition over a loop counter (`if (s + 1 < STEPS)`) is no property of a block: it
        # holds in some iterations and not in others, so "the blocks that run both" says nothing
        # of which instances meet (ldmatrix_ring_*_bad.cu: the pair is the ring engine's, not a shared-scalar race)
        return None
    if not w.loops and not r.loops:
        if solver.always(E.negate(E.conj(*union)), an.solver_timeout_ms) is True:
            return "never"
    lo, hi = sorted((w.order, r.order))
    around = set(w.loops) | set(r.loops)
    for o in fl.ops:
        if o.kind not in (ir.SYNC, ir.NAMED_ARRIVE):
            continue
        if (lo < o.order < hi or around & set(o.loops)) and not set(o.guard.uniform) <= set(union):
            return None
    if not solver.feasible(E.conj(*union), an.solver_timeout_ms):
        return None
    return "both"


def _residue(c: E.Expr, counter: E.Var) -> tuple[int, int] | None:
    """(p, j) of a condition `k % p == j` over the loop counter k (a body walked once per
    residue: a loop that rotates pointers, `walk_statements._walk_rotated`); None otherwise."""
    if not (isinstance(c, E.Bin) and c.op == "==" and isinstance(c.b, E.Const) and isinstance(c.a, E.Bin)):
        return None
    m = c.a
    if m.op != "%" or m.a != counter or not isinstance(m.b, E.Const):
        return None
    p, j = m.b.value, c.b.value
    if type(p) is not int or type(j) is not int or not 0 <= j < p:
        return None
    return p, j


def _residue_pair(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr, out: MemoryFacts) -> bool | None:
    """A write and a read in one loop whose guards differ only by the residue of the loop's
    counter (`k % p == j`: the body walked once per residue). Iteration k runs the ops of residue
    k mod p (and those with none), so an end at residue a meets the other end, at residue b, first
    d = (b - a) mod p iterations later (d >= 1: two residues differ), and later meetings have
    more ops between. Asked over that path: the rest of iteration k's ops of residue a, the
    iterations between (each its residue's ops), then iteration k + d's ops before the other end;
    in both orders (write first, read first). A race needs iterations a .. a + d, which some
    launch runs.
    None when the pair is not of this shape (the caller goes on as before)."""
    from .. import solver

    if not w.loops or w.loops != r.loops:
        return None
    lid = w.loops[-1]
    lp = an.model.loops.get(lid)
    if lp is None or not lp.uniform:
        return None

    def split(o):
        res = [(c, _residue(c, lp.counter)) for c in o.guard.uniform]
        return {c for c, x in res if x is None}, [x for _, x in res if x is not None]

    rest_w, rw = split(w)
    rest_r, rr = split(r)
    if rest_w != rest_r or len(rw) != 1 or len(rr) != 1 or rw[0][0] != rr[0][0] or rw[0][1] == rr[0][1]:
        return None
    p = rw[0][0]
    body = [o for o in fl.ops if lid in o.loops]
    if any(o.loops != w.loops for o in body):
        return None  # a nested loop: which of its iterations run between is not asked here
    lo_rest = set(rest_w)

    def runs(o, j):
        # o runs in an iteration of residue j (its other conditions the pair's own)
        rest, rs = split(o)
        return rest <= lo_rest and all(q == p and i == j for q, i in rs) and all(q == p for q, _ in rs)

    def unknown(o):
        rest, rs = split(o)
        return not (rest <= lo_rest) or any(q != p for q, _ in rs)

    found = False
    for first, second, t1, t2 in ((w, r, tw, tr), (r, w, tr, tw)):
        a = split(first)[1][0][1]
        b = split(second)[1][0][1]
        d = (b - a) % p
        # the first meeting: iterations a .. a + d (the first of residue a, then d more)
        its = range(a, a + d + 1)
        trips = [E.binop("<", E.Const(i), lp.trip) for i in its] if lp.trip is not None else []
        conds = trips + [E.substitute(c, {lp.counter.name: E.Const(i)}) for i in its for c in rest_w]
        if lp.trip is None or any(c.is_opaque() or c.depends_on(E.LOOP) for c in conds):
            out.undecided.append((w, r, "a loop whose iterations' residues are asked: its trip count not known"))
            return False
        if not solver.feasible(E.conj(*conds), an.solver_timeout_ms):
            continue  # no launch runs the d + 1 iterations: they never meet
        if any(unknown(o) for o in body):
            out.undecided.append((w, r, "an op of the loop under a condition the residues do not decide"))
            return False
        between = [o for o in body if o.order > first.order and runs(o, a)]
        for i in range(1, d):
            between += [o for o in body if runs(o, (a + i) % p)]
        between += [o for o in body if o.order < second.order and runs(o, b)]
        if d > 1 and any(
            ix.depends_on(E.LOOP) or ix.is_opaque()
            for o in (first, second)
            for ix in (o.buffer.index if o.buffer else ())
        ):
            out.undecided.append((first, second, "an index over the loop counter, iterations apart"))
            return False
        race = _race_over(an, between, first, second, t1, t2, out, next_iteration=True)
        if race is not None:
            race.next_iteration = True
            out.races.append(race)
            found = True
            break
    return found


def _ask_pair(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr, out: MemoryFacts) -> bool:
    """A write and a read of one shared scalar by threads `tw` / `tr`: a Race (or a hand-off race)
    appended to `out` (True), proved ordered, or undecided with its reason (False)."""
    why = None
    if (not w.guard.exact or not r.guard.exact or not tw or not tr) and _decided_by_steps(an, w):
        return False  # ordered, or a race `loop_steps` finds with its steps (syncscope reads it)
    if _decided_by_steps(an, w, race_free=True):
        # every pair of the buffer was run thread by thread and step by step and proved
        # ordered: asking again here would only repeat the proof over symbolic loop counters
        # (slow where they are shift closed forms); a buffer the run found racing is asked
        # below too, for this engine's own account of the race (the shared-scalar race rule reads it)
        return False
    if not w.guard.exact or not r.guard.exact or not tw or not tr:
        why = "the threads that run one of them are not known"
    elif r.loops != w.loops:
        if _ordered_into_loop(an, fl, w, r, tw, tr):
            return False
        inner = _race_into_inner_loop(an, fl, w, r, tw, tr, out)
        if inner is True:
            return False  # proved ordered, or undecided with its own reason
        if isinstance(inner, Race):
            out.races.append(inner)
            return True
        through_index = shared_handoff.order(an, w, r)
        if through_index == "ordered":
            return False
        if isinstance(through_index, shared_handoff.HandoffRace):
            out.handoff_races.append(through_index)
            return True
        across = _across_loops(an, fl, w, r, tw, tr, out)
        if across is True:
            return False  # proved ordered, or undecided with its own reason
        if isinstance(across, Race):
            out.races.append(across)
            return True
        why = "they are in different loops"
    elif set(w.guard.uniform) != set(r.guard.uniform) and (res := _residue_pair(an, fl, w, r, tw, tr, out)) is not None:
        return res
    elif set(w.guard.uniform) != set(r.guard.uniform):
        blocks = _uniform_blocks(an, fl, w, r)
        if blocks == "never":
            return False  # no block runs both: shared memory is the block's own
        if blocks is None:
            why = "they run under different block-uniform conditions"
    if why is not None or not tw or not tr:
        out.undecided.append((w, r, why or "threads not known"))
        return False
    first, second = (w, r) if w.order < r.order else (r, w)
    race = _race_in(an, fl, first, second, tw if first is w else tr, tr if first is w else tw, out)
    if race is not None and w.loops:
        # the other direction in the same iteration: `second`'s thread hands its turn
        # over after `second`, and `first`'s thread waits for it before `first`
        lid = w.loops[-1]
        body = [o for o in fl.ops if lid in o.loops]
        handed = _may_hand_over(
            an,
            [o for o in body if o.order > second.order],
            [o for o in body if o.order < first.order],
            race.second_thread,
            race.first_thread,
        )
        if handed is not False:
            out.undecided.append(
                (w, r, "a barrier hand-over between the two threads' turns (its generations not matched)")
            )
            return False
    if race is None and w.loops and _repeats(an, w.loops[-1], w.guard.uniform):
        # the other order: `second` at iteration k, `first` at k + 1
        lid = w.loops[-1]
        body = [o for o in fl.ops if lid in o.loops]
        between = [o for o in body if o.order > second.order] + [o for o in body if o.order < first.order]
        race = _race_over(
            an,
            between,
            second,
            first,
            tw if second is w else tr,
            tr if second is w else tw,
            out,
            nested=any(o.loops != w.loops for o in between if o.kind == ir.SYNC or may_order(o)),
            next_iteration=True,
        )
        if race is not None:
            race.next_iteration = True
    if race is not None:
        out.races.append(race)
        return True
    return False


# ---------------------------------------------------- distributed shared memory ----


def _is_dsmem_barrier(o: ir.Op, common: tuple, n: int, an: Analysis, kinds=("cluster", "grid")) -> bool:
    """A barrier of every thread of the cluster that runs once per iteration of the loops
    `common` (no condition of its own): `cluster.sync()`, a grid barrier."""
    if o.kind != ir.SYNC or o.sync_kind not in kinds:
        return False
    if tuple(o.loops) != common or not o.guard.exact or o.guard.uniform:
        return False
    return an.threads.executing(o) == frozenset(range(n))


def _dsmem_ordered(ops: list[ir.Op], common: tuple, n: int, an: Analysis, reach: ir.Op | None = None) -> bool:
    """Does `ops` (program order) hold a barrier of the whole cluster: a cluster (or grid)
    barrier, or a cluster arrive (release) followed by a cluster wait (acquire)? With `reach`
    (the later access, `ops` the ops between an earlier access and it), the wait may also be
    one at the top of a loop that holds `reach` (`_entry_wait`): a split barrier whose arrive
    precedes the loop and whose wait opens every iteration."""
    arrived = False
    fenced = False
    for o in ops:
        if _is_dsmem_barrier(o, common, n, an):
            return True
        if o.kind == ir.FENCE and o.fence_kind in ("membar_cluster", "membar_gl", "membar_sys"):
            # `fence.acq_rel.cluster` (or wider) before a relaxed arrive: the arrive releases
            fenced = True
        if _is_dsmem_barrier(o, common, n, an, ("cluster_arrive",)):
            # `barrier.cluster.arrive.relaxed` synchronises execution only: no release of the
            # writes before it, unless a cluster-scope fence came first
            arrived = arrived or fenced or o.sync is None or not o.sync.relaxed
        elif arrived and (
            _is_dsmem_barrier(o, common, n, an, ("cluster_wait",)) or _entry_wait(o, common, reach, n, an)
        ):
            return True
    return False


def _entry_wait(o: ir.Op, common: tuple, reach: ir.Op | None, n: int, an: Analysis) -> bool:
    """A cluster wait in a loop nested in `common` that also holds `reach`, placed before `reach`
    in that loop's body and run by every thread once per iteration: whatever iteration the thread
    that runs `reach` is in, it has run this wait at least once since an arrive before the loop,
    and (arrive and wait alternate per thread) the first such wait completes that arrive's phase
    -- `arrive; for (...) { wait; ...; reach; ...; arrive; } wait`."""
    if reach is None or o.order >= reach.order:
        return False
    loops = tuple(o.loops)
    if len(loops) <= len(common) or loops[: len(common)] != common or tuple(reach.loops[: len(loops)]) != loops:
        return False
    return _is_dsmem_barrier(o, loops, n, an, ("cluster_wait",))


def _dsmem(an: Analysis, out: MemoryFacts) -> None:
    """Pairs of a CTA's access of its own shared memory and a peer CTA's access of the same
    location through `cluster.map_shared_rank` (at least one a write): ordered only by a barrier
    of the whole cluster between them (`cluster.sync()`; a block barrier orders one CTA's
    threads only). A pair whose indices may meet (z3: two threads of two different CTAs, the
    peer's rank expression naming the owner) with no such barrier between them, in the same
    iteration of their common loops or from one iteration to a later one, is a race; a
    barrier the engine does not pair (an mbarrier wait, a call it does not model) or a pair it
    cannot phrase leaves it undecided."""
    m = an.model
    n = an.threads.n
    remote = [
        o
        for o in m.ops
        if o.kind == ir.SMEM_ACCESS and o.access is not None and o.access.cta is not None and o.buffer is not None
    ]
    if not remote:
        return
    fl = flow(an)
    names = {o.buffer.name for o in remote if o.buffer is not None}
    for name in sorted(names):
        out.examined.add(("dsmem", name))
        local = [
            o
            for o in m.ops
            if o.kind == ir.SMEM_ACCESS
            and o.buffer is not None
            and o.buffer.name == name
            and o.access is not None
            and o.access.cta is None
        ]
        found = False
        for r in (o for o in remote if o.buffer is not None and o.buffer.name == name):
            for lo in local:
                if found:
                    break
                assert r.access is not None and lo.access is not None
                if r.access.mode != "write" and lo.access.mode != "write":
                    continue
                if _morally_strong(lo) and _morally_strong(r):
                    continue  # ordered (atomic) accesses at cluster scope race with none (a flag's)
                if n is None or m.cluster is None:
                    out.undecided.append((lo, r, "the block's threads or the cluster's size are not known"))
                    continue
                flagged = len(out.handoff_races)
                race = _dsmem_pair(an, fl, lo, r, n, out)
                if len(out.handoff_races) > flagged:
                    found = True  # a race of a flag hand-off between the CTAs (one per location)
                if race is not None:
                    out.dsmem_races.append(race)
                    found = True
    _dsmem_by_search(an, out)


def _remote_arrivals(m: ir.KernelModel) -> bool:
    return any(
        o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.mbar is not None and (o.mbar.remote or o.mbar.cta is not None)
        for o in m.ops
    )


def _dsmem_by_search(an: Analysis, out: MemoryFacts) -> None:
    """r17-remote: the release -> acquire edge through another CTA's mbarrier. A DSMEM location
    whose pairs are left undecided (an mbarrier op between their ends) in a kernel whose threads
    arrive on peers' barriers is asked of the cluster race search (`protocol.races(...,
    cluster=True)`): one copy of every role and barrier per CTA, every access of the buffer an
    event on the copy it lands in, remote arrivals counted in the phase of the target's copy
    they reach, the cluster barriers as syncs of every thread of the cluster. An arrive releases
    the role's accesses before it (a `.relaxed` one nothing, `protocol._releases`), the wait
    that passes a phase acquires what its arrivals released: phases are paired by running them.
    A race reached (an access made and not released, or about to be made, while another CTA's
    conflicting one can run next) is a race (the sync-scope rule reads it, the trace with it); every interleaving of
    the launch's own sizes explored without one, every access of the buffer in the search and
    no pair of one role's lanes left unasked (`Exploration.within`), proves the location's
    pairs ordered. Anything else leaves them undecided."""
    from .protocol import races

    m = an.model
    n = an.threads.n
    if n is None or not _remote_arrivals(m):
        return
    names = sorted(
        {
            o.buffer.name
            for a, b, _ in out.undecided
            for o in (a, b)
            if o.kind == ir.SMEM_ACCESS and o.buffer is not None and o.access is not None and o.access.cta is not None
        }
    )
    for name in names:
        ex = races(an, frozenset({name}), cluster=True)
        mine = [u for u in out.undecided if any(o.buffer is not None and o.buffer.name == name for o in u[:2])]
        if ex.race is not None:
            r = ex.race
            ca, ta = divmod(r.thread_a, n)
            cb, tb = divmod(r.thread_b, n)
            remote = any(e.op.access is not None and e.op.access.cta is not None for e in (r.ea, r.eb))
            if ca == cb or not remote:
                continue  # (a pair of one CTA's threads: the CTA-local engines' question)
            out.dsmem_races.append(
                Race(
                    r.ea.op,
                    r.eb.op,
                    ta,
                    tb,
                    search={
                        "element": r.element,
                        "iterations": (dict(r.ea.env), dict(r.eb.env)),
                        "roles": (ex.roles[r.a].name, ex.roles[r.b].name),
                        "trace": [(ex.roles[i].name, e, what) for i, e, what in r.trace],
                        "assumption": ex.assumption,
                        "made": ("write" if r.ea.mem[1] else "read") if r.unreleased else None,
                        "ctas": (ca, cb),
                    },
                )
            )
            out.undecided[:] = [u for u in out.undecided if u not in mine]
        elif (
            ex.status == "explored"
            and not ex.stuck
            and not ex.within
            and ex.rounds is None
            and _launch_instance(m, ex.roles)
            and _cluster_scoped(m)
        ):
            out.undecided[:] = [u for u in out.undecided if u not in mine]


def _cluster_scoped(m: ir.KernelModel) -> bool:
    """The search takes every arrive as a release and every wait as an acquire of whatever
    synchronised with it (a role's access is "released" by any later arrive of its). That is the
    memory model only when each arrive on a peer's barrier is `.release.cluster` and each wait on a
    barrier a peer arrives on is an acquire at cluster scope (PTX: a `.cta`-scoped one, the
    default, is not morally strong with the other CTA's thread; a `.relaxed` one orders nothing):
    no proof otherwise (a race the search reaches is still one)."""
    remote = [
        o
        for o in m.ops
        if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
        and o.mbar is not None
        and (o.mbar.remote or o.mbar.cta is not None)
    ]
    names = {o.barrier.name for o in remote if o.barrier is not None}
    if any(o.mbar is None or o.mbar.sem not in ("release", "acq_rel") or o.mbar.scope != "cluster" for o in remote):
        return False
    waits = [o for o in m.ops if o.kind == ir.MBAR_WAIT and o.barrier is not None and o.barrier.name in names]
    if any(o.mbar is None or o.mbar.sem not in ("acquire", "acq_rel") or o.mbar.scope != "cluster" for o in waits):
        return False
    # any `.relaxed` arrive or cluster barrier: the search's "released" is not the model's
    if any(o.mbar is not None and o.mbar.sem == "relaxed" for o in m.ops if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)):
        return False
    return not any(o.kind == ir.SYNC and o.sync is not None and o.sync.relaxed for o in m.ops)


def _launch_instance(m: ir.KernelModel, roles) -> bool:
    """Every loop the search unrolled has a trip count the kernel fixes (no size chosen for the
    instance): its interleavings are the launch's own."""
    lids = {lid for r in roles for e in r.events for lid in e.op.loops}
    for lid in lids:
        lp = m.loops.get(lid)
        t = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if not isinstance(t, int) or isinstance(t, bool):
            return False
    return True


def _dsmem_peers(an: Analysis, out: MemoryFacts) -> None:
    """Two accesses of one element of a CTA's shared memory through `mapa` addresses by threads of
    two different CTAs of the cluster (a plain remote read and write, or two writes; not both
    atomic), in a kernel whose CTAs are ordered only by whole-cluster barriers (`_cta_local_orders`)
    and with no such barrier between them: in the same loop with no cluster barrier in its body
    (any iteration of one thread runs beside any of the other), or outside loops with none between
    in program order. z3 asks for two threads of CTAs P != Q naming one owner rank and one element
    (a value loaded from input memory free per thread, the two equal when both load one: an input
    holding that value in both elements is some input). Anything else is not asked."""
    from .. import solver

    m = an.model
    n = an.threads.n
    if n is None or m.cluster is None:
        return
    remote = [
        o
        for o in m.ops
        if o.kind == ir.SMEM_ACCESS
        and o.access is not None
        and o.access.cta is not None
        and o.buffer is not None
        and o.guard.exact
    ]
    if len(remote) < 1 or not _cta_local_orders(an, (), n):
        return
    fl = flow(an)
    done: set[str] = set()
    for i, a in enumerate(remote):
        for b in remote[i:]:
            assert a.buffer is not None and b.buffer is not None and a.access is not None and b.access is not None
            if a.buffer.name != b.buffer.name or a.buffer.name in done:
                continue
            if a.access.mode != "write" and b.access.mode != "write":
                continue
            if (a.access.atomic is not None or _morally_strong(a)) and (
                b.access.atomic is not None or _morally_strong(b)
            ):
                continue
            if tuple(a.loops) != tuple(b.loops) or len(a.loops) > 1:
                continue
            first, second = (a, b) if a.order <= b.order else (b, a)
            if a.loops:
                lid = a.loops[0]
                body = [o for o in fl.ops if lid in o.loops]
                if any(o.kind == ir.SYNC and o.sync_kind in _CLUSTER_SYNCS for o in body):
                    continue
                if any(may_order(o) and not _is_data_read(o) for o in body):
                    continue
            else:
                between = fl.same_iteration_between(first, second)
                if any(o.kind == ir.SYNC and o.sync_kind in _CLUSTER_SYNCS for o in between):
                    continue
                if any(may_order(o) and not _is_data_read(o) for o in between):
                    continue
            w = _peers_meet(an, first, second, n, solver)
            if w is None:
                continue
            (ra, ta), (rb, tb), text = w
            race = Race(first, second, ra * n + ta, rb * n + tb, input=text)
            out.dsmem_peer_races.append(race)
            done.add(a.buffer.name)


def _peers_meet(an: Analysis, a: ir.Op, b: ir.Op, n: int, solver):
    """((rank, thread) of a, (rank, thread) of b, input text) meeting at one element of one owner
    CTA, the two ranks different; None when they never do or it is not known."""
    m = an.model
    assert a.buffer is not None and b.buffer is not None and a.access is not None and b.access is not None
    assert a.access.cta is not None and b.access.cta is not None
    if len(a.buffer.index) != len(b.buffer.index):
        return None
    conds: list[E.Expr] = []
    inputs: dict[str, ir.Op] = {}
    maps = []
    for o, tag in ((a, "a"), (b, "b")):
        mp = _cta_thread_names(tag)
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None or lp.counter is None:
                return None
            mp[lp.counter.name] = E.Var(f"{lp.counter.name}.{tag}", E.LOOP)
        for x in list(o.buffer.index) + [o.access.cta]:  # type: ignore[list-item]
            for v in x.free_vars():
                if v.kind != E.OPAQUE:
                    continue
                ld = _input_load(an, v)
                if ld is None or tuple(ld.loops) != tuple(o.loops) or ld.order > o.order:
                    return None
                if ld.guard.thread != o.guard.thread or set(ld.guard.uniform) != set(o.guard.uniform):
                    return None
                inputs[v.name] = ld
                mp[v.name] = E.Var(f"{v.name}.{tag}", E.PARAM)
        maps.append(mp)
    ma, mb = maps
    trips: list[E.Expr] = []
    for o, mp in ((a, ma), (b, mb)):
        assert o.access is not None and o.access.cta is not None
        conds.append(E.substitute(o.guard.thread, mp))
        conds.extend(E.substitute(c, mp) for c in o.guard.uniform)
        t = mp["tid"]
        conds += [E.binop(">=", t, E.Const(0)), E.binop("<", t, E.Const(n))]
        k = mp["cta_rank"]
        conds += [E.binop(">=", k, E.Const(0)), E.binop("<", k, m.cluster)]
        owner = E.substitute(o.access.cta, mp)
        conds += [E.binop(">=", owner, E.Const(0)), E.binop("<", owner, m.cluster)]
        for lid in o.loops:
            lp = m.loops[lid]
            ctr = E.substitute(lp.counter, mp)
            conds.append(E.binop(">=", ctr, E.Const(0)))
            if lp.trip is None or lp.trip.is_opaque():
                return None
            trips.append(E.binop("<", ctr, E.substitute(lp.trip, mp)))
    for name in inputs:
        if name in ma and name in mb:
            conds.append(E.binop("==", ma[name], mb[name]))  # one value in both loaded elements
    conds.append(E.binop("!=", ma["cta_rank"], mb["cta_rank"]))
    conds.append(E.binop("==", E.substitute(a.access.cta, ma), E.substitute(b.access.cta, mb)))
    for x, y in zip(a.buffer.index, b.buffer.index):
        conds.append(E.binop("==", E.substitute(x, ma), E.substitute(y, mb)))
    exprs = conds + trips
    if any(c.is_opaque() for c in exprs):
        return None
    w = solver.witness(E.conj(*exprs), an.solver_timeout_ms)
    if w is None:
        return None
    vals = []
    for tag in ("a", "b"):
        r, t = w.get(f"cta_rank.{tag}"), w.get(f"tid.{tag}")
        if not isinstance(r, int) or not isinstance(t, int):
            return None
        vals.append((r, t))
    texts = []
    for name, ld in sorted(inputs.items()):
        v = w.get(f"{name}.a", w.get(f"{name}.b"))
        ga = ld.global_access
        assert ga is not None
        texts.append(f"`{ga.text or name}` = {v if isinstance(v, int) else '?'} for both threads")
    return vals[0], vals[1], ", ".join(texts)


def _morally_strong(o: ir.Op) -> bool:
    """An ordered access (`ld.acquire` / `st.release` / `.relaxed`) at cluster scope or wider."""
    a = o.access
    return a is not None and a.order in ("relaxed", "acquire", "release") and a.scope in ("cluster", "gpu", "sys")


def _dsmem_pair(an: Analysis, fl, lo: ir.Op, r: ir.Op, n: int, out: MemoryFacts) -> Race | None:
    if not lo.guard.exact or not r.guard.exact:
        out.undecided.append((lo, r, "the threads that run one of them are not known"))
        return None
    if lo.loops and r.loops and lo.loops[0] != r.loops[0]:
        # the loops of two CTAs of the cluster, ordered by flags (checks/cluster_handoff.py)
        w, rd = (r, lo) if r.access_mode == "write" else (lo, r)
        through_flag = cluster_handoff.order(an, w, rd)
        if through_flag == "ordered":
            return None
        if isinstance(through_flag, shared_handoff.HandoffRace):
            out.handoff_races.append(through_flag)
            return None
    common: tuple = ()
    for a, b in zip(lo.loops, r.loops):
        if a != b:
            break
        common += (a,)
    first, second = (lo, r) if lo.order < r.order else (r, lo)
    between = fl.same_iteration_between(first, second)
    forward_ordered = _dsmem_ordered(between, common, n, an, second)
    # the same iteration's pair left undecided (an op between may order it: an mbarrier wait
    # observing a st.async's bytes): the pair across the back edge is still asked (round 10)
    pending: str | None = None
    if not forward_ordered and any(may_order(o) for o in between) and not _unordered_across_ctas(an, r, common, n):
        # (a barrier of the whole cluster between them orders them, whatever else is there)
        pending = f"`{next(o for o in between if may_order(o)).api}` between"
    elif not forward_ordered:
        w = _dsmem_meet(an, lo, r, common, None, n)
        if isinstance(w, str):
            out.undecided.append((lo, r, "the solver did not decide whether they meet"))
            return None
        if w is None and _dsmem_unknown(lo, r, an):
            out.undecided.append((lo, r, "their addresses are not known"))
            return None
        if w is not None:
            return Race(first, second, w[0] if first is lo else w[1], w[1] if first is lo else w[0], input=w[2])
    if not common:
        if pending is not None:
            out.undecided.append((lo, r, pending))
        return None
    lid = common[-1]
    body = [o for o in fl.ops if lid in o.loops]
    back = [o for o in body if o.order > second.order] + [o for o in body if o.order < first.order]
    if _dsmem_ordered(back, common, n, an):
        if pending is not None:
            out.undecided.append((lo, r, pending))
        return None
    if pending is not None and not _cta_local_orders(an, common, n):
        # the op between may carry the owner's access to the peer along another thread's path
        # (a release in the owner's next iteration, acquired by a lagging peer): undecided
        out.undecided.append((lo, r, pending))
        return None
    if any(may_order(o) for o in back) and not (
        # ops that order the threads of one CTA only (its own mbarriers, bar.sync), in a kernel
        # whose only order between CTAs is a whole-cluster barrier: none of them carries the
        # owner's access to the peer (round 10, `_cta_local_orders`)
        _cta_local_orders(an, common, n)
    ):
        out.undecided.append((lo, r, pending or f"`{next(o for o in back if may_order(o)).api}` between"))
        return None
    if pending is not None and not an.model.loops.get(lid):
        out.undecided.append((lo, r, pending))
        return None
    if not an.model.loops.get(lid) or len(common) > 1 and not _dsmem_ordered(body, common, n, an):
        out.undecided.append((lo, r, pending or "a pair in nested loops"))
        return None
    # `second` at iteration k, `first` at iteration k + d: d = 1 passes `back` only; d >= 2 a
    # whole iteration (any barrier of the body)
    whole = _dsmem_ordered(body + body, common, n, an)
    w = _dsmem_meet(an, lo, r, common, (first, 1), n)
    if w is None and not whole:
        w = _dsmem_meet(an, lo, r, common, (first, None), n)
    if isinstance(w, str):
        out.undecided.append((lo, r, "the solver did not decide whether they meet"))
        return None
    if w is not None:
        race = Race(second, first, w[0] if second is lo else w[1], w[1] if second is lo else w[0], input=w[2])
        race.next_iteration = True
        return race
    if pending is not None:
        out.undecided.append((lo, r, pending))
    elif _dsmem_unknown(lo, r, an):
        out.undecided.append((lo, r, "their addresses are not known"))
    return None


_CLUSTER_SYNCS = ("cluster", "cluster_arrive", "cluster_wait", "grid")


def _cta_local_orders(an: Analysis, common: tuple, n: int) -> bool:
    """Can threads of two different CTAs be ordered only by barriers of the whole cluster that
    every thread runs once (outside every loop, or a full `cluster.sync()` once per iteration of
    the loops `common`)? Every other op that may synchronise must order threads of one CTA only:
    an mbarrier op on a barrier of its own CTA (no remote, mapped or multicast barrier), a block,
    named or warp barrier. Then a chain of one CTA's barriers after an access reaches a peer CTA
    only through such a cluster barrier, whose instances pair iteration by iteration (`_dsmem_meet`
    asks the rest). A st.async's complete_tx is relaxed (PTX): no release, no order."""
    for o in an.model.ops:
        if o.kind == ir.SYNC and o.sync_kind in _CLUSTER_SYNCS:
            if not o.loops and _is_dsmem_barrier(o, (), n, an, _CLUSTER_SYNCS):
                continue
            if o.loops and tuple(o.loops) == common and _is_dsmem_barrier(o, common, n, an, ("cluster",)):
                continue
            return False
        if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.MBAR_WAIT, ir.MBAR_INIT):
            mb = o.mbar
            if o.barrier is None or o.unmodelled_barrier_use:
                return False
            if mb is not None and (mb.remote or mb.cta is not None or mb.multicast or mb.mask is not None or mb.ncta):
                if _relaxed_remote_arrive(o):
                    continue
                return False
            continue
        if o.kind in (ir.NAMED_ARRIVE, ir.SYNC, ir.TMA_LOAD, ir.TMA_STORE, ir.GLOBAL_STORE):
            continue
        if o.kind == ir.SMEM_ACCESS:
            a = o.access
            if a is not None and a.cta is not None and (a.order is not None or a.atomic is not None):
                return False  # an ordered access of a peer's shared memory: a flag between CTAs
            continue
        if o.kind == ir.FENCE and o.fence_kind in ("membar_cluster", "membar_gl", "membar_sys", "membar_gpu"):
            return False
        if o.kind in MAY_ORDER and not _is_data_read(o):
            return False
    return True


def _relaxed_remote_arrive(o: ir.Op) -> bool:
    """r16-remote: an arrive (or arrive.expect_tx) on a peer CTA's mbarrier spelled `.relaxed`
    in PTX: no release (PTX ISA, mbarrier.arrive: .relaxed gives no memory ordering), so the
    peer's acquire wait that observes its phase synchronises with nothing of the arriving
    thread's; it carries no order between CTAs (a cluster-scope fence before it would make it a
    release pattern: `_cta_local_orders` refuses any such fence first). A `.release` arrive, of
    any scope, or one the op table does not spell (a library call) may order."""
    mb = o.mbar
    return (
        o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
        and mb is not None
        and mb.sem == "relaxed"
        and not (mb.multicast or mb.ncta or mb.tcgen05_commit or mb.cp_async or mb.remote_store or mb.clc)
    )


def _unordered_across_ctas(an: Analysis, remote: ir.Op, common: tuple, n: int) -> bool:
    """r16-remote: do the ops that may order between the two ends of a DSMEM pair order threads
    of one CTA only? True when the kernel's only order between CTAs is whole-cluster barriers
    (`_cta_local_orders`: a `.relaxed` remote arrive releases nothing) and the remote access is a
    generic one (`st.shared::cluster`, `map_shared_rank`): an `st.async`'s data completes on
    the peer's mbarrier (complete_tx), which the peer's wait observes without any release."""
    a = remote.access
    return a is not None and not a.complete_tx and _cta_local_orders(an, common, n)


def _dsmem_unknown(a: ir.Op, b: ir.Op, an: Analysis | None = None) -> bool:
    """Are the two accesses' addresses (the element, the peer's rank) not expressions the solver
    can ask? A value loaded from input memory (`_dsmem_inputs`) is asked as a free input."""
    assert a.buffer is not None and b.buffer is not None and b.access is not None
    if len(a.buffer.index) != len(b.buffer.index):
        return True
    exprs = _dsmem_exprs(a) + _dsmem_exprs(b)
    if any(not isinstance(x, E.Expr) for x in exprs):
        return True
    if not any(x.is_opaque() for x in exprs):
        return False
    return an is None or _dsmem_inputs(an, a, b) is None


def _dsmem_exprs(o: ir.Op) -> list:
    assert o.buffer is not None
    cta = o.access.cta if o.access is not None else None
    return list(o.buffer.index) + ([cta] if cta is not None else [])


def _dsmem_inputs(an: Analysis, a: ir.Op, b: ir.Op) -> dict[str, tuple[ir.Op, ir.Op]] | None:
    """The unmodelled values in the addresses of a and b when each is a lane's input: the value of
    a plain load (`words[i]`) from a kernel parameter no thread of the kernel writes, loaded in the
    same iteration as the access that uses it, on one side of the pair only (one thread's value of
    one element: any value is some input's; a value both sides used would tie the two threads'
    loads, not asked). {var name: (load, access)}; None when some value is no such input."""
    out: dict[str, tuple[ir.Op, ir.Op]] = {}
    sides: dict[str, set[int]] = {}
    for o in (a, b):
        for x in _dsmem_exprs(o):
            for v in x.free_vars():
                if v.kind != E.OPAQUE:
                    continue
                ld = _input_load(an, v)
                if ld is None or tuple(ld.loops) != tuple(o.loops) or ld.order > o.order:
                    return None
                if ld.guard.thread != o.guard.thread or set(ld.guard.uniform) != set(o.guard.uniform):
                    return None  # the load must run wherever the access runs
                out[v.name] = (ld, o)
                sides.setdefault(v.name, set()).add(id(o))
    if any(len(s) > 1 for s in sides.values()):
        return None
    return out


def shown_ref(an: Analysis, o: ir.Op) -> str:
    """o's buffer as a user reads it: a value loaded from input memory named by its load
    (`cnt[words[i] % 64]`, not the model's placeholder)."""
    assert o.buffer is not None
    sub: dict[str, E.Expr] = {}
    for x in o.buffer.index:
        for v in x.free_vars():
            if v.kind == E.OPAQUE and v.name not in sub:
                ld = _input_load(an, v)
                text = ld.global_access.text if ld is not None and ld.global_access is not None else None
                if text:
                    sub[v.name] = E.Var(text, E.PARAM)
    if not sub:
        return str(o.buffer)
    return o.buffer.name + "".join(f"[{E.substitute(x, sub)}]" for x in o.buffer.index)


def _input_load(an: Analysis, v: E.Var) -> ir.Op | None:
    """The plain load from input memory whose value v is (a weak load of an element of a kernel
    pointer parameter that no store or atomic of the kernel writes), else None."""
    loads = [
        o
        for o in an.model.ops
        if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.value == v.name
    ]
    if len(loads) != 1:
        return None
    ld = loads[0]
    ga = ld.global_access
    assert ga is not None
    if ga.base is None or ga.sem != "weak" or ld.guard.blind or not ld.guard.exact:
        return None
    for o in an.model.ops:
        if o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL) and (
            o.global_access is None or o.global_access.base is None or o.global_access.base == ga.base
        ):
            return None  # written by the kernel (or by a store whose memory is not known)
    return ld


UNKNOWN = "unknown"  # `_dsmem_meet`: the solver did not answer


def _dsmem_meet(an: Analysis, lo: ir.Op, r: ir.Op, common: tuple, later: tuple | None, n: int):
    """(owner thread, peer thread) of CTAs A != B, A's `lo` and B's `r` touching one element of
    A's shared memory (r's rank expression names A), in the same iteration of the loops
    `common`, or with `later = (op, d)` op one of the two running d (None: any d >= 1)
    iterations of the innermost common loop after the other. None: they never meet, or unknown."""
    from .. import solver

    m = an.model
    assert lo.buffer is not None and r.buffer is not None and r.access is not None and r.access.cta is not None
    if _dsmem_unknown(lo, r, an):
        return None
    cluster = m.cluster
    assert cluster is not None
    shift = E.Var("dsmem.d", E.LOOP)

    def side(o: ir.Op, tag: str) -> dict[str, E.Expr]:
        mp = _cta_thread_names(tag)
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None:
                continue
            c = lp.counter.name
            if lid in common:
                mp[c] = E.Var(c, E.LOOP)
                if later is not None and later[0] is o and lid == common[-1]:
                    mp[c] = E.binop("+", E.Var(c, E.LOOP), shift)
            else:
                mp[c] = E.Var(f"{c}.{tag}", E.LOOP)
        return mp

    ma, mb = side(lo, "a"), side(r, "b")
    inputs = _dsmem_inputs(an, lo, r) or {}
    for name, (_ld, o) in inputs.items():
        # a lane's input: a free value, named per side (the one thread that loads it)
        mp = ma if o is lo else mb
        mp[name] = E.Var(f"{name}.{'a' if o is lo else 'b'}", E.PARAM)
    conds: list[E.Expr] = []
    trips: list[E.Expr] = []  # iteration < trip count (often nonlinear: a grid-stride loop's)
    for o, mp in ((lo, ma), (r, mb)):
        conds.append(E.substitute(o.guard.thread, mp))
        conds.extend(E.substitute(c, mp) for c in o.guard.uniform)
        t = mp["tid"]
        conds += [E.binop(">=", t, E.Const(0)), E.binop("<", t, E.Const(n))]
        k = mp["cta_rank"]
        conds += [E.binop(">=", k, E.Const(0)), E.binop("<", k, cluster)]
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None:
                continue
            ctr = E.substitute(lp.counter, mp)
            conds.append(E.binop(">=", ctr, E.Const(0)))
            if lp.trip is not None and not lp.trip.is_opaque():
                trips.append(E.binop("<", ctr, lp.trip))
    conds.append(E.binop("!=", ma["cta_rank"], mb["cta_rank"]))
    conds.append(E.binop("==", E.substitute(r.access.cta, mb), ma["cta_rank"]))
    for x, y in zip(lo.buffer.index, r.buffer.index):
        conds.append(E.binop("==", E.substitute(x, ma), E.substitute(y, mb)))
    if later is not None:
        d = later[1]
        conds.append(E.binop("==", shift, E.Const(d)) if d is not None else E.binop(">=", shift, E.Const(1)))
    # the question without the trip counts first (a relaxation: no meeting there is none at
    # all), then with them for a witness; an unknown answer is UNKNOWN, never "they never meet"
    mark = solver.inconclusive_count()
    w = solver.witness(E.conj(*conds), an.solver_timeout_ms)
    if w is not None and trips:
        w = solver.witness(E.conj(*conds, *trips), an.solver_timeout_ms)
    if w is None:
        return UNKNOWN if solver.inconclusive_count() > mark else None
    ta, tb = w.get("tid.a"), w.get("tid.b")
    text = ""
    if inputs:
        texts = []
        for name, (ld, o) in sorted(inputs.items()):
            v = w.get(f"{name}.{'a' if o is lo else 'b'}")
            ga = ld.global_access
            assert ga is not None
            texts.append(f"`{ga.text or name}` = {v if isinstance(v, int) else '?'} for that thread")
        text = ", ".join(texts)
    # (owner thread, peer thread, the input under which they meet: "" for every input)
    return (ta if isinstance(ta, int) else 0, tb if isinstance(tb, int) else 0, text)


def _shared_by_search(an: Analysis, out: MemoryFacts) -> None:
    """The pairs `_shared` left undecided (accesses in different loops: a producer's loop and a
    consumer's, a scheduler's and its workers'), asked of the race search (`protocol.races`):
    the interleavings of the roles over every barrier kind, iteration by iteration. A race it
    reaches is proved (in the instance it explored, with a trace) and replaces the location's
    undecided pairs; no race leaves them undecided (a bounded instance proves no order)."""
    from .protocol import races

    raced = {r.first.buffer.name for r in out.races if r.first.buffer is not None}
    names = {
        o.buffer.name
        for a, b, _ in out.undecided
        for o in (a, b)
        if _is_shared_scalar_access(an, o) and o.buffer is not None and o.buffer.name not in raced
    }
    while names:
        ex = races(an, frozenset(names))
        r = ex.race
        if r is None:
            return
        name = r.ea.mem[0]
        w, rd = (r.ea, r.eb) if r.ea.mem[1] else (r.eb, r.ea)
        tw, tr = (r.thread_a, r.thread_b) if w is r.ea else (r.thread_b, r.thread_a)
        out.races.append(
            Race(
                w.op,
                rd.op,
                tw,
                tr,
                search={
                    "element": r.element,
                    "iterations": (dict(w.env), dict(rd.env)),
                    "roles": (ex.roles[r.a if w is r.ea else r.b].name, ex.roles[r.b if w is r.ea else r.a].name),
                    "trace": [(ex.roles[i].name, e, what) for i, e, what in r.trace],
                    "assumption": ex.assumption,
                    # the first access was made already and not released by its thread since
                    # (None: both can run next); "write" or "read": which one was made
                    "made": ("write" if r.ea is w else "read") if r.unreleased else None,
                },
            )
        )
        out.undecided[:] = [
            u for u in out.undecided if not any(o.buffer is not None and o.buffer.name == name for o in u[:2])
        ]
        names.discard(name)


def _ordered_into_loop(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr) -> bool:
    """Proved ordered: the earlier of the two is in no loop, the later one in loops of its own,
    and a barrier both threads take part in lies between them outside those loops (it runs
    before every iteration of the later op)."""
    first, second = (w, r) if w.order < r.order else (r, w)
    if first.loops or not set(first.guard.uniform) <= set(second.guard.uniform):
        return False
    # (the later one may run under block-uniform conditions of its own, a CTA's role in its
    # cluster: the ops between that run under no condition the earlier one lacks run whenever
    # both do)
    mine = set(first.guard.uniform)
    outer = [o for o in fl.same_iteration_between(first, second) if not o.loops and set(o.guard.uniform) <= mine]
    probe = MemoryFacts()
    race = _race_over(an, outer, first, second, tw if first is w else tr, tr if first is w else tw, probe)
    return race is None and not probe.undecided


def _chain(fl, x: ir.Op, lo: int, hi: int, depth: int) -> list[ir.Op]:
    """The ops strictly between orders lo and hi that run on every path through x's loops: in
    the loops around x (from `depth` on, the levels of the loops x's partner is not in), or
    at their common level. An op in a loop of its own (a sibling loop) is not among them."""
    return [o for o in fl.ops if lo < o.order < hi and len(o.loops) >= depth and x.loops[: len(o.loops)] == o.loops]


def _own_loops_ok(an: Analysis, x: ir.Op, depth: int) -> bool:
    """x's loops past `depth` are known loops with one trip count for the whole block, or with a
    trip count over the thread index that is at least 1 for every thread (`_runs_for_every_thread`)."""
    return all(
        an.model.loops.get(lid) is not None
        and (an.model.loops[lid].uniform or _runs_for_every_thread(an, an.model.loops[lid]))
        for lid in x.loops[depth:]
    )


def _runs_for_every_thread(an: Analysis, lp: ir.Loop) -> bool:
    """A loop with no condition of its own whose trip count is over the thread index and
    constants only (`for (i = tid; i < 16384; i += 256)`) and at least 1 for every thread of the
    block: evaluated per thread. Every thread runs its iteration 0."""
    n = an.threads.n
    trip = lp.trip
    if n is None or trip is None or lp.infinite or lp.cond is not None or lp.data_cond or lp.continues:
        return False
    if any(v.name != "tid" for v in trip.free_vars()):
        return False
    memo = an.fact("happens_before.runs_for_every_thread", lambda _an: {})
    if id(lp) not in memo:
        vals = [trip.eval({"tid": t, "tid_y": 0, "tid_z": 0}) for t in range(n)]
        memo[id(lp)] = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in vals)
    return memo[id(lp)]


def _loop_conds(an: Analysis, x: ir.Op, depth: int) -> set:
    """The uniform conditions of x's own loops past `depth` (true in every iteration that runs)."""
    out = set()
    for lid in x.loops[depth:]:
        lp = an.model.loops.get(lid)
        if lp is not None and lp.cond is not None:
            out.add(lp.cond)
    return out


def _first_iteration_runs(an: Analysis, x: ir.Op, depth: int) -> bool:
    """Proved: some launch runs iteration 0 of each of x's loops past `depth` with x's uniform
    conditions holding there (the trip count may be symbolic: z3 over the parameters)."""
    from .. import solver

    env: dict = {}
    conds = []
    for lid in x.loops[depth:]:
        lp = an.model.loops[lid]
        env[lp.counter.name] = E.Const(0)
        if lp.trip is not None and not (not lp.uniform and _runs_for_every_thread(an, lp)):
            conds.append(E.binop("<", E.Const(0), E.substitute(lp.trip, env)))
    conds += [E.substitute(c, env) for c in x.guard.uniform]
    if any(c.is_opaque() or c.depends_on(E.LOOP) for c in conds):
        return False
    if not conds:
        return True
    return solver.feasible(E.conj(*conds), an.solver_timeout_ms)


def _ordered_under_common(an: Analysis, fl, w, r, first, second, tf, ts, common, out, both) -> bool:
    """`_across_loops`'s proof of order over the path of barriers whose conditions are among
    `both` (each end's block-uniform conditions): they run in every instance where both ends run.
    True when every pair of threads meets at one (the back edge of the loop around both asked as
    `_across_loops` does); False when not proved (the caller leaves the pair undecided)."""
    lo, hi = first.order, second.order
    path = sorted(
        [o for o in _chain(fl, first, lo, hi, common + 1) if set(o.guard.uniform) <= both]
        + [o for o in fl.ops if lo < o.order < hi and o.loops == first.loops[:common] and set(o.guard.uniform) <= both]
        + [o for o in _chain(fl, second, lo, hi, common + 1) if set(o.guard.uniform) <= both],
        key=lambda o: o.order,
    )
    if not _barriers_order(an, path, tf, ts):
        return False
    repeats = common > 0 and _repeats(an, first.loops[common - 1], first.guard.uniform)
    if repeats and not _back_edge_ordered(an, fl, first, second, common, tf, ts):
        out.undecided.append((w, r, "in different loops, across iterations of the loop around both"))
    return True


def _across_loops(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr, out: MemoryFacts) -> Race | bool:
    """Two accesses of one shared element in different loops nested at one common level: one
    before a loop and the other in it (a write before a sweep loop, its reads in every sweep),
    one in a loop and the other after it, or each in a loop of its own. The path from the
    earlier access (in any iteration of its loops) to the later one (in any iteration of its
    own) runs the rest of the earlier one's loop bodies, the ops between at the common level,
    and the later one's loop bodies up to it: a barrier both threads take part in there (no
    condition beyond the loops' own) is on every path and orders every iteration pair. With
    none there, the pair in the later access's iteration 0 (after the earlier one's last) is a
    race when that iteration runs for some launch (z3 over the trip count) and no loop of its
    own between holds a barrier (which may run any number of times). True when proved ordered
    or left undecided with a reason (recorded in `out`); a Race; False when the shape does not
    apply (the caller's "different loops")."""
    first, second = (w, r) if w.order < r.order else (r, w)
    tf, ts = (tw, tr) if first is w else (tr, tw)
    common = 0
    while common < min(len(first.loops), len(second.loops)) and first.loops[common] == second.loops[common]:
        common += 1
    if first.buffer is None or second.buffer is None:
        return False
    if len(first.loops) > common and len(second.loops) > common and not (set(tf) & set(ts)):
        # a loop of some threads and another loop of others (a producer's and a consumer's):
        # roles, whose interleavings the race search explores (`_shared_by_search`)
        return False
    if not (_own_loops_ok(an, first, common) and _own_loops_ok(an, second, common)):
        return False
    uf, us = set(first.guard.uniform), set(second.guard.uniform)
    if uf - _loop_conds(an, first, common) != us - _loop_conds(an, second, common):
        # different block-uniform conditions (a rotated pointer's residue `k % p == j` in the loop,
        # the trip count's residue after it): proved ordered only by barriers that run whenever
        # both ends do (their conditions among both ends' own); anything else as before
        return _ordered_under_common(an, fl, w, r, first, second, tf, ts, common, out, uf & us)
    lo, hi = first.order, second.order
    after_first = [o for o in _chain(fl, first, lo, hi, common + 1)]
    before_second = [o for o in _chain(fl, second, lo, hi, common + 1)]
    level = [o for o in fl.ops if lo < o.order < hi and o.loops == first.loops[:common]]
    path = sorted(
        [o for o in after_first if set(o.guard.uniform) <= uf]
        + [o for o in level if set(o.guard.uniform) <= uf & us]
        + [o for o in before_second if set(o.guard.uniform) <= us],
        key=lambda o: o.order,
    )
    on_path = {id(o) for o in path}
    repeats = common > 0 and _repeats(an, first.loops[common - 1], first.guard.uniform)
    back = "in different loops, across iterations of the loop around both"
    # proved ordered: every pair of threads meets at a barrier on the path (atomics and polls
    # there may add order, never take it away)
    syncs = [o for o in path if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    if syncs and all(o.guard.exact and an.threads.executing(o) is not None for o in syncs):
        ok = True
        for t1 in _representatives(an, path, tf):
            for t2 in _representatives(an, path, ts):
                if _ordered_by_barrier(an, path, t1, t2) is not True:
                    ok = False
                    break
            if not ok:
                break
        if ok:
            if repeats and not _back_edge_ordered(an, fl, first, second, common, tf, ts):
                out.undecided.append((w, r, back))
            return True
    # a race in the later access's first iteration, after the earlier one's last
    between = [o for o in fl.ops if lo < o.order < hi]
    nested = any(
        id(o) not in on_path
        and (o.kind in (ir.SYNC, ir.NAMED_ARRIVE) or (may_order(o) and not polls_other_blocks(an, o)))
        for o in between
    )
    if nested:
        out.undecided.append(
            (w, r, "a barrier between that not every path runs (under a condition, or in a loop of its own)")
        )
        return True
    own_f = {an.model.loops[lid].counter.name for lid in first.loops[common:]}
    own_s = {an.model.loops[lid].counter.name for lid in second.loops[common:]}

    def uses(x: ir.Op, names: set) -> bool:
        exprs = list(x.buffer.index) + [x.guard.thread]
        return any(v.kind == E.LOOP and v.name in names for ix in exprs for v in ix.free_vars())

    if uses(first, own_f):
        got = _race_from_strided_loop(an, path, first, second, tf, ts, common, own_s)
        if isinstance(got, Race):
            return got
        if got == "ordered":
            if repeats:
                out.undecided.append((w, r, back))
            return True
        out.undecided.append((w, r, "an index over the counter of the loop the earlier access is in"))
        return True
    if any(v.kind == E.LOOP and v.name in own_s for v in second.guard.thread.free_vars()):
        out.undecided.append((w, r, "a thread condition over the loop counter"))
        return True
    if not _first_iteration_runs(an, second, common) or not _first_iteration_runs(an, first, common):
        out.undecided.append((w, r, "whether the loop runs an iteration is not known"))
        return True
    zero = {n: E.Const(0) for n in own_s}
    idx = tuple(E.substitute(ix, zero) for ix in second.buffer.index)
    second0 = replace(second, buffer=replace(second.buffer, index=idx), loops=first.loops[:common])
    first0 = replace(first, loops=first.loops[:common])
    probe = MemoryFacts()
    race = _race_over(an, path, first0, second0, tf, ts, probe)
    if probe.undecided:
        out.undecided.append((w, r, probe.undecided[0][2]))
        return True
    if race is None:
        if repeats and not _back_edge_ordered(an, fl, first, second, common, tf, ts):
            out.undecided.append((w, r, back))
        return True
    race.first, race.second = first, second
    race.across_loops = True
    return race


MAX_INNER_ITERATIONS = 64  # iterations of an access's own inner loops enumerated


def _race_from_strided_loop(
    an: Analysis, path, first: ir.Op, second: ir.Op, tf, ts, common: int, own_s: set
) -> Race | str | None:
    """`_across_loops`' earlier access indexed by the counters of loops of its own (a block-strided
    staging loop `for (c = tid; c < COLS; c += T) s[c] = ...`), with no barrier on the path to the
    later one: which threads touch which elements is the set, over those counters, of the
    iterations each thread runs (`loop_pairs.own_iterations`). Every iteration k is asked as one
    access by the threads that run it, its index at k, against the later access in its first
    iteration (when some launch runs it: `_first_iteration_runs`). A Race when one such pair is
    proved unordered. "ordered" when every iteration was asked and none races or is left open,
    and the later access is in no loop of its own (its one instance was asked: each thread reads
    back only elements no other thread stores, or a barrier orders each pair). None otherwise
    (the caller leaves it undecided)."""
    from .loop_pairs import own_iterations

    its = own_iterations(an, first, common)
    if not its:
        return None
    own_f = {n for n in its[0][0]}
    if any(v.kind == E.LOOP and v.name in own_f for v in first.guard.thread.free_vars()):
        return None
    if any(v.kind == E.LOOP and v.name in own_s for v in second.guard.thread.free_vars()):
        return None
    if not _first_iteration_runs(an, second, common) or not _first_iteration_runs(an, first, common):
        return None
    zero = {n: E.Const(0) for n in own_s}
    idx = tuple(E.substitute(ix, zero) for ix in second.buffer.index)
    second0 = replace(second, buffer=replace(second.buffer, index=idx), loops=second.loops[:common])
    for env, who in its:
        threads = frozenset(tf) & who
        if not threads:
            continue
        sub = {n: E.Const(k) for n, k in env.items()}
        idx_k = tuple(E.substitute(ix, sub) for ix in first.buffer.index)
        first_k = replace(first, buffer=replace(first.buffer, index=idx_k), loops=first.loops[:common])
        probe = MemoryFacts()
        race = _race_over(an, path, first_k, second0, threads, ts, probe)
        if isinstance(race, Race) and not probe.undecided:
            race.first, race.second = first, second
            race.across_loops = True
            return race
        if race is not None or probe.undecided:
            return None
    return "ordered" if not own_s else None


def _race_into_inner_loop(an: Analysis, fl, w: ir.Op, r: ir.Op, tw, tr, out: MemoryFacts) -> Race | bool:
    """One access in the loops the other is in, the other in further loops of its own with
    constant trip counts and no synchronisation inside them (a loop of thread 0 over the warp
    sums `for (w < 8) s += red_s[w]` after each warp's lane 0 wrote its slot): every iteration
    of those inner loops runs, so the inner access is asked as one access per iteration, its
    index at that iteration, in the iteration of the enclosing loops both share. A Race when one
    is proved unordered; True when every iteration is proved ordered (or a pair was left
    undecided, recorded in `out`); False when the shape does not apply (the caller's
    "different loops")."""
    m = an.model
    outer, deep = (w, r) if len(w.loops) < len(r.loops) else (r, w)
    if deep.loops[: len(outer.loops)] != outer.loops or len(deep.loops) == len(outer.loops):
        return False
    if set(w.guard.uniform) != set(r.guard.uniform) or deep.buffer is None:
        return False
    own = deep.loops[len(outer.loops) :]
    envs: list[dict[str, int]] = [{}]
    for lid in own:
        lp = m.loops.get(lid)
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if (
            lp is None
            or not isinstance(trip, int)
            or isinstance(trip, bool)
            or trip <= 0
            or lp.infinite
            or lp.continues
            or lp.data_cond
            or lp.cond is not None
        ):
            return False
        envs = [dict(e, **{lp.counter.name: k}) for e in envs for k in range(trip)]
        if len(envs) > MAX_INNER_ITERATIONS:
            return False
    body = [o for o in fl.ops if o.loops[: len(outer.loops) + 1] == deep.loops[: len(outer.loops) + 1]]
    if any(o.kind in (ir.SYNC, ir.NAMED_ARRIVE) or may_order(o) for o in body):
        return False
    if any(v.kind == E.LOOP and v.name in {n for e in envs for n in e} for v in deep.guard.thread.free_vars()):
        return False
    lo, hi = min(w.order, r.order), max(w.order, r.order)
    between = [o for o in fl.ops if lo < o.order < hi]
    # a barrier in a loop of its own between the two may run any number of times (none)
    nested = any(o.loops != outer.loops for o in between if o.kind in (ir.SYNC, ir.NAMED_ARRIVE) or may_order(o))
    probe = MemoryFacts()
    for env in envs:
        idx = tuple(E.substitute(ix, {k: E.Const(v) for k, v in env.items()}) for ix in deep.buffer.index)
        it = replace(deep, buffer=ir.Ref(deep.buffer.name, idx), loops=outer.loops)
        a, b = (it, outer) if deep.order < outer.order else (outer, it)
        ta, tb = (tw, tr) if (a is outer) == (outer is w) else (tr, tw)
        race = _race_over(an, between, a, b, ta, tb, probe, nested=nested)
        if probe.undecided:
            out.undecided.append((w, r, probe.undecided[0][2]))
            return True
        if race is not None:
            race.inner_first = race.first is it
            race.inner = tuple(
                (m.loops[lid].var or "iteration", _loop_value(m.loops[lid], env[m.loops[lid].counter.name]))
                for lid in own
            )
            return race
    if outer.loops and _repeats(an, outer.loops[-1], outer.guard.uniform):
        # the other order, across the enclosing loop's back edge
        first, second = (w, r) if w.order < r.order else (r, w)
        tf, ts = (tw, tr) if first is w else (tr, tw)
        if not _back_edge_ordered(an, fl, first, second, len(outer.loops), tf, ts):
            out.undecided.append((w, r, "in different loops, across iterations of the loop around both"))
    return True


def _back_edge_ordered(an: Analysis, fl, first: ir.Op, second: ir.Op, common: int, tf, ts) -> bool:
    """Proved: the later access (`second`, threads `ts`) in an iteration of the loop around both
    (the `common`-th) is ordered before the earlier one (`first`, threads `tf`) in the next
    iteration. The path across the back edge runs, at the loop body's own level, the ops after
    `second` (after its own loops) to the end of the body and then those from the body's start
    to `first`: a barrier there that both threads take part in (no condition beyond the loops'
    own, so run once an iteration by every thread of a block-uniform loop) orders them. Ops
    inside nested loops are left out (they may run no iteration), so a False is no race."""
    if common <= 0:
        return False
    lp = an.model.loops.get(first.loops[common - 1])
    if lp is None or not lp.uniform:
        return False
    head = first.loops[:common]
    uf, us = set(first.guard.uniform), set(second.guard.uniform)
    level = [o for o in fl.ops if o.loops == head and set(o.guard.uniform) <= uf & us]
    path = [o for o in level if o.order > second.order] + [o for o in level if o.order < first.order]
    return _barriers_order(an, path, ts, tf)


def _barriers_order(an: Analysis, path: list[ir.Op], t_from, t_to) -> bool:
    """The barriers on `path` (each with exact guard and known threads; at least one) order every
    representative thread of `t_from` before every one of `t_to`."""
    syncs = [o for o in path if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    if not syncs or not all(o.guard.exact and an.threads.executing(o) is not None for o in syncs):
        return False
    for t1 in _representatives(an, path, t_from):
        for t2 in _representatives(an, path, t_to):
            if _ordered_by_barrier(an, path, t1, t2) is not True:
                return False
    return True


def _loop_value(lp: ir.Loop, k: int) -> int | str:
    init = lp.init.eval({}) if lp.init is not None else 0
    step = lp.step.eval({}) if lp.step is not None else 1
    if isinstance(init, int) and isinstance(step, int):
        return init + step * k
    return f"iteration {k}"


def _race_in(an, fl, first, second, t_first, t_second, out):
    between = fl.same_iteration_between(first, second)
    return _race_over(an, between, first, second, t_first, t_second, out)


def may_order(o: ir.Op, touched: set[str] | None = None) -> bool:
    """May o synchronise threads in a way the barrier queries do not pair? A plain (weak) load of
    global memory does not (it is no flag: a poll is volatile, relaxed or acquiring, or in a SPIN)."""
    if _is_data_read(o):
        return False
    if o.kind == ir.SPIN and spins_on_votes(o):
        return False
    ga = _ga(o)
    if touched is not None and o.kind == ir.GLOBAL_LOAD and ga is not None and ga.base is not None:
        if ga.base not in touched:
            return False  # a load of memory no thread of this kernel writes (weights): it observes nothing
    return o.kind in MAY_ORDER


_VOTES = ("__syncthreads_or", "__syncthreads_and", "__syncthreads_count")


def spins_on_votes(o: ir.Op) -> bool:
    """A SPIN whose condition reads no memory: it is over thread indices, loop counters, kernel
    parameters and the results of block-wide voting barriers only (`while (more)` with `more =
    __syncthreads_or(c)`). Such a loop head observes no other thread's store, so it orders nothing
    beyond the voting barrier itself (which the barrier queries pair)."""
    cond = o.spin.cond if o.spin is not None else None
    if cond is None or cond.is_opaque() or o.spin.breaks or o.spin.goes_on is not None:
        return False
    for v in cond.free_vars():
        if v.kind in (E.THREAD, E.LOOP):
            continue
        if v.kind != E.PARAM:
            return False
        if v.name.startswith("?") and not any(v.name.startswith(f"?{b}#") for b in _VOTES):
            return False
    return True


def polls_other_blocks(an: Analysis, o: ir.Op) -> bool:
    """A SPIN, or a load of global memory, that can observe no write of another thread of the
    block: every store or atomic of the kernel to the memory it reads is made by its own threads
    (a chained scan's `while (ld_acquire(&flag[t - 1]) == 0)`, the flags raised by the same chain
    thread for its own tile, in other blocks). It waits for other blocks and orders none of this
    block's threads: no edge of a shared-memory race query (as a loop that only computes). For
    global data it is still an acquire (`publications` / `acquisitions` keep it); whether the spin
    is ever left is the spin-wait argument's question."""
    m = an.model
    spinning = an.threads.executing(o)
    if spinning is None or o.kind not in (ir.SPIN, ir.GLOBAL_LOAD):
        return False
    polled = set()
    if o.kind == ir.GLOBAL_LOAD:
        ga = o.global_access
        if ga is None or ga.base is None:
            return False
        polled.add(ga.base)
    else:
        if not o.loops:
            return False
        lid = o.loops[-1]
        for q in m.ops:
            if q is o or lid not in q.loops or q.kind == ir.REG_ACCESS:
                continue
            ga = q.global_access
            if q.kind != ir.GLOBAL_LOAD or ga is None or ga.base is None:
                return False  # the loop does more than poll global memory
            polled.add(ga.base)
        if not polled:
            return False
    for q in m.ops:
        ga = q.global_access
        if q.kind not in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL) or ga is None:
            continue
        if ga.base is None or ga.base in polled:
            writers = an.threads.executing(q)
            if writers is None or not writers <= spinning:
                return False
    return True


def _release_only_arrivals(an: Analysis, undecided: list[ir.Op]) -> list[ir.Op]:
    """`undecided` less its arrivals on mbarriers that no thread of the kernel waits on: an arrival
    (`mbarrier.arrive`, `.expect_tx`; a libcu++ latch's `count_down`) releases only, and orders a
    thread before another only through a wait for its phase, so on a barrier nobody waits on (no
    MBAR_WAIT of it, no unmodelled call in the kernel that might) it orders nothing (libcu++ latch
    `count_down()` without `wait()`, corpus/idioms9 ls-count-down-no-wait)."""
    if not any(o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) for o in undecided):
        return undecided
    ops = an.model.ops
    if any(o.kind == ir.CALL for o in ops):
        return undecided
    waited = {o.barrier.name for o in ops if o.kind == ir.MBAR_WAIT and o.barrier is not None}
    return [
        o
        for o in undecided
        if not (o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.barrier is not None and o.barrier.name not in waited)
    ]


def _uniform_exit(an: Analysis, o: ir.Op) -> bool:
    """A `return` under a block-uniform condition that every thread of the block runs when it
    runs at all (`if (!last_s) return;` after a barrier): for all threads or for none. On a path
    from one access to a later access some thread makes, it was not taken (that thread is still
    there, so every thread is): it orders nothing and ends nothing on that path."""
    n = an.threads.n
    return (
        o.kind == ir.EXIT
        and o.guard.exact
        and bool(o.guard.uniform)
        and n is not None
        and an.threads.executing(o) == frozenset(range(n))
    )


def _silent(o: ir.Op) -> bool:
    """o is nothing another thread can observe: a register op, a warp shuffle or vote (no memory
    barrier), a plain or ordered load that is no read-modify-write (a load is never read by
    another thread), or a fence with no write of its thread after it on the path (asked by the
    caller over the whole path: a fence alone is observed by nobody)."""
    if o.kind in (ir.REG_ACCESS, ir.WARP_COLL, ir.FENCE):
        return True
    if o.kind == ir.SMEM_ACCESS:
        return o.access_mode == "read" and not (o.access is not None and o.access.atomic)
    if o.kind == ir.GLOBAL_LOAD:
        ga = _ga(o)
        return ga is not None and not ga.atomic
    return False


def _first_end_silent(an: Analysis, between: list[ir.Op], t_first, t_second) -> bool:
    """Every thread of `t_first` that may pair with another thread of `t_second` runs, among
    `between`, only ops no other thread can observe (`_silent`), and every op between has known
    threads. A happens-before path from `first` to `second` by another thread starts with a
    release of first's thread after it (a barrier arrival, a store, an atomic, an arrive): with
    none, only a barrier both take part in can order them, and `_race_over` asks that."""
    if not t_first or not t_second:
        return False
    pairing = set(t_first) - set(t_second) if len(t_second) == 1 else set(t_first)
    if not pairing:
        return False
    # the global memory the ops between may observe (a load, a poll, an atomic's read): a write
    # of first's thread elsewhere is seen by no thread on the path. None: any memory
    observed: set[str] | None = set()
    for o in between:
        if o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL):
            ga = _ga(o)
            if ga is None or ga.base is None:
                observed = None
                break
            observed.add(ga.base)
        elif o.kind in (ir.SPIN, ir.CALL):
            observed = None
            break
    for o in between:
        if o.kind in (ir.SYNC, ir.NAMED_ARRIVE):
            continue  # barriers: asked by `_race_over` itself
        ex = an.threads.executing(o)
        if ex is None or not o.guard.exact:
            return False
        if o.kind in (ir.MBAR_WAIT, ir.SPIN, ir.CALL) and ex & set(t_second):
            # a wait of second's thread that may never pass (a phase nobody completes, a flag
            # nobody raises: a hang, the progress engine's question) leaves `second` unreached,
            # so the pair is no proved race (fixtures/async/ptx_mbar_token_rounds_bad.cu)
            return False
        if not ex & pairing or _silent(o):
            continue
        ga = _ga(o)
        if (
            o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL)
            and observed is not None
            and ga is not None
            and ga.base is not None
            and ga.base not in observed
        ):
            continue  # a write of global memory nothing on the path reads
        return False
    return True


def _race_over(an, between, first, second, t_first, t_second, out, nested: bool = False, next_iteration: bool = False):
    # a block-uniform `return` between was not taken on the path that reaches `second` (its
    # thread runs it): the pair races only in the launches where it is not (`Race.input`)
    exits = [o for o in between if _uniform_exit(an, o)]
    if exits:
        between = [o for o in between if not _uniform_exit(an, o)]
        race = _race_over(an, between, first, second, t_first, t_second, out, nested, next_iteration)
        if race is not None and not race.input:
            lines = ", ".join(str(o.location.row) for o in exits)
            race.input = f"the block-uniform `return` at line {lines} is not taken"
        return race
    undecided = [
        o
        for o in between
        if (may_order(o) and not polls_other_blocks(an, o)) or (o.kind == ir.SYNC and not o.guard.exact)
    ]
    undecided = _release_only_arrivals(an, undecided)
    if undecided and not nested and _first_end_silent(an, between, t_first, t_second):
        # no thread of `first`'s end (other than the one thread of `second`'s) runs anything
        # between that another thread could observe: no chain of synchronisation starts from it,
        # so the ops between order the pair only as barriers do (asked below)
        undecided = []
    if (undecided or nested) and all(o.kind in _ONLY_ADD_ORDER for o in undecided):
        # atomics and polls of global memory may add order, never take it away, and a barrier
        # outside the loops nested between runs once on the path: a barrier both threads take
        # part in still orders them (round 9: a grid barrier's counter between)
        given: tuple = ()
        if next_iteration and first.loops and first.loops == second.loops:
            lp = an.model.loops.get(first.loops[-1])
            given = lp.continues if lp is not None and lp.infinite else ()
        if _all_ordered_by_barrier(an, between, first, second, t_first, t_second, given):
            return None
    if undecided or nested:
        out.undecided.append((first, second, f"`{undecided[0].api}` between" if undecided else "a nested loop"))
        return None
    asked_second = second
    if next_iteration and any(
        ix.depends_on(E.LOOP) or ix.is_opaque() for o in (first, second) for ix in (o.buffer.index if o.buffer else ())
    ):
        # `flag[k % 2]` in iterations k and k + 1 names two elements: a double buffer. An index
        # over the counter of the loop around both only (not opaque) is asked with `second`'s
        # counter at k + 1 (z3 over the counter decides whether the two name one element)
        lp = an.model.loops.get(first.loops[-1]) if first.loops and first.loops == second.loops else None
        only = lp is not None and all(
            not ix.is_opaque() and all(v.kind != E.LOOP or v.name == lp.counter.name for v in ix.free_vars())
            for o in (first, second)
            for ix in (o.buffer.index if o.buffer else ())
        )
        if not only or second.buffer is None:
            out.undecided.append((first, second, "an index over the loop counter, across iterations"))
            return None
        nxt = {lp.counter.name: E.binop("+", lp.counter, E.Const(1))}
        second = replace(
            second, buffer=replace(second.buffer, index=tuple(E.substitute(ix, nxt) for ix in second.buffer.index))
        )
    syncs = [o for o in between if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    sets = [an.threads.executing(o) for o in syncs]
    if any(s is None for s in sets):
        out.undecided.append((first, second, "a barrier whose threads are not known"))
        return None

    def member(o, s, t):
        # a `__syncwarp(mask)` orders the lanes of its mask that execute it
        if t not in s:
            return False
        return in_warp_mask(o, t) if o.kind == ir.SYNC and o.sync_kind == "warp" else True

    # the keys' symbolic components, one object per value (`index_key` makes a new one per
    # thread), so that the element question of two components is asked once per call
    components: dict = {}
    differ: dict = {}

    def classes(threads, ref):
        # threads that take part in the same barriers and name the same element behave alike
        # (up to their warp): two representatives per class and warp (two lanes of one warp are
        # a pair too, and a class may hold the other end's thread)
        cls: dict = {}
        for t in sorted(threads):
            sig = tuple(member(o, s, t) for o, s in zip(syncs, sets) if s is not None)
            key = tuple(components.setdefault(c, c) if isinstance(c, E.Expr) else c for c in index_key(ref, t))
            reps = cls.setdefault((sig, key, t // 32), [])
            if len(reps) < 2:
                reps.append(t)
        return list(cls.items())

    if _first_barrier_orders_all(an, between):
        return None  # every pair below would be ordered at that barrier: `_ordered_by_barrier`
    c1, c2 = classes(t_first, first.buffer), classes(t_second, second.buffer)
    for (sig2, k2, w2), reps2 in c2:
        for (sig1, k1, w1), reps1 in c1:
            pair = next(((a, b) for a in reps1 for b in reps2 if a != b), None)
            if pair is None:
                continue  # one thread: program order
            t1, t2 = pair
            # a barrier that orders the two threads orders them whichever elements they name: the
            # elements are asked (z3 over the loop counters) only of a pair no barrier orders
            # (issue 29: 256 x 256 classes, each pair's question unknown at a spent budget and
            # asked again, cost minutes on fixtures/memory/loop_boundary_good.cu)
            ordered = _ordered_by_barrier(an, between, t1, t2)
            if ordered is True:
                continue
            alias = keys_may_alias(k1, k2)
            if alias is None and _keys_never_equal(an, k1, k2, differ):
                alias = False
            if alias is False:
                continue
            if alias is None:
                out.undecided.append((first, second, "whether both name the same element is not known"))
                return None
            if ordered is None:
                out.undecided.append((first, second, "a barrier whose threads are not known"))
                return None
            if not ordered and _chain_possible(an, between, t1, t2):
                # t1 signals one barrier and t2 later waits at another: threads that take part in
                # both may carry the order from one to the other, which this query does not follow
                out.undecided.append((first, second, "barriers between that other threads may chain"))
                return None
            if not ordered:
                narrow: tuple = ()
                if t1 // 32 == t2 // 32:
                    narrow = tuple(
                        o
                        for o, s in zip(syncs, sets)
                        if o.kind == ir.SYNC and o.sync_kind == "warp" and s is not None and t1 in s and t2 in s
                    )
                return Race(first, asked_second, t1, t2, narrow=narrow)
    return None


def _cta_thread_names(tag: str) -> dict[str, E.Expr]:
    """One side of a DSMEM pair: its thread and its CTA's rank in the cluster as fresh names
    (`tid.a`, `cta_rank.a`), a block of one dimension."""
    return {
        "tid": E.Var(f"tid.{tag}", E.THREAD),
        "tid_y": E.Const(0),
        "tid_z": E.Const(0),
        "cta_rank": E.Var(f"cta_rank.{tag}", E.PARAM),
    }


def _keys_never_equal(an: Analysis, k1, k2, differ: dict | None = None) -> bool:
    """Proved: two `index_key`s (thread indices substituted, both in one iteration of the loops
    around them) name different elements for every value of the loop counters and parameters
    they mention (`u[k & 1]` and `u[(k + 1) & 1]`: z3 over the counter).

    Components that are both numbers are compared first (the keys differ whatever z3 says of the
    others); `differ` remembers the answer for two symbolic components by their identities (the
    caller hands one object per value: `_race_over`'s `components`). Issue 29: the race search of
    corpus/idioms12/dsmem_halo_split.cu asked `(it % 2) != ((it % 2) ^ 1)` for each of ~780,000
    class pairs that differ in their per-thread component anyway. The answer is the same; fewer
    questions reach the solver (a spent budget counts fewer inconclusive proofs)."""
    from .. import solver

    pairs = list(zip(k1, k2))
    for a, b in pairs:
        if not isinstance(a, E.Expr) and not isinstance(b, E.Expr) and a != b:
            return True  # two numbers: another element
    for a, b in pairs:
        if not isinstance(a, E.Expr) and not isinstance(b, E.Expr):
            continue
        key = (id(a), id(b))
        got = differ.get(key) if differ is not None else None
        if got is None:
            ea = a if isinstance(a, E.Expr) else E.Const(a)
            eb = b if isinstance(b, E.Expr) else E.Const(b)
            got = solver.differ_always(ea, eb) is True
            if differ is not None and isinstance(a, E.Expr) and isinstance(b, E.Expr):
                differ[key] = got
        if got:
            return True  # one index differs in every iteration: another element
    return False


_ONLY_ADD_ORDER = (ir.GLOBAL_SIGNAL, ir.GLOBAL_LOAD, ir.SPIN)


def _all_ordered_by_barrier(an, between, first, second, t_first, t_second, given: tuple = ()) -> bool:
    """Is every pair of a thread of `t_first` and another of `t_second` ordered by a block or
    named barrier among `between` that both take part in (exact guards, known threads)? `given`:
    block-uniform conditions true on the path for the ops after `first` in program order (the
    rest of `first`'s iteration when the path goes round the back edge of a loop left by `if (c)
    break;`: `Loop.continues`, which the next iteration's coming proves)."""
    common = 0
    while common < min(len(first.loops), len(second.loops)) and first.loops[common] == second.loops[common]:
        common += 1
    top = first.loops[:common]
    syncs = [o for o in between if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    if any(o.kind == ir.SYNC and not o.guard.exact for o in syncs):
        return False
    if any(an.threads.executing(o) is None for o in syncs):
        return False
    # on the path once, whatever the inner loops do, and in every block (no block-uniform condition)
    once = [
        o
        for o in syncs
        if o.loops == top
        and all(c in given for c in o.guard.uniform)
        and (not o.guard.uniform or o.order > first.order)
    ]
    if not once:
        return False
    for t1 in _representatives(an, once, t_first):
        for t2 in _representatives(an, once, t_second):
            if t1 == t2:
                continue
            if _ordered_by_barrier(an, once, t1, t2) is not True:
                return False
    return True


def _repeats(an: Analysis, lid: int, guards) -> bool:
    from .syncscope import _repeats as repeats

    return repeats(an, lid, guards)


# ---------------------------------------------------------------- global ----


def _ga(o: ir.Op) -> ir.GlobalAccessFacts | None:
    return o.global_access


def _is_counter(o: ir.Op) -> bool:
    """An atomic that counts (integer, relaxed): the signal side of a split-K / last-arriver
    protocol, or of a flag."""
    ga = _ga(o)
    return o.kind == ir.GLOBAL_SIGNAL and ga is not None and ga.form in ATOMIC_FORMS and not ga.data


def _grid_barrier(o: ir.Op) -> bool:
    """Cooperative groups' grid.sync(): a block barrier around a gpu-scope release/acquire
    exchange among the blocks -- a release and an acquire at gpu scope for every thread."""
    return o.kind == ir.SYNC and o.sync_kind == "grid"


def releases(o: ir.Op) -> bool:
    """Is o a release towards the other blocks of the grid: a gpu-scope (or wider) fence, a
    grid barrier, or a release / acq_rel atomic whose scope holds across blocks? (A release at
    block scope -- `thread_scope_block`, `.cta` -- orders nothing for another block.)"""
    ga = _ga(o)
    if o.kind == ir.FENCE:
        return o.fence_kind in GPU_FENCES
    if _grid_barrier(o):
        return True
    return o.kind == ir.GLOBAL_SIGNAL and ga is not None and ga.sem in RELEASE_SEMS and ga.across_blocks is True


def acquires(o: ir.Op) -> bool:
    """Is o an acquire of what other blocks released: a gpu-scope fence, a grid barrier, or an
    acquiring load / atomic whose scope holds across blocks?"""
    ga = _ga(o)
    if o.kind == ir.FENCE:
        return o.fence_kind in GPU_FENCES
    if _grid_barrier(o):
        return True
    return (
        o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_LOAD)
        and ga is not None
        and ga.sem in ACQUIRE_SEMS
        and ga.across_blocks is True
    )


def _scope_unknown(o: ir.Op) -> bool:
    """A release / acquire at cluster scope: it orders only the blocks of one cluster, and whether
    the other side is one of them is not known (an undecided question, never a finding)."""
    ga = _ga(o)
    return ga is not None and ga.sem != "relaxed" and ga.across_blocks is None


_releases = releases
_acquires = acquires


def _is_data_read(o: ir.Op) -> bool:
    """A weak load of global memory: a C++ load (`p[i]`, `*c`) or a PTX `ld.global` with no order
    qualifier (a helper's vector load): it reads data, it observes no flag."""
    ga = _ga(o)
    return (
        o.kind == ir.GLOBAL_LOAD and ga is not None and (ga.form == "plain" or (ga.form == "ptx" and ga.sem == "weak"))
    )


def _is_data_write(o: ir.Op) -> bool:
    ga = _ga(o)
    if o.kind == ir.GLOBAL_STORE:
        return True
    return o.kind == ir.GLOBAL_SIGNAL and ga is not None and ga.form in ATOMIC_FORMS and ga.data


def _observed(an: Analysis, fl) -> bool:
    """Does the kernel read what its counters say: a test of an atomic's old value, or a spin?"""
    return bool(_tests(an, fl)) or any(o.kind == ir.SPIN for o in fl.ops)


def _tests(an: Analysis, fl) -> dict[int, set[str]]:
    """id(op) -> the atomics' old values (their Var names) whose test guards op: the branch
    compares the old value itself, or a `__shared__` flag a thread set from it."""
    results = {ga.result: o for o in fl.ops if (ga := _ga(o)) is not None and ga.result and _is_counter(o)}
    if not results:
        return {}
    flags: dict[str, set[str]] = {}
    for o in fl.ops:
        a = o.access
        if o.kind == ir.SMEM_ACCESS and a is not None and a.via == "scalar" and a.value is not None and o.buffer:
            stored = {v.name for v in a.value.free_vars()} & results.keys()
            if stored:
                flags.setdefault(f"?shared:{o.buffer.name}", set()).update(stored)
    # a block-uniform test of such a flag (`if (!last_s) return;` after a barrier): its unknown
    # names the scalars it reads
    via = an.model.shared_scalar_unknowns
    out: dict[int, set[str]] = {}
    for o in fl.ops:
        names: set[str] = set()
        for c in o.guard.opaque:
            for v in c.free_vars():
                if v.name in results:
                    names.add(v.name)
                names |= flags.get(v.name, set())
        for c in o.guard.uniform:
            for v in c.free_vars():
                for sc in via.get(v.name, ()):
                    names |= flags.get(f"?shared:{sc}", set())
        if names:
            out[id(o)] = names
    return out


def _publish(an: Analysis, out: MemoryFacts) -> None:
    fl = flow(an)
    if not _observed(an, fl):
        return
    read = _read_bases(fl)
    reported: set[int] = set()  # one finding per store: the first counter raised after it
    # a plain or volatile store that ends a spin of the kernel is a relaxed signal too (round 12)
    stores = epochs.signal_stores(an)
    for sig in fl.ops:
        ga = _ga(sig)
        if not (_is_counter(sig) or id(sig) in stores) or ga is None or _releases(sig) or not sig.guard.exact:
            continue
        ts = an.threads.executing(sig)
        if not ts:
            continue
        for d in fl.ops:
            if not _is_data_write(d) or d.order >= sig.order:
                continue
            if d.loops[: len(sig.loops)] != sig.loops and not _before_signal_loops(an, d, sig):
                continue
            if not d.guard.exact or not _runs_with_signal(d, sig):
                continue
            dga = _ga(d)
            if (
                d.kind == ir.GLOBAL_STORE
                and read is not None
                and dga is not None
                and dga.form == "plain"
                and dga.base is not None
                and not any(r == dga.base or r.startswith(dga.base + ".") for r in read)
            ):
                # a plain store of memory no thread of the kernel reads (and nothing else may read:
                # `_read_bases`): the kernel's output, which the counter publishes to no one (an
                # owner's reset of its semaphore after writing y). A float atomic accumulates into
                # memory other blocks share, and stays asked
                continue
            td = an.threads.executing(d)
            if not td:
                continue
            if dga is not None and dga.base is not None and thread_private(an, dga.base):
                continue  # each element is its own thread's: no other thread reads what it wrote
            out.examined.add(("global", id(sig)))
            if _scope_unknown(sig):
                out.undecided.append((d, sig, "a release at cluster scope: the readers' cluster is not known"))
                continue
            between = fl.same_iteration_between(d, sig)
            if any(_releases(o) for o in between):
                continue  # a fence on the path (in the writer or the signaller): released
            if any(may_order(o) and o is not sig and not _acquires_only(an, o, ts) for o in between):
                # an arrive, a wait, another atomic: an order this query does not pair
                out.undecided.append((d, sig, "an op that may synchronise between"))
                continue
            if any(o.kind == ir.SYNC and (not o.guard.exact or an.threads.executing(o) is None) for o in between):
                out.undecided.append((d, sig, "a barrier whose threads are not known"))
                continue
            t_sig = min(ts)
            pick = None
            if t_sig in td:
                pick = t_sig
            else:
                for t in sorted(td):
                    if _ordered_by_barrier(an, between, t, t_sig):
                        pick = t
                        break
            if pick is None:
                out.undecided.append((d, sig, "no barrier orders the data's writer before the signal"))
                continue
            gathered = any(o.kind == ir.SYNC for o in between) and td != frozenset([t_sig])
            if gathered and all(o.sync_kind == "warp" for o in between if o.kind == ir.SYNC):
                # `__syncwarp()` gathers the stores of the signalling thread's warp only
                td = frozenset(t for t in td if t // 32 == t_sig // 32)
            # a release whose scope stops at the block (`thread_scope_block`, `.cta`): "scope"
            why = "scope" if ga.sem in RELEASE_SEMS else "relaxed"
            if id(d) in reported:
                continue
            reported.add(id(d))
            out.publications.append(Publication(d, sig, pick, t_sig, td, gathered, why))
            break


def _runs_with_signal(d: ir.Op, sig: ir.Op) -> bool:
    """Does every block that runs the data write d run the signal too: d's block-uniform
    conditions are the signal's and more, the more over the block index and launch values only
    (`if (split == 0) y[r] = p; else y[r] += p;` before an unconditional raise: round 16)? A
    condition over a loaded value or a loop counter keeps the pair unasked, as before."""
    extra = set(d.guard.uniform) - set(sig.guard.uniform)
    if not set(sig.guard.uniform) <= set(d.guard.uniform):
        return not extra
    return all(not c.is_opaque() and all(v.kind == E.PARAM for v in c.free_vars()) for c in extra)


def _before_signal_loops(an: Analysis, d: ir.Op, sig: ir.Op) -> bool:
    """The data write d comes before the loops that hold the signal and not d (a flag raised in a
    loop of rounds after the phase's stores: `for r < R: st.relaxed flag[r][..]`), in the same
    iteration of the loops around both; each of those loops runs at least once (a constant trip
    count >= 1, no exit of its own), so the path d -> ... -> the signal's first round exists and
    the ops between them in program order are the ops on it."""
    common = 0
    while common < min(len(d.loops), len(sig.loops)) and d.loops[common] == sig.loops[common]:
        common += 1
    extra = sig.loops[common:]
    if not extra:
        return False
    for lid in extra:
        lp = an.model.loops.get(lid)
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if (
            lp is None
            or not isinstance(trip, int)
            or isinstance(trip, bool)
            or trip < 1
            or lp.infinite
            or lp.continues
            or lp.data_cond
            or lp.thread_exit
        ):
            return False
    # the signal runs in the first iteration of each of them (its conditions name none of their
    # counters): no earlier round's op after it in program order lies on the path
    counters = {an.model.loops[lid].counter for lid in extra}
    conds = [*sig.guard.uniform, *([sig.guard.thread] if sig.guard.thread is not None else [])]
    if any(counters & c.free_vars() for c in conds):
        return False
    # d lies before the first op of the signal's own loops
    first = min(o.order for o in an.model.ops if extra[0] in o.loops)
    return d.order < first


def _acquire(an: Analysis, out: MemoryFacts) -> None:
    fl = flow(an)
    tests = _tests(an, fl)
    if not tests:
        return
    by_result = {ga.result: o for o in fl.ops if (ga := _ga(o)) is not None and ga.result}
    # memory no op of the kernel writes (an input: `in[tile * 256 + tid]` after a work ticket's
    # test) holds nothing the counter could publish: no acquire question (None: a write, or a
    # call, whose address is not known)
    touched = None if any(o.kind == ir.CALL for o in fl.ops) else _touched_bases(fl)
    seen: set[int] = set()
    for rd in fl.ops:
        if rd.kind != ir.GLOBAL_LOAD or (ga := _ga(rd)) is None or ga.form != "plain":
            continue
        if touched is not None and ga.base is not None and ga.base not in touched:
            continue
        for name in sorted(tests.get(id(rd), ())):
            sig = by_result.get(name)
            if sig is None or id(sig) in seen or sig.order >= rd.order or not sig.guard.exact:
                continue
            sga = _ga(sig)
            if sga is None or _acquires(sig) or _scope_unknown(sig):
                continue
            if rd.loops[: len(sig.loops)] != sig.loops:
                continue
            ts = an.threads.executing(sig)
            if not ts:
                continue
            between = fl.same_iteration_between(sig, rd)
            if any(_acquires(o) for o in between):
                continue
            if any(may_order(o) and not _uniform_exit(an, o) for o in between):
                # (a block-uniform `return` between was not taken: the read runs)
                out.undecided.append((sig, rd, "an op that may synchronise between"))
                continue
            seen.add(id(sig))
            out.acquisitions.append(Acquisition(sig, rd, min(ts), "last-arriver"))


def _acquires_only(an: Analysis, o: ir.Op, signallers) -> bool:
    """Is o a load or an atomic, made by signalling threads, of a word that only the signalling
    threads write (in any block: thread 0's snapshot of a grid barrier's generation, its arrival
    on the counter)? What it may acquire comes from the signalling threads' own releases, so it
    orders no other thread's data before the signal (whether it releases is asked apart, of
    every op between: round 9, grid barriers)."""
    ga = _ga(o)
    to = an.threads.executing(o)
    if not to or not signallers or not to <= signallers or not o.guard.exact:
        return False
    if o.kind == ir.SPIN:
        return True  # the loop's head: its polls are ops between of their own, asked as such
    if o.kind not in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) or ga is None or ga.base is None:
        return False
    for w in an.model.ops:
        if w.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE, ir.TMA_STORE, ir.CALL):
            wga = _ga(w)
            if w.kind in (ir.TMA_STORE, ir.CALL) or wga is None or wga.base is None:
                return False
            if wga.base != ga.base:
                continue
            tw = an.threads.executing(w)
            if not tw or not tw <= signallers or not w.guard.exact:
                return False
    return True


def thread_private(an: Analysis, base: str) -> bool:
    """Does every element of global memory `base` belong to one thread of the grid: every access
    (load, store, atomic) of it is `base[i]` with a known index, and z3 proves that two accesses
    naming one element are made by the same thread of the same block (in whatever iterations of
    their loops: `y[blockIdx.x * T + tid + k * gridDim.x * T]`, a grid-stride loop)? Such data is
    no communication between threads: no barrier publishes it to anyone (round 9)."""
    return an.fact(f"happens_before.thread_private:{base}", lambda an: _thread_private(an, base))


def block_private(an: Analysis, base: str) -> bool:
    """`thread_private` with the block for the thread: z3 proves that two accesses naming one
    element of `base` are made by the same block (`v[blockIdx.x * SLICE + ...]`, whatever the
    thread): no other block ever reads what a block writes there."""
    return an.fact(f"happens_before.block_private:{base}", lambda an: _thread_private(an, base, per_block=True))


def _thread_private(an: Analysis, base: str, per_block: bool = False) -> bool:
    from .. import solver

    m = an.model
    n = an.threads.n
    if n is None:
        return False
    accs = []
    for o in m.ops:
        ga = _ga(o)
        if o.kind in (ir.TMA_STORE, ir.TMA_LOAD, ir.CP_ASYNC, ir.CALL):
            return False
        if ga is None or ga.base != base:
            continue
        if ga.index is None or o.kind not in (ir.GLOBAL_LOAD, ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL):
            return False
        accs.append(o)
    if not accs:
        return False
    if _grid_beyond_x(m):
        # blocks told apart by blockIdx.y / .z (a split-K grid `dim3(tiles, splits)`): two blocks
        # of one blockIdx.x name the same element of an index over x alone (round 16)
        return False
    allowed = {"tid", "blockIdx.x", "gridDim.x"}

    def side(o: ir.Op, tag: str):
        ren: dict[str, E.Expr] = {"tid": E.Var("tid" + tag, E.PARAM), "blockIdx.x": E.Var("blockIdx.x" + tag, E.PARAM)}
        bounds = [
            E.binop(">=", ren["tid"], E.Const(0)),
            E.binop("<", ren["tid"], E.Const(n)),
            E.binop(">=", ren["blockIdx.x"], E.Const(0)),
            E.binop("<", ren["blockIdx.x"], E.Var("gridDim.x", E.PARAM)),
        ]
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None:
                return None
            ren[lp.counter.name] = E.Var(lp.counter.name + tag, E.PARAM)
        for lid in o.loops:
            lp = m.loops[lid]
            k = ren[lp.counter.name]
            bounds.append(E.binop(">=", k, E.Const(0)))  # (no symbolic trip bound: a weaker assumption)
            trip = lp.trip.eval({}) if lp.trip is not None else None
            if isinstance(trip, int) and not isinstance(trip, bool) and not lp.continues:
                # a constant trip count keeps the query linear: a block's slice walked in
                # steps (`mine[i * T + tid]`, i < PER, `mine = v + blockIdx.x * PER * T`)
                bounds.append(E.binop("<", k, E.Const(trip)))
        idx = o.global_access.index  # type: ignore[union-attr]
        if any(v.name not in allowed and v.name not in ren for v in idx.free_vars()):
            return None
        return E.substitute(idx, ren), bounds, ren

    for i, a in enumerate(accs):
        for b in accs[i:]:
            sa, sb = side(a, "#1"), side(b, "#2")
            if sa is None or sb is None:
                return False
            (ia, ba, ra), (ib, bb, rb) = sa, sb
            same = E.binop("==", ra["blockIdx.x"], rb["blockIdx.x"])
            if not per_block:
                same = E.conj(E.binop("==", ra["tid"], rb["tid"]), same)
            claim = E.disj(E.binop("!=", ia, ib), same)
            if solver.always(claim, assume=tuple(ba + bb)) is not True:
                return False
    return True


def _grid_beyond_x(m: ir.KernelModel) -> bool:
    """Is the kernel's grid more than one block deep along y or z: a launch in the file gives it
    so, or the kernel reads `blockIdx.y` / `.z` (in a guard, an address, a stored value, a spin's
    condition)?"""
    if m.grid_dims is not None:
        return m.grid_dims[1] > 1 or m.grid_dims[2] > 1
    names = {"blockIdx.y", "blockIdx.z"}
    for o in m.ops:
        exprs: list = [o.guard.thread, *o.guard.uniform]
        ga = o.global_access
        if ga is not None:
            exprs += [ga.index, ga.operand, *ga.operands]
        if o.spin is not None:
            exprs += [o.spin.cond, o.spin.goes_on]
        if any(isinstance(e, E.Expr) and any(v.name in names for v in e.free_vars()) for e in exprs):
            return True
    return False


def _publishes_with_release(fl) -> bool:
    """Does the kernel raise a counter with release ordering (a release atomic, or a gpu-scope
    fence before a relaxed counter in the same iteration)? Then its polls must acquire."""
    last_fence: dict[tuple, int] = {}
    for o in fl.ops:
        if (o.kind == ir.FENCE and o.fence_kind in GPU_FENCES) or _grid_barrier(o):
            last_fence[o.loops] = o.order
        elif o.kind == ir.GLOBAL_SIGNAL and _is_counter(o):
            if _releases(o) or o.loops in last_fence:
                return True
    return False


def _flag_publications(fl) -> set[tuple[str, str]]:
    """(data base D, flag base F) where some thread stores D[i] with a plain store and later, in
    the same iteration of the same loops, releases F[i] (`agg[t] = v; st.release(&flag[t], 1)`):
    element i of D is published by element i of F (the index the same expression at both)."""
    out: set[tuple[str, str]] = set()
    stores = [o for o in fl.ops if o.kind == ir.GLOBAL_STORE and (ga := _ga(o)) is not None and ga.form == "plain"]
    for st in stores:
        sga = _ga(st)
        if sga is None or sga.base is None or sga.index is None or not st.guard.exact:
            continue
        for sig in fl.ops:
            ga = _ga(sig)
            if (
                sig.kind != ir.GLOBAL_SIGNAL
                or ga is None
                or ga.base is None
                or ga.base == sga.base
                or not _releases(sig)
                or sig.order <= st.order
                or sig.loops != st.loops
                or ga.index is None
                or ga.index != sga.index
                or sig.guard.thread != st.guard.thread
                or not set(sig.guard.uniform) <= set(st.guard.uniform)
            ):
                continue
            out.add((sga.base, ga.base))
    return out


def _read_before_acquire(an: Analysis, out: MemoryFacts) -> None:
    """Global data read by a thread BEFORE its own acquiring poll of the flag that publishes it
    (`a = agg[p]; while (ld_acquire(&flag[p]) == 0) {}`, the read hoisted above the spin): the
    acquire orders only what the thread reads after it, so the read may return the data from
    before the other block's release (an Acquisition, how "before"). Asked of every spin whose
    poll acquires a flag F that publishes data D (`_flag_publications`) and every plain read of
    D at the level of the spin's loop, before it in the same iteration, naming the element the
    poll names (the same index expression). An obligation per such poll (examined): a read with
    an acquire, a gpu fence or an op that may synchronise before it in the thread's path, an
    earlier iteration's poll of F that may name the same element (z3 over the counter), or an
    index that is not the poll's, is left undecided."""
    from .. import solver

    fl = flow(an)
    pubs = _flag_publications(fl)
    if not pubs:
        return
    for sp in fl.ops:
        if sp.kind != ir.SPIN or not sp.loops:
            continue
        lid = sp.loops[-1]
        outer = tuple(sp.loops[:-1])
        for poll in _polls(fl, lid):
            pga = _ga(poll)
            if poll.kind != ir.GLOBAL_LOAD or pga is None or pga.base is None or not _acquires(poll):
                continue
            data = sorted(d for d, f in pubs if f == pga.base)
            reads = [
                rd
                for rd in fl.ops
                if _is_data_read(rd)
                and (ga := _ga(rd)) is not None
                and ga.base in data
                and tuple(rd.loops) == outer
                and rd.order < sp.order
            ]
            out.examined.add(("global", id(poll)))
            tp = an.threads.executing(poll)
            for rd in reads:
                rga = _ga(rd)
                tr = an.threads.executing(rd)
                if not tp or not tr or not rd.guard.exact or not poll.guard.exact or rga is None:
                    out.undecided.append((poll, rd, "the threads that run the read or the poll are not known"))
                    continue
                if rga.index is None or pga.index is None or rga.index != pga.index:
                    out.undecided.append((poll, rd, "whether the read names the element the poll's flag publishes"))
                    continue
                if not set(poll.guard.uniform) <= set(rd.guard.uniform):
                    out.undecided.append((poll, rd, "the read runs where the spin may not"))
                    continue
                own = [
                    o
                    for o in fl.ops
                    if _is_data_write(o)
                    and o.order < rd.order
                    and (oga := _ga(o)) is not None
                    and oga.base == rga.base
                    and (an.threads.executing(o) or frozenset()) & tr
                ]
                if any(
                    (oga := _ga(o)) is None
                    or oga.index is None
                    or (o.loops and any(x.depends_on(E.LOOP) for x in (oga.index, *o.guard.uniform)))
                    or solver.always(
                        E.negate(E.conj(*o.guard.uniform, *rd.guard.uniform, E.binop("==", oga.index, rga.index))),
                        an.solver_timeout_ms,
                    )
                    is not True
                    for o in own
                ):
                    out.undecided.append((poll, rd, "the reading thread may have written the element itself"))
                    continue
                earlier = [o for o in fl.ops if o.order < rd.order and o is not rd]
                if any(
                    (o.kind == ir.FENCE and o.fence_kind in GPU_FENCES)
                    or o.kind in (ir.CALL, ir.EXIT)
                    or (_acquires(o) and o.kind != ir.GLOBAL_LOAD)
                    or (o.kind == ir.GLOBAL_LOAD and _acquires(o) and (_ga(o) is None or _ga(o).base == pga.base))
                    for o in earlier
                ):
                    out.undecided.append((poll, rd, "an acquire or a fence before the read"))
                    continue
                if any(o.kind == ir.SPIN and o.loops[: len(outer)] == outer and o.order < rd.order for o in fl.ops):
                    out.undecided.append((poll, rd, "another spin before the read"))
                    continue
                # an earlier iteration's poll of the same flag naming the same element
                if outer:
                    olp = an.model.loops.get(outer[-1])
                    c = olp.counter if olp is not None else None
                    if not isinstance(c, E.Var):
                        out.undecided.append((poll, rd, "the loop around the spin has no counter"))
                        continue
                    k2 = E.Var(c.name + "'", E.LOOP)
                    before = E.substitute(pga.index, {c.name: k2})
                    same = E.conj(E.binop("<", k2, c), E.binop(">=", k2, E.Const(0)), E.binop("==", before, rga.index))
                    if solver.always(E.negate(same), an.solver_timeout_ms) is not True:
                        out.undecided.append((poll, rd, "an earlier iteration's poll may name the same element"))
                        continue
                common = sorted(tp & tr)
                if not common:
                    out.undecided.append((poll, rd, "the read and the poll are made by different threads"))
                    continue
                out.acquisitions.append(Acquisition(poll, rd, common[0], "before"))


def _polls(fl, lid: int) -> list[ir.Op]:
    """The memory events of spin loop lid that read a flag: loads and atomics on global memory."""
    return [o for o in fl.ops if lid in o.loops and o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL)]


def _spin_acquire(an: Analysis, out: MemoryFacts) -> None:
    """Data read with plain loads after a spin loop whose polls do not acquire, by a thread of the
    poll, with no acquire fence between, in a kernel that publishes with release."""
    fl = flow(an)
    touched = _touched_bases(fl)
    if not any(o.kind == ir.SPIN for o in fl.ops) or not _publishes_with_release(fl):
        return
    for sp in fl.ops:
        if sp.kind != ir.SPIN or not sp.loops:
            continue
        lid = sp.loops[-1]
        polls = [p for p in _polls(fl, lid) if p.guard.exact]
        if (
            not polls
            or any(_acquires(p) for p in polls)
            or any(p.kind == ir.GLOBAL_LOAD and _ga(p) is not None and _ga(p).form == "plain" for p in polls)
        ):  # type: ignore[union-attr]
            continue
        body = [o for o in fl.ops if lid in o.loops]
        if any(o.kind in (ir.CALL, ir.EXIT) or _acquires(o) for o in body):
            continue
        poll = polls[0]
        tp = an.threads.executing(poll)
        if not tp:
            continue
        end = max(o.order for o in body)
        outer = sp.loops[:-1]
        written = _written_bases(fl)
        for rd in fl.ops:
            ga = _ga(rd)
            if not _is_data_read(rd) or ga is None or rd.order <= end:
                continue
            # after the spin, in the same iteration of the loops around it (or loops inside those)
            if rd.loops[: len(outer)] != outer or lid in rd.loops or not rd.guard.exact:
                continue
            tr = an.threads.executing(rd)
            if not tr:
                continue
            between = [o for o in fl.ops if end < o.order < rd.order]
            if any(_acquires(o) for o in between):
                break
            if any(may_order(o, touched) for o in between):
                out.undecided.append((poll, rd, "an op that may synchronise between"))
                break
            common = sorted(tp & tr)
            if common:
                # the poll's own thread: a barrier between adds no acquire
                out.acquisitions.append(Acquisition(poll, rd, common[0], "spin"))
                break
            if ga.base is None or ga.base not in written:
                continue  # data no block of this kernel writes: nothing the flag publishes
            # another thread, ordered after the poll by a barrier: the barrier carries the poll's
            # observation, not an acquire (a relaxed poll synchronises with nothing)
            t_poll = min(tp)
            reader = None
            for t in _representatives(an, between, tr):
                ob = _ordered_by_barrier(an, between, t_poll, t)
                if ob is None:
                    break
                if ob:
                    reader = t
                    break
            if reader is not None:
                out.acquisitions.append(Acquisition(poll, rd, reader, "spin", poller=t_poll))
                break


def _touched_bases(fl) -> set[str] | None:
    """The kernel pointers some op of the kernel writes (stores, atomics, flag stores); None when
    a write's address is not known (then every load may observe a write)."""
    out: set[str] = set()
    for o in fl.ops:
        if o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL, ir.TMA_STORE):
            ga = _ga(o)
            if ga is None or ga.base is None:
                return None
            out.add(ga.base)
    return out


def _read_bases(fl) -> set[str] | None:
    """The kernel pointers some thread of the kernel reads data through (plain loads); None when
    a data read's address is not known, or global memory may be read otherwise (a TMA load, a
    cp.async, a call the model does not follow)."""
    out: set[str] = set()
    for o in fl.ops:
        if o.kind in (ir.TMA_LOAD, ir.CP_ASYNC, ir.CALL):
            return None
        if _is_data_read(o):
            ga = _ga(o)
            if ga is None or ga.base is None:
                return None
            out.add(ga.base)
    return out


def _written_bases(fl) -> set[str]:
    """The kernel pointers some thread of the kernel writes data through (plain stores, data
    atomics): memory other blocks may publish, unlike a read-only input."""
    return {ga.base for o in fl.ops if _is_data_write(o) and (ga := _ga(o)) is not None and ga.base is not None}


def _representatives(an: Analysis, between: list[ir.Op], threads) -> list[int]:
    """One thread per class of `threads` that take part in the same barriers among `between`
    (with the same ids) and share a warp: enough to ask what a barrier orders for each."""
    syncs = [o for o in between if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    sets = [an.threads.executing(o) or frozenset() for o in syncs]
    cls: dict = {}
    for t in sorted(threads):
        key = tuple((t in st, _barrier_key_of(o, t) if t in st else None) for o, st in zip(syncs, sets))
        cls.setdefault((key, t // 32), t)
    return list(cls.values())


def _publish_cumulative(an: Analysis, out: MemoryFacts) -> None:
    """A release (a release atomic, or a gpu-scope fence before a relaxed one) by the signalling
    thread publishes what happens before it in that thread: its own stores, and the stores of
    other threads that a barrier orders before it (cumulativity, PTX memory model). Data other
    threads of the block write with no barrier between their stores and the signal is not
    published. Asked for data the kernel reads back (a block reads what others published) in a
    kernel that observes its counters."""
    fl = flow(an)
    touched = _touched_bases(fl)
    if not _observed(an, fl):
        return
    read = {ga.base for o in fl.ops if _is_data_read(o) and (ga := _ga(o)) is not None and ga.base is not None}
    reported: set[int] = set()  # one finding per store (its first signal)
    for sig in fl.ops:
        ga = _ga(sig)
        if not _is_counter(sig) or ga is None or not sig.guard.exact:
            continue
        ts = an.threads.executing(sig)
        if not ts:
            continue
        for d in fl.ops:
            if not _is_data_write(d) or d.order >= sig.order or d.loops[: len(sig.loops)] != sig.loops:
                continue
            if not d.guard.exact or not _runs_with_signal(d, sig):
                continue
            dga = _ga(d)
            if dga is None or dga.base is None or dga.base not in read or dga.base == ga.base:
                continue
            td = an.threads.executing(d)
            if not td or not (td - ts):
                continue
            if thread_private(an, dga.base):
                continue  # each element is its own thread's: read back by its writer only
            between = fl.same_iteration_between(d, sig)
            if not (_releases(sig) or any(_releases(o) for o in between)):
                continue  # no release at all: `_publish`'s question
            out.examined.add(("global", id(sig)))
            if any(may_order(o, touched) and o is not sig and not _acquires_only(an, o, ts) for o in between):
                out.undecided.append((d, sig, "an op that may synchronise between"))
                continue
            if any(o.kind == ir.SYNC and (not o.guard.exact or an.threads.executing(o) is None) for o in between):
                out.undecided.append((d, sig, "a barrier whose threads are not known"))
                continue
            writer, signaller, unknown = _unpublished_writer(an, between, td - ts, ts)
            if unknown:
                out.undecided.append((d, sig, unknown))
                continue
            if writer is not None and id(d) not in reported:
                reported.add(id(d))
                out.publications.append(Publication(d, sig, writer, signaller, td, False, "unordered"))
                break


def _publish_after_release(an: Analysis, out: MemoryFacts) -> None:
    """Publication order: a release (a release store or atomic on flag F) orders what the
    signalling thread wrote *before* it. Data the same thread stores after it, in the same
    iteration, with no later release of its own (no further signal on F, no gpu-scope fence) up
    to the end of the thread's code, is published by no release on F -- yet the kernel reads that
    data after a spin on F (the next block's look-back reads the value right after the flag).
    Proved when every op after the store in the thread's path is modelled."""
    fl = flow(an)
    spins = [o for o in fl.ops if o.kind == ir.SPIN and o.loops]
    if not spins:
        return
    for sig in fl.ops:
        ga = _ga(sig)
        if not _is_counter(sig) or ga is None or ga.base is None or not releases(sig) or not sig.guard.exact:
            continue
        ts = an.threads.executing(sig)
        if not ts:
            continue
        # the data the kernel reads after a spin on this flag: (spin, the reading load) per pointer
        after_spin: dict[str, ir.Op] = {}
        for sp in spins:
            lid = sp.loops[-1]
            body = [o for o in fl.ops if lid in o.loops]
            if not any((pga := _ga(p)) is not None and pga.base == ga.base for p in _polls(fl, lid)):
                continue
            end = max(o.order for o in body)
            for rd in fl.ops:
                rga = _ga(rd)
                if rd.order > end and _is_data_read(rd) and rga is not None and rga.base is not None:
                    after_spin.setdefault(rga.base, rd)
        for d in fl.ops:
            dga = _ga(d)
            if d.kind != ir.GLOBAL_STORE or dga is None or dga.base not in after_spin or dga.base == ga.base:
                continue
            if d.order <= sig.order or d.loops != sig.loops or not d.guard.exact:
                continue
            td = an.threads.executing(d)
            if not td or not td <= ts or set(d.guard.uniform) - set(sig.guard.uniform):
                continue
            out.examined.add(("global", id(sig)))
            later = [o for o in fl.ops if o.order > d.order and o.loops[: len(d.loops)] == d.loops]
            t = min(td)
            if any(o.kind == ir.CALL or (o.kind == ir.EXIT and o.loops) for o in later):
                out.undecided.append((sig, d, "an op after the store that may release it"))
                continue
            if any(
                (releases(o) or _scope_unknown(o) or (o.kind == ir.GLOBAL_SIGNAL and _ga(o).base == ga.base))  # type: ignore[union-attr]
                and fl.runs(o, t, d.guard.uniform) is not False
                for o in later
            ):
                continue  # a later release (or a later raise of the flag) may publish it
            out.publications.append(Publication(d, sig, t, t, td, False, "after"))
            break


def _ticket_loop(fl, lid: int) -> bool:
    """Does every iteration of loop lid draw a ticket: a global atomic in the loop whose old value
    (its result) the loop stores to a `__shared__` scalar or tests (`if (i == 0) tile_s =
    atomicAdd(ticket, 1)`)? Each iteration's draw returns a value no other draw returned."""
    results = {
        ga.result
        for o in fl.ops
        if lid in o.loops and o.kind == ir.GLOBAL_SIGNAL and (ga := _ga(o)) is not None and ga.result
    }
    return any(
        lid in o.loops
        and o.kind == ir.SMEM_ACCESS
        and o.access is not None
        and o.access.mode == "write"
        and isinstance(o.access.value, E.Var)
        and o.access.value.name in results
        for o in fl.ops
    )


def _fresh_per_iteration(fl, c: E.Expr, lid: int, outside: set[str]) -> bool:
    """A block-uniform condition over a value read anew in each iteration of ticket loop lid (the
    ticket broadcast through a `__shared__` int, a pure helper's value of it): every thread
    answers it alike, no op outside the loop names the value, so it may be false in a later
    iteration (the ticket past the end) -- the model takes a ticket at any value, as
    `_runs_after` and `protocol._unwritten_element` do."""
    if not E.alike_for_all(c):
        return False
    fresh = [
        v
        for v in c.free_vars()
        if (v.kind == E.PARAM and v.name.startswith("?") and "#" in v.name) or v.name.startswith(E.UNIFORM_UNKNOWN)
    ]
    if not fresh or any(v.name in outside for v in fresh):
        return False
    from .. import solver

    return solver.feasible(E.negate(c)) is True


def _may_release(o: ir.Op, flag: str) -> bool:
    """May o publish earlier stores to a reader of flag: a release towards other blocks, a release
    at a scope not known, or another raise of the flag itself."""
    return (
        releases(o)
        or _scope_unknown(o)
        or (o.kind == ir.GLOBAL_SIGNAL and (oga := _ga(o)) is not None and oga.base == flag)
    )


def _cross_cta_barrier(o: ir.Op) -> bool:
    """A barrier that orders threads of other CTAs: a cluster or grid barrier."""
    return o.kind == ir.SYNC and o.sync_kind in _CLUSTER_SYNCS


def _may_be_last(
    an: Analysis, fl, lid: int, sig: ir.Op, d: ir.Op, releases_: list[ir.Op], outside: set[str]
) -> bool | None:
    """Proved: the iteration of loop lid that runs sig and d may be followed by no release of the
    loop body. A ticket loop left by `if (c) break;` (`Loop.continues`): every release of the
    body runs only past a break whose test is of the iteration's own ticket, which the next draw
    may fail (`_fresh_per_iteration`). A loop with a condition (`for (s = blockIdx.x; s < n; s +=
    gridDim.x)`: `Loop.cond` over the counter k): z3 finds k, the launch values and the unknowns
    with sig's and d's conditions at k, the loop's condition at k and not at k + 1. A loop with a
    trip count: the same at k = trip - 1. A loop whose condition names no counter but carried
    values with no closed form (`while (it < end) { ...; it = seg_end; }`: `Loop.simulated`):
    the same question at its first iteration, the values at their starts (`_first_may_be_last`);
    None (not known: the caller asks the pair undecided) where that does not prove it -- the
    counter's substitution would leave such a condition as it is, and "the condition holds and
    does not" passed the pair in silence (round 17)."""
    from .. import solver

    lp = an.model.loops[lid]
    if lp.infinite and lp.continues and _ticket_loop(fl, lid):
        return all(
            any(c in lp.continues and _fresh_per_iteration(fl, c, lid, outside) for c in o.guard.uniform)
            for o in releases_
        )
    if lp.infinite or lp.thread_exit or lp.carried_from is not None or not isinstance(lp.counter, E.Var):
        return False
    k = lp.counter
    here = [*sig.guard.uniform, *d.guard.uniform, E.binop(">=", k, E.Const(0))]
    if lp.cond is not None and lp.trip is None:
        if k not in lp.cond.free_vars():
            return True if _first_may_be_last(an, lp, sig, d) else None
        nxt = E.substitute(lp.cond, {k.name: E.binop("+", k, E.Const(1))})
        last = [lp.cond, E.negate(nxt)]
    elif lp.trip is not None:
        last = [E.binop("==", k, E.binop("-", lp.trip, E.Const(1)))]
    else:
        return False
    pred = E.conj(*here, *last)
    if pred.is_opaque() or pred.depends_on(E.THREAD):
        return False
    return solver.feasible(pred, an.solver_timeout_ms)


def _exclusive_arms(a: ir.Op, b: ir.Op) -> bool:
    """a and b lie in the two arms of one block-uniform branch: a condition of one is the other's
    negation, the same value (one Expr) in both, so no iteration runs both."""

    def neg(c: E.Expr, u: E.Expr) -> bool:
        return u == E.Un("!", c) or u == E.negate(c)

    return any(neg(c, u) or neg(u, c) for c in a.guard.uniform for u in b.guard.uniform)


def _first_may_be_last(an: Analysis, lp: ir.Loop, sig: ir.Op, d: ir.Op) -> bool:
    """Proved: the loop's first iteration runs sig and d and is its last. The condition names
    carried values with no closed form (`Loop.simulated`: unknown, start, update, ...); at the
    first iteration each is its start, exactly (no free value stands for a state the loop may
    never reach), and the next iteration's condition is the condition over their updates at
    counter 0. z3 finds the launch values with sig's and d's conditions, the condition, and not
    the next condition."""
    from .. import solver

    if lp.cond is None or not lp.simulated or not isinstance(lp.counter, E.Var):
        return False
    start: dict[str, E.Expr] = {x: v0 for x, v0, _, _, _ in lp.simulated}
    start[lp.counter.name] = E.Const(0)
    nxt = {x: E.substitute(upd, start) for x, _, upd, _, _ in lp.simulated}
    here = [E.substitute(c, start) for c in (*sig.guard.uniform, *d.guard.uniform, lp.cond)]
    pred = E.conj(*here, E.negate(E.substitute(lp.cond, nxt)))
    if pred.is_opaque() or pred.depends_on(E.THREAD):
        return False  # a value the first iteration reads that the loop's starts do not give
    return solver.feasible(pred, an.solver_timeout_ms)


def _publish_after_release_in_loop(an: Analysis, out: MemoryFacts) -> None:
    """Publication order around the back edge of a ticket loop (issue 25, round 16): thread T
    raises the flag F with release (a release atomic, or a gpu-scope fence of T earlier in the
    iteration before a relaxed one) and the block stores data D after it in the same iteration --
    by T or by any thread of the block -- while the kernel reads D after a spin on F. The rest of
    the iteration releases nothing; every release of the loop body runs under a block-uniform
    test of the iteration's ticket (`if (k >= NT) break;`), which the next draw may fail; nothing
    after the loop releases. Then in the run whose next ticket is past the end, no release ever
    follows the store: the block that passes its spin on F may read D from before it (a finding,
    why "after-loop"). Anything not modelled on that path (a call, an exit inside the loop, a
    release at unknown scope) leaves the pair undecided."""
    fl = flow(an)
    spins = [o for o in fl.ops if o.kind == ir.SPIN and o.loops]
    if not spins:
        return
    asked = {id(p.data) for p in out.publications}
    for sig in fl.ops:
        ga = _ga(sig)
        if not _is_counter(sig) or ga is None or ga.base is None or len(sig.loops) != 1 or not sig.guard.exact:
            continue  # a signal in an inner loop: that loop's next iteration may raise it again
        ts = an.threads.executing(sig)
        if not ts:
            continue
        t0 = min(ts)
        lid = sig.loops[0]
        lp = an.model.loops.get(lid)
        if lp is None or not (_ticket_loop(fl, lid) and lp.continues or lp.cond is not None or lp.trip is not None):
            continue
        depth = len(sig.loops)
        body = [o for o in fl.ops if lid in o.loops]
        first = min(o.order for o in body)
        end = max(o.order for o in body)
        fenced = any(
            o.kind == ir.FENCE and releases(o) and fl.runs(o, t0, sig.guard.uniform) is True
            for o in fl.ops
            if first <= o.order < sig.order and o.loops[:depth] == sig.loops
        )
        if not (releases(sig) or fenced):
            continue
        after_spin: dict[str, ir.Op] = {}
        for sp in spins:
            slid = sp.loops[-1]
            if not any((pga := _ga(p)) is not None and pga.base == ga.base for p in _polls(fl, slid)):
                continue
            send = max(o.order for o in fl.ops if slid in o.loops)
            for rd in fl.ops:
                rga = _ga(rd)
                if rd.order > send and _is_data_read(rd) and rga is not None and rga.base is not None:
                    after_spin.setdefault(rga.base, rd)
        for d in fl.ops:
            dga = _ga(d)
            if d.kind != ir.GLOBAL_STORE or dga is None or dga.base not in after_spin or dga.base == ga.base:
                continue
            if d.order <= sig.order or d.loops[:depth] != sig.loops or not d.guard.exact or id(d) in asked:
                continue
            td = an.threads.executing(d)
            if not td or set(d.guard.uniform) - set(sig.guard.uniform):
                continue
            if block_private(an, dga.base):  # type: ignore[arg-type]
                continue  # each element is its own block's: no other block reads it after its spin
            out.examined.add(("global", id(sig)))
            outside = {
                v.name
                for o in fl.ops
                if lid not in o.loops
                for c in (o.guard.thread, *o.guard.uniform)
                for v in c.free_vars()
            }
            # the rest of d's iteration: not the other arm of a block-uniform branch d is in (the
            # owner's reset of its flag in the `else` of a contributor's raise, round 17)
            rest = [o for o in body if o.order > d.order and o.loops[:depth] == sig.loops and not _exclusive_arms(d, o)]
            nxt = body  # the next iteration, from its start
            tail = [o for o in fl.ops if o.order > end]

            if any(
                o.kind in _NOT_FOLLOWED or (o.kind == ir.EXIT and o.loops) or _cross_cta_barrier(o) for o in body + tail
            ):
                # a call, an exit, an mbarrier (a remote arrive releases to a peer CTA, whose own
                # release may pass the store on), a cluster or grid barrier: not followed
                out.undecided.append((sig, d, "an op in the loop or after it that may release the store"))
                continue
            if any(_may_release(o, ga.base) for o in rest + tail):
                continue  # a later release of this iteration, or after the loop, may publish it
            last = _may_be_last(an, fl, lid, sig, d, [o for o in nxt if _may_release(o, ga.base)], outside)
            if last is None:
                out.undecided.append((sig, d, "whether the iteration may be the loop's last is not known"))
                continue
            if not last:
                continue  # a release the next iteration runs, or a next iteration that comes
            out.publications.append(Publication(d, sig, min(td), t0, td, False, "after-loop"))
            asked.add(id(d))  # one finding per store, with the first release it follows
            break


# ops by which a thread may wait for another block after it observed a counter: between a
# last-arriver test and a read, they leave the read's order after the other blocks undecided
_WAITS = (ir.SPIN, ir.MBAR_WAIT, ir.CALL, ir.EXIT)


def _publish_after_counter(an: Analysis, out: MemoryFacts) -> None:
    """Publication order through a last-arriver counter: a block's counter (an atomic whose old
    value a branch tests: the ticket) tells the block that draws the last ticket that every other
    block has done what it did *before* its own atomic. Global data that threads of every block
    write after the block's counter, in the same iteration, under conditions that do not depend on
    the ticket (`atomicMax(gmax, m)` after the ticket and the barrier that follows it), is ordered
    before nothing the last block does: its read of that data after the test may come before
    another block's write, whatever fences surround the counter. Proved when nothing between the
    test and the read may wait for another block (a spin, an mbarrier wait, a call, an exit: else
    undecided); data whose every element is one thread's (`thread_private`) is not asked."""
    fl = flow(an)
    tests = _tests(an, fl)
    if not tests:
        return
    spin_loops = {o.loops[-1] for o in fl.ops if o.kind == ir.SPIN and o.loops}
    for sig in fl.ops:
        ga = _ga(sig)
        if not _is_counter(sig) or ga is None or not ga.result or ga.base is None or not sig.guard.exact:
            continue
        if not an.threads.executing(sig):
            continue
        depth = len(sig.loops)
        readers = [
            rd
            for rd in fl.ops
            if rd.kind == ir.GLOBAL_LOAD
            and ga.result in tests.get(id(rd), ())
            and rd.order > sig.order
            and rd.loops[:depth] == sig.loops
            and not spin_loops & set(rd.loops)
            and (rga := _ga(rd)) is not None
            and rga.base is not None
            and rga.base != ga.base
        ]
        if not readers:
            continue
        for d in fl.ops:
            dga = _ga(d)
            if d.kind not in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL) or dga is None or dga.base in (None, ga.base):
                continue
            if d.kind == ir.GLOBAL_SIGNAL and dga.form not in ATOMIC_FORMS:
                continue
            if d.order <= sig.order or d.loops[:depth] != sig.loops or id(d) in tests or not d.guard.exact:
                continue
            if set(d.guard.uniform) - set(sig.guard.uniform) or spin_loops & set(d.loops):
                continue  # not every block that counts itself in writes it / a write inside a spin
            td = an.threads.executing(d)
            if not td or thread_private(an, dga.base):  # type: ignore[arg-type]
                continue
            rd = next((r for r in readers if _ga(r).base == dga.base), None)  # type: ignore[union-attr]
            if rd is None:
                continue
            out.examined.add(("global", id(sig)))
            between = [o for o in fl.ops if sig.order < o.order < rd.order]
            if any(o.kind in _WAITS or _grid_barrier(o) for o in between):
                out.undecided.append((d, rd, "an op between the counter and the read that may wait for the write"))
                continue
            out.publications.append(
                Publication(d, sig, min(td), min(an.threads.executing(sig)), td, False, "after-counter")
            )
            break


# ops that end the "no acquire anywhere" argument of `_read_without_acquire`: an mbarrier (a
# remote arrive may carry a release of another CTA of the cluster), a bulk copy, a call not
# followed, a cluster barrier
_NOT_FOLLOWED = (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD, ir.CALL, ir.CP_ASYNC, ir.PDL)


def _blocks_disjoint(a: ir.Op, b: ir.Op) -> bool:
    """Proved: no block runs both a and b (their block-uniform conditions exclude each other:
    `blockIdx.x < P` and its negation)."""
    from .. import solver

    if not a.guard.uniform or not b.guard.uniform:
        return False
    return solver.always(E.negate(E.conj(*a.guard.uniform, *b.guard.uniform))) is True


def _read_without_acquire(an: Analysis, out: MemoryFacts) -> None:
    """Global data read by blocks that never acquire: a plain load of memory that blocks of
    another role write (their block-uniform conditions exclude each other, so writer and reader
    run in different CTAs of one grid), where no op a thread of the reading block may run, in the
    whole kernel, acquires (no gpu-scope fence, no acquiring load or atomic, no grid barrier, no
    mbarrier or call this engine does not follow; a spin loop's polls are ops of the path, so a
    loop left on a relaxed value acquires nothing). Between CTAs only a release -> acquire
    pair orders memory (relaxed atomics and volatile loads synchronise with nothing), so no
    happens-before path can order the write before the read: the consumer that reads a ring slot
    without waiting for its sequence number. Memory whose every element is one thread's is not
    asked."""
    fl = flow(an)
    m = an.model
    if m.unmodelled or any(
        o.kind == ir.SYNC and o.sync_kind in ("cluster", "cluster_arrive", "cluster_wait") for o in m.ops
    ):
        return
    writes = [d for d in fl.ops if _is_data_write(d) or (d.kind == ir.GLOBAL_STORE and _ga(d) is not None)]
    if not writes:
        return
    # a read the other acquire questions already answer (a relaxed poll before it, a last-arriver
    # test): one answer per read
    answered = {id(a.read) for a in out.acquisitions}
    seen: set[tuple] = set()
    for rd in fl.ops:
        ga = _ga(rd)
        if not _is_data_read(rd) or ga is None or ga.base is None or not rd.guard.uniform or id(rd) in answered:
            continue
        same = [d for d in writes if (dga := _ga(d)) is not None and dga.base == ga.base]
        if not same:
            continue
        # the ops that would end the argument, on the read's path (before it, or in its loops):
        # cheap tests first, then z3 only for those, to see whether they are another role's
        stops = [
            o
            for o in m.ops
            if (o.order < rd.order or set(o.loops) & set(rd.loops))
            and (_acquires(o) or _scope_unknown(o) or o.kind in _NOT_FOLLOWED or o.guard.blind)
        ]
        if any(not _blocks_disjoint(o, rd) for o in stops):
            continue
        ws = [d for d in same if _blocks_disjoint(d, rd)]
        if not ws or thread_private(an, ga.base):
            continue
        key = (rd.location.row, rd.location.column)
        if key in seen:
            continue
        seen.add(key)
        # the threads that run the read where its data-dependent conditions hold (a queue's
        # `if (pos >= N) break;`: the reads of the iterations that go on)
        tr = an.threads.executing(rd) or (an.threads.satisfying(rd.guard.thread) if not rd.guard.blind else None)
        if not tr:
            continue
        out.examined.add(("global", id(ws[0])))
        out.acquisitions.append(Acquisition(ws[0], rd, min(tr), "none"))


def _read_after_handback(an: Analysis, out: MemoryFacts) -> None:
    """The hand-back side of a slot protocol through a global flag (a ring's sequence number): the
    writer of the data waits, in a spin on the flag, for the value that hands the slot back, then
    overwrites the data; the reading side stores that flag when it is done. A read located after
    the reading side's store of the flag, in the same iteration, is never ordered before that store
    (program order for the storing thread; no barrier can order a later read before it for another
    thread), so it is ordered before nothing the writer does after its acquire: the writer may
    overwrite the slot while it is read. Asked when the store is the only store of the flag by its
    threads in the iteration (so it is the one that hands the slot back), the writer runs in blocks
    of another role than the reader (block conditions that exclude each other), and the writer's
    spin acquires. Base-level: the slot the read names and the slot the writer fills are the same
    memory, as the other global queries take them."""
    fl = flow(an)
    m = an.model
    if m.unmodelled:
        return
    spins = [o for o in fl.ops if o.kind == ir.SPIN and o.loops]
    if not spins:
        return
    # (flag base) -> writes of data after an acquiring spin on that flag, in the same iteration
    waited: dict[str, list[tuple[ir.Op, ir.Op]]] = {}
    for sp in spins:
        lid = sp.loops[-1]
        polls = [p for p in _polls(fl, lid) if _acquires(p) and (pga := _ga(p)) is not None and pga.base]
        if not polls:
            continue
        flag = _ga(polls[0]).base  # type: ignore[union-attr]
        end = max(o.order for o in fl.ops if lid in o.loops)
        outer = sp.loops[:-1]
        for w in fl.ops:
            wga = _ga(w)
            if w.kind != ir.GLOBAL_STORE or wga is None or wga.base in (None, flag) or w.order <= end:
                continue
            if w.loops[: len(outer)] != outer or lid in w.loops:
                continue
            waited.setdefault(flag, []).append((sp, w))  # type: ignore[arg-type]
    if not waited:
        return
    seen: set[tuple] = set()
    for rel in fl.ops:
        ga = _ga(rel)
        if rel.kind != ir.GLOBAL_SIGNAL or ga is None or ga.base not in waited or ga.data:
            continue
        if rel.guard.blind:
            continue
        t_rel = an.threads.executing(rel) if rel.guard.exact else an.threads.satisfying(rel.guard.thread)
        if not t_rel:
            continue
        depth = len(rel.loops)
        same_iter = [o for o in fl.ops if o.loops[:depth] == rel.loops]
        # the only store of the flag by these threads in the iteration
        others = [
            o
            for o in same_iter
            if o is not rel
            and o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE)
            and (oga := _ga(o)) is not None
            and oga.base == ga.base
            and not _blocks_disjoint(o, rel)
        ]
        if others:
            continue
        for rd in same_iter:
            rga = _ga(rd)
            if not _is_data_read(rd) or rga is None or rd.order <= rel.order or rd.guard.blind:
                continue
            if set(rd.guard.opaque) - set(rel.guard.opaque) or _blocks_disjoint(rd, rel):
                continue
            ws = [
                w
                for sp, w in waited[ga.base]  # type: ignore[index]
                if _ga(w).base == rga.base and _blocks_disjoint(w, rd)  # type: ignore[union-attr]
            ]
            if not ws:
                continue
            between = [o for o in same_iter if rel.order < o.order < rd.order]
            if any(o.kind in (ir.CALL, ir.MBAR_WAIT) for o in between):
                out.undecided.append((rel, rd, "an op between the hand-back and the read that may wait"))
                continue
            tr = an.threads.executing(rd) if rd.guard.exact else an.threads.satisfying(rd.guard.thread)
            if not tr:
                continue
            key = (rd.location.row, rd.location.column)
            if key in seen:
                continue
            seen.add(key)
            common = sorted(tr & t_rel)
            out.examined.add(("global", id(rel)))
            out.handbacks.append(HandBack(rel, rd, ws[0], common[0] if common else min(tr)))


def _exact_as(rd: ir.Op, sp: ir.Op) -> bool:
    """Is rd's guard exact but for data-dependent conditions the spin runs under too (the reads
    after a queue's `if (pos >= N) break;`, in the iterations that go on, as the spin is)? Who runs
    rd is then its thread guard wherever those conditions hold."""
    if rd.guard.exact:
        return True
    return (
        not rd.guard.blind
        and not sp.guard.blind
        and bool(rd.guard.opaque)
        and set(rd.guard.opaque) <= set(sp.guard.opaque)
    )


def _acquire_scope(an: Analysis, out: MemoryFacts) -> None:
    """A spin whose poll acquires (`ld.acquire.gpu`, an acquiring atomic) orders the polling
    thread's later reads after the producer's release -- that thread's only. Another thread of
    the block that reads the published data must be ordered after the poll by a barrier both
    take part in (the `__syncthreads()` after thread 0's spin). Asked for reads of data the
    kernel writes (published by some block) after a spin on a flag the kernel raises."""
    fl = flow(an)
    touched = _touched_bases(fl)
    if not any(o.kind == ir.SPIN for o in fl.ops):
        return
    written = _written_bases(fl)
    raised = {ga.base for o in fl.ops if _is_counter(o) and (ga := _ga(o)) is not None and ga.base is not None}
    for sp in fl.ops:
        if sp.kind != ir.SPIN or not sp.loops:
            continue
        lid = sp.loops[-1]
        polls = [p for p in _polls(fl, lid) if _exact_as(p, sp) and _acquires(p)]
        whose = None
        if not polls:
            # a spin re-loading one word at its body's end (`v = a.load(acquire); while (v != x)
            # { a.wait(v); v = a.load(acquire); }`, checks/awaited_values.py): it leaves after one
            # of those loads, each an acquire, made by the spin's own threads
            from .awaited_values import word_poll

            wp = word_poll(an, sp) if sp.guard.exact else None
            if wp is None or not all(_acquires(ld) for ld in wp.loads):
                continue
            polls, whose = [wp.poll], sp
        poll = polls[0]
        flag = _ga(poll).base  # type: ignore[union-attr]
        if flag is None or flag not in raised:
            continue
        tp = (
            an.threads.executing(whose)
            if whose is not None
            else an.threads.executing(poll)
            if poll.guard.exact
            else an.threads.satisfying(poll.guard.thread)
        )
        if not tp:
            continue
        t_poll = min(tp)
        body = [o for o in fl.ops if lid in o.loops]
        end = max(o.order for o in body)
        outer = sp.loops[:-1]
        for rd in fl.ops:
            ga = _ga(rd)
            if not _is_data_read(rd) or ga is None or rd.order <= end:
                continue
            if rd.loops[: len(outer)] != outer or lid in rd.loops or not _exact_as(rd, sp):
                continue
            if set(rd.guard.uniform) != set(sp.guard.uniform) and not _runs_after(an, rd, sp):
                continue
            if ga.base is None or ga.base not in written or ga.base == flag:
                continue
            if thread_private(an, ga.base):
                continue  # every element one thread's: nothing another block published
            tr = an.threads.executing(rd) if rd.guard.exact else an.threads.satisfying(rd.guard.thread)
            if not tr or not (tr - tp):
                continue
            between = [o for o in fl.ops if end < o.order < rd.order]
            if any(may_order(o, touched) for o in between):
                out.undecided.append((poll, rd, "an op that may synchronise between"))
                break
            syncwarp = any(o.kind == ir.SYNC and o.sync_kind == "warp" for o in between)
            # `__syncwarp()` orders the lanes of the poll's warp: not followed here
            reader, unknown = _first_unordered(
                an, between, tr - tp, t_poll, fixed_first=True, unknown_warp=t_poll // 32 if syncwarp else None
            )
            if unknown:
                out.undecided.append((poll, rd, "a barrier whose order is not followed"))
                break
            if reader is not None:
                out.unpropagated.append(Acquisition(poll, rd, reader, "not-propagated", poller=t_poll))
                break


def _unpublished_writer(
    an: Analysis, between: list[ir.Op], writers: frozenset[int], signallers: frozenset[int]
) -> tuple[int | None, int, str | None]:
    """A writing thread whose stores no signalling thread's release covers: no barrier in
    `between` orders it before any of the threads that run the signal (each warp's lane 0
    publishing its warp's slot after `__syncwarp()`: a lane is covered by its own warp's
    signaller). (writer or None, the signaller named, why undecided or None). A writer ordered
    before some signallers but not all is undecided: which signal publishes its data (the flag
    its reader acquires) is not followed here."""
    sigs = _representatives(an, between, signallers)
    first = min(signallers)
    for t in _representatives(an, between, writers):
        covered = uncovered = False
        for s in sigs:
            ob = _ordered_by_barrier(an, between, t, s)
            if ob is None or (not ob and _chain_possible(an, between, t, s)):
                return None, first, "a barrier whose order is not followed"
            covered |= bool(ob)
            uncovered |= not ob
        if not covered:
            return t, first, None
        if uncovered:
            return None, first, "which signalling thread's release publishes the data is not followed"
    return None, first, None


def _first_unordered(
    an: Analysis,
    between: list[ir.Op],
    threads: frozenset[int],
    fixed: int,
    fixed_first: bool,
    unknown_warp: int | None = None,
) -> tuple[int | None, bool]:
    """The first representative thread t of `threads` that no barrier in `between` orders after
    the thread `fixed` (`fixed_first`) or before it, and whether some representative's order is
    not followed (a barrier the engine cannot decide, a chain through other threads, a thread of
    `unknown_warp`): (t or None, unknown)."""
    for t in _representatives(an, between, threads):
        if unknown_warp is not None and t // 32 == unknown_warp:
            return None, True
        a, b = (fixed, t) if fixed_first else (t, fixed)
        ob = _ordered_by_barrier(an, between, a, b)
        if ob is None or (not ob and _chain_possible(an, between, a, b)):
            return None, True
        if not ob:
            return t, False
    return None, False


def _runs_after(an: Analysis, rd: ir.Op, sp: ir.Op) -> bool:
    """Does `rd` run in some run that passes the spin `sp`: its block-uniform conditions are the
    spin's and more, and z3 finds values of the loop counters of rd's own loops (within their
    constant trip counts) that make the extra ones hold (`if (q != OWNER)` in a loop over q)?"""
    extra = [c for c in rd.guard.uniform if c not in set(sp.guard.uniform)]
    if not set(sp.guard.uniform) <= set(rd.guard.uniform) or not extra:
        return False
    m = an.model
    own = [lid for lid in rd.loops if lid not in sp.loops]
    if any(c.is_opaque() and not E.alike_for_all(c) for c in extra):
        return False  # over unknowns every thread holds alike (a pure helper's value of the
        # broadcast ticket) they are free values of the witness, as a ticket is (`_unwritten_element`)
    conds = list(extra)
    for lid in own:
        lp = m.loops.get(lid)
        if lp is None or lp.trip is None or not isinstance(lp.trip.eval({}), int):
            return False
        conds += [E.binop(">=", lp.counter, E.Const(0)), E.binop("<", lp.counter, lp.trip)]
    allowed = {m.loops[lid].counter.name for lid in own}
    if any(v.kind == E.LOOP and v.name not in allowed for c in extra for v in c.free_vars()):
        return False  # a condition on a counter of a loop around both: not this question's
    from .. import solver

    return solver.feasible(E.conj(*conds), an.solver_timeout_ms)


def describe_location(o: ir.Op) -> str:
    """The location an access names, for messages: `flag`, `idx[0]`, `partials[...]`."""
    if o.buffer is not None:
        return str(o.buffer)
    ga = _ga(o)
    text = ga.text if ga is not None and ga.text else o.api
    if ga is not None and ga.form == "tk":
        return text.split(",", 1)[0] + ", ...)"
    return text.split("[", 1)[0] + "[...]" if "[" in text and o.kind != ir.GLOBAL_SIGNAL else text


__all__ = ["memory", "MemoryFacts", "Race", "Publication", "Acquisition", "describe_location", "E"]


# ------------------------------------------- barrier inits used by peer CTAs (dsmem) ----


@dataclass
class PeerUse:
    """A barrier initialised by this CTA's `init` and used by a peer CTA's `use` (a remote
    arrive on it, a multicast copy completing bytes on it), no barrier of the whole cluster
    between them: the peer may reach its use before this CTA's init ran. `target`: a rank the
    use names that is not the using CTA's own (`cta_rank`)."""

    init: ir.Op
    use: ir.Op
    rank: int
    target: int
    # r9-i7async: the cluster barrier between them whose arrive is `.relaxed` with no
    # fence.mbarrier_init (nor a cluster-scope fence) after the init: it orders no init
    relaxed: ir.Op | None = None


# fences after an mbarrier.init that make it visible at cluster scope before a relaxed cluster
# arrive: `fence.mbarrier_init.release.cluster`, and the full fences at cluster scope or wider
_INIT_FENCES = ("mbarrier_init", "membar_cluster", "membar_gl", "membar_sys")


def _releases_init(m: ir.KernelModel, init: ir.Op, wait: ir.Op) -> tuple[bool, ir.Op | None]:
    """Does the cluster barrier completed by `wait` (a `barrier.cluster.wait`) order `init`
    before the peers' later uses? Its arrive (the last `barrier.cluster.arrive` before it)
    releases unless `.relaxed`; a relaxed one orders the init only after a fence that makes it
    visible at cluster scope (PTX: fence.mbarrier_init.release.cluster, for mbarrier.init then a
    relaxed cluster arrive, as CUTLASS's cluster_arrive_relaxed after fence_barrier_init). Any
    such fence between the init and the arrive is taken (whatever thread runs it: fewer
    findings). (True, None) when ordered or not known; (False, arrive) when not ordered."""
    arrives = [x for x in m.ops if x.kind == ir.SYNC and x.sync_kind == "cluster_arrive" and x.order < wait.order]
    if not arrives:
        return True, None
    arr = max(arrives, key=lambda x: x.order)
    if arr.order < init.order or arr.loops != wait.loops:
        return True, None
    if arr.sync is None or not arr.sync.relaxed:
        return True, None
    if any(
        x.kind == ir.FENCE and x.fence is not None and x.fence.kind in _INIT_FENCES and init.order < x.order < arr.order
        for x in m.ops
    ):
        return True, None
    if any(init.order < x.order < arr.order and x.kind == ir.CALL for x in m.ops):
        return True, None  # a call the model does not follow may fence
    return False, arr


def peer_init_uses(an: Analysis) -> list[PeerUse]:
    return an.fact("happens_before.peer_init_uses", _peer_init_uses)


def _peer_targets(
    o: ir.Op, rank: int, cluster: int, m: ir.KernelModel | None = None, threads: frozenset[int] | None = None
) -> list[int] | None:
    """The other CTAs of the cluster whose copy of the barrier `o` touches when run by CTA
    `rank`: a mapped CTA (`mapa`) or the bits of a multicast mask; None: not known. A mapped
    CTA that is a term over the thread or a counter of a loop of constant trip count
    (`mapa(full, tid / 64)`, `for (p ..) arrive(mapa(full, p))`: r15-remote) is evaluated for
    each of `threads` (those that run o) and each iteration whose uniform conditions hold; a
    combination it cannot evaluate names no target."""
    if o.mbar is None:
        return []
    env = {"cta_rank": rank}
    if o.mbar.cta is not None:
        v = o.mbar.cta.eval(env)
        if isinstance(v, int) and not isinstance(v, bool):
            return [v] if v != rank and 0 <= v < cluster else []
        envs = _term_envs(o, o.mbar.cta, m, threads)
        if envs is None:
            return None
        out: set[int] = set()
        for e in envs:
            e = {**e, "cta_rank": rank}
            if not all(c.eval(e) is True for c in o.guard.uniform):
                continue
            v = o.mbar.cta.eval(e)
            if isinstance(v, int) and not isinstance(v, bool) and v != rank and 0 <= v < cluster:
                out.add(v)
        return sorted(out) or None
    if o.mbar.multicast:
        v = o.mbar.mask.eval(env) if o.mbar.mask is not None else None
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        return [j for j in range(cluster) if j != rank and v >> j & 1]
    return [] if not o.mbar.remote else None


def _term_envs(o: ir.Op, term: E.Expr, m: ir.KernelModel | None, threads: frozenset[int] | None) -> list[dict] | None:
    """The values of the thread and loop variables of `term` at op o: every thread of `threads`
    times every iteration of the enclosing loops whose counters it reads (constant trips only).
    None: a variable of another kind, or too many."""
    import itertools

    loops = {lid: m.loops.get(lid) for lid in o.loops} if m is not None else {}
    names: list[str] = []
    ranges: list[range] = []
    by_thread = False
    for v in term.free_vars():
        if v.name == "cta_rank":
            continue
        if v.kind == E.THREAD:
            by_thread = True
            continue
        lp = next((q for q in loops.values() if q is not None and q.counter.name == v.name), None)
        t = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if v.kind != E.LOOP or not isinstance(t, int) or isinstance(t, bool) or not 0 < t <= 64:
            return None
        names.append(v.name)
        ranges.append(range(t))
    if by_thread and not threads:
        return None
    ts = sorted(threads) if by_thread and threads else [None]
    if len(ts) * max(1, len(list(itertools.product(*ranges)))) > 1 << 16:
        return None
    out = []
    for t in ts:
        for vals in itertools.product(*ranges):
            e: dict = dict(zip(names, vals))
            if t is not None:
                e.update(tid=t, tid_y=0, tid_z=0)
            out.append(e)
    return out


def _peer_init_uses(an: Analysis) -> list[PeerUse]:
    """Each barrier's init (`mbarrier.init` by some threads of every CTA) against the uses of that
    barrier by peer CTAs: the happens-before path from CTA A's init to CTA B's remote arrive or
    multicast into A's copy must pass a barrier of the whole cluster (`barrier.cluster.arrive` +
    `wait`, `cluster.sync()`; fence.mbarrier_init makes the init visible at cluster scope); a
    `__syncthreads()` orders A's threads only. Proved when the use names another CTA (its rank
    expression or multicast mask, per rank of a cluster of known size) and no cluster barrier,
    no call the model does not follow, no exit lies between the last init and the use in
    program order; anything else is not reported."""
    m = an.model
    cluster = m.cluster.eval({}) if m.cluster is not None else None
    if not isinstance(cluster, int) or isinstance(cluster, bool) or cluster < 2:
        return []
    out: list[PeerUse] = []
    names = sorted({o.barrier.name for o in m.ops_of(ir.MBAR_INIT) if o.barrier is not None})
    for name in names:
        inits = [o for o in m.ops_of(ir.MBAR_INIT) if o.barrier is not None and o.barrier.name == name]
        if any(not o.guard.exact or o.guard.uniform for o in inits):
            continue
        last = max(inits, key=lambda o: o.order)
        init_loops = {lid for o in inits for lid in o.loops}
        for use in m.ops:
            if use.order <= last.order or use.barrier is None or use.barrier.name != name:
                continue
            if use.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD) or init_loops & set(use.loops):
                continue
            if not use.guard.exact:
                break
            between = [x for x in m.ops if last.order < x.order < use.order]
            relaxed = None
            ordered = False
            for x in between:
                if x.kind == ir.SYNC and x.sync_kind == "cluster_wait":
                    ok, arr = _releases_init(m, last, x)
                    if ok:
                        ordered = True
                        break
                    relaxed = relaxed or arr
                elif (
                    (x.kind == ir.SYNC and x.sync_kind in ("cluster", "grid"))
                    or x.kind == ir.EXIT
                    or (x.kind == ir.CALL and (x.asm is not None or x.not_inlined))
                ):
                    ordered = True
                    break
            if ordered:
                break
            ex = an.threads.issuers(use) if use.issuers_per_group else an.threads.executing(use)
            if not ex:
                continue
            hit = None
            for rank in range(cluster):
                ts = _peer_targets(use, rank, cluster, m, ex)
                if ts:
                    hit = (rank, ts[0])
                    break
            if hit is not None:
                out.append(PeerUse(last, use, hit[0], hit[1], relaxed))
                break
    return out
