"""Spins that re-load one word of global memory (issue 25, round 16, branch `r16-atomicwait`).

The C++20 atomic-wait idiom (libcu++ `cuda::atomic_ref` / `cuda::atomic`, also PTX or volatile
loads written the same way) tests a value the body loads at its end, not at its top::

    int v = a.load(acquire);                 // the value of iteration 0
    while (v != want) {                      // the spin's condition: a carried value
        a.wait(v, acquire);                  // a blocking read: returns once the word != v
        v = a.load(acquire);                 // the value of the next iteration
    }

Two semantics, asked by the progress engine (`protocol.spin_waits`), none in a rule:

* **A spin on one word** (`word_poll`): every loaded value the condition names is a load of one
  word W (same kernel pointer and the same element, `index`, or the pointer itself, `where == ""`)
  -- the load before the loop (same thread guard, the loops around the spin), the load in the
  body whose value the next iteration tests (`SpinFacts.carried`), or a load in the body. The
  condition then tests "the value W holds" in every iteration: it is rewritten over the body's
  load (its `result`), the poll. When the loop ends, the last value loaded from W leaves it.
* **The blocking read inside it** (`covered_wait`): `a.wait(v)` blocks while W == v, and v is a
  value at which the spin goes on; a value of W that ends the spin differs from v, so the wait
  returns whenever the spin could end: its progress is the spin's question, not one of its own.

And one progress question over the values stored (`awaited_never`): the spin of some block never
ends when neither W's value before the launch (0: the host zeroes it, stated) nor any value any
write of W in the kernel stores ends it. Each write's value is taken over its own block, thread
and loop indices (renamed apart from the spinner's: the writer is another block) within its loops'
trip counts, and its element is not compared (every write of the pointer counts: more values, so
"none ends it" stays sound). The spinning block is a witness: each block index the condition
names is tried from 0 up to the launch's extent along it (at most 16: a small instance; the first
found is reported, with its index). The extent is the grid every `<<<>>>` launch of the kernel in
the file gives (`KernelModel.grid_dims`, or the block count of a one-dimensional launch); with no
launch known the question stays open (a block past the launch's grid proves nothing). Undecided (coverage) when
a write's value is not known (a read-modify-write, an unknown operand), a write's address is not
known, an unmodelled call runs, the loop can end otherwise, the spin sits in another loop, or the
condition names values other than the block index and W's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

BLOCK_VARS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_TRIED = 16  # block indices tried per dimension the condition names


@dataclass(frozen=True)
class WordPoll:
    """A spin whose condition tests the value one word holds (module docstring)."""

    spin: ir.Op
    poll: ir.Op  # the body's load whose value the condition tests (after the rewrite)
    loads: tuple[ir.Op, ...]  # every load of the word the condition named
    cond: E.Expr  # the spin's condition over `poll.global_access.result`


def _same_word(a: ir.GlobalAccessFacts, b: ir.GlobalAccessFacts) -> bool:
    if a.base is None or a.base != b.base:
        return False
    if a.where == "" and b.where == "":
        return True
    return a.index is not None and a.index == b.index and not a.index.is_opaque()


def word_poll(an: Analysis, sp: ir.Op) -> WordPoll | None:
    """The spin `sp` as a test of one word's value; None when its condition names anything loaded
    but that word (or no load at all)."""
    facts = sp.spin
    if facts is None or facts.cond is None or not sp.loops:
        return None
    lid = sp.loops[-1]
    outer = sp.loops[:-1]
    loads = {
        o.global_access.result: o  # type: ignore[union-attr]
        for o in an.model.ops
        if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.result
    }
    carried = dict(facts.carried)
    named: dict[str, ir.Op] = {}
    poll: ir.Op | None = None
    for v in facts.cond.free_vars():
        if v.kind != E.OPAQUE:
            continue
        res = carried.get(v.name, v.name)
        ld = loads.get(res)
        if ld is None:
            return None
        if ld.loops == sp.loops and ld.order > sp.order:
            poll = ld if poll is None or ld.order > poll.order else poll
        elif not (ld.loops == outer and ld.order < sp.order and ld.guard.thread == sp.guard.thread):
            return None  # a value loaded elsewhere (in a nested loop, by other threads)
        if lid in ld.loops and ld.loops != sp.loops:
            return None
        named[v.name] = ld
    if poll is None or not named:
        return None
    pga = poll.global_access
    assert pga is not None
    if any(not _same_word(ld.global_access, pga) for ld in named.values()):  # type: ignore[arg-type]
        return None
    if pga.index is not None and pga.index.depends_on(E.LOOP):
        return None  # another element each iteration: no one word
    assert pga.result is not None
    value = E.Var(pga.result, E.OPAQUE)
    cond = E.substitute(facts.cond, {n: value for n in named})
    loads_of = {id(o): o for o in named.values()}
    return WordPoll(sp, poll, tuple(sorted(loads_of.values(), key=lambda o: o.order)), cond)


def covered_wait(an: Analysis, sp: ir.Op) -> bool:
    """`sp` is the SPIN of an `a.wait(v)` directly in the body of a spin on the same word whose
    condition goes on at v (`v` is the value that spin tests): the wait returns whenever that spin
    could end (module docstring)."""
    facts = sp.spin
    if facts is None or facts.cond is None or len(sp.loops) < 2 or not sp.api.endswith("::wait"):
        return False
    cond = facts.cond
    if not (isinstance(cond, E.Bin) and cond.op == "==" and isinstance(cond.a, E.Var)):
        return False
    mine = [
        o
        for o in an.model.ops
        if o.kind == ir.GLOBAL_LOAD
        and o.loops == sp.loops
        and o.global_access is not None
        and o.global_access.result == cond.a.name
    ]
    outer = [o for o in an.model.ops if o.kind == ir.SPIN and o.loops == sp.loops[:-1]]
    if len(mine) != 1 or len(outer) != 1:
        return False
    wp = word_poll(an, outer[0])
    ofacts = outer[0].spin
    if wp is None or ofacts is None or ofacts.cond is None:
        return False
    if not _same_word(mine[0].global_access, wp.poll.global_access):  # type: ignore[arg-type]
        return False
    # the value the wait compares with is the one the outer condition tests, as written
    # (`v != want` tests v; the wait's `v` is the same expression)
    return any(x == cond.b for x in _operands(ofacts.cond))


def _operands(c: E.Expr) -> list[E.Expr]:
    return [c.a, c.b] if isinstance(c, E.Bin) and c.op in ("==", "!=", "<", "<=", ">", ">=") else []


@dataclass(frozen=True)
class Awaited:
    """awaited_never's verdict: `block` the spinning block's indices found (never: a hang)."""

    never: bool
    why: str = ""
    block: tuple[tuple[str, int], ...] = ()
    writes: tuple[tuple[ir.Op, E.Expr], ...] = ()


def apart(e: E.Expr, tag: str) -> E.Expr:
    """e with its block, thread and loop indices renamed (another thread's values)."""
    sub = {v.name: E.Var(f"{v.name}'{tag}", v.kind) for v in e.free_vars() if v.kind in (E.PARAM, E.THREAD, E.LOOP)}
    sub = {k: v for k, v in sub.items() if k in BLOCK_VARS or v.kind != E.PARAM}
    return E.substitute(e, sub)


def _extent(an: Analysis, name: str) -> int | None:
    """The blocks along `blockIdx.<d>` every launch of the kernel in the file gives; None: not known."""
    m = an.model
    i = BLOCK_VARS.index(name)
    if m.grid_dims is not None:
        return m.grid_dims[i]
    launches = m.grid.launches_of(m.name.split("<")[0]) if m.grid is not None else []
    if name == "blockIdx.x" and launches and all(g.blocks is not None for _, g in launches):
        return min(g.blocks for _, g in launches)  # type: ignore[type-var]
    return None


def awaited_never(an: Analysis, wp: WordPoll) -> Awaited:
    """Does some block's spin never end, whatever the writes of the word store (module
    docstring)? `never` True with the witness block; False with why it stays open."""
    from .. import solver
    from .versions import _bounds, _stored, _writes

    sp = wp.spin
    facts = sp.spin
    assert facts is not None
    body = [o for o in an.model.ops if sp.loops[-1] in o.loops]
    if len(sp.loops) != 1:
        return Awaited(False, "a spin inside a loop: the turns of its iterations are not followed")
    if facts.breaks or any(o.kind in (ir.EXIT, ir.CALL) for o in body):
        return Awaited(False, "the loop can end otherwise (a break, a return or an unmodelled call)")
    if not sp.guard.exact or not an.threads.executing(sp):
        return Awaited(False, "which threads run the spin is not known")
    pga = wp.poll.global_access
    assert pga is not None and pga.base is not None and pga.result is not None
    writes = _writes(an, pga.base)
    if writes is None:
        return Awaited(False, "a write whose address is not known may be the word's")
    if not writes:
        return Awaited(False, "no thread of this kernel writes the word (the host or another kernel may)")
    stored: list[tuple[ir.Op, E.Expr, tuple[E.Expr, ...]]] = []
    for i, w in enumerate(writes):
        v = _stored(an, w)
        if v is None:
            return Awaited(False, "a write of the word stores a value not known (a read-modify-write, an operand)")
        tag = f"w{i}"
        stored.append((w, apart(v, tag), tuple(apart(b, tag) for b in _bounds(an, w))))
    goes_on = wp.cond
    names = {v.name for c in (goes_on, *sp.guard.uniform) for v in c.free_vars()}
    names.discard(pga.result)
    blocks = sorted(n for n in names if n in BLOCK_VARS)
    own = {an.model.loops[sp.loops[-1]].counter.name} if sp.loops[-1] in an.model.loops else set()  # type: ignore[union-attr]
    if any(n not in BLOCK_VARS and n not in own for n in names):
        return Awaited(False, "the condition names values other than the block index and the word's")
    if len(blocks) > 2:
        return Awaited(False, "the condition names three block indices")
    extents = []
    for n in blocks:
        dim = _extent(an, n)
        if dim is None:
            return Awaited(False, "the grid's extent along the block index the condition names is not known")
        extents.append(range(min(dim, _TRIED)))
    value = E.Var(pga.result, E.OPAQUE)
    for combo in itertools.product(*extents):
        env = {n: E.Const(c) for n, c in zip(blocks, combo)}
        here = E.substitute(goes_on, env)
        if any(solver.always(E.substitute(u, env)) is not True for u in sp.guard.uniform):
            continue
        if solver.always(E.substitute(here, {value.name: E.Const(0)})) is not True:
            continue
        if all(solver.always(E.substitute(here, {value.name: v}), assume=b) is True for _w, v, b in stored):
            return Awaited(True, block=tuple(zip(blocks, combo)), writes=tuple((w, v) for w, v, _b in stored))
    return Awaited(False, "a block may pass first; the turns of the later blocks are not followed")


# ------------------------------------------------- a plain load spun on ----


@dataclass(frozen=True)
class HoistedPoll:
    """A spin whose loop does nothing but a plain (not volatile, not atomic) load of one word of
    global memory, whose first look may see the word's value before the launch (0) at which the
    loop goes on: the compiler may load the word once (nothing in the loop tells it another thread
    changes it) and spin on a register -- a hang (`hoisted_poll`)."""

    spin: ir.Op
    read: ir.Op  # the plain load
    word: str  # the kernel pointer
    initial: int
    reached_with: tuple[tuple[str, int], ...]  # values of the block's unknowns at the first look


def hoisted_poll(an: Analysis, sp: ir.Op) -> HoistedPoll | None:
    """A spin on a plain global load (`do { w = status[i]; } while ((w >> 30) == 0);`) that may
    spin on a register for ever. Proved when: the loop holds that load and nothing else (no call,
    nothing the walk did not model, no `break`); its condition, at the word's value before the
    launch (0: the host zeroes it, stated), holds whatever else it names; some block reaches the
    first look (z3 witness over the block's unknowns, the loops around the spin at their first
    iteration, as `protocol._unwritten_element` asks); nothing before the first look can order
    another block's store of the word before it (no wait, spin, call, acquire, exit or grid barrier
    in any thread of the block before it, so some run reads the word before any other block writes
    it); and
    no write of the base earlier in the kernel's program order (the block's own, ordered before the
    look by program order or a barrier) names the element read (z3, the writer's thread renamed
    apart). None otherwise: the spin stays the progress engine's open question."""
    from .. import solver
    from .happens_before import acquires
    from .shared_handoff import _unmodelled_in

    facts = sp.spin
    m = an.model
    if facts is None or facts.cond is None or facts.breaks or not sp.loops or not sp.guard.exact:
        return None
    own = sp.loops[-1]
    inside = [o for o in m.ops if own in o.loops and o is not sp]
    if len(inside) != 1 or _unmodelled_in(an, own):
        return None
    rd = inside[0]
    ga = rd.global_access
    if rd.kind != ir.GLOBAL_LOAD or ga is None or ga.form != "plain" or ga.value is None or ga.base is None:
        return None
    one_word = ga.index is None and ga.where == ""  # `*flag`: one address for the grid
    if (ga.index is None and not one_word) or (ga.index is not None and ga.index.is_opaque()) or rd.loops != sp.loops:
        return None
    # the load's value as the condition names it: itself, the value a `do { } while` carries from
    # the body's load into the next test, and the variable's uninitialised value the walk gives
    # the first test of a `do` loop (which runs its body first whatever it holds)
    zero = {ga.value} | {prev for prev, src in facts.carried if src == ga.value}
    zero |= {v.name for v in facts.cond.free_vars() if v.name.startswith("?uninit ")}
    if not ({v.name for v in facts.cond.free_vars()} & ({ga.value} | {p for p, _ in facts.carried})):
        return None
    n = an.threads.n
    spinners = an.threads.executing(sp)
    if n is None or not spinners:
        return None
    # the condition at the word's value before the launch, for every value of the rest
    c0 = E.substitute(facts.cond, {name: E.Const(0) for name in zero})
    if any(v.name.startswith("?") for v in c0.free_vars()):
        return None  # another loaded or unknown value in the test
    if solver.always(c0, assume=(sp.guard.thread,)) is not True:
        return None
    # the loops around the spin at their first iteration, and the block's conditions there
    first = first_iteration(m, sp, plain_loops=True)
    if first is None:
        return None
    env, conds = first
    if any(c.is_opaque() or c.depends_on(E.LOOP) or c.depends_on(E.THREAD) for c in conds):
        return None
    if m.grid_dims is not None:  # the witness block inside the launch's grid
        conds += [E.binop("<", E.Var(b, E.PARAM), E.Const(d)) for b, d in zip(BLOCK_VARS, m.grid_dims)]
    seen = solver.witness(E.conj(*conds), an.solver_timeout_ms) if conds else {}
    if seen is None:
        return None
    # the way to the first look, in any thread of the block (a barrier passes on what another
    # thread acquired): nothing that may order another block's store before it
    for o in m.ops:
        if o.order >= rd.order or own in o.loops:
            continue
        if o.guard.uniform and not any(c.is_opaque() for c in o.guard.uniform):
            # in blocks other than the witness's (`if (blockIdx.x == 0) { ...; return; }`)
            theirs = [E.substitute(c, env) for c in o.guard.uniform]
            if not solver.feasible(E.conj(*conds, *theirs), an.solver_timeout_ms):
                continue
        if o.kind in (ir.SPIN, ir.CALL, ir.MBAR_WAIT, ir.EXIT) or acquires(o):
            return None
        if o.kind == ir.SYNC and o.sync_kind not in ("block", "warp"):
            return None
        if o.kind not in (ir.SYNC, ir.SMEM_ACCESS, ir.GLOBAL_LOAD, ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL, ir.FENCE):
            return None  # an op this question does not follow
    # no earlier write of the block names the element read at the first look
    idx = E.substitute(ga.index, env) if ga.index is not None else None
    tid = E.Var("tid", E.THREAD)
    for w in m.ops:
        wga = w.global_access
        if w.kind not in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL, ir.TMA_STORE) or w.order >= rd.order:
            continue
        if wga is None or wga.base is None:
            return None
        if wga.base != ga.base:
            continue
        if w.guard.uniform and not any(c.is_opaque() for c in w.guard.uniform):
            theirs = [E.substitute(c, env) for c in w.guard.uniform]
            if not solver.feasible(E.conj(*conds, *theirs), an.solver_timeout_ms):
                continue  # another block's write: nothing orders it before the look
        if idx is None or wga.index is None or wga.index.is_opaque() or w.guard.blind:
            return None  # an earlier write of the one word (or of an element not known)
        ren = {
            v.name: E.Var(f"{v.name}'w", v.kind)
            for e in (wga.index, w.guard.thread)
            for v in e.free_vars()
            if v.kind in (E.THREAD, E.LOOP)
        }
        tw = E.Var("tid'w", E.THREAD)
        same = E.conj(
            E.substitute(w.guard.thread, ren),
            E.binop("==", E.substitute(wga.index, ren), idx),
            E.binop("<", tw, E.Const(n)),
            E.binop("<", tid, E.Const(n)),
            sp.guard.thread,
            *conds,
        )
        if solver.always(E.negate(same), an.solver_timeout_ms) is not True:
            return None
    shown = tuple((k, v) for k, v in sorted(seen.items()) if isinstance(v, int) and not isinstance(v, bool))
    return HoistedPoll(sp, rd, ga.base, 0, shown)


def first_iteration(
    m: ir.KernelModel, sp: ir.Op, plain_loops: bool = False
) -> tuple[dict[str, E.Expr], list[E.Expr]] | None:
    """The loops around a spin (its own loop aside) at their first iteration: (each counter at 0,
    the conditions that make that iteration run and sp's block-uniform guard there). None when a
    loop has no counter, or, with `plain_loops`, a data-dependent exit (`Loop.continues`)."""
    env: dict[str, E.Expr] = {}
    conds: list[E.Expr] = []
    for lid in sp.loops[:-1]:
        lp = m.loops.get(lid)
        if lp is None or not isinstance(lp.counter, E.Var) or (plain_loops and lp.continues):
            return None
        env[lp.counter.name] = E.Const(0)
        if lp.trip is not None:
            conds.append(E.binop("<", E.Const(0), E.substitute(lp.trip, env)))
        if lp.cond is not None:
            conds.append(E.substitute(lp.cond, env))
    conds += [E.substitute(c, env) for c in sp.guard.uniform]
    return env, conds
