"""Reads validated by a version word, and spins on a value that writers store a bounded number
of times (issue 25, round 12, branch `r12-seqlock`).

Two semantics of global memory that no one synchronisation op carries:

* **An optimistic read validated by a version re-read** (`versions(an)`): in one iteration a
  reader loads a version word V (s1), loads data, loads V again (s2), and keeps what it read
  only under a condition that implies `s1 == s2` (an op's guard after the second load, or the
  exit of a retry loop). The writer brackets its data stores with two stores of V in one
  iteration: an opening store before them and a closing store after. The data the reader keeps
  is one version's exactly when (PTX memory model, fences and release / acquire at gpu scope):
  the opening store is ordered before the data stores (a gpu-scope fence after it, a barrier
  carrying the order to the storing threads), the data stores before the closing store (a
  release, or a gpu-scope fence), the first load before the data loads (an acquire, or a fence),
  the data loads before the second load (a gpu-scope fence; an acquire of the second load orders
  nothing before it), the data loads between the two loads at all, and the condition rejects
  every value an opening store writes (an odd number). Each missing piece is a `Torn` read with
  the pair of events it leaves unordered; a piece whose answer is not known is undecided
  (coverage), never a finding.
* **A spin left by a `break` on a loaded value** (`spin_exit(an, spin, body)`, asked by
  `protocol.spin_waits`): `for (;;) { v = load(F); ...; if (v == K) break; }` waits for a value of
  F. The values F can hold are its initial value (taken to be 0, the host zeroing it) and the
  values the kernel's stores of F write (each an Expr over its loops' counters, within their trip
  counts). When z3 proves that none of them lets the loop leave, every thread running it spins
  forever (a hang); when the last store of F writes a value that leaves it, every later poll
  reads that value and the loop ends (proved); else undecided with the reason.

No rule names here: the rules word `versions(an).torn` and `protocol.spin_waits(an).unreached`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

_FIRST, _SECOND = "?version@first", "?version@second"


@dataclass
class ValidatedRead:
    """A reader's iteration: two loads of the version word around its data loads, and the
    condition under which it keeps the data (over the version values `_FIRST`, `_SECOND`)."""

    version: str  # the kernel pointer of the version word
    first: ir.Op
    second: ir.Op
    data: list[ir.Op]  # the data loads kept under `accept`
    accept: E.Expr
    where: ir.Op  # the op (or the retry loop's SPIN) that keeps them


@dataclass
class Torn:
    """A piece of the version protocol missing: the reader may keep data of two versions."""

    read: ValidatedRead
    # odd: the condition keeps a value an opening store writes; unbracketed: a data load after
    # the second load; reader-first / reader-second: a data load not ordered after the first load
    # / before the second; writer-open / writer-close: a data store not ordered after the opening
    # store / before the closing store
    kind: str
    at: ir.Op  # the data load (reader's pieces) or data store (writer's) the finding is shown at
    other: ir.Op  # the other end of the unordered pair
    value: E.Expr | None = None  # odd: the opening store's value the condition keeps


@dataclass
class VersionFacts:
    reads: list[ValidatedRead] = field(default_factory=list)
    torn: list[Torn] = field(default_factory=list)
    # (the reader's first load, why): a validated read whose order is not decided (coverage)
    undecided: list[tuple[ir.Op, str]] = field(default_factory=list)


def versions(an: Analysis) -> VersionFacts:
    """The kernel's version-validated reads and what each leaves unordered (module docstring)."""
    return an.fact("versions.versions", _versions)


# ------------------------------------------------------------------ values ----


def loaded_values(an: Analysis) -> dict[str, ir.Op]:
    """Var name -> the global load (or atomic) whose value it is: the load's own result, and a
    `__shfl_sync(mask, x, c)` broadcast of it from lane c (x as lane c holds it, when the
    shuffle's threads are one warp's)."""
    return an.fact("versions.loaded_values", _loaded_values)


