"""TK502: a wait whose phase no remaining role will ever complete."""

from tkcheck.checks import protocol as P
from tkcheck.findings import TraceStep
from tkcheck.model import expr as E
from tkcheck.rule import Explains, Rule

from ._common import HEADER, finding, related
from ._deadlock_common import classify, deadlock_finding


def check(an):
    return (
        _spins(an)
        + _own_store(an)
        + _count_hangs(an)
        + _unreached(an)
        + _epoch_hangs(an)
        + _hoisted(an)
        + _hoisted_global(an)
        + _counter_barriers(an)
        + _locks(an)
        + _roles(an)
    )


def _own_store(an):
    """The progress engine's waits for a change right after the waiting thread's own store of the
    word, with no other writer in the grid (`checks/protocol.spin_waits`: `own_store`)."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for ow in P.spin_waits(an).own_store:
        where = " && ".join(str(u) for u in ow.store.guard.uniform)
        who = describe(an.threads.executing(ow.store) or frozenset(), n) + (
            f" of the block with `{where}`" if where else ""
        )
        ga, sga = ow.poll.global_access, ow.store.global_access
        cond = ow.spin.spin.cond if ow.spin.spin is not None else None
        shown = str(E.substitute(cond, {ga.result: E.Var(f"*{ow.flag}", E.PARAM)})) if cond and ga else "?"
        store_text = (sga.text if sga else None) or ow.store.api
        wait_text = (ga.text if ga else None) or ow.poll.api
        trace = [
            TraceStep("the writer", f"{who} stores {ow.value} into `*{ow.flag}` (`{store_text}`)", ow.store.location),
            TraceStep(
                "the writer",
                f"then waits while `{shown}` (`{wait_text}`): it holds at the value just stored, and no other "
                f"thread of the grid writes `*{ow.flag}`: it waits forever",
                ow.spin.location,
                blocked=True,
            ),
        ]
        out.append(
            finding(
                "TK502",
                f"{who} waits for `*{ow.flag}` to change (`{wait_text}`: the loop goes on while `{shown}`) right "
                f"after storing {ow.value} there itself (`{store_text}`, line {ow.store.location.row}), and it is the "
                f"only thread of the grid that writes `*{ow.flag}`: the value it waits to leave is the one it stored, "
                "nobody changes it, and it waits forever",
                ow.spin.location,
                related=[related(ow.store, "its own store: the value the wait keeps seeing")],
                witness={"flag": ow.flag, "stored": str(ow.value), "condition": shown},
                trace=trace,
                help="wait for the value before your own store (`wait(old)` returns once the value differs from "
                "`old`), or let another thread make the change",
            )
        )
    return out


def _count_hangs(an):
    """The progress engine's count waits no thread passes in its loop's first iteration
    (`checks/counted_waits.py`, asked by `protocol.spin_waits`: `count_hangs`)."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for ch in P.spin_waits(an).count_hangs:
        where = " && ".join(str(u) for u in ch.spin.guard.uniform)
        who = describe(an.threads.executing(ch.spin) or frozenset(), n) + (
            f" of the block with `{where}`" if where else ""
        )
        cond = ch.spin.spin.cond if ch.spin.spin is not None else None
        word = E.Var(f"*{ch.counter}", E.PARAM)
        shown = str(E.substitute(cond, {n: word for n in ch.tested})) if cond is not None else "?"
        adds = ", ".join(f"line {a.location.row}" for a in ch.adds)
        gate_ga = ch.gate.spin.cond if ch.gate.spin is not None else None
        gpoll = [o for o in an.model.ops if o.global_access is not None and o.global_access.base == ch.flag]
        if gate_ga is not None:
            fword = E.Var(f"*{ch.flag}", E.PARAM)
            gate_ga = E.substitute(gate_ga, {o.global_access.result: fword for o in gpoll if o.global_access.result})
        trace = [
            TraceStep(
                "every block",
                f"adds to `*{ch.counter}` ({adds}) before it waits at line {ch.gate.location.row} for "
                f"`*{ch.flag}`: in the first round `*{ch.counter}` reaches at most {ch.bound} "
                f"({ch.grid} blocks)",
                ch.adds[0].location,
            ),
            TraceStep(
                "every block",
                f"waits while `{gate_ga}`: `*{ch.flag}` holds 0 (its value before the launch) until the "
                f"waiter below has passed its wait, since every write of it comes after that wait",
                ch.gate.location,
                blocked=True,
            ),
            TraceStep(
                "the waiter",
                f"{who} waits while `{shown}`, which holds for every value of `*{ch.counter}` from 0 to "
                f"{ch.bound} in the first round: it never passes",
                ch.spin.location,
                blocked=True,
            ),
        ]
        out.append(
            finding(
                "TK502",
                f"{who} waits for `*{ch.counter}` to reach a count nobody reaches (the loop goes on while "
                f"`{shown}`): in the first round the additions that can come before that wait is passed "
                f"give at most {ch.bound} (the adds before every block's wait for `*{ch.flag}`, which only "
                f"the waiter raises after passing it, {ch.grid} blocks), and the loop goes on for every "
                "value up to that: every block waits forever",
                ch.spin.location,
                related=[related(a, "an addition to the counter, once a round per block") for a in ch.adds[:2]]
                + [related(ch.gate, "the blocks' wait for the round the waiter opens")],
                witness={
                    "counter": ch.counter,
                    "bound": ch.bound,
                    "blocks": ch.grid,
                    "condition": shown,
                    "assumption": "counter and flag zeroed before the launch",
                },
                trace=trace,
                help="wait for the count the round's additions give (one per block and round: "
                "(r + 1) * blocks after round r)",
            )
        )
    return out


