"""Ring walks: loop-carried ring state (index, phase) advanced at several sites of a task loop.

A role that uses a ring visits it as a sequence: visit n touches element n mod S and sees the
phase parity of n div S (xor the start phase). Its state variables (`s`, `ph`) are updated
only by *advance* steps (`s++; if (s == S) { s = 0; ph ^= 1; }`), wherever they sit: before
the k loop of a task, inside it (one or more an iteration), after it. Whatever the loop
structure, the state is then u^n(start) of one unit step u and one visit counter n.

`outer` recognises this for a task loop O around one inner loop I that advances the state:
its body is u^a, then (u^m)^T (I's update, T its trip count), then u^b. Each of the three
pieces is checked to be a power of one candidate u on every state u reaches from the constant
start (the orbit, finite: a ring of constant size and a parity), which is an inductive proof
that every state the loop reaches is on the orbit. The closed form g(n) = orbit[n mod p] is
canonical (`recurrence.canonical_form`). At the task's start the state is g(B) with B the
visits of the earlier tasks (`recurrence.flat_base`: a sum of a + m T + b over the tasks, no
closed form when T changes from task to task). Inside the task, values are put back into that
form where ops use them (`Walk.canonical`): the current values, as a function of the state at
a known visit X, are u^j on the orbit, so the state is g(X + j). The visit of each op on the
ring is recorded (`KernelModel.ring_visits`) for `checks/phases` (uses matched to visits).
Anything not proved stays as it was (opaque: "parity or barrier index not modelled").
"""

from __future__ import annotations

import copy
from dataclasses import replace

from ..model import expr as E
from ..model.expr import Expr
from ..recurrence import canonical_form, flat_base

MAX_ORBIT = 64


class Walk:
    """One ring walk of a task loop: slots, closed forms g and the visits named so far."""

    def __init__(self, wid, loop_id, slots, orbit, B, steps):
        self.wid = wid
        self.loop_id = loop_id  # the task loop O
        self.slots = slots  # group slots, in a fixed order
        self.orbit = orbit  # states (tuples in slot order), orbit[i] = u^i(start)
        self.p = len(orbit)
        self.B = B
        self.steps = steps  # visits of one task: (a + b, m) for a + m T + b
        n = E.Var("n@walk", E.LOOP)
        self._forms = {}
        for i, sl in enumerate(slots):
            seq = [st[i] for st in orbit]
            self._forms[sl] = canonical_form(seq + seq, 0, self.p, n)
        self._n = n
        self.xs: list[Expr] = []  # visit expressions with canonical values made so far

    def g(self, sl, x: Expr) -> Expr:
        self.note(x)
        return E.substitute(self._forms[sl], {self._n.name: x})

    def note(self, x: Expr) -> None:
        if x not in self.xs:
            self.xs.append(x)

    def canonical(self, values: dict) -> Expr | None:
        """The visit X + j whose canonical state the slots' current values are, or None."""
        for x in reversed(self.xs):
            state = {sl: E.Var(f"{sl.label}@walkstate", E.LOOP) for sl in self.slots}
            fns = {}
            canon = sorted(((self.g(sl, x), state[sl]) for sl in self.slots), key=lambda t: -len(str(t[0])))
            ok = True
            for sl in self.slots:
                v = values.get(sl)
                if not isinstance(v, Expr):
                    return None
                for c, s in canon:
                    v = E.replace_sub(v, c, s)
                if v.is_opaque() or any(fv.kind != E.PARAM and fv not in state.values() for fv in v.free_vars()):
                    ok = False
                    break
                fns[sl] = v
            if not ok:
                continue
            names = {sl: state[sl].name for sl in self.slots}
            j = _exponent(lambda st, fns=fns, names=names: _apply(fns, names, self.slots, st), self.orbit)
            if j is None:
                return None
            return x if j == 0 else E.binop("+", x, E.Const(j))
        return None

    def component(self, e):
        """e, when it is a copy of one slot's value at some visit named so far (`int k_slot =
        kv_idx;` taken before the slots moved on: a function of the state at visit x that
        equals slot c's value at x + j on every state of the orbit), as that slot's canonical
        form g_c(x + j) (smallest j); else e."""
        if not isinstance(e, Expr) or self.B not in e.free_vars():
            return e
        state = {sl: E.Var(f"{sl.label}@walkstate", E.LOOP) for sl in self.slots}
        names = {sl: state[sl].name for sl in self.slots}
        for x in reversed(self.xs):
            v = e
            for c, st in sorted(((self.g(sl, x), state[sl]) for sl in self.slots), key=lambda t: -len(str(t[0]))):
                v = E.replace_sub(v, c, st)
            if v.is_opaque() or any(fv not in state.values() for fv in v.free_vars()):
                continue
            vals = []
            for st in self.orbit:
                r = v.eval({names[sl]: st[i] for i, sl in enumerate(self.slots)})
                if r is None:
                    return e
                vals.append(int(r))
            for j in range(self.p):
                for ci, sl in enumerate(self.slots):
                    if all(vals[i] == self.orbit[(i + j) % self.p][ci] for i in range(self.p)):
                        return self.g(sl, x if j == 0 else E.binop("+", x, E.Const(j)))
            return e
        return e