def _loaded_values(an: Analysis) -> dict[str, ir.Op]:
    out: dict[str, ir.Op] = {}
    for o in an.model.ops:
        ga = o.global_access
        if o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) and ga is not None and ga.result:
            out[ga.result] = o
    for o in an.model.ops:
        wc = o.warp_coll
        if o.kind != ir.WARP_COLL or wc is None or wc.instr != "shfl.sync.idx" or not wc.result:
            continue
        if len(wc.operands) != 2 or not isinstance(wc.operands[1], E.Const):
            continue
        ex = an.threads.satisfying(o.guard.thread)
        if not ex or len({t // 32 for t in ex}) != 1:
            continue
        src = min(ex) // 32 * 32 + int(wc.operands[1].value)
        v = _fold(E.substitute(wc.operands[0], {"tid": E.Const(src)}))
        if isinstance(v, E.Var) and v.name in out:
            out[wc.result] = out[v.name]
    return out


def _fold(e: E.Expr) -> E.Expr:
    """`c ? a : b` with c constant, to the branch it picks."""
    while isinstance(e, E.Ite):
        c = e.c.eval({})
        if c is None or not isinstance(c, (bool, int)):
            return e
        e = e.t if c else e.e
    return e


def _stored(an: Analysis, o: ir.Op) -> E.Expr | None:
    """The value a plain store, a flag store (`st.release`, `atomic_ref::store`), an exchange or
    a counted add writes; None when not known."""
    ga = o.global_access
    if ga is None or o.kind not in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL):
        return None
    if o.kind == ir.GLOBAL_SIGNAL and ga.atomic == "add":
        return _counted(an, o)
    if o.kind == ir.GLOBAL_SIGNAL and ga.atomic not in ("st", "exch"):
        return None
    return ga.operands[0] if len(ga.operands) == 1 and isinstance(ga.operands[0], E.Expr) else None


def _counted(an: Analysis, o: ir.Op) -> E.Expr | None:
    """The value `atomicAdd(v, c)` leaves in v when one thread is v's only writer and adds
    constants to it in one loop (or none): after the i-th add of iteration k, k * S + (the
    amounts of the adds up to it), S the iteration's sum -- from 0, the word's value before the
    launch as the spin questions take it (the host zeroes it)."""
    ga = o.global_access
    assert ga is not None
    ws = _writes(an, ga.base) if ga.base is not None else None
    if not ws or len(o.loops) > 1:
        return None
    amounts = []
    for w in sorted(ws, key=lambda x: x.order):
        wa = w.global_access
        if (
            w.kind != ir.GLOBAL_SIGNAL
            or wa is None
            or wa.atomic != "add"
            or len(wa.operands) != 1
            or not isinstance(wa.operands[0], E.Const)
            or w.guard != o.guard
            or w.loops != o.loops
        ):
            return None
        amounts.append((w, int(wa.operands[0].value)))
    ex = an.threads.satisfying(o.guard.thread)
    th = o.guard.thread
    one = (
        len(ex) == 1
        if ex is not None
        else isinstance(th, E.Bin) and th.op == "==" and str(th.a) == "tid" and isinstance(th.b, E.Const)
    )
    if not o.guard.exact or not one or not o.guard.uniform or o.guard.uniform != _one_block(o.guard.uniform):
        return None
    total = sum(a for _, a in amounts)
    upto = sum(a for w, a in amounts if w.order <= o.order)
    if not o.loops:
        return E.Const(upto)
    lp = an.model.loops.get(o.loops[0])
    if lp is None:
        return None
    return E.binop("+", E.binop("*", lp.counter, E.Const(total)), E.Const(upto))


def _one_block(uniform: tuple) -> tuple:
    """`uniform` when it names one block (`blockIdx.x == c`): one thread of one block writes."""
    ok = any(
        isinstance(u, E.Bin) and u.op == "==" and {str(u.a), str(u.b)} & {"blockIdx.x"} and not u.depends_on(E.LOOP)
        for u in uniform
    )
    return uniform if ok else ()


def _writes(an: Analysis, base: str) -> list[ir.Op] | None:
    """Every op that writes `base`; None when some write's address is not known."""
    out = []
    for o in an.model.ops:
        if o.kind in (ir.TMA_STORE, ir.CALL):
            return None
        if o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL):
            ga = o.global_access
            if ga is None or ga.base is None:
                return None
            if ga.base == base and not (o.kind == ir.GLOBAL_SIGNAL and ga.atomic == "load"):
                out.append(o)
    return out


