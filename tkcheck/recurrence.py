"""Closed forms of loop-carried variables that depend on *other* carried variables.

Pure Expr arithmetic and solver queries, shared by the front end (which solves the loops it
walks) and the checks (`phases` tabulates bit-operation parities); it imports neither.

The front end's `walk_arith.solve_recurrence` solves a variable whose end-of-body value depends
only on its own start value (`tic ^= 1`, `s = (s + 1) % N`). Phase variables
often depend on the ring index instead:

* `if (++stage == STAGES) { stage = 0; phase ^= 1; }`  -> ite(stage@start+1 == S, phase ^ 1, phase)
* `tic ^= 1; if (tic == 0) phase ^= 1;`                 -> ite((tic@start ^ 1) == 0, phase ^ 1, phase)
* `phase ^= (stage == STAGES - 1);`                      -> phase ^ (stage@start == S-1)
* TK's phase bitfield: `update_phasebit<n>(bits, ring)` -> bits ^ (1 << (ring@start + 16n))

Once the ring index has a closed form ring(j), the flip condition C(j) is a
function of the iteration j alone. When C is periodic with a period P that z3
proves (C(j + P) == C(j) for every j), the number of flips before iteration k
is a sum of floor divisions, and the phase has an exact closed form. Anything
else stays an unknown (never a guess).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Callable, TypeVar

from .model import expr as E
from .model.expr import Expr

# a carried variable's key: its name, or the walker's slot (a name or a record's field)
_K = TypeVar("_K", bound=Hashable)

J = E.Var("j@iter", E.LOOP)
MAX_PERIOD = 64


def _bitfields() -> dict[Expr, tuple[Expr, dict[int, Expr]]]:
    """Closed forms of phase bitfields derived in this check: expr -> (initial value, {bit
    position: flips before k}). Per check (solver.memo), never a process global: a form another
    file registered must not answer for this one."""
    from . import solver

    return solver.memo("recurrence.bitfields")


def _is_opaque_form(fn: Callable) -> bool:
    v = fn(E.Var("k@probe", E.LOOP))
    return isinstance(v, E.Var) and v.kind == E.OPAQUE


def _period(cond: Expr) -> int | None:
    """Smallest P with cond(j + P) == cond(j) for every j >= 0, proved by z3."""
    from . import solver

    vals = []
    for j in range(2 * MAX_PERIOD):
        v = cond.eval({J.name: j})
        if v is None:
            return None
        vals.append(int(v))
    for p in range(1, MAX_PERIOD + 1):
        if all(vals[j] == vals[j + p] for j in range(MAX_PERIOD)):
            if _only_mod(cond, p):
                return p  # J occurs only under `% m` with m dividing p: periodic by construction
            shifted = E.substitute(cond, {J.name: E.binop("+", J, E.Const(p))})
            if solver.always(E.binop("==", _as_int(cond), _as_int(shifted)), timeout_ms=2000) is True:
                return p
            return None
    return None


def _is_shift(e: Expr) -> bool:
    return isinstance(e, E.Bin) and e.op == "<<"


def _only_mod(e: Expr, p: int) -> bool:
    """Every occurrence of J is inside a `(... J ...) % m` with constant m dividing p,
    where the dividend is J plus constants (so shifting J by p changes nothing)."""
    if e == J:
        return False
    if (
        isinstance(e, E.Bin)
        and e.op == "%"
        and isinstance(e.b, E.Const)
        and isinstance(e.b.value, int)
        and e.b.value > 0
        and p % e.b.value == 0
        and _affine_unit(e.a)
    ):
        return True
    return all(_only_mod(x, p) for x in e.children())


def _affine_unit(e: Expr) -> bool:
    """J + const (any nesting of + with constants)."""
    if e == J:
        return True
    if isinstance(e, E.Bin) and e.op == "+":
        return (_affine_unit(e.a) and not e.b.free_vars()) or (_affine_unit(e.b) and not e.a.free_vars())
    return False


def _as_int(e: Expr) -> Expr:
    return E.ite(e, E.Const(1), E.Const(0)) if _is_bool(e) else e


def _is_bool(e: Expr) -> bool:
    return (
        (isinstance(e, E.Bin) and e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"))
        or (isinstance(e, E.Un) and e.op == "!")
        or (isinstance(e, E.Const) and isinstance(e.value, bool))
    )


def _count_before(k: Expr, offsets: list[int], p: int) -> Expr:
    """#{j < k : j % p in offsets} for k >= 0."""
    total: Expr = E.Const(0)
    for c in offsets:
        total = E.binop("+", total, E.binop("/", E.binop("+", k, E.Const(p - 1 - c)), E.Const(p)))
    return total


