"""TK407: a global counter/flag raised with a relaxed reduction after bulk
stores, without release ordering."""

from tkcheck.checks import paths
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Confirm, Rule

from ._handoff import handoff_findings
from ._common import HEADER, finding, in_helper, related, user_site

_RELEASE_FENCES = ("membar_gl", "membar_sys", "membar_gpu")
# a release's scope (GlobalAccessFacts.scope, PTX's words) as libcu++ names it, for messages
_SCOPE_WORDS = {"cta": "block", "thread": "thread", "cluster": "cluster"}


def _sem(op: ir.Op) -> str | None:
    return op.global_access.sem if op.global_access is not None else None


def _text(op: ir.Op) -> str:
    """The signal or load as written, for messages."""
    ga = op.global_access
    return ga.text if ga is not None and ga.text is not None else op.api


def check(an):
    out = []
    fl = paths.flow(an)
    n = an.threads.n
    for sig in fl.ops:
        if sig.kind != ir.GLOBAL_SIGNAL or _sem(sig) not in ("relaxed", "release", "acq_rel") or not sig.guard.exact:
            continue
        ts = an.threads.executing(sig)
        if not ts:
            continue
        for st in fl.ops:
            # the store in the same iteration as the signal, or in a loop inside it that ends before
            # the signal (an MK storer's loop over output stages, then one counter bump)
            if st.kind != ir.TMA_STORE or st.order >= sig.order or st.loops[: len(sig.loops)] != sig.loops:
                continue
            si = an.threads.issuers(st)
            if not si or not st.guard.exact:
                continue
            common = sorted(si & ts)
            if not common:
                continue
            t = common[0]
            between = fl.same_iteration_between(st, sig)
            if any(
                fl.runs(o, t, sig.guard.uniform) is None
                for o in between
                if o.kind in (ir.FENCE, ir.TMA_STORE_WAIT, ir.GLOBAL_SIGNAL, ir.CALL, ir.EXIT)
            ):
                continue
            mine = [o for o in between if fl.runs(o, t, sig.guard.uniform)]
            if any(o.kind == ir.CALL for o in mine):
                continue
            # a release reduction orders the thread's earlier writes -- not bulk stores still in flight
            released = (
                _sem(sig) in ("release", "acq_rel")
                or any(o.kind == ir.FENCE and o.fence_kind in _RELEASE_FENCES for o in mine)
                or any(o.kind == ir.GLOBAL_SIGNAL and _sem(o) in ("release", "acq_rel") for o in mine)
            )
            waited = any(o.kind == ir.TMA_STORE_WAIT and not o.read_only for o in mine)
            if released and waited:
                continue
            why = []
            if not waited:
                why.append(
                    "the bulk store is not waited for (`tma::store_async_wait()`), so its writes may "
                    "not even be performed"
                )
            if not released:
                why.append(
                    "the reduction is relaxed and no release fence (`__threadfence()`, "
                    "`fence.acq_rel.gpu`) orders the stores before it"
                )
            out.append(
                finding(
                    "TK407",
                    f"{describe(frozenset([t]), n)} raises a global signal (`{_text(sig)[:40]}`) "
                    f"after the TMA store `{st.api}"
                    + (f"({st.buffer})" if st.buffer is not None else "")
                    + "`, but "
                    + "; and ".join(why)
                    + ": a consumer that sees the signal may read stale data",
                    sig.location,
                    related=[related(st, "the stores the signal publishes")],
                    witness={"thread": t, "waited": waited, "released": released},
                    help="`tma::store_async_wait();` then a release: `red.release.gpu.global.add` "
                    "(or `__threadfence()` before the relaxed reduction); readers poll with `ld.acquire.gpu`",
                )
            )
            break
    out.extend(_relaxed_polls(an, fl))
    out.extend(_published(an))
    out.extend(handoff_findings(an, "TK407", ("release", "acquire")))
    out.extend(_unprotected(an))
    out.extend(_torn(an))
    out.extend(_epoch_races(an))
    out.extend(_count_races(an))
    out.extend(_grid_races(an))
    return out


def _grid_races(an) -> list:
    """Two blocks' accesses of one element of global memory (a write among them, not both atomic)
    with no grid barrier between them, in a kernel whose blocks only grid barriers order
    (`checks/grid_data.py`)."""
    from tkcheck.checks import grid_data

    out = []
    for r in grid_data.grid_data(an).races:
        a, b = r.first, r.second
        ta = _text(a)[:50]
        tb = _text(b)[:50]
        when = {
            None: "",
            0: " in the same iteration",
            1: " one iteration later",
            -1: " some iterations later",
        }.get(r.later, "")
        elem = f" (`{r.element}`)" if r.element else ""
        if r.claims:
            when += " (when its `atomicCAS` claim succeeds: an input whose claimed element holds the compare value)"
        out.append(
            finding(
                "TK407",
                f"thread {r.first_thread} of block {r.first_block} (`{ta}`, line {a.location.row}) and thread "
                f"{r.second_thread} of block {r.second_block} (`{tb}`){when} touch one element of `{r.base}`{elem} "
                "with no grid barrier between them: in this kernel only `grid.sync()` orders global memory "
                "between blocks (a relaxed atomic and a block barrier order nothing across blocks), so the "
                "access may see the element before or after the other block's write (a data race on global memory)",
                user_site(b),
                related=[related(a, "the other block's access of the element")],
                witness={
                    "first_block": r.first_block,
                    "second_block": r.second_block,
                    "first_thread": r.first_thread,
                    "second_thread": r.second_thread,
                    "element": r.element,
                },
                help="put a `grid.sync()` between the write and the other blocks' accesses of that element "
                "(or write another slot that no block touches until the next grid barrier)",
            )
        )
    return out