def _unreached(an):
    """The progress engine's spins left by a `break` on a loaded value (`checks/versions.spin_exit`):
    neither the flag's initial value nor any value the kernel's stores write lets the loop leave."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for su in P.spin_waits(an).unreached:
        who = describe(an.threads.satisfying(su.spin.guard.thread) or frozenset(), n)
        ga = su.poll.global_access
        shown = str(su.exit)
        values = [
            f"`{(w.global_access.text if w.global_access else None) or w.api}` = {w.global_access.operands[0]}"
            for w in su.writes[:3]
            if w.global_access is not None and w.global_access.operands
        ]
        trace = [
            TraceStep(
                "every spinning block",
                f"{who} polls `{su.flag}` (`{(ga.text if ga else None) or su.poll.api}`)",
                su.poll.location,
            )
        ]
        trace += [
            TraceStep(
                "the writer",
                f"stores {v} (within its loops' trip counts): the loop's exit `{shown}` is false there",
                w.location,
            )
            for w, v in zip(su.writes[:3], values)
        ]
        trace.append(
            TraceStep(
                "every spinning block",
                f"the loop leaves only when `{shown}`, which no value `{su.flag}` ever holds ({su.initial} before "
                "the launch, or a value stored above): it spins forever",
                su.spin.location,
                blocked=True,
            )
        )
        block = ", ".join(f"{n} == {v}" for n, v in su.block)
        head = (
            f"a spin that re-loads `{su.flag}` until `{shown}` ({who} of the block with {block} spinning in it)"
            if su.by_condition
            else f"a loop left only by a `break` when `{shown}` ({who} spinning in it)"
        )
        out.append(
            finding(
                "TK502",
                f"{head}, but no write of `{su.flag}` in "
                f"this kernel stores such a value ({'; '.join(values)}), and `{su.flag}` holds {su.initial} before "
                "them (assuming the host zeroes it): the loop never ends and the kernel hangs",
                su.spin.location,
                related=[related(w, "a write of the flag: never the value the loop waits for") for w in su.writes[:3]],
                witness={
                    "flag": su.flag,
                    "exit": shown,
                    "initial": su.initial,
                    "assumption": "flag zeroed before the launch",
                    **({"block": block} if su.block else {}),
                },
                trace=trace,
                help="wait for a value the writer stores (its last one), or store the value the readers wait for",
            )
        )
    return out


def _hoisted(an):
    """The progress side of the shared-index engine (`checks/shared_handoff.hoisted_spins`): a spin
    on a plain (not volatile) `__shared__` scalar, with nothing else in its loop, whose first look
    can see the initial value, at which the loop goes on."""
    from tkcheck.checks import shared_handoff as H
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for hs in H.hoisted_spins(an):
        who = describe(an.threads.executing(hs.spin) or frozenset(), n)
        cond = hs.spin.spin.cond if hs.spin.spin is not None else None
        shown = str(E.substitute(cond, {hs.read.access.result: E.Var(hs.name, E.PARAM)})) if cond is not None else "?"
        trace = [
            TraceStep(
                describe(frozenset([hs.thread]), n),
                f"first look at `{hs.name}`: nothing orders another thread's store of it before this read, so it "
                f"may read {hs.initial}, the value stored before the block barrier",
                hs.read.location,
            ),
            TraceStep(
                describe(frozenset([hs.thread]), n),
                f"`{shown}` holds at `{hs.name}` == {hs.initial}; `{hs.name}` is not volatile and the loop does "
                "nothing else, so the compiler may keep the first value in a register: the loop never reads it again",
                hs.spin.location,
                blocked=True,
            ),
        ]
        trace += [
            TraceStep("another thread", f"stores `{hs.name}`: never seen by the spinning loop", w.location)
            for w in hs.writes[:2]
        ]
        out.append(
            finding(
                "TK502",
                f"{who} spins on `{hs.name}`, a plain (not volatile, not atomic) `__shared__` variable, in a loop "
                f"that does nothing else: the compiler may load it once and spin on a register; a first look that "
                f"sees {hs.initial} (`{shown}` holds) spins forever",
                hs.spin.location,
                related=[related(w, f"`{hs.name}` stored here by another thread") for w in hs.writes[:2]],
                witness={"variable": hs.name, "initial": str(hs.initial), "condition": shown},
                trace=trace,
                help=f"declare it `volatile` (`__shared__ volatile ... {hs.name}`), or read it with "
                "`cuda::atomic_ref<T, cuda::thread_scope_block>(x).load(cuda::memory_order_acquire)`",
            )
        )
    return out


def _hoisted_global(an):
    """The progress engine's spins on a plain load of a global word (`checks/awaited_values.hoisted_poll`):
    the loop does nothing else, and its first look may see the word's value before the launch."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for hp in P.spin_waits(an).hoisted:
        who = describe(an.threads.executing(hp.spin) or frozenset(), n)
        ga = hp.read.global_access
        text = (ga.text if ga is not None else None) or hp.read.api
        at = ", ".join(f"{k} = {v}" for k, v in hp.reached_with)
        trace = [
            TraceStep(
                who,
                f"first look at `{text}`{f' (with {at})' if at else ''}: nothing on the way orders another block's store "
                f"of it before this read, so it may read {hp.initial}, the value before the launch",
                hp.read.location,
            ),
            TraceStep(
                who,
                f"the loop goes on at {hp.initial}; the load is plain (not volatile, not atomic) and the loop does "
                "nothing else, so the compiler may load it once and spin on a register: it never reads it again",
                hp.spin.location,
                blocked=True,
            ),
        ]
        out.append(
            finding(
                "TK502",
                f"{who} spins on `{text}`, a plain (not volatile, not atomic) load of global memory, in a loop that "
                f"does nothing else: the compiler may load it once and spin on a register; a first look that sees "
                f"{hp.initial} (its value before the launch, assuming the host zeroes `{hp.word}`) spins forever",
                hp.spin.location,
                related=[related(hp.read, "the plain load the loop repeats")],
                witness={"word": hp.word, "initial": str(hp.initial), "assumption": "word zeroed before the launch"},
                trace=trace,
                help="read it with `cuda::atomic_ref<T, cuda::thread_scope_device>(x).load(cuda::memory_order_acquire)` "
                "(or `ld.acquire.gpu`, a volatile load and a fence)",
            )
        )
    return out