def _bounds(an: Analysis, o: ir.Op) -> tuple[E.Expr, ...]:
    """Each loop counter of o's loops within its trip count (0 <= k < trip)."""
    out = []
    for lid in o.loops:
        lp = an.model.loops.get(lid)
        if lp is not None and lp.trip is not None:
            out.append(E.binop("<", lp.counter, lp.trip))
    return tuple(out)


# ----------------------------------------------------------- who runs what ----


def _runs_with(an: Analysis, o: ir.Op, t: int, anchor: ir.Op) -> bool | None:
    """Does thread t run o whenever it runs `anchor`? True: o's conditions are the anchor's, or
    fewer (a loop each thread leaves on its own data, `Guard.exits`, counts as shared when both
    are in it); False: t is not among o's threads; None: not known."""
    ex = an.threads.satisfying(o.guard.thread)
    if ex is None:
        return None
    if t not in ex:
        return False
    if o.guard.blind and not (o.guard.exits is not None and set(o.guard.exits) <= set(anchor.guard.exits or ())):
        return None
    if set(o.guard.uniform) <= set(anchor.guard.uniform) and set(o.guard.opaque) <= set(anchor.guard.opaque):
        return True
    return None


def _threads(an: Analysis, o: ir.Op) -> list[int]:
    """The first and last thread running o: the representatives asked."""
    ex = an.threads.satisfying(o.guard.thread)
    if not ex:
        return []
    return sorted({min(ex), max(ex)})


def _partner(an: Analysis, t: int, o: ir.Op) -> int | None:
    """The thread of o that t's access pairs with: t itself when it runs o (each thread loads the
    version for itself), else o's first thread (lane 0 loads it for the warp)."""
    ex = an.threads.satisfying(o.guard.thread)
    if not ex:
        return None
    return t if t in ex else min(ex)


def _joined(an: Analysis, between: list[ir.Op], t1: int, t2: int, anchor: ir.Op) -> bool | None:
    """A barrier among `between` that t1 and t2 both pass whenever `anchor` runs (`__syncwarp` of
    a mask naming both, a block barrier of every thread): t1's ops before it happen before t2's
    after it. None: an op there may order them otherwise (a named barrier, an mbarrier, a call,
    a barrier only one of them or not known to run)."""
    from .happens_before import in_warp_mask

    if t1 == t2:
        return True
    other = False
    for o in between:
        if o.kind in (ir.NAMED_ARRIVE, ir.MBAR_ARRIVE, ir.MBAR_WAIT, ir.CALL):
            other = True
        if o.kind != ir.SYNC:
            continue
        r1, r2 = _runs_with(an, o, t1, anchor), _runs_with(an, o, t2, anchor)
        if not (r1 and r2):
            if r1 is not False or r2 is not False:
                other = True  # one of them, or not known: a chain through a third thread may order
            continue
        if o.sync_kind == "warp":
            if t1 // 32 == t2 // 32 and in_warp_mask(o, t1) and in_warp_mask(o, t2):
                return True
            continue
        if o.sync_kind == "block":
            ex = an.threads.satisfying(o.guard.thread)
            if ex is not None and an.threads.n is not None and len(ex) == an.threads.n:
                return True
        other = True
    return None if other else False


def _fenced(an: Analysis, ops: list[ir.Op], t_from: int, t_to: int, anchor: ir.Op) -> bool | None:
    """Is a gpu-scope fence among `ops` (program order, from an op of t_from to one of t_to)
    between them in the order: run by t_from and then carried to t_to by a barrier, or run by
    t_to after a barrier from t_from? None: a fence whose threads are not known, or a barrier."""
    from .happens_before import GPU_FENCES

    unknown = False
    for i, f in enumerate(ops):
        if f.kind != ir.FENCE or f.fence_kind not in GPU_FENCES:
            continue
        r_from, r_to = _runs_with(an, f, t_from, anchor), _runs_with(an, f, t_to, anchor)
        if r_from:
            j = _joined(an, ops[i + 1 :], t_from, t_to, anchor)
        elif r_to:
            j = _joined(an, ops[:i], t_from, t_to, anchor)
        else:
            unknown = unknown or r_from is None or r_to is None
            continue
        if j:
            return True
        unknown = unknown or j is None
    return None if unknown else False


