"""Helpers of the parse-tree walk that need no walker: array values, tile sizes and offsets,
splitting, step and recurrence solving."""

from __future__ import annotations

import re

from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import Obj

# ---------------------------------------------------------------- helpers ----


class _ArrVal:
    """An array of objects (`semaphore full[STAGES]` before indexing)."""

    def __init__(self, obj: Obj, dims):
        self.obj = obj
        self.dims = dims

    def index(self, idx, spelling: str | None = None):
        return (
            self.obj.at(idx, self.obj.type, spelling)
            if len(self.dims) <= 1
            else _ArrVal(self.obj.at(idx, self.obj.type, spelling), self.dims[1:])
        )


def _arr(obj: Obj, dims):
    return _ArrVal(obj, list(dims)) if dims else obj


#: KITTENS_DEFAULT_ALIGN (TK's common/util.cuh): st / sv are __align__(128) on Hopper and Blackwell.
_TK_TYPE_ALIGN = 128


def _sizeof_align(t: ir.TileType) -> tuple[int, int] | None:
    """(sizeof, alignof) of a shared TK type or a struct of them, when constant."""
    if t.kind in ("st", "sv"):
        s = t.size_bytes()
        v = s.eval({}) if s is not None else None
        if not isinstance(v, int):
            return None
        return (v + _TK_TYPE_ALIGN - 1) // _TK_TYPE_ALIGN * _TK_TYPE_ALIGN, _TK_TYPE_ALIGN
    if t.kind == "semaphore":
        return 8, 8
    if t.kind == "struct":
        offs, size = _member_offsets(t)
        if size is None:
            return None
        al = max([1] + [(_sizeof_align(mt) or (0, 1))[1] for _, mt, _ in t.members])
        return size, al
    return None


def _member_offsets(t: ir.TileType) -> tuple[dict[str, int], int | None]:
    """Byte offset of each member of a struct of TK types, and sizeof the struct."""
    offs, pos, al = {}, 0, 1
    for mname, mt, count in t.members:
        sa = _sizeof_align(mt)
        n = count.eval({}) if count is not None else 1
        if sa is None or not isinstance(n, int):
            return offs, None
        pos = (pos + sa[1] - 1) // sa[1] * sa[1]
        offs[mname] = pos
        pos += sa[0] * n
        al = max(al, sa[1])
    return offs, (pos + al - 1) // al * al


def _const_strides(dims, elem_size):
    """Byte strides of array dims over elements of `elem_size` bytes (None when not constant)."""
    if elem_size is None:
        return None
    vals = [d.eval({}) for d in dims]
    if not all(isinstance(v, int) for v in vals):
        return None
    out, acc = [], elem_size
    for v in reversed(vals):
        out.append(acc)
        acc *= v
    return tuple(reversed(out))


def _tile_attr(t: ir.TileType, name: str):
    if name == "rows" and t.rows is not None:
        return t.rows
    if name == "cols" and t.cols is not None:
        return t.cols
    if name == "num_elements":
        if t.kind in ("st", "rt", "tt") and t.rows is not None and t.cols is not None:
            return E.binop("*", t.rows, t.cols)
        if t.kind in ("sv", "rv") and t.cols is not None:
            return t.cols
    if name == "length" and t.cols is not None:
        return t.cols
    if name == "height" and t.rows is not None:
        return E.binop("/", t.rows, E.Const(16))
    if name == "width" and t.cols is not None:
        return E.binop("/", t.cols, E.Const(16))
    return None


