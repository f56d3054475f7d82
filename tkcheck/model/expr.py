"""Symbolic integer/boolean expressions: the values of the KernelModel.

The front end folds what it can (literals, constexpr, template defaults,
`size_bytes<T>`, `sizeof`) and keeps everything else symbolic: thread ids,
loop iteration counters, runtime parameters, and opaque terms for what it does
not understand. An expression can be

* evaluated concretely (`eval(env)` -> int/bool, or None when a variable is
  unbound or the term is opaque) — used to enumerate the threads of a block, and
* translated to z3 (`to_z3(solver_vars)`) — used to prove facts for every
  iteration / every template instantiation.

Opaque terms are never guessed: they evaluate to None and translate to fresh,
unconstrained z3 variables, so a proof that depends on them fails (and is not
reported) rather than being decided by a made-up value.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import z3

Value = int | bool

# Kinds of variables. The kind decides how the checks treat a variable:
# thread variables are enumerated over the block, loop counters range over a
# loop's trip count, params are unknown-but-uniform across the block.
THREAD = "thread"  # tid (threadIdx.x), tid_y, tid_z
LOOP = "loop"  # iteration counter of a loop (k >= 0)
PARAM = "param"  # uniform runtime value (kernel argument, blockIdx, template param w/o default)
OPAQUE = "opaque"  # something the front end could not model


class Expr:
    __slots__ = ()

    def eval(self, env: Mapping[str, Value]) -> Value | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def free_vars(self) -> frozenset["Var"]:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_z3(self, zv: "Z3Vars"):  # pragma: no cover - abstract
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        """The direct subexpressions, left to right (none for a leaf)."""
        return ()

    def map_children(self, f: Callable[[Expr], Expr]) -> Expr:
        """This node with f applied to each child, rebuilt through the folding constructors
        (`binop`, `unop`, `ite`); a leaf is itself."""
        return self

    # convenience ----------------------------------------------------------
    def const(self) -> Value | None:
        return self.value if isinstance(self, Const) else None

    def depends_on(self, kind: str) -> bool:
        return any(v.kind == kind for v in self.free_vars())

    def is_opaque(self) -> bool:
        return self.depends_on(OPAQUE)


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: Value

    def eval(self, env):
        return self.value

    def free_vars(self):
        return frozenset()

    def to_z3(self, zv):
        return z3.BoolVal(self.value) if isinstance(self.value, bool) else z3.IntVal(self.value)

    def __str__(self):
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


@dataclass(frozen=True, slots=True)
class Var(Expr):
    name: str
    kind: str = PARAM
    is_bool: bool = False
    # how the user's code names this value (a loop counter `k3` is the user's `k`, or `(k - 1)`):
    # used when printing, never for identity
    label: str | None = field(default=None, compare=False)

    def eval(self, env):
        return env.get(self.name)

    def free_vars(self):
        return frozenset((self,))

    def to_z3(self, zv):
        return zv.get(self)

    def __str__(self):
        return self.label or self.name


_ARITH = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "<<": lambda a, b: a << b if 0 <= b < 64 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 64 else None,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}
_CMP = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
BOOL_OPS = {"&&", "||"}


def _cdiv(a: int, b: int) -> int | None:
    """C integer division (truncates toward zero)."""
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cmod(a: int, b: int) -> int | None:
    q = _cdiv(a, b)
    return None if q is None else a - b * q


@dataclass(frozen=True, slots=True)
class Bin(Expr):
    op: str
    a: Expr
    b: Expr

    def eval(self, env):
        x = self.a.eval(env)
        if self.op == "&&":
            if x is None:
                y = self.b.eval(env)
                return False if y is False or y == 0 else None
            return bool(x) and _truth(self.b.eval(env))
        if self.op == "||":
            if x is None:
                y = self.b.eval(env)
                return True if (y is not None and bool(y)) else None
            return True if x else _truth(self.b.eval(env))
        y = self.b.eval(env)
        if x is None or y is None:
            return None
        if self.op in _CMP:
            return _CMP[self.op](x, y)
        x, y = int(x), int(y)
        if self.op == "/":
            return _cdiv(x, y)
        if self.op == "%":
            return _cmod(x, y)
        return _ARITH[self.op](x, y)

    def free_vars(self):
        return self.a.free_vars() | self.b.free_vars()

    def children(self):
        return (self.a, self.b)

    def map_children(self, f):
        return binop(self.op, f(self.a), f(self.b))

    def to_z3(self, zv):
        if self.op in BOOL_OPS:
            a, b = as_bool(self.a.to_z3(zv)), as_bool(self.b.to_z3(zv))
            return z3.And(a, b) if self.op == "&&" else z3.Or(a, b)
        a, b = as_int(self.a.to_z3(zv)), as_int(self.b.to_z3(zv))
        op = self.op
        if op in _CMP:
            return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            # C semantics for the non-negative operands kernels use; z3's `/` is
            # Euclidean, which agrees when a >= 0 and b > 0.
            return z3.If(b == 0, zv.fresh("divzero"), z3.If(a >= 0, a / b, -((-a) / b)))
        if op == "%":
            return z3.If(b == 0, zv.fresh("modzero"), z3.If(a >= 0, a % b, -((-a) % b)))
        if op == "&" and isinstance(self.b, Const) and _low_mask(self.b.value):
            # `x & (2^m - 1)` (a ring slot, a parity bit) is x mod 2^m for every integer x (two's
            # complement): linear integer arithmetic, where the bit-vector round trip leaves z3
            # answering unknown on a question as small as (k + 1) & 1 == k & 1
            return a % (self.b.value + 1)
        # bitwise ops: go through 64-bit vectors
        ba, bb = z3.Int2BV(a, 64), z3.Int2BV(b, 64)
        r = {"&": ba & bb, "|": ba | bb, "^": ba ^ bb, "<<": ba << bb, ">>": z3.LShR(ba, bb)}[op]
        return z3.BV2Int(r, is_signed=True)

    def __str__(self):
        return f"({self.a} {self.op} {self.b})"


def _low_mask(v: object) -> bool:
    """v is 2^m - 1 for some 1 <= m <= 62 (an int, not a bool)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < (1 << 62) and (v + 1) & v == 0