def _counter_barriers(an):
    """A hand-written grid barrier (checks/grid_barriers.py) one of whose instances no block's
    arrival opens: every block but the releaser waits for a word only the releaser raises."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for h in P.spin_waits(an).counter_hangs:
        b = h.barrier
        who = describe(an.threads.executing(b.spin) or frozenset(), n)
        aga = b.arrive.global_access
        rel = str(E.substitute(b.release, {aga.result: E.Var("old", E.PARAM)})).replace("gridDim.x", "N")
        start = str(h.start).replace("gridDim.x", "N")
        last = f"{start} + {h.amount} * (N - 1)" if start != "0" else f"{h.amount} * (N - 1)"
        where = f" (iteration {h.iteration} of its loop)" if b.arrive.loops else ""
        if h.wrote is not None:
            target = str(b.target)
            out.append(
                finding(
                    "TK502",
                    f"{who} of every block but the releaser waits in a grid barrier on `{b.counter}` / `{b.flag}`{where} "
                    f"until `{b.flag}` holds its sense {target}, but the releasing block stores {h.wrote} there "
                    f"(`{(b.raises[-1].global_access.text if b.raises[-1].global_access else b.raises[-1].api)}`), "
                    f"and `{b.flag}` held {h.before} before (the flag zeroed before the launch): the waiting blocks "
                    "never leave, and no later instance can release them (they never arrive at it)",
                    b.spin.location,
                    related=[related(b.raises[-1], "the release stores a value the waiters do not wait for")],
                    witness={"counter": b.counter, "flag": b.flag, "sense": target, "stored": str(h.wrote)},
                    trace=[TraceStep("every block", line, b.arrive.location) for line in h.history],
                    help="store the sense the waiters wait for (the block's flipped sense) when releasing",
                )
            )
            continue
        trace = [TraceStep("every block", line, b.arrive.location) for line in h.history] + [
            TraceStep(
                "every block",
                f"{who} arrives with `{aga.text}`: the N blocks read {start} .. {last}, and none satisfies the "
                f"release condition `{rel}`",
                b.arrive.location,
            ),
            TraceStep(
                "every block",
                f"{who} waits for `{b.flag}` to change, but only a releasing block raises it: never",
                b.spin.location,
                blocked=True,
            ),
        ]
        out.append(
            finding(
                "TK502",
                f"{who} of every block waits in a grid barrier on `{b.counter}` / `{b.flag}`{where}, but no block "
                f"opens it: the count starts at {start} there (N = gridDim.x, the counter zeroed before the launch), "
                f"the blocks' arrivals read {start} .. {last}, and none of them satisfies `{rel}` for any grid size, so "
                f"no block raises `{b.flag}` and every block spins forever",
                b.spin.location,
                related=[related(b.arrive, "the arrival whose old value decides the releaser")]
                + [related(r, "the only raise of the flag, never reached") for r in b.raises[:2]],
                witness={
                    "counter": b.counter,
                    "flag": b.flag,
                    "start": start,
                    "release": rel,
                    "iteration": h.iteration,
                },
                trace=trace,
                help="the last arrival reads start + N - 1 (atomicAdd returns the old value), and the releaser must "
                "reset the counter (before it raises the flag) so that the next instance starts from the same value",
            )
        )
    return out


def _locks(an):
    """The progress engine's spin locks (`checks/locks.py`): a lock word that, once taken, no
    write ever sets back to its free value: the second acquisition spins forever."""
    from tkcheck.checks import locks
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for nf in locks.locks(an).never_freed:
        lk = nf.lock
        who = describe(lk.holders, n)
        ga = lk.take.global_access
        take = (ga.text if ga is not None else None) or lk.take.api
        writes = ", ".join(f"`{(w.global_access.text if w.global_access else None) or w.api}`" for w, _v in nf.values)
        trace = [
            TraceStep(
                "first holder",
                f"{who} finds `{lk.word}` == {lk.free} (free: its value before the launch) and takes it with "
                f"`{take}`, which writes {lk.taken}",
                lk.take.location,
            )
        ]
        trace += [
            TraceStep(
                "first holder",
                f"releases it with `{(w.global_access.text if w.global_access else None) or w.api}`, "
                f"which writes {v}, not the free value {lk.free}",
                w.location,
            )
            for w, v in nf.values[:3]
        ]
        trace.append(
            TraceStep(
                "second holder",
                f"{nf.second} spins until `{lk.word}` == {lk.free}: no write sets it back, it spins forever",
                lk.spin.location,
                blocked=True,
            )
        )
        out.append(
            finding(
                "TK502",
                f"{who} spins to take the lock `{lk.word}` (free at {lk.free}), but once the first holder has "
                f"taken it nothing ever writes {lk.free} again"
                + (f" (its release {writes} writes another value)" if writes else " (it is never released)")
                + f": {nf.second} spins forever"
                + (f" ({nf.grid})" if nf.grid else ""),
                lk.spin.location,
                related=[related(w, "the release, which does not free the lock") for w, _v in nf.values[:3]],
                witness={
                    "lock": lk.word,
                    "free": str(lk.free),
                    "released_with": [str(v) for _w, v in nf.values],
                    "assumption": "lock word zeroed before the launch",
                    "blocks": nf.grid or "two holders in each block",
                },
                trace=trace,
                help=f"release the lock by writing its free value: `atomicExch(&{lk.word.lstrip('*')}, {lk.free})`"
                if not lk.where
                else f"release the lock by writing its free value {lk.free}",
            )
        )
    return out


def _epoch_hangs(an):
    """The epoch engine's run of the launch (`checks/epochs.py`, read through
    `protocol.spin_waits`): a block left at a spin on a neighbour's epoch flag, waiting for an
    epoch that block does not raise before it waits itself (or ever)."""
    out = []
    for h in P.spin_waits(an).epoch_hangs:
        w = h.wait
        flag = w.raise_.flag
        trace = [
            TraceStep(
                f"block {st.block}", f"iteration {st.iteration}: {st.text}", st.op.location, blocked="waits" in st.text
            )
            for st in h.chain[:4]
        ]
        if len(h.chain) > 4:
            trace.append(
                TraceStep(
                    f"blocks {h.chain[4].block}..",
                    f"{len(h.chain) - 4} more blocks in the chain",
                    h.chain[-1].op.location,
                )
            )
        if h.needed is None:
            why = (
                f"block {h.owner} raises it to {h.last} at most, and no value it ever raises ends the wait"
                if h.last
                else f"block {h.owner} never raises it"
            )
        else:
            why = (
                f"block {h.owner} raises the epoch that ends it only in its iteration {h.needed}, which it "
                "does not reach: it is waiting itself, in a chain of blocks that wait on one another (the trace)"
            )
        element = h.element if h.element is not None else h.owner
        out.append(
            finding(
                "TK502",
                f"block {h.block} waits in iteration {h.iteration} of its loop until `{flag}[{element}]` leaves "
                f"`{h.condition}`, but {why}: the block spins for ever (an instance of {h.grid} blocks x "
                f"{h.trip} iterations, launch values in the epochs at 0)",
                w.spin.location,
                related=[related(w.raise_.op, "the only raise of the flag")],
                witness={
                    "block": h.block,
                    "iteration": h.iteration,
                    "owner": h.owner,
                    "condition": h.condition,
                    "last": h.last,
                    "grid": h.grid,
                    "trip": h.trip,
                },
                trace=trace,
                help="wait for the epoch the other block raises in the same iteration before it waits "
                "(`flag >= base + it + 1`), never for one it raises only after waiting on this block",
            )
        )
    return out


def _spins(an):
    """The progress engine's spin waits (`checks/protocol.spin_waits`): a spin on a flag in
    global memory that the first block to pass would have to leave at the flag's initial value,
    and that no block leaves at that value."""
    from tkcheck.checks.threads import describe

    out = []
    n = an.threads.n
    for sw in P.spin_waits(an).never:
        who = describe(an.threads.executing(sw.spin) or frozenset(), n)
        ga = sw.poll.global_access
        cond = sw.spin.spin.cond if sw.spin.spin is not None else None
        shown = str(E.substitute(cond, {ga.result: E.Var(sw.flag + "[...]", E.PARAM)})) if cond and ga else "?"
        if sw.element is not None:
            out.append(_unwritten(an, sw, who, shown))
            continue
        trace = [
            TraceStep(
                "every block",
                f"{who} polls `{sw.flag}` (`{(ga.text if ga else None) or sw.poll.api}`): it holds {sw.initial}, "
                f"its value before any block raised it",
                sw.poll.location,
            ),
            TraceStep(
                "every block",
                f"the loop goes on while `{shown}`, which holds at {sw.flag} == {sw.initial} for every block index: "
                "no block leaves the spin first",
                sw.spin.location,
                blocked=True,
            ),
        ]
        trace += [
            TraceStep(
                "every block",
                f"`{(r.global_access.text if r.global_access else None) or r.api}` would raise `{sw.flag}`, "
                "but only after its block has left the spin: never reached",
                r.location,
            )
            for r in sw.raises[:3]
        ]
        out.append(
            finding(
                "TK502",
                f"{who} spins until `{sw.flag}` allows it (`{shown}` must become false), but no block of the "
                f"grid can leave that loop first: every write of `{sw.flag}` comes after its block has passed the "
                f"spin, so the first block to pass would read {sw.initial} (the flag's value before the launch, "
                f"assuming the host zeroes it), and at {sw.initial} the loop goes on for every block index: every "
                "block spins forever",
                sw.spin.location,
                related=[related(r, "the only write of the flag, after the spin") for r in sw.raises[:3]],
                witness={
                    "flag": sw.flag,
                    "initial": sw.initial,
                    "condition": shown,
                    "assumption": "flag zeroed before the launch",
                },
                trace=trace,
                help=f"wait for the value the blocks before this one produce: the first block must find its "
                f"turn at `{sw.flag}` == {sw.initial} (split s waits for s when each earlier split adds one)",
            )
        )
    return out


def _unwritten(an, sw, who: str, shown: str):
    """A spin whose poll names an element of the flag that no write of the kernel names
    (`protocol._unwritten_element`)."""
    ga = sw.poll.global_access
    flag = f"{sw.flag}[{sw.element}]"
    when = ", ".join(f"{k.split(' = ')[0].lstrip('?')} = {v}" for k, v in sorted((sw.reached_with or {}).items()))
    trace = [
        TraceStep(
            "a block",
            f"{who} reaches the poll in the first iteration of the loops around it"
            + (f" ({when})" if when else "")
            + f", naming `{flag}` (`{(ga.text if ga else None) or sw.poll.api}`)",
            sw.poll.location,
        ),
        TraceStep(
            "a block",
            f"no write of `{sw.flag}` in the kernel names element {sw.element}: it keeps {sw.initial}, its value "
            f"before the launch, and the loop goes on while `{shown}`",
            sw.spin.location,
            blocked=True,
        ),
    ]
    return finding(
        "TK502",
        f"{who} spins until `{flag}` allows it (`{shown}` must become false), but no write of the kernel ever "
        f"names `{flag}`: it keeps {sw.initial} (its value before the launch, assuming the host zeroes it), at "
        f"which the loop goes on; a block that reaches this poll in the first iteration of its loops"
        + (f" ({when})" if when else "")
        + " spins forever",
        sw.spin.location,
        related=[related(sw.poll, f"the poll of `{flag}`")],
        witness={
            "flag": flag,
            "initial": sw.initial,
            "condition": shown,
            "reached_with": when,
            "assumption": "flag zeroed before the launch",
        },
        trace=trace,
        help=f"raise `{flag}` where the block that owns it is done (the first tile publishes its prefix too)",
    )


def _roles(an):
    c = classify(an)
    if c is None or c[0] != "TK502":
        return []
    code, ri, e, others = c
    ex = P.explore(an)
    sizes = ", ".join(f"{k} = {v}" for k, v in sorted(ex.params.items()))
    if e.kind == "sync":
        arrived, gen = P.sync_state(ex, e.sync[0])
        msg = (
            f"{ex.roles[ri].name} waits at {P.blocked_on(e)} (`{e.op.api}`, {e.sync[1]} threads) but no role "
            f"will complete that generation: {arrived} thread(s) have arrived and no role that could still "
            "arrive there is left" + (f" (with {sizes})" if sizes else "")
        )
    else:
        msg = (
            f"{ex.roles[ri].name} waits on '{P.elem_str(e.elem)}' (parity {e.parity}) but no role will complete "
            f"that phase: every role that signals it has finished" + (f" (with {sizes})" if sizes else "")
        )
    return [
        deadlock_finding(
            an,
            code,
            ri,
            e,
            others,
            msg,
            "hand each turn to the named barrier the other group waits at, so that every generation a "
            "group syncs on gets its count of threads"
            if e.kind == "sync"
            else "make the producing and consuming roles run the same number of iterations over "
            "the ring, and signal every phase that is waited on",
        )
    ]


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 4, 0); }
    }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) {
            for (int k = 0; k < n - 1; k++) {      // one load short
                wait(empty[k % 2], ((k / 2) % 2) ^ 1);
                tma::expect(full[k % 2], a[k % 2]);
                tma::load_async(a[k % 2], A, {0, 0, 0, k}, full[k % 2]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            wait(full[k % 2], (k / 2) % 2);
            if (laneid() == 0) arrive(empty[k % 2]);
        }
    }
}
"""
)

