"""TK401: a cross-warp shared-memory dependency with no barrier covering both
the writers and the reader."""

from tkcheck.checks import async_groups as G
from tkcheck.checks import syncscope as S
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule

from ._handoff import handoff_findings
from ._common import HEADER, finding, in_helper, related, user_site


def check(an):
    out = []
    n = an.threads.n
    seen = set()
    for d in S.dependencies(an):
        if not d.uncovered:
            continue
        key = (d.reader.location.row, d.reader.location.column, d.kind)
        if key in seen:
            continue  # one finding per reading site (`a[0].data[t] + a[1].data[t]`: one line)
        seen.add(key)
        r, ws = sorted(d.uncovered.items())[0]
        rel = [related(d.writer, f"{describe(ws, n)} write `{d.writer.buffer}` here")]
        rel += [
            related(
                s,
                f"`{s.api}` orders only the threads of each warp"
                if s.sync_kind == "warp"
                else f"`{s.api}` does not include both sides",
            )
            for s in d.narrow
        ]
        how = (
            "the only barrier between them is warp-scoped"
            if d.narrow and all(s.sync_kind == "warp" for s in d.narrow)
            else "no barrier between them includes both"
            if d.narrow
            else "there is no barrier between them"
        )
        whose = (
            "of other warps"
            if any(x // 32 != r // 32 for x in ws)
            else "(another lane of its warp)"
            if len(ws) == 1
            else "(other lanes of its warp)"
        )
        verb = "overwrites" if len(ws) == 1 else "overwrite"
        msg = (
            f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.reader.buffer or d.writer.buffer}` "
            f"written by {describe(ws, n)} {whose}, and {how}"
        )
        if d.kind == "raw-next":
            msg = (
                f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.reader.buffer or d.writer.buffer}` "
                f"written by {describe(ws, n)} {whose} in the previous iteration of the loop, and {how}"
            )
        if d.kind == "war-same":
            msg = (
                f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.reader.buffer}`, which "
                f"{describe(ws, n)} {whose} {verb} (`{d.writer.api}`) later in the same iteration, and "
                f"{how.replace('between them', 'between the read and that write')}"
            )
        if d.kind == "war":
            msg = (
                f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.reader.buffer}`, which "
                f"{describe(ws, n)} {whose} {verb} (`{d.writer.api}`) in the next iteration of the "
                f"loop, and {how.replace('between them', 'between the read and that write')}"
            )
        if d.steps is not None:
            at_w, at_r = (f" ({x})" if x else "" for x in d.steps)
            earlier = f"at an earlier step{at_w}" if at_w else "before the loop"
            later = f"at a later step{at_w}" if at_w else "after the loop"
            cond = " (when its test on the data holds, as it does for some input)" if d.conditional else ""
            late = how.replace("between them", "between the two")
            if d.kind == "step-war":
                msg = (
                    f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.element}`{at_r}, which "
                    f"{describe(ws, n)} {whose} {verb} (`{d.writer.api}`) {later}{cond}, and {late}"
                )
            else:
                msg = (
                    f"`{d.reader.api}` on {describe(frozenset([r]), n)} reads `{d.element}`{at_r}, written "
                    f"by {describe(ws, n)} {whose} {earlier}{cond}, and {late}"
                )
        out.append(
            finding(
                "TK401",
                msg,
                d.reader.location,
                related=rel,
                witness={"reader_thread": r, "unsynchronised_writers": describe(ws, n)},
                help="synchronise every writer with the reader: `warpgroup::sync(id)` when the writers are one "
                "warpgroup (a distinct id per warpgroup), `__syncthreads()` for the whole block; "
                "`__syncwarp()` only orders threads of one warp",
            )
        )
    out.extend(_async_copies(an))
    out.extend(_lane_masks(an))
    out.extend(_global_acquire_scope(an))
    out.extend(_tickets(an))
    out.extend(_dsmem(an))
    out.extend(_dsmem_peers(an))
    out.extend(handoff_findings(an, "TK401", ("lanes", "fill", "unwaited")))
    return out


def _dsmem(an):
    """The happens-before engine's distributed-shared-memory races (`checks/happens_before.py`):
    a CTA's access of its own shared memory and a peer CTA's access of it through
    `cluster.map_shared_rank`, with no barrier of the whole cluster between them."""
    from tkcheck.checks.happens_before import memory, shown_ref

    n = an.threads.n
    out = []
    for race in memory(an).dsmem_races:
        peer = race.first if race.first.access is not None and race.first.access.cta is not None else race.second
        own = race.second if peer is race.first else race.first
        tp = race.first_thread if peer is race.first else race.second_thread
        to = race.second_thread if peer is race.first else race.first_thread
        barriers = [
            o
            for o in an.model.ops_of(ir.SYNC)
            if o.sync_kind not in ("cluster", "cluster_arrive", "cluster_wait", "grid")
            and min(own.order, peer.order) < o.order < max(own.order, peer.order)
        ]
        how = (
            f"the only barrier between them (`{barriers[0].api}`) orders the threads of one CTA"
            if barriers and not race.next_iteration
            else "no cluster barrier lies between them"
        )
        if race.search is not None:
            # r17-remote: found by the cluster race search (`happens_before._dsmem_by_search`)
            how = (
                "no release -> acquire edge orders them: running the cluster's CTAs, the search reaches a state where "
                + (
                    f"the {race.search['made']} has been made and not released since and the other can be made next"
                    if race.search.get("made")
                    else "both can be made next"
                )
            )
        relaxed_arrives = [
            o
            for o in an.model.ops
            if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
            and o.mbar is not None
            and o.mbar.sem == "relaxed"
            and (o.mbar.remote or o.mbar.cta is not None)
            and min(own.order, peer.order) < o.order < max(own.order, peer.order)
        ]
        if relaxed_arrives and not race.next_iteration:
            # r16-remote: the peer's wait observes the arrival, but a relaxed arrive releases nothing
            how += (
                f" (the remote arrive between, `{relaxed_arrives[0].api}` line {relaxed_arrives[0].location.row}, "
                "is `.relaxed`: "
                "it releases none of the arriving thread's writes to the peer's acquire wait)"
            )
        relaxed = [
            o
            for o in an.model.ops_of(ir.SYNC)
            if o.sync_kind == "cluster_arrive"
            and o.sync is not None
            and o.sync.relaxed
            and min(own.order, peer.order) < o.order < max(own.order, peer.order)
        ]
        if relaxed and not race.next_iteration:
            how = (
                "the cluster barrier between them arrives with `.relaxed` "
                "(no release: the writes before it are not ordered before the peer's accesses after its wait)"
            )
        mode = "reads" if peer.access is not None and peer.access.mode == "read" else "writes"
        other = "writes" if own.access is not None and own.access.mode == "write" else "reads"
        when = " in the next iteration of the loop" if race.next_iteration else ""
        buf = shown_ref(an, peer)
        given = f" (for input data where {race.input})" if race.input else ""
        if race.next_iteration and race.first is peer:
            when = ", and the owner's next iteration " + other + " it again"
            msg = (
                f"{describe(frozenset([tp]), n)} of a peer CTA {mode} `{buf}` in this CTA's shared memory "
                f"(`{peer.api if peer.asm is not None else 'cluster.map_shared_rank'}`){when} (`{own.api}`, {describe(frozenset([to]), n)}){given}, and "
                f"{how}"
            )
        elif race.next_iteration:
            # the owner's access first, the peer's in its next iteration (round 10: a st.async of
            # the next round into a buffer the owner is still reading)
            msg = (
                f"{describe(frozenset([tp]), n)} of a peer CTA {mode} `{buf}` in the shared memory of a CTA "
                f"(`{peer.api if peer.asm is not None else 'cluster.map_shared_rank'}`) in its next iteration of the "
                f"loop, while that CTA's {describe(frozenset([to]), n)} may still {other[:-1]} it "
                f"(`{own.api}`) in the iteration before{given}, and {how}"
            )
        else:
            msg = (
                f"{describe(frozenset([tp]), n)} of a peer CTA {mode} `{buf}` in the shared memory of a CTA "
                f"whose {describe(frozenset([to]), n)} {other} it (`{own.api}`){when}{given}, and {how}"
            )
        out.append(
            finding(
                "TK401",
                msg,
                user_site(peer),
                related=[related(own, f"the owner CTA's {describe(frozenset([to]), n)} accesses it here")]
                + [related(b, f"`{b.api}` orders one CTA's threads only") for b in barriers[:1]],
                witness={
                    "peer_thread": tp,
                    "owner_thread": to,
                    "next_iteration": race.next_iteration,
                    **({"input": race.input} if race.input else {}),
                },
                help="order a CTA's accesses of its shared memory and its peers' (distributed shared memory) by a "
                "cluster barrier between them: `cluster.sync()` (barrier.cluster.arrive.release + "
                "wait.acquire) reached by every thread of the cluster",
            )
        )
    return out


def _dsmem_peers(an):
    """The happens-before engine's races of two peer CTAs on a third CTA's (or one of theirs)
    shared memory (`happens_before._dsmem_peers`): both through `mapa` addresses, one a plain
    write, not both atomic, with no cluster barrier between them."""
    from tkcheck.checks.happens_before import memory, shown_ref

    n = an.threads.n
    out = []
    for race in memory(an).dsmem_peer_races:
        a, b = race.first, race.second
        (ra, ta), (rb, tb) = divmod(race.first_thread, n), divmod(race.second_thread, n)
        va = "writes" if a.access_mode == "write" else "reads"
        vb = "writes" if b.access_mode == "write" else "reads"
        given = f" (for input data where {race.input})" if race.input else ""
        site = b if b.access_mode == "write" else a
        out.append(
            finding(
                "TK401",
                f"{describe(frozenset([ta]), n)} of CTA rank {ra} {va} `{shown_ref(an, a)}` (`{a.api}`) and "
                f"{describe(frozenset([tb]), n)} of CTA rank {rb} {vb} the same element (`{b.api}`) in the shared "
                f"memory of one CTA of the cluster{given}, and no cluster barrier lies between them: neither access "
                "is atomic for the other (a read-modify-write of two CTAs loses an update)",
                user_site(site),
                related=[related(a if site is b else b, "the other CTA's access")],
                witness={"first": [ra, ta], "second": [rb, tb], **({"input": race.input} if race.input else {})},
                help="make the update one atomic operation (`red.shared::cluster.add` / `atom.shared::cluster`), "
                "or order the two CTAs' accesses by a cluster barrier (`barrier.cluster.arrive.release` + "
                "`wait.acquire`) between them",
            )
        )
    return out


def _lane_masks(an):
    """The happens-before engine's shared-scalar races between two lanes of one warp that both
    run a `__syncwarp(mask)` between their accesses whose member mask leaves one of them out
    (`Race.narrow`): the barrier is there but too narrow for the pair (and a lane outside the
    mask that executes it is undefined behaviour)."""
    from tkcheck.checks.happens_before import in_warp_mask, memory

    n = an.threads.n
    out = []
    seen = set()
    for race in memory(an).races:
        if not race.narrow:
            continue
        w = race.first if race.first.access_mode == "write" else race.second
        r = race.second if w is race.first else race.first
        tw = race.first_thread if w is race.first else race.second_thread
        tr = race.second_thread if w is race.first else race.first_thread
        loc = r.location if r.access_mode == "read" else race.second.location
        key = (loc.row, loc.column)  # one finding per site, as the other TK401 queries
        if key in seen:
            continue
        seen.add(key)
        s = race.narrow[0]
        if race.ragged is not None:
            out.append(_ragged_narrow(an, race, w, loc))
            continue
        left = [t for t in (tw, tr) if in_warp_mask(s, t) is False]
        outside = ", ".join(f"lane {t % 32}" for t in left) or "one of them"
        when = "in the next iteration of the loop" if race.next_iteration else "later"
        if race.first is w:
            what = f"writes `{w.buffer}` and {describe(frozenset([tr]), n)} (another lane of its warp) reads it {when}"
        else:
            what = f"is read by {describe(frozenset([tr]), n)} and written by {describe(frozenset([tw]), n)} {when}"
            what = f"`{w.buffer}` {what}"
        lead = f"{describe(frozenset([tw]), n)} " if race.first is w else ""
        out.append(
            finding(
                "TK401",
                f"{lead}{what}, and the only barrier between them, `{s.api}`, leaves {outside} out of its "
                "member mask although both lanes run it: it orders neither access before the other (a lane "
                "outside the mask that executes `__syncwarp(mask)` is undefined behaviour)",
                loc,
                related=[
                    related(w, f"the write of `{w.buffer}`"),
                    related(s, f"`{s.api}`: its mask leaves {outside} out"),
                ],
                witness={"writer": tw, "reader": tr, "next_iteration": race.next_iteration},
                help="give `__syncwarp` a mask that holds every lane that runs it and uses the location "
                "(`__syncwarp()` for the whole warp)",
            )
        )
    return out


def _ragged_narrow(an, race, w, loc):
    """A race of two threads of different warps in a loop each warp leaves on its own (a warp
    vote as the loop's exit test, `checks/ragged.py`): the loop's only synchronisation is
    warp-scoped, so iteration i of one warp and iteration j of another are unordered."""
    from tkcheck.checks import ragged as R

    n = an.threads.n
    rp = race.ragged
    a, b = rp.first, rp.second
    s = rp.narrow[0]
    verb_a = "writes" if a is w else "reads"
    verb_b = "writes" if b is w else "reads"
    msg = (
        f"{describe(frozenset([rp.first_thread]), n)} {verb_a} `{w.buffer}` in {R.iteration_text(an, a, rp.first_iteration)} "
        f"and {describe(frozenset([rp.second_thread]), n)} of another warp {verb_b} it in "
        f"{R.iteration_text(an, b, rp.second_iteration)}, and the only synchronisation in the loop, `{s.api}`, "
        "orders the threads of each warp only: nothing orders the two warps' iterations"
    )
    if rp.assumption:
        msg += f" ({rp.assumption})"
    return finding(
        "TK401",
        msg,
        loc,
        related=[related(w, f"the write of `{w.buffer}`"), related(s, f"`{s.api}` orders one warp's lanes only")],
        witness={
            "writer": rp.first_thread if a is w else rp.second_thread,
            "reader": rp.second_thread if a is w else rp.first_thread,
            "next_iteration": race.next_iteration,
            "iterations": [rp.first_iteration, rp.second_iteration],
        },
        help="synchronise the whole block once an iteration: a block-wide vote (`__syncthreads_or(c)`) both "
        "closes the iteration and decides, for every thread alike, whether another one runs",
    )


def _global_acquire_scope(an):
    """The happens-before engine's acquire-scope query (`checks/happens_before.py`): one thread
    acquires a flag in global memory, and other threads read the data it guards with no barrier
    ordering them after that thread's acquire."""
    from tkcheck.checks.happens_before import describe_location, memory

    n = an.threads.n
    out = []
    for a in memory(an).unpropagated:
        if a.how == "not-propagated-write":
            out.append(_write_after_wait(an, a))
            continue
        out.append(
            finding(
                "TK401",
                f"{describe(frozenset([a.thread]), n)} reads `{describe_location(a.read)[:50]}`, data "
                f"published through the flag that {describe(frozenset([a.poller]), n)} acquires "
                f"(`{(a.observe.global_access.text if a.observe.global_access else None) or a.observe.api}`"
                "), and no barrier orders the read after that acquire: the acquire orders the polling "
                "thread only, so the read may run before the flag is seen",
                user_site(a.read),
                related=[related(a.observe, "the acquiring poll (one thread)")]
                + in_helper(a.read, "the load, in the helper called there"),
                witness={"reader_thread": a.thread, "poller": a.poller},
                help="a barrier of the polling thread and the readers after the spin: `__syncthreads()` "
                "right after the polling thread's loop",
            )
        )
    return out


_TICKET_WHY = {
    "release": "no fence of block scope or wider (`__threadfence_block()`) between the write and the arrival "
    "that publishes it, and the atomic is relaxed: the arrival releases nothing",
    "gather": "no barrier orders the writer before an arriver whose fence or releasing atomic would publish the "
    "write with its ticket (a fence orders only what happens before it in its own thread)",
    "after": "the write comes after the writer's arrival on the counter, so the ticket publishes it to no one",
    "count": "the ticket tested is not the last one, so another arriver -- {late} -- may draw a later ticket and "
    "write after the read",
    "acquire": "no fence of block scope or wider after the ticket is observed, and the atomic is relaxed: the "
    "read is not ordered after the arrivals the ticket counted",
}


def _tickets(an):
    """The happens-before engine's block-scope tickets (`checks/tickets.py`): a write and a read of
    one `__shared__` element that the counter's release -> acquire does not order (a missing
    fence on either side, a write after the arrival, a test of a ticket that is not the last)."""
    from tkcheck.checks.happens_before import memory

    n = an.threads.n
    out = []
    seen = set()
    for tr in memory(an).ticket_races:
        key = (tr.read.location.row, tr.read.location.column)
        if key in seen:
            continue
        seen.add(key)
        tk = tr.ticket
        why = _TICKET_WHY[tr.why].format(late=describe(frozenset([tr.late]), n) if tr.late is not None else "")
        out.append(
            finding(
                "TK401",
                f"{describe(frozenset([tr.reader]), n)} reads `{tr.element}` under the test of the ticket drawn "
                f"from the `__shared__` counter `{tk.counter}` (in the execution where "
                f"{describe(frozenset([tr.arriver]), n)} draws ticket {tr.k} of {len(tk.arrivers)}), and "
                f"{describe(frozenset([tr.writer]), n)} writes it: {why}",
                tr.read.location,
                related=[
                    related(tr.write, f"the write of `{tr.write.buffer}`"),
                    related(tk.arrival, f"the arrival on `{tk.counter}` (the ticket)"),
                ],
                witness={
                    "reader_thread": tr.reader,
                    "writer_thread": tr.writer,
                    "arriver": tr.arriver,
                    "ticket": tr.k,
                    "arrivals": len(tk.arrivers),
                    "cause": tr.why,
                },
                help="write, then `__threadfence_block()`, then take the ticket; test it against the number of "
                "arrivals minus one; `__threadfence_block()` after the test before reading (or acq_rel atomics)",
            )
        )
    return out


def _write_after_wait(an, a):
    """A write after a grid barrier's wait by a thread the wait's acquire does not cover."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    ga = a.observe.global_access
    return finding(
        "TK401",
        f"{describe(frozenset([a.thread]), n)} writes `{describe_location(a.read)[:50]}`, data that threads of other "
        f"blocks read before they arrive at the barrier whose flag {describe(frozenset([a.poller]), n)} waits for "
        f"(`{(ga.text if ga else None) or a.observe.api}`), and no barrier orders the write after that wait: the "
        "wait orders the polling thread only, so the write may land before another block has read the old value",
        user_site(a.read),
        related=[related(a.observe, "the acquiring poll (one thread)")]
        + ([related(a.earlier, "another block reads the old value here")] if a.earlier is not None else [])
        + in_helper(a.read, "the store, in the helper called there"),
        witness={"writer_thread": a.thread, "poller": a.poller},
        help="a barrier of the polling thread and the writers after the spin: `__syncthreads()` right after the "
        "polling thread's loop (the closing barrier of the grid barrier)",
    )


def _async_copies(an):
    """cp.async data another thread copied: its wait completes the copy only in the copying
    thread, so a block barrier must follow that wait before the read; and a refill must follow a
    barrier after every read of the stage's previous contents (async_groups)."""
    out = []
    for ob in G.obligations(an):
        if ob.kind not in ("visible", "refill") or ob.status != "violated" or ob.copy is None:
            continue
        w = ob.witness
        r, c = w.get("reader_thread"), w.get("writer_thread")
        at = ", ".join(f"{k} = {v}" for k, v in w.items() if k not in ("reader_thread", "writer_thread", "via"))
        at = f" ({at})" if at else ""
        if ob.kind == "visible":
            msg = (
                f"`{ob.read.api}` on thread {r} reads `{ob.read.buffer}`, copied by thread {c} with "
                f"`{ob.copy.api}` (line {ob.copy.location.row}); that thread's wait completes the copy only for "
                f"itself and no block barrier follows it before the read{at}"
            )
            rel = [related(ob.copy, f"thread {c} copies here")]
            if ob.wait is not None:
                rel.append(related(ob.wait, f"completes the copy in thread {c} only"))
            fix = "put `__syncthreads()` (or a barrier over both threads) between the wait and the read"
        else:
            msg = (
                f"`{ob.read.api}` on thread {r} reads `{ob.read.buffer}`, which thread {c} refills with "
                f"`{ob.copy.api}` (line {ob.copy.location.row}) later, and no barrier orders the read before "
                f"the refill{at}"
            )
            rel = [related(ob.copy, f"thread {c} refills the stage here")]
            fix = "put `__syncthreads()` after the last read of the stage, before the next cp.async into it"
        out.append(
            finding(
                "TK401",
                msg,
                ob.read.location,
                related=rel,
                witness={k: v for k, v in w.items()},
                help=fix,
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C) {
    __shared__ tile c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::store(c, acc);          // all four warps write their rows
    __syncwarp();                      // orders warp 0 only
    if (warpgroup::laneid() == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_wait();
    }
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C) {
    __shared__ tile c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::store(c, acc);
    warpgroup::sync(1);
    if (warpgroup::laneid() == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_wait();
    }
}
"""
)

RULE = Rule(
    code="TK401",
    name="sync-scope-too-narrow",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    explains={"wrong": Explains(5, "a narrower barrier than the data flow needs (warp instead of warpgroup)")},
    confirm=Confirm(widen=("stagger-writers",)),
    summary="A shared-memory dependency across warps is synchronised by a barrier that does not cover both sides",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For each generic write of a shared buffer (`warpgroup::store`, `warp::store`,
...) and each later read of the same element by threads of the same role in
the same iteration (a register load, the TMA store of a lane, a wgmma
operand), computes per reader thread the writer threads of other warps and
checks that some barrier between the two sites includes both: a block barrier,
a named/group barrier both reach, or `__syncwarp` only when they share a warp.
Buffer indices are evaluated per thread, so a per-warpgroup staging tile
`c[warpgroup::groupid()]` is only a dependency inside its warpgroup.

The same question across iterations and loop depths (`checks/loop_pairs.py`), asked at
concrete iterations of loops with constant trip counts: a slot stored before a loop and read in
its first iteration; a ring slot written in iteration k and read in iteration k + 1, or read in
iteration k and overwritten in k + 1 (the read in an inner loop of its own, as the `ldmatrix`
of a K step); a slot read and then overwritten by another thread later in the same iteration
(the next slice stored into the slot still being read). `ldmatrix` / `stmatrix` `.x1` / `.x2` /
`.x4` read (write) the 16-byte row each row-naming lane addresses (lanes 0-7, 0-15, 0-31).

Networks in shared memory whose loops step geometrically (a bitonic sort's `k <<= 1` /
`j >>= 1`, a tree reduction's `s >>= 1`, a scan's up- and down-sweep) and whose barrier is
chosen per step (`__syncwarp()` while the partners stay in one warp, `__syncthreads()` otherwise)
are run step by step (`checks/loop_steps.py`): a write and another thread's later read of one
element (or a read and a later write) that no chain of the barriers run between orders is
reported with both steps (`reads key_s[32] (k = 128, j = 64), written ... at an earlier step
(k = 64, j = 1)`). A write under a test of loaded data (`if ((a > b) == up)`) runs for some input.

Dependencies across roles are ordered by mbarriers (the completion rules'
business): when an mbarrier operation or unmodelled code lies between the two
sites, nothing is reported.

The same scope question for a flag in global memory (the happens-before engine,
`checks/happens_before.py`): when one thread spins on a flag with an acquiring
poll (`ld.acquire.gpu`, an acquiring atomic), its acquire orders that thread's
later reads only. Other threads that then read the data the flag publishes (data
some block of the kernel writes, behind a flag the kernel raises) must be ordered
after the polling thread by a barrier both take part in -- the `__syncthreads()`
right after thread 0's spin. Without it their reads may run before the flag is
seen. An op between that may synchronise in a way not followed (an mbarrier, an
unmodelled call, another atomic) leaves it undecided. The write side of the same
acquire (a grid barrier's wait): other threads that overwrite data other blocks read
before the barrier -- later in the iteration, or in the next one before the spin --
must be ordered after the polling thread too (the `__syncthreads()` closing the
barrier), or the write may land before another block has read the old value.

The same scope question for cp.async copies (the cp.async engine,
`checks/async_groups.py`): a wait (`cp.async.wait_group N`, `__pipeline_wait_prior`,
TK's `load_async_wait`, `cg::wait_prior<N>(group)`, `cg::wait(group)`) completes the
copies of the waiting thread only, so words another thread copied need a barrier over
both after that thread's wait (`cg::wait_prior` ends with its group's barrier: a warp
tile's collective copy is visible to the other warps only after a block barrier); and a
copy refilling a stage must come after a barrier that every earlier reader of the stage
passed after its read. Copies that complete on an mbarrier (`cp.async.mbarrier.arrive.noinc`,
libcu++'s `memcpy_async` with a barrier) are run as executions of the kernel, one thread at a time
as far as it can go; when such a schedule ends with every thread waiting (copy threads that never
wait for the release run every phase ahead), the threads are also run one event at a time, an
execution in which the reads and the refills of a stage meet (round 13).

Distributed shared memory (the happens-before engine): a CTA's access of its own shared memory
and a peer CTA's access of it through a `mapa` address (`red` / `atom` / `ld` / `st.shared::cluster`)
are ordered only by a cluster barrier of every thread between them, whose arrive releases
(`barrier.cluster.arrive.relaxed` does not, unless a cluster-scope fence precedes it) and whose
wait acquires; a `__syncthreads()` orders one CTA's threads only. Two peer CTAs' plain accesses
of one remote element (one a write, not both atomic: a read-modify-write spelled as
`ld.shared::cluster` then `st.shared::cluster`) race with no cluster barrier between. A rank or
element computed from a value the kernel loads from memory it never writes (`key[i] % BINS`) is
asked as a free input of the one thread that loads it, and the finding says under which input
the two accesses meet.

Two lanes of one warp that both run a `__syncwarp(mask)` between a write and a read of one
`__shared__` scalar (or element of an array of scalars), with one of them outside the mask: the
barrier is there but orders neither (PTX `bar.warp.sync` orders memory among the threads of its
member mask; a lane outside the mask that executes it is undefined behaviour). The pair is the
happens-before engine's (TK408's query); TK401 reports it because the barrier is too narrow.

A bulk copy (`cp.async.bulk`, a TMA load) that refills shared memory which a generic read of
another thread read earlier -- in the same iteration, or in the previous iteration of the copy's
loop -- with no barrier both the reader and the issuing thread take part in between the read and
the issue: the async proxy may overwrite the element before the read has read it. The reader may
be another lane of the issuing thread's own warp (an elected lane refilling the stage its warp
reads needs a `__syncwarp()` before the issue). An mbarrier wait, a call or another op between
that may order them another way (a producer's wait on an `empty` barrier) leaves the pair alone;
the element must be proved shared (z3).

Shared-memory queues handed off through volatile `__shared__` indices (`checks/shared_handoff.py`):
a lane's slot access that no `__syncwarp` joins to the lane that stores the index (or that polled
it), a slot written after the index store that announces it, and a slot reused by a side that
never polls the other side's index are reported as accesses of two warps the indices do not order.

Block-scope tickets (`checks/tickets.py`): the last warp (or warpgroup) of a block found with an
atomic on a `__shared__` counter (`atomicAdd(&c, 1)`, `atomicInc`, a `thread_scope_block`
`atomic_ref::fetch_add`) whose old value a branch tests -- directly, or after `__shfl_sync` passed
lane 0's ticket to its warp. The counter orders a write before a read under the test only when
the writer's stores are released before its arrival (`__threadfence_block()` between them, or a
barrier that gathers them before the arriver's fence; or a release atomic), the read acquires
(a fence after the test, or an acquiring atomic; a lane that got the ticket by the shuffle
fences itself), and the tested value is the last ticket (every other arriver came first). A
write after the arrival, a missing fence on either side or a test of another value (an arriver
that releases the write may draw a later ticket) is reported with the execution that shows it:
which thread draws which ticket.

## Why is this bad?
`__syncwarp()` orders only the lanes of one warp. The lane that issues the TMA
store can run ahead of warps 1-3 of its warpgroup, and the copy reads rows
they have not written yet: stale rows in the output, depending on timing.

## Example
```cuda
{_BAD}
```

Use instead:
```cuda
{_GOOD}
```
""",
)