def _count_races(an) -> list:
    """Global data read after a wait for a count that does not count its writer
    (`checks/counted_waits.count_races`): in the first round the wait is passed while a block that
    writes the element has not run, so the read and that block's store are unordered."""
    from tkcheck.checks import counted_waits
    from tkcheck.checks.happens_before import describe_location
    from tkcheck.model import expr as E

    out = []
    for r in counted_waits.count_races(an):
        cond = r.spin.spin.cond if r.spin.spin is not None else None
        word = E.Var(f"*{r.counter}", E.PARAM)
        shown = str(E.substitute(cond, {n: word for n in r.tested})) if cond is not None else "?"
        adds = ", ".join(f"line {a.location.row}" for a in r.adds[:3])
        out.append(
            finding(
                "TK407",
                f"block {r.waiter} reads `{describe_location(r.read)[:50]}` after its wait for a count of "
                f"`*{r.counter}` (line {r.spin.location.row}, the loop goes on while `{shown}`), but that count "
                f"does not count the block that writes it: in the first round, with block {r.late} not yet "
                f"started, the other {r.grid - 1} blocks' additions ({adds}) bring `*{r.counter}` to {r.reached}, "
                f"where the wait lets it go; block {r.late}'s store `{describe_location(r.write)[:50]}` (line "
                f"{r.write.location.row}), before its own addition, then follows the read: the read takes the "
                "value from before the store (global data announced by a counter the reader does not wait for)",
                user_site(r.read),
                related=[
                    related(r.write, "the late block's store of the element, before it counts itself in"),
                    related(r.spin, "the wait for the count"),
                ],
                witness={
                    "late_block": r.late,
                    "reader_block": r.waiter,
                    "count": r.reached,
                    "grid": r.grid,
                    "condition": shown,
                },
                help="wait for the count every writer's addition gives (one per block and round: `(r + 1) * "
                "blocks` after round r), so that the acquire of the counter synchronises with every writer's "
                "release",
            )
        )
    return out


# what each missing piece of a version-validated read leaves unordered (checks/versions.py)
_TORN = {
    "odd": (
        "the reader keeps data read under a version number that the opening store writes (`{value}`, "
        "the odd number of an update in progress): when both loads of `{ver}` read that number, the "
        "record is read while the writer stores it, and the check passes",
        "keep the data only when the first number is also even (`if (s1 & 1) continue;`), i.e. not "
        "one the writer stores before its data",
    ),
    "unbracketed": (
        "the data load comes after the second load of `{ver}`: the two loads do not bracket it, so "
        "equal numbers say nothing about the data (the writer may store it after the second load)",
        "load the version number again after the data (and a `__threadfence()`), then compare",
    ),
    "reader-first": (
        "the data load is not ordered after the first load of `{ver}` (no acquire, no gpu-scope "
        "fence between, or no barrier carrying it to this thread): it may read data older than that "
        "version",
        "load the version with `ld.acquire.gpu` (or `__threadfence()` after it), and `__syncwarp()` "
        "before other lanes read",
    ),
    "reader-second": (
        "the data load is not ordered before the second load of `{ver}` (no gpu-scope fence between: "
        "an acquire of the second load orders only what follows it): the data may be read after the "
        "version is re-read, so a torn record can pass the check",
        "`__threadfence()` between the data loads and the second load of the version",
    ),
    "writer-open": (
        "the writer's data store is not ordered after its opening store of `{ver}` (no gpu-scope fence "
        "between, or no barrier carrying it to the storing thread): a reader may see the new data "
        "before the record is marked as being written, with an even, unchanged number",
        "`__threadfence()` after the opening store of the version, then `__syncwarp()` / "
        "`__syncthreads()` before the other threads store",
    ),
    "writer-close": (
        "the writer's data store is not ordered before its closing store of `{ver}` (no release, no "
        "gpu-scope fence between): a reader may see the closing number before the data",
        "`__threadfence()` before the closing store, or store it with `st.release.gpu`",
    ),
}


def _torn(an) -> list:
    """The happens-before engine's version-validated reads (`checks/versions.py`): a piece of the
    sequence-lock protocol missing, so a reader may keep a record of two versions."""
    from tkcheck.checks.versions import versions

    n = an.threads.n
    out = []
    for tr in versions(an).torn:
        rd = tr.read
        what, fix = _TORN[tr.kind]
        who = describe(an.threads.satisfying(tr.at.guard.thread) or frozenset(), n)
        shown = str(tr.value) if tr.value is not None else ""
        rel = [related(tr.other, "the other end of the pair left unordered")]
        rel += [
            related(rd.first, f"the first load of `{rd.version}`"),
            related(rd.second, f"the second load of `{rd.version}`"),
        ]
        out.append(
            finding(
                "TK407",
                f"{who}: `{_text(tr.at)[:50]}` under the version word `{rd.version}` (read, data, read "
                f"again, kept when both reads agree): "
                + what.format(ver=rd.version, value=shown)
                + "; the reader may keep a record of two versions",
                user_site(tr.at),
                related=rel,
                witness={"version": rd.version, "piece": tr.kind, "value": shown},
                help=fix,
            )
        )
    return out