def _apply(fns: dict, names: dict, slots, st) -> tuple | None:
    env = {names[sl]: st[i] for i, sl in enumerate(slots)}
    out = []
    for sl in slots:
        v = fns[sl].eval(env)
        if v is None or isinstance(v, bool) and False:
            return None
        out.append(int(v))
    return tuple(out)


def _exponent(fn, orbit) -> int | None:
    p = len(orbit)
    img = []
    for st in orbit:
        r = fn(st)
        if r is None:
            return None
        img.append(r)
    for j in range(p):
        if all(img[i] == orbit[(i + j) % p] for i in range(p)):
            return j
    return None


def _orbit(fn, x0) -> list | None:
    out = [x0]
    x = x0
    for _ in range(MAX_ORBIT):
        x = fn(x)
        if x is None:
            return None
        if x == x0:
            return out
        if x in out:
            return None  # not purely periodic: no ring walk
        out.append(x)
    return None


def outer(sw, out, slots, start, ends, nested, counter) -> list[Walk]:
    """The ring walks of the task loop whose carried values the front end left opaque (see the
    module doc): each set of slots that update only one another (a ring's index and phase; a
    phase flipped once an iteration) is tried on its own. Sets their closed forms in `out`."""
    if counter is None:
        return []
    # slots no other solver solved at the loop's own iteration (a flat sequence of `_flat_outer`
    # is solved there and stays as it is)
    todo = [sl for sl in slots if sl in out and out[sl](counter).is_opaque()]
    walks: list[Walk] = []
    for sysrec in nested:
        # every slot the inner loop changes: a set that reads a slot another solver solved is
        # left to that solver (its closed form stays)
        group = [sl for sl in slots if sl in sysrec.ends]
        if not group:
            continue
        if any(other is not sysrec and any(sl in other.ends for sl in group) for other in nested):
            continue
        for comp in _components(group, start, ends, sysrec):
            if any(sl not in todo for sl in _components_closure(comp, group)):
                continue
            w = _walk_of(sw, out, slots, start, ends, sysrec, comp, counter)
            if w is not None:
                walks.append(w)
                todo = [sl for sl in todo if sl not in comp]
    return walks


def _components_closure(comp, group) -> list:
    return comp


def _components(group, start, ends, sysrec) -> list[list]:
    """group split into sets of slots whose updates (before, in and after the inner loop)
    read only one another."""
    of = {}
    for sl in group:
        of[start[sl].name] = sl
        if sl in sysrec.starts:
            of[sysrec.starts[sl].name] = sl
        of[f"{sl.label}@walkafter"] = sl
    parent = {sl: sl for sl in group}

    def find(x):
        while parent[x] is not x:
            x = parent[x]
        return x

    for sl in group:
        for e in (sysrec.v0s.get(sl), sysrec.ends.get(sl), ends.get(sl)):
            if not isinstance(e, Expr):
                continue
            for v in e.free_vars():
                other = of.get(v.name)
                if other is not None:
                    parent[find(other)] = find(sl)
    comps: dict = {}
    for sl in group:
        comps.setdefault(find(sl), []).append(sl)
    return [sorted(c, key=lambda sl: sl.label) for c in comps.values()]


