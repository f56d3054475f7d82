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
        who = describe(frozenset([race.first_thread]), n)
        why = _WHY[race.cause].format(idx=idx, who=who)
        la, lb = an.model.loops[a.loops[0]], an.model.loops[b.loops[0]]
        it_a = f"`{la.var or 'k'}` = {race.first_iteration}" if la.var else f"iteration {race.first_iteration}"
        it_b = f"`{lb.var or 'k'}` = {race.second_iteration}" if lb.var else f"iteration {race.second_iteration}"
        msg = (
            f"{who} {'writes' if a.access_mode == 'write' else 'reads'} `{a.buffer}` in its loop's iteration {it_a}, "
            f"and {describe(frozenset([race.second_thread]), n)} "
            f"{'writes' if b.access_mode == 'write' else 'reads'} the same element "
            f"in the other loop's iteration {it_b}, "
            f"and only shared indices pass between the two loops: {why}"
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
                help=_HELP[race.cause],
            )
        )
    return out