def _epoch_races(an) -> list:
    """Global data of a loop whose blocks synchronise through epoch flags (`checks/epochs.py`): a
    store and another block's access of the same element that no raise -> wait of the instance
    orders, in either direction."""
    from tkcheck.checks import epochs
    from tkcheck.checks.happens_before import describe_location

    facts = epochs.epochs(an)
    out = []
    # one finding per memory: its first race (a read of an older value before a write ahead)
    first: dict[str, object] = {}
    for r in sorted(facts.races, key=lambda r: (r.war, r.second_at[1], r.first_at[1])):
        first.setdefault(r.first.global_access.base if r.first.global_access else "", r)
    for r in [x for x in facts.races if any(x is y for y in first.values())]:
        (fb, fi), (sb, si) = r.first_at, r.second_at
        flag = r.wait.raise_.flag if r.wait is not None else (facts.raises[0].flag if facts.raises else "flag")
        if r.wait is None:
            how = f"no chain of raises and waits orders block {fb}'s access before it"
        elif r.synced is None or r.synced < 0:
            how = (
                f"block {sb}'s last wait on `{flag}[...]` of block {fb} before it (line "
                f"{r.wait.spin.location.row}) is left by the flag's value from before the launch: it synchronises "
                "with no raise"
            )
        else:
            how = (
                f"block {sb}'s last wait on `{flag}[...]` of block {fb} before it (line {r.wait.spin.location.row}) "
                f"synchronises with block {fb}'s raise of iteration {r.synced} at most, which "
                + ("comes before that read" if r.war else "does not follow that store")
            )
        if r.war:
            what = (
                f"block {sb} overwrites `{describe_location(r.second)[:50]}` in iteration {si} while block {fb} may "
                f"still read the value there in its iteration {fi} (`{describe_location(r.first)[:50]}`): {how}; "
                "the writer may run ahead of the reader by more iterations than the data has buffers"
            )
        elif r.second.kind == ir.GLOBAL_STORE:
            what = (
                f"block {sb} stores `{describe_location(r.second)[:50]}` in iteration {si}, which block {fb} stores "
                f"in its iteration {fi} too (`{describe_location(r.first)[:50]}`), but {how}: the stores race"
            )
        else:
            what = (
                f"block {sb} reads `{describe_location(r.second)[:50]}` in iteration {si}, which block {fb} stores "
                f"in its iteration {fi} (`{describe_location(r.first)[:50]}`), but {how}: the read may see an "
                "older iteration's value"
            )
        out.append(
            finding(
                "TK407",
                f"epoch flags: {what} (element {r.element}; an instance of {r.grid} blocks x {r.trip} iterations)",
                user_site(r.second),
                related=[related(r.first, "the other block's access of the element")]
                + ([related(r.wait.spin, "the wait that should order them")] if r.wait is not None else []),
                witness={
                    "first": [fb, fi],
                    "second": [sb, si],
                    "element": r.element,
                    "war": r.war,
                    "synced": r.synced,
                    "grid": r.grid,
                },
                help="wait for the epoch of the iteration whose data is read (the raise after the store: "
                "`flag >= base + it + 1`), and give the data one buffer per iteration in flight (index it by "
                "the iteration's parity) so that a block's next store cannot overwrite what a slower neighbour "
                "still reads",
            )
        )
    return out