# ------------------------------------------------------------ the readers ----


def _versions(an: Analysis) -> VersionFacts:
    from .. import solver

    out = VersionFacts()
    m = an.model
    ops = sorted(m.ops, key=lambda o: o.order)
    vals = loaded_values(an)
    loads = [o for o in ops if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.base]
    seen: set[int] = set()
    for i, l1 in enumerate(loads):
        ga1 = l1.global_access
        assert ga1 is not None
        if not ga1.result or not l1.loops:
            continue
        for l2 in loads[i + 1 :]:
            ga2 = l2.global_access
            assert ga2 is not None
            if ga2.base != ga1.base or l2.loops != l1.loops or not ga2.result or id(l1) in seen:
                continue
            got = _validation(an, ops, vals, l1, l2)
            if got is None:
                continue
            seen.add(id(l1))
            accept, where = got
            _ask(an, ops, ValidatedRead(ga1.base, l1, l2, [], accept, where), out, solver)  # type: ignore[arg-type]
    return out


def _names(vals: dict[str, ir.Op], load: ir.Op) -> list[str]:
    return [n for n, o in vals.items() if o is load]


def _validation(an: Analysis, ops: list[ir.Op], vals, l1: ir.Op, l2: ir.Op):
    """(accept, where): the first condition after the second load, in the iteration, that keeps
    data only when both loads read one value -- an op's guard, or the exit of the loop (a SPIN's
    one `break`) -- over `_FIRST` / `_SECOND`; None when there is none."""
    from .. import solver

    mapping = {n: E.Var(_FIRST, E.OPAQUE) for n in _names(vals, l1)}
    mapping.update({n: E.Var(_SECOND, E.OPAQUE) for n in _names(vals, l2)})
    same = E.binop("==", E.Var(_FIRST, E.OPAQUE), E.Var(_SECOND, E.OPAQUE))
    lid = l1.loops[-1]
    cands: list[tuple[E.Expr, ir.Op]] = []
    for o in ops:
        if o.order > l2.order and o.loops[: len(l1.loops)] == l1.loops and o.guard.opaque:
            cands.append((E.conj(*o.guard.opaque), o))
    spin = next((o for o in ops if o.kind == ir.SPIN and o.loops and o.loops[-1] == lid), None)
    if spin is not None and spin.spin is not None:
        if spin.spin.goes_on is not None and spin.spin.cond is None:
            cands.append((E.negate(spin.spin.goes_on), spin))  # `if (ok) break;`
        elif spin.spin.cond is not None and not spin.spin.breaks:
            cands.append((E.negate(spin.spin.cond), spin))  # `do { ... } while (!ok);`
    for cond, where in cands:
        acc = E.substitute(cond, mapping)
        names = {v.name for v in acc.free_vars()}
        if _FIRST not in names or _SECOND not in names:
            continue
        if solver.always(E.binop("||", E.negate(acc), same)) is True:
            return acc, where
    return None


