"""Host-side tensor maps: the bytes one tensor copy through a kernel's `CUtensorMap` parameter
delivers, read from the host code that encodes the map.

A raw-PTX `cp.async.bulk.tensor` names its tensor map by address; the bytes it completes on its
mbarrier are the map's box (the product of `boxDim[0..rank)` times the element size), which the
kernel does not show. The host writes it: `cuTensorMapEncodeTiled(&map, dtype, rank, ptr, dims,
strides, boxDim, elementStrides, ...)` (or the same entry point obtained through
`cudaGetDriverEntryPoint` / `cuGetProcAddress`, called through a function pointer), directly or
in a helper that receives `&map` (helpers of helpers too, `MAX_DEPTH` deep), and launches
`kernel<<<...>>>(..., map, ...)` with the encoded variable. This module follows exactly that:

  launch argument -> the host variable it names -> every call in that host function that takes
  `&variable` -> (through user helpers' pointer parameters) the encode call -> its dtype, rank,
  box array (a local array's initialiser, or one a caller passed) and element strides, each
  evaluated with the helper's parameters bound to the caller's arguments.

Only a constant answer is kept, and only when every encoding of every launch of the kernel gives
the same one; anything else (an encoding this does not follow, the variable assigned or passed
elsewhere, a box not constant, element strides other than 1, an element type of sub-byte size)
leaves the parameter out: its copies' bytes stay unknown (never a guess).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from . import cexpr
from .walk_env import CK, Ctx, Env, tokens_of

MAX_DEPTH = 4  # helpers that pass the map pointer on, and callers whose arrays a helper reads
_ENCODE = "cuTensorMapEncodeTiled"
# the encode call's arguments: (map, dtype, rank, address, dims, strides, box, element strides, ...)
_DTYPE, _RANK, _BOX, _ESTRIDES = 1, 2, 6, 7


@dataclass
class _Scope:
    """A host function being read: its cursor and its parameters bound to the caller's
    argument cursors (each evaluated in the caller's scope)."""

    func: Any
    args: dict[str, tuple[Any, "_Scope | None"]]
    depth: int = 0


def _strip(c: Any) -> Any:
    """The expression under implicit casts, parentheses and copies (a struct passed by value is
    a copy constructor's call)."""
    while c is not None:
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        copy = c.kind == CK.CALL_EXPR and c.referenced is not None and c.referenced.kind == CK.CONSTRUCTOR
        if c.kind not in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR) and not copy:
            break
        c = kids[0]
    return c


def _decl_ref(c: Any) -> Any:
    """The declaration a plain name expression refers to (None: not a plain name)."""
    c = _strip(c)
    if c is not None and c.kind == CK.DECL_REF_EXPR:
        return c.referenced
    return None


def _named(c: Any, func: Any) -> Any:
    """The declaration an argument names: its reference, or (a call clang could not resolve
    keeps its arguments unexposed) the parameter or local variable of `func` it spells."""
    d = _decl_ref(c)
    if d is not None:
        return d
    toks = [t for t in tokens_of(c) if t not in ("(", ")")]
    if len(toks) != 1 or not toks[0].isidentifier():
        return None
    for n in _walk(func):
        if n.kind in (CK.PARM_DECL, CK.VAR_DECL) and n.spelling == toks[0]:
            return n
    return None


def _address_of(c: Any) -> Any:
    """`&x` -> x's declaration; None for any other expression."""
    c = _strip(c)
    if c is None or c.kind != CK.UNARY_OPERATOR:
        return None
    toks = tokens_of(c)
    if not toks or toks[0] != "&":
        return None
    kids = list(c.get_children())
    return _decl_ref(kids[0]) if len(kids) == 1 else None


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a == b


def _walk(c: Any):
    stack = [c]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(n.get_children())))


def _call_args(call: Any) -> list[Any]:
    """The argument cursors of a call expression (its callee left out)."""
    try:
        return list(call.get_arguments())
    except Exception:  # noqa: BLE001 - libclang raises on calls it cannot list
        return []


def _callee_name(call: Any) -> str:
    """The name a call expression calls (its own spelling, else the name its callee spells)."""
    if call.spelling:
        return call.spelling
    kids = list(call.get_children())
    c = kids[0] if kids else None
    while c is not None and c.kind == CK.UNEXPOSED_EXPR:
        inner = list(c.get_children())
        c = inner[0] if len(inner) == 1 else None
    if c is not None and c.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF):
        return c.spelling or (c.referenced.spelling if c.referenced is not None else "")
    return ""