def _published(an) -> list:
    """The happens-before engine's global queries (`checks/happens_before.py`): data written with
    plain stores, `warpgroup::store` or float atomics, then announced by a relaxed integer
    counter with no release between; and data read after a last-arriver test of a relaxed
    counter with no acquire between."""
    from tkcheck.checks.happens_before import describe_location, memory

    n = an.threads.n
    out = []
    facts = memory(an)
    for p in facts.publications:
        if p.why == "unordered":
            out.append(_unordered(an, p))
            continue
        if p.why == "after":
            out.append(_stored_after_release(an, p))
            continue
        if p.why == "after-loop":
            out.append(_stored_after_release_in_loop(an, p))
            continue
        if p.why == "after-counter":
            out.append(_written_after_counter(an, p))
            continue
        if p.why.startswith("reset-"):
            out.append(_reset_after_release(an, p))
            continue
        ga = p.signal.global_access
        scope = ga.scope if ga is not None else None
        what = (
            f"the float atomic `{_text(p.data)[:50]}`"
            if p.data.kind == ir.GLOBAL_SIGNAL
            else f"the stores `{describe_location(p.data)[:50]}`"
        )
        who = f"{describe(frozenset([p.signal_thread]), n)} raises a global counter (`{_text(p.signal)[:50]}`) " + (
            f"after the barrier that gathers {what} of {describe(p.writers, n)}" if p.gathered else f"after {what}"
        )
        out.append(
            finding(
                "TK407",
                who
                + (
                    f", but its release holds at {_SCOPE_WORDS.get(scope or '', scope)} scope only, which orders "
                    "nothing for the other "
                    "blocks that read the count, and no gpu-scope release fence (`__threadfence()`, "
                    "`fence.acq_rel.gpu`) orders the data before it: a block that sees the count may read stale data"
                    if p.why == "scope"
                    else ", but the flag is raised with a plain or volatile store, which is relaxed (it releases "
                    "nothing), and no release fence (`__threadfence()`, `fence.acq_rel.gpu`) orders the data before "
                    "it: a block whose spin sees the flag may read stale data"
                    if p.signal.kind == ir.GLOBAL_STORE
                    else ", but the counter is a relaxed atomic and no release fence (`__threadfence()`, "
                    "`fence.acq_rel.gpu`) orders the data before it: a block that sees the count may read "
                    "stale data"
                ),
                p.signal.location,
                related=[related(p.data, "the data the counter publishes")],
                witness={"thread": p.signal_thread, "writer": p.data_thread, "released": False, "scope": scope},
                help="`__threadfence();` right before the counter's `atomicAdd` (after the barrier that "
                "gathers the block's stores), or `red.release.gpu` / `cuda::atomic_ref<..., "
                "cuda::thread_scope_device>::fetch_add(1, cuda::memory_order_release)`",
            )
        )
    for a in facts.acquisitions:
        if a.poller is not None:
            out.append(_relaxed_observed_elsewhere(an, a))
            continue
        if a.how == "none":
            out.append(_read_never_acquired(an, a))
            continue
        if a.how == "before":
            out.append(_read_before_acquire(an, a))
            continue
        out.append(
            finding(
                "TK407",
                f"{describe(frozenset([a.thread]), n)} "
                + (
                    f"tests the old value of a relaxed counter (`{_text(a.observe)[:50]}`)"
                    if a.how == "last-arriver"
                    else f"spins on a flag with a {_sem(a.observe)} poll (`{_text(a.observe)[:50]}`)"
                )
                + " and then reads the data it guards "
                f"(`{describe_location(a.read)[:50]}`) with no acquire "
                f"ordering: seeing the {'count' if a.how == 'last-arriver' else 'flag'} does not order the reads "
                "after the other blocks' stores, so they may observe memory from before them",
                a.read.location,
                related=[related(a.observe, "the counter whose value the read depends on")],
                witness={"thread": a.thread, "how": a.how},
                help="`__threadfence();` after the counter test, before the data loads (or an "
                "acquiring atomic: `atom.acq_rel.gpu` / `cuda::memory_order_acq_rel`)",
            )
        )
    return out


def _read_before_acquire(an, a):
    """The happens-before engine's read of published data made before the reading thread's own
    acquire of the flag that publishes it (`Acquisition.how == "before"`)."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(frozenset([a.thread]), n)} reads `{describe_location(a.read)[:50]}` before its acquire of the "
        f"flag that publishes it (`{_text(a.observe)[:50]}`, polled by the spin after the read): the acquire "
        "orders only the reads that follow it, so this one may return the data from before the other "
        "block's release, even when the flag then shows it published",
        a.read.location,
        related=[related(a.observe, "the acquiring poll of the flag, after the read")],
        witness={"thread": a.thread, "how": a.how},
        help="read the data after the spin on the flag has seen it raised (move the load below the `ld.acquire` loop)",
    )


def _read_never_acquired(an, a):
    """Data other blocks write, read by a block that never acquires."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(frozenset([a.thread]), n)} reads `{describe_location(a.read)[:50]}`, which blocks of another "
        f"role write (`{describe_location(a.observe)[:50]}`), but no thread of its block acquires anything on the "
        "way (no spin on the flag that publishes the data, no `__threadfence()` or acquiring load or atomic): "
        "between blocks only a release -> acquire pair orders memory, so the read may see the data from "
        "before the write, or from before the slot was filled",
        user_site(a.read),
        related=[related(a.observe, "the other blocks' write of the data")] + in_helper(a.read),
        witness={"thread": a.thread, "how": a.how},
        help="wait for the flag or sequence number that publishes the data with an acquire load "
        "(`ld.acquire.gpu`, `cuda::atomic_ref::load(cuda::memory_order_acquire)`) before reading it",
    )


def _unordered(an, p):
    """A release signal that does not cover other threads' stores: no barrier orders them before
    the signalling thread's release."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(frozenset([p.signal_thread]), n)} raises a global flag or counter with release "
        f"(`{_text(p.signal)[:50]}`), but the stores `{describe_location(p.data)[:50]}` of "
        f"{describe(frozenset([p.data_thread]), n)} are not ordered before it: no barrier between "
        "them includes both threads, and a release publishes only what happens before it in the "
        "signalling thread; a block that sees the count may read stale data",
        user_site(p.signal),
        related=[related(p.data, "the stores the counter should publish")] + in_helper(p.signal),
        witness={"thread": p.signal_thread, "writer": p.data_thread, "released": True, "ordered": False},
        help="`__syncthreads();` (a barrier of every writing thread) right before the signalling "
        "thread's release, so that the release covers the whole block's stores (cumulativity)",
    )


def _stored_after_release(an, p):
    """Data stored after the release that should publish it: the flag is up before the value."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(frozenset([p.data_thread]), n)} stores `{describe_location(p.data)[:50]}` after it raised "
        f"the flag with release (`{_text(p.signal)[:50]}`), and no later release publishes the store: a "
        "release orders only the writes before it, so a block that sees the flag (and reads this data "
        "after its spin) may read the value from before the store",
        user_site(p.data),
        related=[related(p.signal, "the release that comes too early")] + in_helper(p.signal),
        witness={"thread": p.data_thread, "released": True, "order": "store after release"},
        help="store the value first, then raise the flag with release (`st.release.gpu`, "
        "`cuda::atomic_ref::store(1, cuda::memory_order_release)`)",
    )