@dataclass(frozen=True, slots=True)
class Un(Expr):
    op: str  # "-", "!", "~"
    a: Expr

    def eval(self, env):
        x = self.a.eval(env)
        if x is None:
            return None
        if self.op == "!":
            return not x
        if self.op == "-":
            return -int(x)
        return ~int(x)

    def free_vars(self):
        return self.a.free_vars()

    def children(self):
        return (self.a,)

    def map_children(self, f):
        return unop(self.op, f(self.a))

    def to_z3(self, zv):
        x = self.a.to_z3(zv)
        if self.op == "!":
            return z3.Not(as_bool(x))
        if self.op == "-":
            return -as_int(x)
        return -as_int(x) - 1

    def __str__(self):
        return f"{self.op}{self.a}"


@dataclass(frozen=True, slots=True)
class Ite(Expr):
    c: Expr
    t: Expr
    e: Expr

    def eval(self, env):
        c = self.c.eval(env)
        if c is None:
            a, b = self.t.eval(env), self.e.eval(env)
            return a if a is not None and a == b else None
        return self.t.eval(env) if c else self.e.eval(env)

    def free_vars(self):
        return self.c.free_vars() | self.t.free_vars() | self.e.free_vars()

    def children(self):
        return (self.c, self.t, self.e)

    def map_children(self, f):
        return ite(f(self.c), f(self.t), f(self.e))

    def to_z3(self, zv):
        t, e = self.t.to_z3(zv), self.e.to_z3(zv)
        if z3.is_bool(t) != z3.is_bool(e):
            t, e = as_int(t), as_int(e)
        return z3.If(as_bool(self.c.to_z3(zv)), t, e)

    def __str__(self):
        return f"({self.c} ? {self.t} : {self.e})"


@dataclass(frozen=True, slots=True)
class App(Expr):
    """A value read from memory at an index that depends on loop counters (`tile = order[t]` in
    a loop over t): an uninterpreted function of those counters, one function per read site
    (`fn`, a `?`-named unknown). Two iterations read unrelated values (f(t) and f(t + 1)); the
    same iteration reads one value. Its free variables are its arguments' (a loop counter, and
    launch values), so it is no OPAQUE term; `eval` knows no value of it."""

    fn: str
    args: tuple[Expr, ...]

    def eval(self, env):
        return None

    def free_vars(self):
        out: frozenset[Var] = frozenset()
        for a in self.args:
            out |= a.free_vars()
        return out

    def children(self):
        return self.args

    def map_children(self, f):
        return App(self.fn, tuple(f(a) for a in self.args))

    def to_z3(self, zv):
        return zv.function(self.fn, len(self.args))(*[as_int(a.to_z3(zv)) for a in self.args])

    def __str__(self):
        return f"{self.fn}({', '.join(str(a) for a in self.args)})"