def _walk_of(sw, out, slots, start, ends, sysrec, group, counter) -> Walk | None:
    x0 = []
    for sl in group:
        v = slots[sl]
        c = v.eval({}) if isinstance(v, Expr) else None
        if not isinstance(c, int):
            return None
        x0.append(int(c))
    T = sysrec.trip
    if T is None or T.depends_on(E.THREAD) or T.is_opaque():
        return None
    names_o = {sl: start[sl].name for sl in group}
    names_i = {sl: sysrec.starts[sl].name for sl in group if sl in sysrec.starts}
    if len(names_i) != len(group):
        return None
    pro = {sl: sysrec.v0s.get(sl) for sl in group}
    inner = {sl: sysrec.ends.get(sl) for sl in group}
    epi = {}
    for sl in group:
        e = ends.get(sl)
        if not isinstance(e, Expr):
            return None
        for sl2 in group:
            a = sysrec.after.get(sl2)
            if isinstance(a, Expr):
                e = E.replace_sub(e, a, start[sl2])
        epi[sl] = e
    pieces = [(pro, names_o), (inner, names_i), (epi, names_o)]
    if not all(_closed_over(fns, names) for fns, names in pieces):
        return None
    fn = [lambda st, f=f, n=n, group=group: _apply(f, n, group, st) for f, n in pieces]
    # the unit step: the piece with the longest orbit of which every piece is a power (the
    # finest step: one advance, not the two of an inner iteration)
    best = None
    for cand in (0, 2, 1):
        orbit = _orbit(fn[cand], tuple(x0))
        if orbit is None or len(orbit) < 2 or (best is not None and len(orbit) <= len(best[0])):
            continue
        exps = [_exponent(f, orbit) for f in fn]
        if any(x is None for x in exps) or exps[1] == 0:
            continue
        best = (orbit, exps)
    if best is not None:
        orbit, (a, m, b) = best
        steps = (a + b, m)  # visits of one task: (a + b) + m T, T the inner loop's trip count
        sw._ring_walk_count += 1
        # the visits of the earlier tasks: a symbol of this walk alone (another walk of the
        # loop, or `_flat_outer`'s inner steps B, counts other things)
        fb = flat_base(counter)
        B = E.Var(f"{fb.name}{sw._ring_walk_count}", E.LOOP, label=f"visits of '{group[0].label}' before this task")
        walk = Walk(sw._ring_walk_count, None, group, orbit, B, steps)
        for sl in group:

            def closed(k, sl=sl, walk=walk):
                if k != counter:
                    return E.opaque(f"{sl.label}@walk")
                return walk.g(sl, walk.B)

            out[sl] = closed
        return walk
    return None


def _closed_over(fns: dict, names: dict) -> bool:
    allowed = set(names.values())
    for e in fns.values():
        if not isinstance(e, Expr) or e.is_opaque():
            return False
        if any(v.name not in allowed for v in e.free_vars()):
            return False
    return True


def inner(sw, out, slots, start, ends, counter) -> None:
    """An inner loop of an active ring walk: its carried group values enter at a known visit
    X (canonical), and its update is u^m on the orbit: g(X + m k) at its iteration k."""
    if counter is None:
        return
    for walk in sw._ring_walks:
        if not all(sl in slots for sl in walk.slots):
            continue
        x = walk.canonical({sl: slots[sl] for sl in walk.slots})
        if x is None:
            continue
        names = {sl: start[sl].name for sl in walk.slots}
        fns = {sl: ends.get(sl) for sl in walk.slots}
        if not _closed_over(fns, names):
            continue
        m = _exponent(lambda st, fns=fns, names=names, walk=walk: _apply(fns, names, walk.slots, st), walk.orbit)
        if m is None:
            continue
        for sl in walk.slots:
            out[sl] = lambda k, sl=sl, x=x, m=m, walk=walk: walk.g(
                sl, E.binop("+", x, E.binop("*", E.Const(m), k)) if m else x
            )