def _stored_after_release_in_loop(an, p):
    """Data a loop's block stores after the iteration's release: no release of a later iteration
    need come (the next ticket may be past the end, the iteration may be the loop's last)."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(p.writers, n)} store `{describe_location(p.data)[:50]}` after "
        f"{describe(frozenset([p.signal_thread]), n)} raised the flag with release "
        f"(`{_text(p.signal)[:50]}`) in the same iteration of the loop, and nothing later in the "
        "iteration or after the loop releases the store; a release of a later iteration needs an "
        "iteration that may not come (a ticket past the end, the loop's last iteration), and then no "
        "release ever follows the store: a block that sees the flag (and reads this data after its "
        "spin) may read the value from before the store",
        user_site(p.data),
        related=[related(p.signal, "the release that comes too early")] + in_helper(p.signal),
        witness={"thread": p.data_thread, "released": True, "order": "store after release, last ticket"},
        help="store the data first, then `__syncthreads()` and the release (`__threadfence()` before the "
        "counter's atomic, or `red.release.gpu`) that hands the element on",
    )


def _written_after_counter(an, p):
    """Data every block writes after its last-arriver counter: the last block reads it after its
    ticket, and nothing orders another block's late write before that read."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    what = (
        f"the atomic `{_text(p.data)[:50]}`"
        if p.data.kind == ir.GLOBAL_SIGNAL
        else f"the stores `{describe_location(p.data)[:50]}`"
    )
    return finding(
        "TK407",
        f"{describe(p.writers, n)} write global data ({what}) after their block raised the counter "
        f"(`{_text(p.signal)[:50]}`) whose old value tells the last block that every block is done: "
        "the counter publishes only what each block did before it, so the last block, which reads "
        "this data after its test, may read it before another block's write and miss it",
        user_site(p.data),
        related=[related(p.signal, "the counter that comes too early")] + in_helper(p.data),
        witness={"thread": p.data_thread, "order": "write after counter"},
        help="make the write before the counter: before the block barrier and the release fence that "
        "precede the block's `atomicAdd`/`atomicInc` on the counter",
    )


def _reset_after_release(an, p):
    """A grid barrier's counter reset that the raise releasing the waiters does not publish."""
    n = an.threads.n
    ga = p.data.global_access
    counter = ga.base if ga is not None else "the counter"
    if p.why == "reset-after":
        how = f"after it raised the flag (`{_text(p.signal)[:40]}`) that releases the waiting blocks"
    else:
        how = (
            f"before it raises the flag (`{_text(p.signal)[:40]}`), but no release (`__threadfence()`, a "
            "release atomic) orders the reset before that raise"
        )
    return finding(
        "TK407",
        f"{describe(frozenset([p.data_thread]), n)} of the releasing block resets the grid barrier's arrival counter "
        f"`{counter}` (`{_text(p.data)[:40]}`) {how}: a released block's next arrival on `{counter}` may come "
        "before the reset in the counter's order, the reset erases it, and the next instance of the barrier never "
        "counts every block",
        user_site(p.data),
        related=[related(p.signal, "the raise that releases the waiting blocks")] + in_helper(p.data),
        witness={"thread": p.data_thread, "counter": counter, "order": p.why},
        help="reset the counter first, then `__threadfence()`, then raise the flag (or raise it with a release "
        "atomic): the reset must happen before any block can arrive again",
    )


def _relaxed_observed_elsewhere(an, a):
    """A relaxed poll by one thread, then another thread reads the published data after a block
    barrier: the barrier carries the observation, but nothing acquires."""
    from tkcheck.checks.happens_before import describe_location

    n = an.threads.n
    return finding(
        "TK407",
        f"{describe(frozenset([a.poller]), n)} spins on a flag with a {_sem(a.observe)} poll "
        f"(`{_text(a.observe)[:50]}`), and {describe(frozenset([a.thread]), n)} reads the data it "
        f"guards (`{describe_location(a.read)[:50]}`) after a barrier with no acquire ordering: a "
        "relaxed observation synchronises with no release, so the reads may observe memory from "
        "before the producer's stores",
        a.read.location,
        related=[related(a.observe, "the poll that sees the flag")],
        witness={"thread": a.thread, "poller": a.poller, "how": a.how},
        help="poll with an acquire load (`ld.acquire.gpu.global`, `cuda::atomic_ref::load("
        "cuda::memory_order_acquire)`), or `__threadfence();` after the spin in the polling thread, "
        "before the barrier",
    )


_ACQUIRE_FENCES = _RELEASE_FENCES + ("membar_sys",)