def _ask(an: Analysis, ops: list[ir.Op], rd: ValidatedRead, out: VersionFacts, solver) -> None:
    l1, l2, where = rd.first, rd.second, rd.where
    end = where.order if where.kind != ir.SPIN else max(o.order for o in ops if where.loops[-1] in o.loops) + 1
    data = [
        o
        for o in ops
        if o.kind == ir.GLOBAL_LOAD
        and o.loops[: len(l1.loops)] == l1.loops
        and l1.order < o.order < end
        and o.global_access is not None
        and o.global_access.base not in (None, rd.version)
    ]
    vwrites = _writes(an, rd.version)
    if vwrites is None:
        out.undecided.append((l1, "a write whose address is not known may be the version word's"))
        return
    written = {}
    for d in data:
        ws = _writes(an, d.global_access.base)  # type: ignore[union-attr,arg-type]
        if ws:
            written[id(d)] = ws
    rd.data = [d for d in data if id(d) in written]
    if not rd.data or not vwrites:
        return  # nothing the kernel writes is read under the version
    out.reads.append(rd)
    undecided: list[str] = []
    torn_before = len(out.torn)
    # the writers' brackets: per data store, the version stores around it in its iteration
    brackets = []
    bracketed = []
    for d in rd.data:
        mine = []
        for w in written[id(d)]:
            before = [v for v in vwrites if v.order < w.order and v.loops == w.loops]
            after = [v for v in vwrites if v.order > w.order and v.loops == w.loops]
            if before and after:
                mine.append((d, before[-1], w, after[0]))
        if len(mine) != len(written[id(d)]):
            # a store of the data outside a bracket of the version word: no sequence lock's
            # writer (another protocol, or an initialisation), which this question does not read
            undecided.append("a store of the data is not bracketed by two stores of the version word")
            continue
        brackets += mine
        bracketed.append(d)
    for d in bracketed:
        # the reader: the data between the two loads, each load ordered on its side
        if d.order > l2.order:
            out.torn.append(Torn(rd, "unbracketed", d, l2))
            continue
        for t in _threads(an, d):
            for t1 in [x for x in (_partner(an, t, l1),) if x is not None]:
                ga1 = l1.global_access
                assert ga1 is not None
                acq = ga1.sem in ("acquire", "acq_rel") and ga1.across_blocks is not False
                between = [o for o in ops if l1.order < o.order < d.order]
                ok = _joined(an, between, t1, t, d) if acq else _fenced(an, between, t1, t, d)
                if ok is False and acq:
                    ok = _fenced(an, between, t1, t, d)
                if ok is None:
                    undecided.append("the order of the first version load before a data load is not known")
                elif not ok:
                    out.torn.append(Torn(rd, "reader-first", d, l1))
                    break
            for t2 in [x for x in (_partner(an, t, l2),) if x is not None]:
                ga = d.global_access
                if ga is not None and ga.sem in ("acquire", "acq_rel"):
                    continue
                ok = _fenced(an, [o for o in ops if d.order < o.order < l2.order], t, t2, d)
                if ok is None:
                    undecided.append("the order of a data load before the second version load is not known")
                elif not ok:
                    out.torn.append(Torn(rd, "reader-second", d, l2))
                    break
    # the writers: the opening store before each data store, each data store before the closing
    for d, w1, w, w2 in brackets:
        for tw in _threads(an, w):
            for t1 in [x for x in (_partner(an, tw, w1),) if x is not None]:
                ok = _fenced(an, [o for o in ops if w1.order < o.order < w.order], t1, tw, w)
                if ok is None:
                    undecided.append("the order of the opening version store before a data store is not known")
                elif not ok:
                    out.torn.append(Torn(rd, "writer-open", w, w1))
                    break
            for t2 in [x for x in (_partner(an, tw, w2),) if x is not None]:
                ga2 = w2.global_access
                assert ga2 is not None
                mid = [o for o in ops if w.order < o.order < w2.order]
                rel = ga2.sem in ("release", "acq_rel") and ga2.across_blocks is not False
                # a release orders its own thread's stores; other threads' are the cumulative
                # publication query's (happens_before._publish_cumulative)
                ok = True if rel else _fenced(an, mid, tw, t2, w)
                if ok is None:
                    undecided.append("the order of a data store before the closing version store is not known")
                elif not ok:
                    out.torn.append(Torn(rd, "writer-close", w, w2))
                    break
    # the condition against every value an opening store writes
    for _d, w1, _w, _w2 in {id(b[1]): b for b in brackets}.values():
        v = _stored(an, w1)
        if v is None:
            undecided.append("the value the opening version store writes is not known")
            continue
        keeps = E.substitute(rd.accept, {_FIRST: v})
        ans = solver.always(E.negate(keeps), assume=_bounds(an, w1))
        if ans is None:
            undecided.append("whether the reader keeps a value the opening store writes is not decided")
        elif not ans:
            out.torn.append(Torn(rd, "odd", rd.data[0], w1, v))
    # one finding per data op and kind
    uniq, keys = [], set()
    for tr in out.torn[torn_before:]:
        k = (id(tr.at), tr.kind)
        if k not in keys:
            keys.add(k)
            uniq.append(tr)
    out.torn[torn_before:] = uniq
    if undecided and len(out.torn) == torn_before:
        out.undecided.append((l1, undecided[0]))