def per_iteration(v: Var, counters: tuple[Expr, ...]) -> Expr:
    """The unknown v (OPAQUE: a value the model does not know, that may differ between threads)
    read anew in every iteration of the loops whose counters are given (a local array's element
    in a loop, a thread's own element of global memory `p[tid + 128 * t]`): `v.name(counters...,
    v)`, an `App` named by v with v among its arguments, so it is still an OPAQUE term (every
    reader that leaves unknowns undecided still does), its value differs between iterations (one
    name for the whole loop made iterations t and t + 1 read one value), and a substitution of
    v's name replaces it whole (`substitute`). No counter: v itself."""
    if not counters:
        return v
    return App(v.name, tuple(counters) + (v,))


def per_iteration_name(e: Any) -> str | None:
    """The unknown's name of a `per_iteration` value (its function's), else None."""
    if isinstance(e, App) and e.args and isinstance(e.args[-1], Var) and e.args[-1].name == e.fn:
        return e.fn
    return None


def per_iteration_var(e: Any) -> Any:
    """The unknown a `per_iteration` value is made of (its last argument); anything else as it is."""
    return e.args[-1] if per_iteration_name(e) is not None else e


def within_iteration(e: Expr) -> Expr:
    """e read inside one iteration: every `per_iteration` value is its unknown (one value there)."""
    return rewrite(e, lambda x: per_iteration_var(x) if per_iteration_name(x) is not None else None)


def apps(e: Expr) -> list[App]:
    """The `App` terms in e (preorder)."""
    return [x for x in subexprs(e) if isinstance(x, App)]


def loop_outside_data(e: Expr) -> bool:
    """e names a loop counter other than as the argument of a value read from memory (`App`):
    `k < K` does, `order(k) < 0` does not."""

    def go(x: Expr) -> bool:
        if isinstance(x, App):
            return False
        if isinstance(x, Var):
            return x.kind == LOOP
        return any(go(c) for c in x.children())

    return go(e)


def _truth(v):
    return None if v is None else bool(v)


def as_bool(x):
    return x if z3.is_bool(x) else x != 0


def as_int(x):
    return z3.If(x, z3.IntVal(1), z3.IntVal(0)) if z3.is_bool(x) else x


class Z3Vars:
    """Maps model variables to z3 constants (one per name), plus fresh unknowns."""

    def __init__(self):
        self._vars: dict[str, z3.ExprRef] = {}
        self._funcs: dict[str, z3.FuncDeclRef] = {}
        self._n = 0

    def get(self, v: Var):
        z = self._vars.get(v.name)
        if z is None:
            z = z3.Bool(v.name) if v.is_bool else z3.Int(v.name)
            self._vars[v.name] = z
        return z

    def fresh(self, hint: str):
        self._n += 1
        return z3.Int(f"?{hint}{self._n}")

    def function(self, name: str, arity: int):
        """The uninterpreted function of an `App` (one per name and arity)."""
        key = f"{name}/{arity}"
        f = self._funcs.get(key)
        if f is None:
            f = z3.Function(name, *([z3.IntSort()] * (arity + 1)))
            self._funcs[key] = f
        return f

    def items(self):
        return self._vars.items()


# --------------------------------------------------------------------------
# smart constructors: fold constants so that most model values stay small
# --------------------------------------------------------------------------

TRUE = Const(True)
FALSE = Const(False)


def const(v: Value) -> Const:
    return Const(v)


def binop(op: str, a: Expr, b: Expr) -> Expr:
    if op == "&&":
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE:
            return b
        if b == TRUE:
            return a
    if op == "||":
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE:
            return b
        if b == FALSE:
            return a
    if isinstance(a, Const) and isinstance(b, Const):
        v = Bin(op, a, b).eval({})
        if v is not None:
            return Const(v)
    # x + 0, x * 1, x * 0 ...
    if op in ("+", "-", "|", "^", "<<", ">>") and b == Const(0):
        return a
    if op == "+" and a == Const(0):
        return b
    if op == "*" and (a == Const(0) or b == Const(0)):
        return Const(0)
    if op in ("*", "/") and b == Const(1):
        return a
    if op == "*" and a == Const(1):
        return b
    return Bin(op, a, b)


def unop(op: str, a: Expr) -> Expr:
    if isinstance(a, Const):
        v = Un(op, a).eval({})
        if v is not None:
            return Const(v)
    if op == "!" and isinstance(a, Un) and a.op == "!":
        return a.a
    return Un(op, a)