def _relaxed_polls(an, fl) -> list:
    """The acquire side: a global counter polled in a spin loop with a load that does not
    acquire (`ld.relaxed` / `ld.volatile` / plain `ld.global`) while the kernel raises its
    counters with a release reduction, followed by data loads of the same thread with no
    acquire fence in between: the data loads are not ordered after the producer's release."""
    m, n = an.model, an.threads.n
    out, seen = [], set()
    if not any(o.kind == ir.GLOBAL_SIGNAL and _sem(o) in ("release", "acq_rel") for o in m.ops):
        return out
    for ld in fl.ops:
        if (ld.location.row, ld.location.column) in seen:
            continue  # one finding per polling site (a helper inlined twice)
        if ld.kind != ir.GLOBAL_LOAD or _sem(ld) == "acquire" or not ld.loops or not ld.guard.exact:
            continue
        if ld.global_access is not None and ld.global_access.form == "plain":
            continue  # a plain C++ load is no poll (the compiler may hoist it out of the loop)
        spin = m.loops.get(ld.loops[-1])
        if spin is None or not spin.infinite:
            continue  # a poll: an unbounded loop left only when the loaded value allows it
        ts = an.threads.executing(ld)
        if not ts:
            continue
        for rd in fl.ops:
            if (
                rd.kind != ir.TMA_LOAD
                or rd.order <= ld.order
                or spin.id in rd.loops
                or rd.loops != ld.loops[:-1]
                or not rd.guard.exact
            ):
                continue
            common = sorted(ts & (an.threads.issuers(rd) or frozenset()))
            if not common:
                continue
            t = common[0]
            between = fl.same_iteration_between(ld, rd)
            mine = [o for o in between if fl.runs(o, t) is not False]
            if any(o.kind in (ir.CALL, ir.EXIT) for o in mine):
                break
            if any(
                (o.kind == ir.FENCE and o.fence_kind in _ACQUIRE_FENCES)
                or (o.kind == ir.GLOBAL_SIGNAL and _sem(o) in ("acq_rel", "acquire"))
                for o in mine
            ):
                break
            sem = _sem(ld)
            seen.add((ld.location.row, ld.location.column))
            ptx = _text(ld).split(";")[0]
            out.append(
                finding(
                    "TK407",
                    f"{describe(frozenset([t]), n)} polls a global counter with a {sem} load "
                    f"(`{ptx[:60]}`) and then reads the data it guards (`{rd.api}` into "
                    f"{rd.buffer}) with no acquire ordering: the counter is raised with a release reduction, but a "
                    f"{sem} load does not synchronise with it, so the data loads may observe memory from before the "
                    "producer's stores",
                    ld.location,
                    related=[related(rd, "the data load the counter should order")],
                    witness={"thread": t, "sem": sem},
                    help="poll with `ld.acquire.gpu.global` (or add `fence.acq_rel.gpu` / `__threadfence()` after "
                    "the spin loop, before the data loads)",
                )
            )
            break
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C, unsigned *flag) {
    __shared__ tile c;
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_wait();
        asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" :: "l"(flag) : "memory");
    }
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C, unsigned *flag) {
    __shared__ tile c;
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_wait();
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(flag) : "memory");
    }
}
"""
)


def _unprotected(an) -> list:
    """The happens-before engine's lock question (`checks/locks.py`): a word of global data
    stored in every block, accessed outside every held region of the kernel's spin lock."""
    from tkcheck.checks.happens_before import memory

    n = an.threads.n
    out = []
    for u in memory(an).unprotected:
        lk = u.lock
        who = describe(an.threads.executing(u.first) or frozenset(), n)
        if lk is None and u.untested is not None:
            out.append(_untested(an, u, who))
            continue
        assert lk is not None
        rel = [related(lk.take, f"the lock `{lk.word}` is taken here")]
        rel += [related(r, "the lock is released here") for r in lk.releases[:2]]
        if u.second is not u.first:
            rel.append(related(u.second, "the other access of the same word"))
        out.append(
            finding(
                "TK407",
                f"{who} accesses `{_text(u.first)[:50]}` outside the spin lock `{lk.word}` (not between the "
                f"loop that takes it at line {lk.spin.location.row} and its release), while every block "
                f"stores `{u.word}`: with two or more blocks ({u.grid}), one block's access and another's store "
                "are ordered by no release -> acquire of the lock (a data race between blocks: updates are lost)",
                user_site(u.first),
                related=rel,
                witness={"word": u.word, "lock": lk.word, "blocks": u.grid},
                help="take the lock before the read-modify-write of the shared data and release it after "
                "the last store (fence, then `atomicExch(lock, free)`)",
            )
        )
    return out


def _untested(an, u, who: str):
    """A take whose result nothing tests (`checks/locks.Untested`): no lock at all."""
    tk = u.untested.take
    rel = [related(tk, "the take whose result nothing tests")]
    rel += [related(w, "a later write of the lock word") for w in u.untested.writes[:2]]
    if u.second is not u.first:
        rel.append(related(u.second, "the other access of the same element"))
    return finding(
        "TK407",
        f"{who} accesses `{_text(u.first)[:50]}` after `{_text(tk)[:50]}` (line {tk.location.row}), whose result "
        "nothing tests: the block goes on whether or not it took the lock word, so two blocks may both be past "
        f"their takes before either writes the word again ({u.grid}); their accesses of one element are ordered by "
        "nothing (a data race between blocks: updates are lost)",
        user_site(u.first),
        related=rel,
        witness={"word": u.word, "take": _text(tk), "blocks": u.grid},
        help="spin until the take succeeds (`acquire()`, `while (atomicCAS(lock, free, taken) != free)`), or do "
        "the update only on the path where `try_acquire()` returned true",
    )