# ------------------------------------------------------------- the spins ----


@dataclass
class SpinUnreached:
    """A spin left by a `break` on a loaded value that no value of the flag lets it take."""

    spin: ir.Op
    poll: ir.Op  # the load whose value the exit tests
    flag: str
    exit: E.Expr  # when the loop leaves, over the flag's value (the Var `flag`)
    writes: list[ir.Op]  # every store of the flag, with the values it writes
    initial: int
    # a spin that re-loads one word and leaves by its condition (checks/awaited_values.py):
    # the spinning block found, as (block index, value) pairs; () for a loop left by a `break`
    block: tuple[tuple[str, int], ...] = ()
    by_condition: bool = False


def spin_exit(an: Analysis, sp: ir.Op, body: list[ir.Op], goes_on: E.Expr | None = None):
    """("never", SpinUnreached) | ("proved", None) | ("undecided", why) for a SPIN left by one
    `break` on data (module docstring). With `goes_on` (a loop's own condition over two loads of
    one word, `do { .. } while (s1 != s2)`), only "proved" or "undecided"."""
    from .. import solver

    facts = sp.spin
    only_proof = goes_on is not None
    if goes_on is None and facts is not None:
        goes_on = facts.goes_on
    if facts is None or goes_on is None:
        return "undecided", "the loop is left by a `break` on data, not by its condition"
    if any(o.kind in (ir.EXIT, ir.CALL) for o in body):
        return "undecided", "the loop can end otherwise (a return or an unmodelled call)"
    vals = loaded_values(an)
    names = {v.name for v in goes_on.free_vars() if v.kind == E.OPAQUE}
    polls = {n: vals[n] for n in names if n in vals and vals[n] in body}
    if not polls or len(polls) != len(names):
        return "undecided", "the loop is left by a `break` on data other than one value loaded from global memory"
    bases = {p.global_access.base for p in polls.values() if p.global_access is not None}
    if len(bases) != 1 or None in bases:
        return "undecided", "the loop's exit tests values of more than one word (or of a word not known)"
    (flag,) = bases
    assert flag is not None
    writes = _writes(an, flag)
    if writes is None:
        return "undecided", "a write whose address is not known may be the flag's"
    if not writes:
        return "undecided", "no thread of this kernel writes the flag (the host or another kernel may)"
    poll = min(polls.values(), key=lambda o: o.order)
    value = E.Var(f"{flag}[...]", E.OPAQUE)
    leaves = E.negate(E.substitute(goes_on, {n: value for n in polls}))
    stored = [(w, _stored(an, w)) for w in writes]
    if any(v is None for _, v in stored):
        return "undecided", "a write of the flag stores a value not known (an atomic update, an unknown operand)"
    if len({id(p) for p in polls.values()}) != 1 or only_proof:
        # two loads of the flag (a retry loop that leaves once both agree): they may read two
        # values, so no value set bounds the exit; the last value may still end it
        if _last_value_leaves(an, sp, body, writes, leaves, value.name, vals, poll):
            return "proved", None
        return "undecided", "the loop's exit tests two loads of the flag"
    init = 0
    never = solver.always(E.negate(E.substitute(leaves, {value.name: E.Const(init)})))
    from .awaited_values import apart

    for i, (w, v) in enumerate(stored):
        if never is not True:
            break
        assert v is not None
        # the writer's block, thread and loop indices are its own, not the spinner's (round 16:
        # `f.store(2 * b + 1)` by block b is the value block b + 1 waits for, `s == 2 * b - 1`)
        tag = f"w{i}"
        never = solver.always(
            E.negate(E.substitute(leaves, {value.name: apart(v, tag)})),
            assume=tuple(apart(b, tag) for b in _bounds(an, w)),
        )
    if never is True:
        if not _some_spinner(an, sp):
            return "undecided", "no block of the launch runs the loop"
        return "never", SpinUnreached(sp, poll, flag, leaves, writes, init)
    if never is None:
        return "undecided", "whether a value of the flag lets the loop leave is not decided"
    if _last_value_leaves(an, sp, body, writes, leaves, value.name, vals, poll):
        return "proved", None
    return "undecided", "a value some write stores lets the loop leave; that every poll sees it is not followed"