def _to_bool(e: Expr) -> Expr:
    if isinstance(e, E.Bin) and (e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||")):
        return e
    if isinstance(e, E.Un) and e.op == "!":
        return e
    if isinstance(e, E.Const):
        return E.Const(bool(e.value))
    if isinstance(e, E.Var) and e.is_bool:
        return e
    return E.binop("!=", e, E.Const(0))


def _is_ident(t: str) -> bool:
    return bool(t) and (t[0].isalpha() or t[0] == "_")


_DECL_WORDS = {
    "__shared__",
    "static",
    "constexpr",
    "const",
    "extern",
    "__align__",
    "alignas",
    "volatile",
    "inline",
    "__device__",
    "register",
    "auto",
}


def _strip_declarator_words(toks: list[str]) -> list[str]:
    """Drop storage words anywhere and declarator punctuation (`&`, `*`, `(`)
    outside template arguments: `rt_fl<1*16, 8*16> &x` keeps its `*`."""
    out, depth = [], 0
    for t in toks:
        if t == "<":
            depth += 1
        elif t == ">":
            depth = max(depth - 1, 0)
        elif t == ">>":
            depth = max(depth - 2, 0)
        if t in _DECL_WORDS or (depth == 0 and t in ("&", "*", "(", "&&")):
            continue
        out.append(t)
    return out


def _split_comma(node: cexpr.Node) -> list[cexpr.Node]:
    if isinstance(node, cexpr.Comma):
        return _split_comma(node.a) + [node.b]
    return [node]


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


_TMEM_ACCESS_NAMES = ("load_async", "store_async")


def _is_tmem_init(v) -> bool:
    if isinstance(v, tuple) and v and v[0] == "tmem_tile":
        return True
    return isinstance(v, tuple) and bool(v) and all(isinstance(x, tuple) and x and x[0] == "tmem_tile" for x in v)


_LAUNCH_DIMS = frozenset(f"{b}.{f}" for b in ("gridDim", "blockDim", "clusterDim") for f in "xyz")


def _positive_uniform(e) -> bool:
    """A launch dimension (gridDim.x, blockDim.y, ...) or a product of them and positive constants."""
    if isinstance(e, E.Var):
        return e.kind == E.PARAM and e.name in _LAUNCH_DIMS
    if isinstance(e, E.Const):
        return isinstance(e.value, int) and not isinstance(e.value, bool) and e.value > 0
    if isinstance(e, E.Bin) and e.op == "*":
        return _positive_uniform(e.a) and _positive_uniform(e.b)
    return False


def _step_of(node: cexpr.Node, var: cexpr.Node | str, ev):
    """The step of `var` (an lvalue node: a name or a member) in a for-loop increment."""
    if isinstance(var, str):
        var = cexpr.Name.simple(var)
    match node:
        case cexpr.Comma(a, b):  # `for (...; ...; task += n, t++)`
            return _step_of(a, var, ev) or _step_of(b, var, ev)
        case cexpr.Assign(op, lhs, rhs) if lhs == var:
            if op == "+=":
                s = ev(rhs)
                return s if isinstance(s, Expr) else None
            if op == "-=":
                s = ev(rhs)
                return E.unop("-", s) if isinstance(s, Expr) else None
            if op == "=" and isinstance(rhs, cexpr.Bin) and rhs.op == "+" and rhs.a == lhs:
                s = ev(rhs.b)
                return s if isinstance(s, Expr) else None
        case cexpr.Post(op, a) if a == var:
            return E.Const(1 if op == "++" else -1)
    return None


def _invariant_step(c: Expr) -> bool:
    """A constant, or a value that is the same on every iteration: no carried start value,
    no loop counter, no thread id, nothing opaque."""
    if isinstance(c, E.Const):
        return True
    return not c.is_opaque() and not c.depends_on(E.THREAD) and not c.depends_on(E.LOOP)


def _wrap_condition(c, counter: E.Var | None):
    """(S, r) when `c` is `counter % S == r` with constants 0 <= r < S."""
    if counter is None or not (isinstance(c, E.Bin) and c.op == "=="):
        return None
    a, b = c.a, c.b
    if isinstance(a, E.Const):
        a, b = b, a
    if (
        isinstance(a, E.Bin)
        and a.op == "%"
        and a.a == counter
        and isinstance(a.b, E.Const)
        and isinstance(b, E.Const)
        and isinstance(a.b.value, int)
        and a.b.value > 0
        and isinstance(b.value, int)
        and 0 <= b.value < a.b.value
    ):
        return a.b.value, b.value
    return None


def solve_recurrence(start: E.Var, end, v0: Expr, name: str, counter: E.Var | None = None):
    """Closed form of a loop-carried variable from one symbolic iteration.

    `end` is the variable's value at the end of the body, as an expression of
    its value at the start (`start`). Recognised: invariant, +c, ^1 / 1-x
    (a phase bit), (x+c)%N and its `x+1==N ? 0 : x+1` spelling (a ring index),
    and the TK phase bitfield `x ^ (1 << (ring + 16n))`. Anything else is an
    unknown per iteration (never a guess).
    """

    def opaque_k(k):
        return E.opaque(f"{name}@iter")

    if not isinstance(end, Expr):
        return opaque_k
    if end == start:
        return lambda k: v0
    fv = end.free_vars()
    if start not in fv:
        # overwritten each iteration with something not depending on itself
        if not any(v.kind == E.LOOP and v.name.endswith("@start") for v in fv):
            first = v0
            return lambda k: (
                E.ite(E.binop("==", k, E.Const(0)), first, end) if not isinstance(k, E.Const) or k.value > 0 else first
            )
        return opaque_k
    # x + c
    if (
        isinstance(end, E.Bin)
        and end.op in ("+", "-")
        and end.a == start
        and start not in end.b.free_vars()
        and not end.b.depends_on(E.THREAD)
    ):
        c = end.b if end.op == "+" else E.unop("-", end.b)
        return lambda k: E.binop("+", v0, E.binop("*", c, k))
    # x ^ 1  /  1 - x
    if (isinstance(end, E.Bin) and end.op == "^" and end.a == start and end.b == E.Const(1)) or (
        isinstance(end, E.Bin) and end.op == "-" and end.a == E.Const(1) and end.b == start
    ):
        if end.op == "^":
            return lambda k: E.binop("^", v0, E.binop("%", k, E.Const(2)))
        return lambda k: E.ite(E.binop("==", E.binop("%", k, E.Const(2)), E.Const(0)), v0, E.binop("-", E.Const(1), v0))
    # (x + c) % N; c may be a loop-invariant value (a ring advanced by an inner loop's trip count)
    if (
        isinstance(end, E.Bin)
        and end.op == "%"
        and isinstance(end.a, E.Bin)
        and end.a.op == "+"
        and end.a.a == start
        and isinstance(end.b, E.Const)
        and _invariant_step(end.a.b)
    ):
        c, n = end.a.b, end.b
        return lambda k: E.binop("%", E.binop("+", v0, E.binop("*", c, k)), n)
    # x + 1 == N ? 0 : x + 1
    if (
        isinstance(end, E.Ite)
        and isinstance(end.c, E.Bin)
        and end.c.op in ("==", ">=")
        and end.t == E.Const(0)
        and isinstance(end.e, E.Bin)
        and end.e.op == "+"
        and end.e.a == start
        and end.e.b == E.Const(1)
        and isinstance(end.c.b, E.Const)
    ):
        n = end.c.b
        return lambda k: E.binop("%", E.binop("+", v0, k), n)
    # a per-thread counter advanced in one role's branch only (`if (producer) ++head; else
    # ++tail;`, libcu++'s pipeline head and tail): the condition reads no loop-carried value and
    # nothing opaque, so every thread takes the same branch in every iteration -- each branch's
    # update is solved on its own and the closed form picks by the same condition
    if (
        isinstance(end, E.Ite)
        and not any(v.kind in (E.LOOP, E.OPAQUE) for v in end.c.free_vars())
        and (end.t == start or end.e == start or start in end.t.free_vars() or start in end.e.free_vars())
    ):
        ft = solve_recurrence(start, end.t, v0, name, counter)
        fe = solve_recurrence(start, end.e, v0, name, counter)
        probe = E.Var("k@probe", E.LOOP)
        if not any(isinstance(f(probe), E.Var) and f(probe).kind == E.OPAQUE for f in (ft, fe)):
            cond = end.c
            return lambda k: E.ite(cond, ft(k), fe(k))
    # `if (k % S == r) phase ^= 1` (also `1 - phase`): the phase flips once per
    # S iterations; before iteration k it flipped (k + S - 1 - r) / S times
    if isinstance(end, E.Ite) and end.e == start:
        flip = (isinstance(end.t, E.Bin) and end.t.op == "^" and end.t.a == start and end.t.b == E.Const(1)) or (
            isinstance(end.t, E.Bin) and end.t.op == "-" and end.t.a == E.Const(1) and end.t.b == start
        )
        wr = _wrap_condition(end.c, counter)
        if flip and wr is not None:
            period, r = wr
            return lambda k: E.binop(
                "^",
                v0,
                E.binop("%", E.binop("/", E.binop("+", k, E.Const(period - 1 - r)), E.Const(period)), E.Const(2)),
            )
    return opaque_k


# ------------------------------------------------------ integer conversion ----

#: integer types by spelling: (bits, signed)
_INT_TYPES = {
    "int": (32, True),
    "signed": (32, True),
    "signed int": (32, True),
    "int32_t": (32, True),
    "unsigned": (32, False),
    "unsigned int": (32, False),
    "uint32_t": (32, False),
    "uint": (32, False),
    "short": (16, True),
    "int16_t": (16, True),
    "unsigned short": (16, False),
    "uint16_t": (16, False),
    "ushort": (16, False),
    "char": (8, True),
    "signed char": (8, True),
    "int8_t": (8, True),
    "unsigned char": (8, False),
    "uint8_t": (8, False),
    "long": (64, True),
    "long long": (64, True),
    "int64_t": (64, True),
    "long int": (64, True),
    "unsigned long": (64, False),
    "unsigned long long": (64, False),
    "uint64_t": (64, False),
    "size_t": (64, False),
}
_QUALIFIERS = re.compile(r"\b(const|volatile|constexpr|static|register|std::|__restrict__)\b")


def int_type_of(spelling: str | None) -> tuple[int, bool] | None:
    """(bits, signed) of an integer type spelling (`const int`, `uint32_t`), None otherwise
    (references, pointers, class types, bool, floating point)."""
    if not spelling or "&" in spelling or "*" in spelling:
        return None
    s = " ".join(_QUALIFIERS.sub(" ", spelling.replace("std::", "")).split())
    return _INT_TYPES.get(s)


def convert_int(v, spelling: str | None):
    """A constant converted to the integer type it is passed or assigned as (C++ integral
    conversion: modulo 2^bits, then signed): `init_semaphore(bar, 4294967297, 0)` passes 1.
    Symbolic values are kept (their range is what the solver is told)."""
    t = int_type_of(spelling)
    if t is None or not isinstance(v, E.Const) or isinstance(v.value, bool) or not isinstance(v.value, int):
        return v
    bits, signed = t
    x = v.value % (1 << bits)
    if signed and x >= 1 << (bits - 1):
        x -= 1 << bits
    return v if x == v.value else E.Const(x)


def shared_copy(name: str, v: Obj) -> Expr:
    """The value a copy of a `__shared__` scalar takes (`const int t = tile_s;`): read once, here,
    at one address every thread reads. It is data (named `?..`, as every value read from memory),
    and block-uniform as a value read at a uniform address is (`len_s[s]`): the readers agree when
    the read is ordered after the one write it observes and before the next, which the race
    searches check on the same accesses (a racing read is a shared-memory race there, never a silent
    pass)."""
    return E.shared_copy(name, v.ref.name)