RULE = Rule(
    code="TK407",
    name="global-signal-without-release",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    # it is about the ordering of global-memory writes and counters across SMs; racecheck
    # checks shared memory only: no compute-sanitizer tool observes it
    confirm=Confirm(sanitizer=False),
    summary="A global counter or flag is raised with a relaxed reduction after stores, without release ordering",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Follows the thread that issues a global `red` / `atom` (inline PTX or CUDA's
`atomicAdd` & co., relaxed by default or `.relaxed`) back to the TMA stores it
issued earlier in the same iteration (or in a loop inside it that ends before
the signal: an MK storer's loop over its output stages), and reports the signal when, on that thread's path, the stores are
not waited for with `tma::store_async_wait()` or no release orders them before
the signal (`.release` / `.acq_rel` on the reduction, `__threadfence()`,
`fence.acq_rel.gpu`). This is the MegaKittens pattern of counters that tell
other blocks an output tile is ready. On the reading side, when the kernel raises
its counters with a release reduction, it reports a counter polled in a spin loop
with a load that does not acquire (`ld.relaxed` / `ld.volatile` / plain
`ld.global`) followed by the thread's TMA loads with no acquire fence in between.

The same contract for generic memory, from the happens-before engine
(`checks/happens_before.py`): global data written with plain stores (`p[i] = v`,
`warpgroup::store` to a global layout) or float atomics, then announced by a
relaxed integer atomic on a counter or flag (`atomicAdd`, `atomicExch`, PTX
`red.relaxed`) by the same thread or by a thread a block barrier orders after
the writers, with no gpu-scope fence (`__threadfence()`) on the path and no
release atomic -- the split-K "store partials, `__syncthreads()`, thread 0
counts the block in" shape without its fence; reported in a kernel that reads
what it counts (a last-arriver test of the atomic's old value, or a spin loop).
And the consuming side: the data read with plain loads under a test of a relaxed
counter's old value (directly or through a `__shared__` flag set from it), or
after a spin on a flag with volatile/relaxed loads, with no acquire fence between
-- also when a block barrier after the polling thread's spin hands the observation
to the other threads (a barrier carries what one thread saw; a relaxed observation
synchronises with no release). And data read *before* the acquire that would order it
(round 13): a plain load of `agg[p]` hoisted above the thread's own `ld.acquire` spin on
`flag[p]`, where the kernel publishes `agg[i]` by a release of `flag[i]` (a plain store
of the element, then the release of the same index): the acquire orders only the loads
after it, so the hoisted one may return the data from before the other block's release.

A wait for a count that does not count every writer (`checks/counted_waits.py`, round 13):
blocks store data, then count themselves in with atomic additions of one (`atomicAdd(c, 1)`,
`fetch_add(1, release)`) once a round, and a coordinator reads the data after waiting for the
counter (`while (ld_acquire(c) < need)`, or `seen = c.load(); while (seen < need) {{ c.wait(seen);
seen = c.load(); }}`). In the first round, with one block not yet started and nothing before the
read waiting for another block (no other spin, grid or cluster barrier, mbarrier wait or exit),
the other blocks' additions bring the counter to at most (adders a block) x (blocks - 1); when
the wait lets the coordinator go at such a value (z3), it reads the data before the late block
has stored its element (z3: the read and the store name one element, the late block not the
reader's): `need = (r + 1) * G - 1` waits for one block too few.

Round 11 adds three questions of the same engine. A retirement counter that is a file-scope
`__device__` variable (`atomicInc(&done_blocks, gridDim.x - 1)`) is a global atomic like one
on a kernel pointer. Data every block writes *after* its counter (a warp's `atomicMax(gmax, m)`
moved after the ticket), in a kernel whose last block reads that data after its last-arriver
test, is published by no counter: the last block may read it before another block's write
(when nothing between its test and the read may wait for other blocks). And data that blocks of
one role write (`blockIdx.x < P`: producers) read by blocks of another role none of whose
threads acquires anything in the whole kernel (no acquiring load or atomic, no gpu-scope fence,
no grid barrier, no mbarrier or call that is not followed): a consumer of a global ring that
reads a slot without waiting for its sequence number. Fields of a record in global memory
(`q->seq[slot]`, `q->payload[slot][lane]`) are memory of their own (`q->seq`, `q->payload`). A
release by each warp's lane 0 after `__syncwarp()` publishes that warp's stores: a store is
unpublished only when no signalling thread is ordered after it (ordered before some of them but
not all: undecided, which flag its reader acquires is not followed).

Global data ordered by grid barriers only (`checks/grid_data.py`, round 14): in a kernel
whose blocks nothing but `grid.sync()` orders (no gpu-scope fence, no acquire / release /
volatile access, no cluster barrier or remote mbarrier), two blocks' accesses of one element
of global memory (`p[i]` loads and stores, `atomicAdd(&p[i], v)` & co; a write among them, not
both atomic, not two plain stores) with no grid barrier between them in the same iteration of
their common loop or across its back edge: z3 finds two threads of two blocks naming one
element: a grid barrier dropped between a clear of a counter slot and another block's additions to
it, or a level loop without its barrier whose slot is cleared while another block reads it.

Global spin locks (`checks/locks.py`): the loop that takes the lock is a spin on a
relaxed read-modify-write (no acquire without the `__threadfence()` after it), the
`atomicExch` that frees it a relaxed signal (no release without the fence before
it), both read by the queries above. A word of global data (`p->f`, `*p`) stored in
every block and accessed outside the held region (between the loop and the first
release) is reported: one block's access and another's store are ordered by no
release -> acquire of the lock (assuming a launch of two or more blocks). A
libcu++ `cuda::binary_semaphore` in global memory is such a lock (`acquire()` a spin
on an exchange of 0, `release()` a release store of 1). Another thread's access is
held when block barriers order it after the holder's take and before its release
(`if (t == 0) s.acquire(); __syncthreads(); ...; __syncthreads(); if (t == 0)
s.release();`); a lock word per block (`sems[blockIdx.x % 8]`) holds data indexed per
block and thread (`acc[bucket * T + t]`) when z3 proves that two blocks naming one
element take the same word, and one such access outside the lock is reported with
two blocks and threads that name one element. A take whose result is thrown away
(`(void)s.try_acquire()`) is no lock: two blocks may both pass it, so data both then
access is reported too.

Reads validated by a version word (a sequence lock, a generation counter;
`checks/versions.py`): a reader loads the version (s1), its data, the version again
(s2), and keeps the data only under a condition that implies `s1 == s2` (a later op's
guard, or the exit of a retry loop); a writer brackets its data stores with an
opening and a closing store of the version in one iteration. The reader keeps one
version's data only when the opening store is ordered before the data stores (a
gpu-scope fence after it, a barrier carrying that to the storing threads), the data
stores before the closing store (a release or a fence), the first load before the
data loads (an acquire or a fence), the data loads before the second load (a fence:
an acquire of the second load orders nothing before it), the data loads lie between
the two loads, and the condition rejects every value an opening store writes (z3,
over the writer's loop counters: an odd number must be refused). Each missing piece
is reported at the data load (the reader's pieces) or the data store (the writer's),
with the other end of the pair; a piece whose order is not known is coverage.

A plain or volatile store of a flag that a spin of the kernel polls, of a value that can end
that spin (z3: `*(volatile unsigned *)&flag[b] = epoch`), is a signal too, a relaxed one: with
no gpu-scope fence before it, it publishes none of the data written before it (round 12).

Epoch flags (`checks/epochs.py`, round 12): blocks that synchronise point to point through
per-block flags raised once per loop iteration with a growing value (`flag[b] = base + it + 1`)
and spins of other blocks waiting for an epoch of their own iteration. On the launch's instance
(the grid size of the file's launches, the loop's constant trip count, launch values at 0),
vector clocks over the raises and waits give, for a store of global data in the loop and
another block's access of the same element (evaluated per block and iteration), whether a
raise after one reaches, through the waits, a point before the other. Neither way is a race,
reported at the second access: a wait one epoch short (`< epoch - 1`: the read sees an older
iteration's halo), or one buffer where the iterations in flight need two (a neighbour's next
store while this block still reads the current value: index the buffer by the iteration's
parity). The memory order of each hop (release, fence, acquire, the block barriers) is the
queries' above; this one asks only which iteration a wait synchronises with.

Release is cumulative only over what happens before it: a release atomic (or a
fence and a relaxed atomic) by thread 0 publishes thread 0's stores and those a
barrier orders before it. Other threads' stores with no barrier between them and
thread 0's release (the `__syncthreads()` before `red.release` dropped) are not
published: reported for data the kernel reads back, in a kernel that observes its
counters. Inline PTX in small helpers (`__device__ int ld_acquire(const int *p)
{{ asm volatile("ld.acquire.gpu.global.b32 ...") }}`, `red.release.gpu`,
`atom.acq_rel`) is modelled at each call, with the kernel pointer its address
comes from; the finding points at the helper's call.

libcu++ / C++ atomic objects are the same events (frontend/walk_atomics.py):
`cuda::atomic_ref<T, cuda::thread_scope_device>(x).fetch_add(1, order)`,
`cuda::atomic<T, scope>` / `cuda::std::atomic<T>` (system scope) objects reached
through a kernel pointer (`flags[i].load(order)`, `f->store(1, order)`), with the
order of the call's `memory_order` argument or the declared default (seq_cst),
and `cuda::atomic_thread_fence(order, scope)` a fence of its scope. The scope is
part of the order: a release or acquire at block scope (`thread_scope_block`,
`.cta`, `atomicAdd_block`) orders nothing for another block, so a counter raised
with a block-scope release is reported like a relaxed one (at cluster scope the
question stays undecided). Publication order is asked too: a value the
signalling thread stores *after* raising the flag with release (and no later
release publishes), in a kernel that reads that data after a spin on the flag.
The same order for a hand-written grid barrier's counter (`checks/grid_barriers.py`):
the releasing block must reset the arrival counter before it raises the word the
other blocks wait on, with a release between (`__threadfence()`); a reset after the
raise, or not released before it, may erase a released block's next arrival.

Not decided here (no finding either way): whether a bulk (async-proxy) store
needs an extra `fence.proxy.async.global` before a generic-proxy release — one
of the open questions listed in the MegaKittens seed; a pair with an mbarrier
operation, another atomic or an unmodelled call between its ends; an atomic
object's blocking `wait` / `notify_*` and its operators (`++`, `=`), listed as
not modelled.

Shared-memory queues handed off through volatile `__shared__` indices (a slot written, then
`tail = i + 1` stored; the other warp spins until `tail > i`, then reads): a slot access of one
loop and a conflicting access of the other that the indices would order but for a fence -- no
`__threadfence_block()` by the storing lane between the data and the index store, or by the
polling lane after its spin -- is reported too (`checks/shared_handoff.py`: the iterations of the
two loops paired through the index values).

## Why is this bad?
A relaxed reduction may become visible before the data it announces. The
consumer block sees the counter, reads the tile and gets stale values — a
race that shows up rarely and only under load.

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