def _some_spinner(an: Analysis, sp: ir.Op) -> bool:
    """Some block of the launch (when the file launches the kernel with a known grid) runs the
    spin: its block-uniform conditions are satisfiable there."""
    from .. import solver

    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    sizes = {g.blocks for _i, g in grid.launches_of(base)} if grid is not None else set()
    if not sizes or None in sizes:
        return True
    cond = E.conj(*sp.guard.uniform) if sp.guard.uniform else E.TRUE
    for n in sizes:
        assume = (E.binop("==", E.Var("gridDim.x", E.PARAM), E.Const(n)),)
        if solver.always(E.negate(cond), assume=assume) is not True:
            return True
    return False


def _last_value_leaves(an, sp, body, writes, leaves, vname, vals, poll) -> bool:
    """The flag's last store (program order, last iteration of its loops) writes a value at which
    the loop leaves, and the iteration reaches the test there: every write of the flag is one
    thread set's, in one loop nest, with no wait before the last one in the writers' blocks that
    the spinners could hold up (the writers and spinners are other blocks, or the writers wait at
    nothing); once the flag holds that value for good, every load of it in the loop reads it and
    the conditions over those loads on the loop's ops hold."""
    from .. import solver

    last = max(writes, key=lambda w: w.order)
    if any(w.guard != last.guard or w.loops != last.loops or not w.guard.exact for w in writes):
        return False
    v = _stored(an, last)
    if v is None:
        return False
    at_end = {}
    for lid in last.loops:
        lp = an.model.loops.get(lid)
        if lp is None or lp.trip is None or lp.parent is not None and lp.parent not in last.loops:
            return False
        if solver.always(E.binop(">=", lp.trip, E.Const(1))) is not True:
            return False
        at_end[lp.counter.name] = E.binop("-", lp.trip, E.Const(1))
    final = E.substitute(v, at_end)
    if solver.always(E.substitute(leaves, {vname: final})) is not True:
        return False
    # block 0 runs the writes (a writer under another block's condition may not exist)
    if last.guard.uniform:
        runs0 = E.substitute(E.conj(*last.guard.uniform), {"blockIdx.x": E.Const(0)})
        if solver.always(runs0) is not True:
            return False
    # the writers wait for nothing the spinners hold up: a wait, spin or block barrier on their
    # path is in blocks that never run the spin
    other_blocks = solver.always(E.negate(E.conj(*(last.guard.uniform + sp.guard.uniform)))) is True
    for o in an.model.ops:
        if o.order >= last.order or not set(last.guard.uniform) <= set(o.guard.uniform):
            continue
        blocking = o.kind in (ir.SPIN, ir.MBAR_WAIT, ir.CALL, ir.EXIT) or (
            o.kind == ir.SYNC and o.sync_kind not in ("warp", "block")
        )
        if blocking or (o.kind == ir.SYNC and not other_blocks):
            return False
    # at the final value every poll of the flag in the loop reads it: the loop's conditions over
    # those polls hold, so the iteration reaches its `break`
    flag = poll.global_access.base
    at_final = {
        n: final for n, o in vals.items() if o in body and o.global_access is not None and o.global_access.base == flag
    }
    for o in body:
        for c in o.guard.opaque:
            names = {x.name for x in c.free_vars() if x.kind == E.OPAQUE}
            if not names:
                continue
            if not names <= set(at_final):
                return False
            if solver.always(E.substitute(c, at_final)) is not True:
                return False
    return True