def _body(func: Any) -> Any:
    return next((ch for ch in func.get_children() if ch.kind == CK.COMPOUND_STMT), None)


class TensorMaps:
    """The box bytes of each kernel's `CUtensorMap` parameters, from the file's host code."""

    def __init__(self, mb: Any):
        self.mb = mb
        self._by_kernel: dict[str, dict[str, int | None]] | None = None
        self._walker: Any = None
        self._encoders: set[str] | None = None

    def box_bytes(self, kernel: str) -> dict[str, int]:
        """Parameter name -> the bytes one copy through it delivers, where known."""
        if self._by_kernel is None:
            self._by_kernel = {}
            try:
                self._collect()
            except (ValueError, AttributeError):  # a libclang cursor this does not read
                self._by_kernel = {}
        return {k: v for k, v in self._by_kernel.get(kernel, {}).items() if v is not None}

    # -- launches ---------------------------------------------------------
    def _collect(self) -> None:
        assert self._by_kernel is not None
        for call in getattr(self.mb.code, "launches", ()):
            kids = list(call.get_children())
            if not kids:
                continue
            kernel = next((n.referenced for n in _walk(kids[0]) if n.kind == CK.DECL_REF_EXPR), None)
            if kernel is None:
                continue
            args = [k for k in kids[1:] if not (k.kind == CK.CALL_EXPR and k.spelling == "cudaConfigureCall")]
            params = [p for p in kernel.get_children() if p.kind == CK.PARM_DECL]
            seen = self._by_kernel.setdefault(kernel.spelling, {})
            for p, a in zip(params, args):
                if "CUtensorMap" not in p.type.spelling:
                    continue
                n = self._launch_arg_bytes(a)
                if p.spelling in seen and seen[p.spelling] != n:
                    n = None
                seen[p.spelling] = n

    def _launch_arg_bytes(self, arg: Any) -> int | None:
        """The box bytes of the host variable a launch passes (every encoding of it agrees)."""
        var = _decl_ref(arg)
        if var is None or var.kind != CK.VAR_DECL:
            return None
        func = var.semantic_parent
        body = _body(func) if func is not None else None
        if body is None:
            return None
        found: set[int | None] = set()
        for n in _walk(body):
            if n.kind != CK.CALL_EXPR:
                continue
            for j, a in enumerate(_call_args(n)):
                if _same(_address_of(a), var):
                    found.add(self._through(n, j, _Scope(func, {})))
        if len(found) != 1:
            return None
        return found.pop()

    # -- encodings ----------------------------------------------------------
    def _through(self, call: Any, j: int, scope: _Scope) -> int | None:
        """The box bytes the call encodes into the map its argument j points to."""
        if scope.depth > MAX_DEPTH:
            return None
        args = _call_args(call)
        if self._is_encoder(call):
            return self._encode(args, scope) if j == 0 else None
        callee = call.referenced
        if callee is None or callee.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
            return None
        defn = callee.get_definition() or callee
        body = _body(defn)
        params = [p for p in defn.get_children() if p.kind == CK.PARM_DECL]
        if body is None or j >= len(params) or len(args) > len(params):
            return None
        inner = _Scope(defn, {p.spelling: (a, scope) for p, a in zip(params, args)}, scope.depth + 1)
        found: set[int | None] = set()
        for n in _walk(body):
            if n.kind != CK.CALL_EXPR:
                continue
            for k, a in enumerate(_call_args(n)):
                if _same(_named(a, defn), params[j]):
                    found.add(self._through(n, k, inner))
        return found.pop() if len(found) == 1 else None

    def _is_encoder(self, call: Any) -> bool:
        if _callee_name(call) == _ENCODE:
            return True
        ref = call.referenced
        if ref is None or ref.kind not in (CK.VAR_DECL, CK.PARM_DECL, CK.FIELD_DECL):
            return False
        # a function pointer to the driver's entry point: its type says so, or it was obtained
        # by name (`cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, ...)`)
        if "TensorMapEncodeTiled" in ref.type.spelling:
            return True
        return ref.spelling in self._entry_points()

    def _entry_points(self) -> set[str]:
        """Names of variables the user's code fills with the encode entry point."""
        if self._encoders is None:
            self._encoders = set()
            for d in self.mb.code.decls:
                if d.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD):
                    continue
                body = _body(d)
                if body is None:
                    continue
                for n in _walk(body):
                    if n.kind != CK.CALL_EXPR or _callee_name(n) not in (
                        "cudaGetDriverEntryPoint",
                        "cuGetProcAddress",
                    ):
                        continue
                    toks = tokens_of(n)
                    if not any(t.strip('"') == _ENCODE for t in toks if t.startswith('"')):
                        continue
                    for a in _call_args(n):
                        v = _address_of(a)
                        if v is None:
                            inner = _strip(a)
                            # `(void **)&fn`
                            kids = list(inner.get_children()) if inner is not None else []
                            v = _address_of(kids[-1]) if kids else None
                        if v is not None:
                            self._encoders.add(v.spelling)
        return self._encoders

    def _encode(self, args: list[Any], scope: _Scope) -> int | None:
        if len(args) <= _ESTRIDES:
            return None
        elem = self._dtype_bytes(args[_DTYPE], scope)
        rank = self._int(args[_RANK], scope)
        box = self._array(args[_BOX], scope)
        strides = self._array(args[_ESTRIDES], scope)
        if elem is None or rank is None or box is None or strides is None:
            return None
        if not 1 <= rank <= 5 or len(box) < rank or len(strides) < rank:
            return None
        if any(s != 1 for s in strides[:rank]):
            return None
        total = elem
        for b in box[:rank]:
            if b is None or b <= 0:
                return None
            total *= b
        return total

    # -- values -------------------------------------------------------------
    def _dtype_bytes(self, arg: Any, scope: _Scope) -> int | None:
        toks = [t for t in tokens_of(arg) if t not in ("(", ")")]
        if len(toks) == 1 and toks[0] in scope.args:
            a, outer = scope.args[toks[0]]
            return self._dtype_bytes(a, outer) if outer is not None else None
        name = toks[-1] if toks else ""
        return K.TENSOR_MAP_DTYPE_BYTES.get(name)

    def _array(self, arg: Any, scope: _Scope) -> list[int | None] | None:
        """The values of the array an argument names: a local array with an initialiser list, or
        (through a pointer parameter) the caller's."""
        d = _named(arg, scope.func)
        if d is None:
            return None
        if d.kind == CK.PARM_DECL:
            bound = scope.args.get(d.spelling)
            if bound is None or bound[1] is None:
                return None
            return self._array(bound[0], bound[1])
        if d.kind != CK.VAR_DECL or d.semantic_parent != scope.func:
            return None
        init = next((ch for ch in d.get_children() if ch.kind == CK.INIT_LIST_EXPR), None)
        if init is None or self._written(d, scope):
            return None
        return [self._int(x, scope) for x in init.get_children()]

    def _written(self, var: Any, scope: _Scope) -> bool:
        """Is the local array written after its declaration (`box[1] = n;`, passed by pointer to
        a call other than the encode)? Then its initialiser is not its value."""
        body = _body(scope.func)
        for n in _walk(body) if body is not None else ():
            if n.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR):
                kids = list(n.get_children())
                lhs = _strip(kids[0]) if kids else None
                if lhs is not None and lhs.kind == CK.ARRAY_SUBSCRIPT_EXPR:
                    base = list(lhs.get_children())
                    toks = tokens_of(n)
                    if base and _same(_decl_ref(base[0]), var) and "=" in toks and "==" not in toks:
                        return True
        return False

    def _int(self, c: Any, scope: _Scope) -> int | None:
        v = self._value(c, scope)
        if isinstance(v, E.Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return v.value
        return None

    def _value(self, c: Any, scope: _Scope) -> Any:
        """An expression of a host function as a model value: the file's constants, the
        function's `const` locals and its parameters bound to the caller's arguments."""
        env = self._env(scope)
        node = cexpr.parse_expression(tokens_of(c), env.has)
        return self._ev(node, env)

    def _env(self, scope: _Scope) -> Env:
        env = self.mb.env_for(scope.func).child()
        for name, (a, outer) in scope.args.items():
            v = self._value(a, outer) if outer is not None else None
            if isinstance(v, E.Expr):
                env.define(name, v)
        body = _body(scope.func)
        for n in body.get_children() if body is not None else ():
            if n.kind != CK.DECL_STMT:
                continue
            for d in n.get_children():
                if d.kind != CK.VAR_DECL or not d.type.is_const_qualified():
                    continue
                kids = [k for k in d.get_children() if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
                if len(kids) != 1 or kids[0].kind == CK.INIT_LIST_EXPR:
                    continue
                v = self._ev(cexpr.parse_expression(tokens_of(kids[0]), env.has), env)
                if isinstance(v, E.Expr):
                    env.define(d.spelling, v)
        return env

    def _ev(self, node: Any, env: Env) -> Any:
        if self._walker is None:
            from .builder import KernelWalker

            self._walker = KernelWalker(self.mb, self.mb.tu.cursor)
        return self._walker.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