def visit(sw, op, ctx) -> None:
    """At an op on a barrier inside an active ring walk: the slots' values put back into
    canonical form (the state is g(X)), the op's index and parity rewritten over them, and its
    visit X recorded for `phases`."""
    if op.barrier is None:
        return
    for walk in reversed(sw._ring_walks):
        if walk.loop_id is not None and walk.loop_id in ctx.loops:
            _visit(sw, walk, op, ctx)


def _visit(sw, walk, op, ctx) -> None:
    values = {sl: sl.get(ctx.env) for sl in walk.slots}
    if not all(isinstance(v, Expr) for v in values.values()):
        return
    used = [op.parity] if op.parity is not None else []
    used += list(op.barrier.index)
    if not any(isinstance(u, Expr) and walk.B in u.free_vars() for u in used):
        return
    x = walk.canonical(values)
    if x is None:
        return
    new = {sl: walk.g(sl, x) for sl in walk.slots}

    def rew(e):
        if not isinstance(e, Expr):
            return e
        for sl in sorted(walk.slots, key=lambda s: -len(str(values[s]))):
            e = E.replace_sub(e, values[sl], new[sl])
        return e

    def at_x(e) -> bool:
        if not isinstance(e, Expr) or walk.B not in e.free_vars():
            return True
        rest = e
        for v in new.values():
            rest = E.replace_sub(rest, v, E.Const(0))
        return walk.B not in rest.free_vars()

    # the op's values must now be functions of the state at visit x alone; a copy of a slot
    # taken at another visit is put in canonical form first
    index = tuple(rew(ix) if at_x(rew(ix)) else walk.component(rew(ix)) for ix in op.barrier.index)
    parity = rew(op.parity) if at_x(rew(op.parity)) else walk.component(rew(op.parity))
    if not all(at_x(e) for e in (*index, parity)):
        return
    op.barrier = replace(op.barrier, index=index)
    if op.parity is not None:
        op.parity = parity
    for sl, v in new.items():
        sl.set(ctx.env, v)
    sw.w.model.ring_visits[op.order] = (walk.wid, x)
    sw.w.model.ring_walks[walk.wid] = (walk.loop_id, walk.B, walk.steps)


def dry_after(out, slots, counter, trip, dry: bool) -> None:
    """In the dry pass of an enclosing loop: the values an inner loop leaves in slots it did
    not solve are a symbolic state (`<slot>@walkafter`), not an unknown, so that the steps after
    it compose over them and `outer` can check them as a power of the unit step. Only in dry
    passes (no op is emitted with them); `outer` replaces them by the state before the step."""
    from ..recurrence import _is_opaque_form

    if not dry or counter is None or trip is None:
        return
    for sl in slots:
        f = out.get(sl)
        if f is None or not _is_opaque_form(f):
            continue

        def closed(k, f=f, sl=sl):
            return E.Var(f"{sl.label}@walkafter", E.LOOP) if k == trip else f(k)

        out[sl] = closed


def _walkafter(e) -> bool:
    return isinstance(e, Expr) and any(v.name.endswith("@walkafter") for v in e.free_vars())


def hide(ends: dict, nested: list):
    """ends and nested systems with the `@walkafter` states as unknowns (one per name)."""
    if not any(_walkafter(e) for e in ends.values()) and not any(
        _walkafter(e) for sysrec in nested for e in sysrec.after.values()
    ):
        return ends, nested
    cache: dict = {}

    def h(e):
        if not _walkafter(e):
            return e
        for v in list(e.free_vars()):
            if v.name.endswith("@walkafter"):
                if v.name not in cache:
                    cache[v.name] = E.opaque(v.name.replace("@walkafter", "@after-loop"))
                e = E.replace_sub(e, v, cache[v.name])
        return e if not _walkafter(e) else E.opaque("walkafter")

    new_ends = {sl: h(e) for sl, e in ends.items()}
    new_nested = []
    for sysrec in nested:
        c = copy.copy(sysrec)
        c.after = {sl: h(e) for sl, e in sysrec.after.items()}
        c.ends = {sl: h(e) for sl, e in sysrec.ends.items()}
        c.v0s = {sl: h(e) for sl, e in sysrec.v0s.items()}
        new_nested.append(c)
    return new_ends, new_nested