def _flip_condition(end: Expr, start: E.Var) -> Expr | None:
    """C when end == start ^ C (C boolean or 0/1), or ite(C, start ^ 1, start)."""
    if isinstance(end, E.Bin) and end.op == "^" and end.a == start and start not in end.b.free_vars():
        return end.b
    if isinstance(end, E.Ite) and start not in end.c.free_vars():
        flip = (E.Bin("^", start, E.Const(1)), E.Bin("-", E.Const(1), start))
        if end.t in flip and end.e == start:
            return end.c
        if end.e in flip and end.t == start:
            return E.negate(end.c)
    return None


def solve_dependent(
    name: _K, start: E.Var, end, v0: Expr, solved: dict[_K, Callable], starts: dict[_K, E.Var]
) -> Callable | None:
    """Closed form (function of the counter) of `name`, or None."""
    if not isinstance(end, Expr) or not isinstance(v0, Expr) or v0.free_vars():
        return None
    # the other carried variables, at iteration j
    mapping = {}
    for other, fn in solved.items():
        if other != name:
            mapping[starts[other].name] = fn(J)
    body = E.substitute(end, mapping)
    if body.free_vars() - {start, J}:
        return None
    cond = _flip_condition(body, start)
    if cond is not None and start not in cond.free_vars() and not _is_shift(cond):
        p = _period(cond)
        if p is None:
            return None
        if any(cond.eval({J.name: c}) not in (0, 1, True, False) for c in range(p)):
            return None  # not a phase bit flip (x ^= v with v outside {0, 1})
        offsets = [c for c in range(p) if cond.eval({J.name: c})]
        return lambda k: E.binop("^", v0, E.binop("%", _count_before(k, offsets, p), E.Const(2)))
    # bitfield: bits ^ (1 << pos(j))
    if (
        isinstance(body, E.Bin)
        and body.op == "^"
        and body.a == start
        and isinstance(body.b, E.Bin)
        and body.b.op == "<<"
        and body.b.a == E.Const(1)
        and start not in body.b.b.free_vars()
    ):
        pos = body.b.b
        p = _period(pos)
        if p is None:
            return None
        positions: dict[int, list[int]] = {}
        for c in range(p):
            v = pos.eval({J.name: c})
            if not isinstance(v, int) or not 0 <= v < 63:
                return None
            positions.setdefault(v, []).append(c)
        init = v0

        def closed(k, positions=positions, p=p, init=init):
            counts = {bit: _count_before(k, offs, p) for bit, offs in positions.items()}
            value: Expr = init
            for bit, cnt in sorted(counts.items()):
                value = E.binop("^", value, E.binop("*", E.binop("%", cnt, E.Const(2)), E.Const(1 << bit)))
            _bitfields()[value] = (init, counts)
            return value

        return closed
    return None


def phase_bit(bits: Expr, position: Expr) -> Expr | None:
    """Bit `position` of a bitfield with a registered closed form, as a cheap term."""
    info = _bitfields().get(bits)
    if info is None:
        return None
    init, counts = info
    iv = init.eval({})
    if not isinstance(iv, int):
        return None
    out: Expr = E.binop("&", E.binop(">>", init, position), E.Const(1))
    for bit, cnt in sorted(counts.items(), reverse=True):
        flipped = E.binop("^", E.Const((iv >> bit) & 1), E.binop("%", cnt, E.Const(2)))
        out = E.ite(E.binop("==", position, E.Const(bit)), flipped, out)
    return out


# ------------------------------------------------ periodic sequences, by simulation --
#
# A carried variable whose update the patterns above do not recognise (ring indices advanced
# with masks, `phase ^= (s == 0)` on such a ring, phase bitmasks `bits ^= 1u << s`, "empty"
# masks starting at all ones) but whose start value is a constant and whose update depends on
# nothing but the carried variables and the iteration: its values are computed iteration by
# iteration, the sequence's period found, and the closed form (a ring `(k + c) % P`, a phase
# `((k + a) / q) % 2`, or a table over `k % P`) accepted only once it is *proved*: every term
# of the update is periodic in k by construction, so checking one full period of both sides
# of `x(k + 1) == f(x(k), k)` proves it for every k.

