"""Findings of the shared-index hand-off engine (`checks/shared_handoff.py`), worded per cause:
the rules that word them (the release / acquire, sync-scope and read-after-release contracts)
each pick their causes."""

from __future__ import annotations

from tkcheck.checks import happens_before
from tkcheck.checks import shared_handoff as H
from tkcheck.checks.threads import describe

from ._common import finding, related

_WHY = {
    "release": (
        "no release orders the data before the store of {idx}: the store is relaxed (volatile, or an atomic "
        "without `memory_order_release`), and without a `__threadfence_block()` between the data and the "
        "store a thread that sees the new index may still see the slot's old contents"
    ),
    "acquire": (
        "no fence orders this access after its warp's poll of {idx}: the poll is relaxed (volatile, or an "
        "atomic without `memory_order_acquire`), and without a `__threadfence_block()` after the spin this "
        "thread may still see the slot's old contents"
    ),
    "lanes": (
        "no `__syncwarp` orders {who}'s access before its warp's store of {idx} (or after its warp's poll): "
        "the storing lane's fence orders that lane's own accesses only"
    ),
    "fill": "{who} writes the slot after its warp stored {idx}, which announces it: the other side may read it first",
    "after_release": (
        "{who} reads the slot after its warp stored {idx}, which hands it back: the other side may refill it "
        "while this read is still going on"
    ),
    "unwaited": (
        "{who}'s side polls no index that orders this access after the other side's (it never waits for "
        "{idx}, which the other side stores): it may run ahead into a slot still in use"
    ),
}

_HELP = {
    "release": "write the slot, `__syncwarp()`, then the storing lane: `__threadfence_block()` and the index "
    "store; the poller: spin, then `__threadfence_block()` before reading the slot",
    "acquire": "spin on the index, then `__threadfence_block()` (then `__syncwarp()` for the other lanes) "
    "before reading the slot",
    "lanes": "`__syncwarp()` between every lane's access of the slot and the lane that stores the index (after "
    "the poll: between the polling lane's fence and the other lanes' accesses)",
    "fill": "store the index after the slot is written (write, `__syncwarp()`, fence, then the index)",
    "after_release": "store the index that hands the slot back after the last read of every lane",
    "unwaited": "poll the other side's index before reusing a slot (`while (i - head >= N) { }`)",
}


# a hand-off between two CTAs of a cluster through flags (checks/cluster_handoff.py): the same
# causes, in the words of its primitives (a cluster-scope release / acquire, `__syncthreads()`)
_WHY_CLUSTER = {
    "release": (
        "no release orders the data before the store of {idx}: the flag store is relaxed, and without a "
        "cluster-scope fence (`fence.acq_rel.cluster`) between the data and the store the other CTA may see "
        "the new flag and still read the slot's old contents"
    ),
    "acquire": (
        "no acquire orders this access after its CTA's poll of {idx}: the poll is relaxed, and without a "
        "cluster-scope fence after the spin this thread may still see the slot's old contents"
    ),
    "lanes": (
        "no `__syncthreads()` orders {who}'s access before its CTA's store of {idx} (or after its CTA's poll): "
        "the release / acquire of the flag orders only what its own thread's barrier chain brought before it"
    ),
    "fill": _WHY["fill"].replace("its warp", "its CTA"),
    "after_release": _WHY["after_release"].replace("its warp", "its CTA"),
    "unwaited": (
        "{who}'s CTA polls no flag that orders this access after the other CTA's (it never waits for "
        "{idx}, which the other CTA stores): it may run ahead into a slot still in use"
    ),
}

_HELP_CLUSTER = {
    "release": "write the slot, `__syncthreads()`, then one thread raises the flag with "
    "`st.release.cluster` (or a `fence.acq_rel.cluster` before a relaxed store)",
    "acquire": "poll the flag with `ld.acquire.cluster` (or a `fence.acq_rel.cluster` after the spin), then "
    "`__syncthreads()` before the block reads the slot",
    "lanes": "`__syncthreads()` between every thread's access of the slot and the thread that raises the flag "
    "(after the poll: between the polling thread and the other threads' accesses)",
    "fill": "raise the flag after the slot is written (write, `__syncthreads()`, then the release store)",
    "after_release": "hand the slot back (release store of the flag) after every thread's last read "
    "(`__syncthreads()` first)",
    "unwaited": "poll the other CTA's flag before reusing a slot",
}


def handoff_findings(an, code: str, causes: tuple[str, ...]) -> list:
    out = []
    n = an.threads.n
    seen = set()
    for race in happens_before.memory(an).handoff_races:
        if race.cause not in causes:
            continue
        a, b = race.first, race.second
        key = (a.location.row, a.location.column, b.location.row)
        if key in seen:
            continue
        seen.add(key)
        h = H.handoffs(an)
        names = race.indices or race.polls
        idx = " / ".join(f"`{x}`" for x in names) if names else "an index"
        ranks = getattr(race, "ranks", None)
        who = describe(frozenset([race.first_thread]), n)
        other = describe(frozenset([race.second_thread]), n)
        if ranks is not None:
            who, other = f"{who} of CTA {ranks[0]} of the cluster", f"{other} of CTA {ranks[1]}"
        why = (_WHY_CLUSTER if ranks is not None else _WHY)[race.cause].format(idx=idx, who=who)
        la, lb = an.model.loops[a.loops[0]], an.model.loops[b.loops[0]]
        it_a = f"`{la.var or 'k'}` = {race.first_iteration}" if la.var else f"iteration {race.first_iteration}"
        it_b = f"`{lb.var or 'k'}` = {race.second_iteration}" if lb.var else f"iteration {race.second_iteration}"
        msg = (
            f"{who} {'writes' if a.access_mode == 'write' else 'reads'} `{a.buffer}` in its loop's iteration {it_a}, "
            f"and {other} "
            f"{'writes' if b.access_mode == 'write' else 'reads'} the same element "
            f"in the other loop's iteration {it_b}, "
            f"and only {'flags' if ranks is not None else 'shared indices'} pass between the two loops: {why}"
        )
        rel = [related(b, "the other access")]
        rel += [related(i.store, f"`{i.name}` stored here") for i in h.indices.values() if i.name in names][:2]
        rel += [related(p.spin, f"`{p.index.name}` polled here") for p in h.polls if p.index.name in names][:2]
        out.append(
            finding(
                code,
                msg,
                a.location,
                related=rel,
                witness={
                    "threads": [race.first_thread, race.second_thread],
                    "iterations": [race.first_iteration, race.second_iteration],
                    "cause": race.cause,
                    "indices": list(names),
                },
                help=(_HELP_CLUSTER if ranks is not None else _HELP)[race.cause],
            )
        )
    return out