_GOOD = _BAD.replace("for (int k = 0; k < n - 1; k++) {      // one load short", "for (int k = 0; k < n; k++) {")

RULE = Rule(
    code="TK502",
    name="wait-never-satisfied",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    explains={"hang": Explains(5, "roles disagree on the trip count: one side waits for a phase never produced")},
    summary="A role waits for a barrier phase that no remaining role will complete",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Abstracts each warp role (the threads with the same guard pattern) into a
program of waits, arrivals, expects, loads and barriers, unrolls its loops
with small concrete sizes (every ring wraps at least twice) and explores the
interleavings of the roles. A reachable state in which a role waits on a
barrier phase while every role that could still signal that barrier has
finished is reported with the interleaving that leads to it.

Named barriers run in the same exploration with their PTX semantics
(`bar.sync id, n` / `group<N>::sync(id)` wait, `bar.arrive id, n` /
`group<N>::arrive(id)` count without waiting, 32 threads per arriving warp,
a generation completes at the count): a role blocked at a named barrier that
no other role will arrive at again is reported the same way (a ping-pong
consumer that hands the turn back to its own barrier).

Spin loops on a flag in global memory (`while (ld_acquire(&sem[t]) != s) {{}}`,
`while (*(volatile int *)&done[0] < n);`) are waits across the blocks of the grid
(`checks/protocol.spin_waits`). When every write of the flag comes after a pass of
that spin in its block (after it in the spinning thread, or after a block-wide
barrier), the first block to pass reads the flag's initial value -- taken to be 0,
the host zeroing its semaphores before the launch. If the loop's condition keeps
going at that value for every block index and launch value (z3), no block ever
passes first and every block spins: the "wait one ahead" of a serial split-K fix-up
(split s waits for s + 1 where the splits before it only make it s). Symbolic over
the blocks, for every grid size; undecided (coverage) when the flag is written
elsewhere or through an unknown address, when the loop can end otherwise (a
`break`, a `return`), inside an outer loop or under a block-uniform condition.
Such a spin (the look-back of a single-pass scan, `for (p = tile - 1; p >= 0; --p)
while (ld_acquire(&flag[p]) == 0) {{}}`) is argued element-wise (round 13,
`protocol._unwritten_element`): when some block reaches the poll in the first iteration
of the loops around it (z3 over the block index, launch values and block-uniform
unknowns such as a ticket drawn from an atomic: the values are shown) naming element
e of the flag, and no write of the kernel ever names e, the flag keeps 0 there and
that block spins forever (the first tile that never raises its flag).

C++20 atomic waiting (`cuda::atomic_ref` / `cuda::atomic` / `cuda::std::atomic`, round 13):
`a.wait(old, order)` blocks while the word equals `old` and may wake spuriously, so it is the
spin `while (a.load(order) == old) {{}}`, asked like any spin; `notify_one` / `notify_all` only
wake waiters (no event: the store before them is the release). A wait right after the waiting
thread's own store of the word (`gen.store(r + 1); ...; gen.wait(r + 1)`), when that thread is the
only one of the grid that ever writes the word (one thread of one block of a one-dimensional
launch, z3) and the value it stored keeps the loop going, waits for a change nobody makes: every
poll reads the thread's own last store. Reported with the store and the wait.

A wait for a count (`checks/counted_waits.py`, round 13): a counter every block raises with
atomic additions of constants once a round (`done.fetch_add(1)` in a loop of constant trip
count), waited for by a coordinator (`while (ld(done) < target)`, or the carried value
`seen = done.load(); while (seen < target) {{ done.wait(seen); seen = done.load(); }}`), while
the blocks then wait on a word only the coordinator writes after its wait (`gen.wait(r)` after
`gen.store(r + 1)`). In the first round that word keeps its value before the launch (0) until
the coordinator passes, so no block gets past its wait for it, and the counter holds at most the
additions before that wait (threads x blocks x amount, the grid size of the file's launches).
A target above that (`(r + 1) * G + 1`) is reached by nobody: reported at the coordinator's wait.

A loop left by a `break` on a loaded value (`for (;;) {{ v = ld_acquire(flag); if (v ==
last) break; ... }}`; `checks/versions.spin_exit`) waits for a value of the flag. Its
values are its initial one (0, the host zeroing it) and those the kernel's stores of it
write, each over its loops' counters within their trip counts. When z3 proves that none
of them lets the loop leave, every thread running it spins forever (reported, with the
values stored). When the writers' last store writes a value that leaves it (and the
writers wait for nothing the spinners hold up, and the loop's conditions over the polls
hold at that value), the loop is proved to end; otherwise undecided (coverage).

A spin on a plain (neither volatile nor atomic) `__shared__` scalar whose loop does nothing else
(`while (tail <= i) {{ }}`) is reported when its first look can read the initial value, at which the
loop goes on: the compiler may load it once and spin on a register (`checks/shared_handoff.py`,
`hoisted_spins`).

A hand-written grid barrier (`checks/grid_barriers.py`): one thread of every block
arrives on a counter (`atomicAdd(count, 1)`), the block whose old value passes the
release test resets the counter and raises a word, the others spin until that word
changes from the value they read before arriving. Its instances are followed in
program order over the grid size N (z3; the counter zeroed before the launch): when
the N arrivals of an instance read c .. c + N - 1 and none of them passes the test
for any N (`old == gridDim.x`, or a counter never reset whose second instance starts
at N), no block raises the word and every block spins forever.

Spin locks (`checks/locks.py`): a lock word taken by a spin on a CAS or exchange
starts free (zeroed before the launch); when neither the take nor any release ever
writes the free value back (z3: `atomicExch(lock, 1)` where 0 frees it), the
second acquisition -- a second thread of the block, or the holder of a second
block -- spins forever. A lock whose first release writes the free value is
decided freed; a release of an unknown value is undecided.

Epoch flags (`checks/epochs.py`, round 12): per-block flags raised once per iteration of a
loop with a value that grows with the iteration (`st_release(&flag[b], base + it + 1)`) and
waited on by spins of other blocks inside the same loop (`while (ld_acquire(&flag[b + 1]) <
base + it + 1) {{}}`): each wait passes at the raise of the smallest writer iteration whose value
ends its loop. The launch's instance (the grid size of the file's launches, the loop's constant
trip count, launch values in the epochs at 0, each flag holding before the launch the value its
raise gives iteration -1) is run block by block as far as each can go; a block left at a wait is
reported, with the chain of blocks that wait on one another: a wait for an epoch the neighbour
raises only after waiting on this block (a cyclic wait), or one no raise of the whole run
reaches (waiting one epoch too far in the last iteration). A run that ends proves nothing for
other grids or trip counts: the spin stays undecided (coverage, saying what was run).

## Why is this bad?
The waiting warps spin forever: the kernel hangs, and compute-sanitizer only
reports a timeout. Typical causes are roles disagreeing on the trip count
(the producer loads one stage fewer than the consumers wait for) or a signal
under a condition that is false for the last iteration.

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