SIM_ITERATIONS = 256
MAX_TABLE = 64
MAX_CHECK = 4096


def _lcm(a: int, b: int) -> int:
    from math import gcd

    return a * b // gcd(a, b)


def structural_period(e: Expr, k: E.Var) -> int | None:
    """P such that e(k + P) == e(k) for every k >= 0, read off the structure of e (an
    expression of k alone): k occurs only inside `x % m` (m a positive constant) where x is
    `a*k + r` or `(k + b) / q + r` (a, b >= 0, q > 0 constants, r periodic and >= 0), or not
    at all. None when e is not periodic by construction."""
    if e.free_vars() - {k}:
        return None
    return _speriod(e, k)


def _speriod(e: Expr, k: E.Var) -> int | None:
    if k not in e.free_vars():
        return 1
    if isinstance(e, E.Bin) and e.op == "%" and _posint(e.b):
        m = e.b.value
        lin = _linear_in(e.a, k)
        if lin is not None:
            a, q, rest = lin
            rp = _speriod(rest, k)
            if rp is None or not _nonneg_over(rest, k, rp):
                return None
            from math import gcd

            base = (m // gcd(a, m)) * q if a else 1
            return _lcm(base, rp)
    kids = e.children()
    if not kids:
        return None  # k itself: not periodic
    out = 1
    for x in kids:
        p = _speriod(x, k)
        if p is None:
            return None
        out = _lcm(out, p)
    return out


def _posint(e: Expr) -> bool:
    return isinstance(e, E.Const) and isinstance(e.value, int) and not isinstance(e.value, bool) and e.value > 0


def _nonneg_over(e: Expr, k: E.Var, p: int) -> bool:
    if p > MAX_CHECK:
        return False
    for j in range(p):
        v = e.eval({k.name: j})
        if v is None or int(v) < 0:
            return False
    return True


def _linear_in(e: Expr, k: E.Var):
    """(a, q, r): e is `a*k + r` (q == 1) or `(k + b) / q + r` (a == 1, b >= 0), with r
    free of k or periodic in k; None otherwise."""
    if e == k:
        return 1, 1, E.Const(0)
    if k not in e.free_vars():
        return 0, 1, e
    if isinstance(e, E.Bin) and e.op == "+":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            lx = _linear_in(x, k)
            if (
                lx is not None
                and lx[0]
                and (k not in y.free_vars() or _speriod(y, k) is not None)
                and not (lx[1] == 1 and _linear_in(y, k) is not None and _linear_in(y, k)[0])
            ):
                return lx[0], lx[1], E.binop("+", lx[2], y)
        la, lb = _linear_in(e.a, k), _linear_in(e.b, k)
        if la is not None and lb is not None and la[1] == lb[1] == 1:
            return la[0] + lb[0], 1, E.binop("+", la[2], lb[2])
        return None
    if isinstance(e, E.Bin) and e.op == "*" and _posint(e.b):
        la = _linear_in(e.a, k)
        if la is not None and la[1] == 1:
            return la[0] * e.b.value, 1, E.binop("*", la[2], e.b)
    if isinstance(e, E.Bin) and e.op == "/" and _posint(e.b):
        la = _linear_in(e.a, k)
        if la is not None and la[0] == 1 and la[1] == 1 and isinstance(la[2], E.Const) and la[2].value >= 0:
            return 1, e.b.value, E.Const(0)
    return None


def canonical_form(seq: list[int], mu: int, p: int, k: E.Var) -> Expr:
    """The closed form of a sequence that is seq[0..mu) then periodic with period p."""
    # the cycle indexed by k itself (seq[k] == cyc[k % p] for k >= mu), not by k - mu: a
    # periodic part in k alone is periodic by construction (`structural_period`) for every k
    cyc = [seq[mu + (j - mu) % p] for j in range(p)]
    r = k
    if p == 1:
        periodic: Expr = E.Const(cyc[0])
    elif all(cyc[i] == (cyc[0] + i) % p for i in range(p)) and 0 <= cyc[0] < p:
        periodic = E.binop("%", E.binop("+", r, E.Const(cyc[0])), E.Const(p))
    else:
        periodic = None
        if p % 2 == 0 and set(cyc) <= {0, 1}:
            q = p // 2
            for a in range(p):
                if all(cyc[i] == ((i + a) // q) % 2 for i in range(p)):
                    periodic = E.binop("%", E.binop("/", E.binop("+", r, E.Const(a)), E.Const(q)), E.Const(2))
                    break
        if periodic is None:
            idx = E.binop("%", r, E.Const(p))
            periodic = E.Const(cyc[p - 1])
            for i in range(p - 2, -1, -1):
                periodic = E.ite(E.binop("==", idx, E.Const(i)), E.Const(cyc[i]), periodic)
    out = periodic
    for i in range(mu - 1, -1, -1):
        out = E.ite(E.binop("==", k, E.Const(i)), E.Const(seq[i]), out)
    return out


def _find_period(seq: list[int]) -> tuple[int, int] | None:
    """(mu, p): the smallest pre-period and period seen in seq (both at most MAX_TABLE)."""
    n = len(seq)
    for mu in range(0, MAX_TABLE + 1):
        for p in range(1, MAX_TABLE + 1):
            if mu + 2 * p > n:
                break
            if all(seq[j] == seq[j + p] for j in range(mu, n - p)):
                return mu, p
    return None


def solve_by_simulation(
    unsolved: dict[_K, tuple], solved: dict[_K, Callable], starts: dict[_K, E.Var], counter: E.Var | None
) -> dict[_K, Callable]:
    """Closed forms of carried variables with constant start values, found by running the
    loop body's update on them and proved over one period (see above).

    unsolved: name -> (start Var, end-of-body value, value before the loop)."""
    if not unsolved or counter is None:
        return {}
    k = counter
    names = sorted(unsolved, key=lambda n: str(getattr(n, "label", n)))  # a slot sorts by its label
    v0s = {}
    for n in names:
        v = unsolved[n][2].eval({}) if isinstance(unsolved[n][2], Expr) else None
        if not isinstance(v, int) or isinstance(v, bool) and False:
            return {}
        v0s[n] = int(v)
    known = {starts[o].name: fn(k) for o, fn in solved.items() if o in starts and o not in unsolved}
    ends = {}
    allowed = {unsolved[n][0].name for n in names} | {k.name}
    for n in names:
        end = unsolved[n][1]
        if not isinstance(end, Expr):
            return {}
        end = E.substitute(end, known)
        if any(v.name not in allowed for v in end.free_vars()):
            return {}
        ends[n] = end
    seqs = {n: [v0s[n]] for n in names}
    for j in range(SIM_ITERATIONS):
        env = {unsolved[n][0].name: seqs[n][j] for n in names}
        env[k.name] = j
        nxt = {}
        for n in names:
            v = ends[n].eval(env)
            if v is None or isinstance(v, bool) and False:
                return {}
            nxt[n] = int(v)
        for n in names:
            seqs[n].append(nxt[n])
    forms = {}
    for n in names:
        per = _find_period(seqs[n])
        if per is None:
            return {}
        forms[n] = canonical_form(seqs[n], per[0], per[1], k)
    # proof: forms[n](k + 1) == end_n(forms(k), k) for every k >= 0
    mapping = {unsolved[n][0].name: forms[n] for n in names}
    mu = max(_prefix(forms[n], k) for n in names)
    for n in names:
        lhs = E.substitute(forms[n], {k.name: E.binop("+", k, E.Const(1))})
        rhs = E.substitute(ends[n], mapping)
        # beyond the prefix both sides are periodic by construction
        pl = structural_period(_periodic_part(lhs, k, mu + 1), k)
        pr = structural_period(_periodic_part(rhs, k, mu + 1), k)
        if pl is None or pr is None:
            return {}
        span = mu + 1 + _lcm(pl, pr)
        if span > MAX_CHECK:
            return {}
        for j in range(span):
            a, b = lhs.eval({k.name: j}), rhs.eval({k.name: j})
            if a is None or b is None or int(a) != int(b):
                return {}
    out = {}
    for n in names:
        f = forms[n]
        out[n] = lambda kk, f=f: E.substitute(f, {k.name: kk})
    return out


def _prefix(form: Expr, k: E.Var) -> int:
    """How many leading `k == i ? c : ...` cases a canonical form has."""
    n = 0
    while isinstance(form, E.Ite) and isinstance(form.c, E.Bin) and form.c.op == "==" and form.c.a == k:
        n += 1
        form = form.e
    return n


def _periodic_part(e: Expr, k: E.Var, from_k: int) -> Expr:
    """e for k >= from_k: the `k == i` cases of canonical prefixes (i < from_k) dropped, and
    `k + c == i` cases likewise."""

    def prefix_case_dropped(x: Expr) -> Expr | None:
        if isinstance(x, E.Ite) and isinstance(x.c, E.Bin) and x.c.op == "==" and isinstance(x.c.b, E.Const):
            lhs = x.c.a
            off = 0
            if isinstance(lhs, E.Bin) and lhs.op == "+" and lhs.a == k and isinstance(lhs.b, E.Const):
                off = lhs.b.value
                lhs = k
            if lhs == k and isinstance(x.c.b.value, int) and x.c.b.value - off < from_k:
                return _periodic_part(x.e, k, from_k)
        return None

    return E.rewrite(e, prefix_case_dropped)


def tabulate(e: Expr, k: E.Var) -> Expr | None:
    """e as a canonical closed form in k when e depends on nothing but k, periodically by
    construction (a parity `(bits >> s) & 1` of table-form bitmask and ring): linear terms
    for the solver instead of bit operations."""
    if e.free_vars() != {k}:
        return None
    p = structural_period(e, k)
    if p is None or p > MAX_TABLE:
        return None
    seq = []
    for j in range(p):
        v = e.eval({k.name: j})
        if v is None:
            return None
        seq.append(int(v))
    return canonical_form(seq + seq, 0, p, k)


def flat_base(counter: E.Var) -> E.Var:
    """The number of inner-loop steps the tasks before the current iteration of the outer loop
    with this counter took, when the inner trip count varies from task to task: a
    non-negative integer the model does not follow (`checks/phases` counts the uses of a ring
    carried across such tasks over the flat step B + k)."""
    return E.Var(f"f{counter.name[1:]}base", E.LOOP, label=f"steps before this {counter.label or 'iteration'}")


def solve_guarded(
    start: E.Var, end: Expr, v0: Expr, name: str, counter: E.Var | None, trip: Expr | None, solve: Callable
) -> Callable | None:
    """A carried value advanced under a condition on the iteration (`if (t + gridDim.x < nt)
    pipe.producer_commit();`: the pipeline's head counts the iterations the condition held).
    Each such condition whose truth z3 proves for every iteration but the last (0 <= k and
    k + 1 < trip: `c`, or `!c` for the else branch) is replaced by that branch, and the update
    solved by `solve` (the front end's one-variable solver). The value at iteration k depends
    on iterations 0 .. k - 1 only, all of them not the last: the form holds in the body of every
    iteration that runs. It is given for the loop's own counter only; anywhere else (the value
    after the loop, where the last iteration's condition counts) it is an unknown."""
    if trip is None or counter is None or not isinstance(end, Expr):
        return None
    from . import solver

    hyp = E.binop("&&", E.binop(">=", counter, E.Const(0)), E.binop("<", E.binop("+", counter, E.Const(1)), trip))
    failed = []

    def branch(x: Expr) -> Expr | None:
        if not (isinstance(x, E.Ite) and counter in x.c.free_vars()):
            return None
        c = x.c
        # a condition over the thread only where the trip count is the thread's own (`for (k = 0;
        # k <= last; k++) if (k != last) bar.arrive()`, last per thread): z3 proves it for every
        # thread, each against its own trip
        if (
            (c.depends_on(E.THREAD) and not trip.depends_on(E.THREAD))
            or c.is_opaque()
            or any(v.kind == E.LOOP and v != counter for v in c.free_vars())
        ):
            failed.append(x)
            return None
        for cond, keep in ((c, x.t), (E.negate(c), x.e)):
            if solver.always(E.binop("||", E.negate(hyp), cond), timeout_ms=2000) is True:
                return E.rewrite(keep, branch)
        failed.append(x)
        return None

    fixed = E.rewrite(end, branch)
    if failed or fixed == end:
        return None
    f = solve(start, fixed, v0, name, counter)
    if _is_opaque_form(f):
        return None
    unknown = E.opaque(f"{name}@iter")
    return lambda k: f(k) if k == counter else unknown