def ite(c: Expr, t: Expr, e: Expr) -> Expr:
    if isinstance(c, Const):
        return t if c.value else e
    if t == e:
        return t
    return Ite(c, t, e)


def conj(*parts: Expr) -> Expr:
    out: Expr = TRUE
    for p in parts:
        out = binop("&&", out, p)
    return out


def disj(*parts: Expr) -> Expr:
    out: Expr = FALSE
    for p in parts:
        out = binop("||", out, p)
    return out


def negate(e: Expr) -> Expr:
    return unop("!", e)


_opaque_counter = [0]


def fresh_number() -> int:
    """A number for a new unknown; restarted per file (`reset_unknowns`) so that
    names do not depend on what else the process checked before."""
    _opaque_counter[0] += 1
    return _opaque_counter[0]


def reset_unknowns() -> None:
    _opaque_counter[0] = 0


def shared_copy(name: str, shared: str) -> Var:
    """The value of a copy of the `__shared__` scalar `shared` into `name` (`const int t = tile_s;`):
    data read from memory (`?`-named), block-uniform: every reader of the same write reads it."""
    return Var(f"?{name} = {shared}#{fresh_number()}", PARAM)


def is_shared_copy(v: Var) -> bool:
    """v is a `shared_copy` value."""
    return v.kind == PARAM and re.fullmatch(r"\?.+ = [\w.\[\]]+#\d+", v.name) is not None


def opaque(text: str) -> Var:
    """A value the front end could not model. Every call is a distinct unknown."""
    _opaque_counter[0] += 1
    return Var(f"?{text[:40]}#{_opaque_counter[0]}", OPAQUE)


UNIFORM_UNKNOWN = "?uniform:"  # the name prefix of `uniform_unknown`s


def uniform_unknown(text: str) -> Var:
    """A value the front end could not model that every thread of the block holds alike at the
    point of the walk where it is named (a task index carried across loops of uniform tests):
    still an unknown (OPAQUE, a distinct one per call, and it may differ between iterations of
    an enclosing loop), but a test of it is the same for every thread that makes it."""
    _opaque_counter[0] += 1
    return Var(f"{UNIFORM_UNKNOWN}{text[:40]}#{_opaque_counter[0]}", OPAQUE)


def alike_for_all(e: Expr) -> bool:
    """No thread index and no unknown but `uniform_unknown`s: every thread evaluates e alike."""
    return not any(
        v.kind == THREAD or (v.kind == OPAQUE and not v.name.startswith(UNIFORM_UNKNOWN)) for v in e.free_vars()
    )


# ------------------------------------------------------------ traversal --


def subexprs(e: Expr) -> Iterator[Expr]:
    """e and every subexpression of it, in preorder (a node before its children, left to right)."""
    todo = [e]
    while todo:
        x = todo.pop()
        yield x
        todo.extend(reversed(x.children()))


def rewrite(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """e rewritten top-down: where fn gives a replacement for a node, that replacement (not
    rewritten further); elsewhere the node rebuilt from its rewritten children through the
    folding constructors, so constants fold as they do when the front end builds values."""

    def go(x: Expr) -> Expr:
        r = fn(x)
        return r if r is not None else x.map_children(go)

    return go(e)


def substitute(e: Expr, mapping: Mapping[str, Expr]) -> Expr:
    """Replace variables by expressions (used to instantiate loop counters, roles). An `App` whose
    function the mapping names is replaced whole (a value per iteration given one value)."""

    def f(x: Expr) -> Expr | None:
        if isinstance(x, Var):
            return mapping.get(x.name, x)
        if isinstance(x, App) and x.fn in mapping:
            return mapping[x.fn]
        return None

    return rewrite(e, f)


def replace_sub(e: Expr, target: Expr, repl: Expr) -> Expr:
    """e with every occurrence of the subexpression `target` replaced by `repl`."""
    return rewrite(e, lambda x: repl if x == target else None)


# The thread variables. Role functions of TK (warpid(), laneid(),
# warpgroup::groupid(), ...) are expressions over TID, so that a guard is a
# predicate over one integer and the set of threads running an op can be
# enumerated exactly.
TID = Var("tid", THREAD)
TID_Y = Var("tid_y", THREAD)
TID_Z = Var("tid_z", THREAD)


def lane_of(t: Expr = TID) -> Expr:
    return binop("%", t, Const(32))


def warp_of(t: Expr = TID) -> Expr:
    return binop("/", t, Const(32))
