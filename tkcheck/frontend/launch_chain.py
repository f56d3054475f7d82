"""The grid level of a translation unit: its kernels launched in order on streams, read from the
host code's syntax tree (`ir.GridModel`, shared by every kernel model of the file).

A small abstract interpreter walks each host entry function (a user host function no other user
function names: `main`, a test driver) statement by statement, following user helpers (a launch
wrapper `launch_pdl(kernel, stream, args...)` with its parameter pack) `MAX_DEPTH` deep:

* host pointers are *buffer tokens*: a variable declared without an initialiser, or filled by
  `cudaMalloc(&p, ...)`, is a buffer of its own; `q = p`, `float *src = da`, casts, a swap through
  a temporary or `std::swap` carry tokens; anything else makes the variable unknown (None);
* launches: `k<<<g, b, smem, stream>>>(args)`, `cudaLaunchKernelEx(&cfg, k, args...)`,
  `cudaLaunchKernel` / `cudaLaunchCooperativeKernel`: the kernel, its pointer parameters bound to
  the tokens of the arguments, the stream (a token; none: the default stream), and whether the
  launch carries `cudaLaunchAttributeProgrammaticStreamSerialization` (the function declaring the
  config sets that attribute's id and `programmaticStreamSerializationAllowed` to a non-zero
  constant: on; sets the id with another value: not known; never names it: off);
* each stream remembers its last launch: the next launch's predecessor. A synchronisation
  (`cudaDeviceSynchronize`, `cudaStreamSynchronize`, a synchronous `cudaMemcpy` / `cudaMemset`,
  an asynchronous copy on the stream) leaves nothing running before the next launch (PRED_NONE);
  an event wait, a call of a user function without a body, a launch whose stream is not known
  make it unknown (PRED_UNKNOWN);
* `if` walks both branches (a branch that returns without launching, an error check, is
  dropped); a `for` with a constant trip count (at most `MAX_UNROLL`) is unrolled, another loop is
  walked 0, 1 and 2 times (`MAX_PATHS` paths at most; past that the paths merge into one whose
  streams and pointers are unknown).

Everything not understood makes a token or a predecessor unknown, never a guess: the PDL question
(checks/pdl.py) leaves what depends on it undecided.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from .walk_env import CK, loc_of, tokens_of

MAX_DEPTH = 4  # user helpers followed from an entry function
MAX_UNROLL = 16  # constant-trip host loops unrolled
MAX_PATHS = 8  # host paths followed at once
MAX_STEPS = 20000  # statements walked per file (a safety net)

_SYNC = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaMemset",
        "cudaMemcpy2D",
        "cudaMemcpyToSymbol",
        "cudaMemcpyFromSymbol",
        "cudaFree",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "cudaMemcpy2DAsync",
        "cudaThreadSynchronize",
        "cudaStreamDestroy",
    }
)
_UNKNOWN_ORDER = frozenset({"cudaStreamWaitEvent", "cudaGraphLaunch", "cudaLaunchHostFunc", "cudaStreamBeginCapture"})
_LAUNCH_EX = frozenset({"cudaLaunchKernelEx", "cudaLaunchKernelExC"})
_LAUNCH_PLAIN = frozenset({"cudaLaunchKernel", "cudaLaunchCooperativeKernel"})
_DEFAULT_STREAM = "<default stream>"
# calls that create a new object into `*arg0`: a buffer, a stream
_CREATES = frozenset(
    {
        "cudaMalloc",
        "cudaMallocAsync",
        "cudaMallocManaged",
        "cudaStreamCreate",
        "cudaStreamCreateWithFlags",
        "cudaStreamCreateWithPriority",
    }
)
_WATCHED = _SYNC | _UNKNOWN_ORDER | _LAUNCH_EX | _LAUNCH_PLAIN | _CREATES | {"cudaConfigureCall", "swap"}


class _Return(Exception):
    pass


@dataclass
class _Path:
    vars: dict[Any, Any] = field(default_factory=dict)  # declaration -> token | None | kernel cursor | list (pack)
    last: dict[str, int] = field(default_factory=dict)  # stream token -> predecessor
    other: int = ir.PRED_NONE  # the predecessor of a stream not in `last`
    done: bool = False  # returned
    launched: bool = False  # made a launch since the path was forked

    def copy(self) -> _Path:
        return _Path(dict(self.vars), dict(self.last), self.other, self.done, self.launched)

    def key(self) -> tuple:
        return (
            tuple(sorted((str(k.hash) if hasattr(k, "hash") else str(k), str(v)) for k, v in self.vars.items())),
            tuple(sorted(self.last.items())),
            self.other,
            self.done,
        )

    def pred(self, stream: str | None) -> int:
        if stream is None:
            return ir.PRED_UNKNOWN
        return self.last.get(stream, self.other)

    def set_all(self, value: int) -> None:
        self.last.clear()
        self.other = value


def _strip(c: Any) -> Any:
    while c is not None and c.kind in (
        CK.UNEXPOSED_EXPR,
        CK.PAREN_EXPR,
        CK.CSTYLE_CAST_EXPR,
        CK.CXX_STATIC_CAST_EXPR,
        CK.CXX_CONST_CAST_EXPR,
        CK.CXX_REINTERPRET_CAST_EXPR,
        CK.CXX_FUNCTIONAL_CAST_EXPR,
    ):
        kids = [k for k in c.get_children() if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _children(c: Any) -> list:
    try:
        return list(c.get_children())
    except Exception:  # noqa: BLE001 - a cursor libclang cannot list
        return []


def _body(func: Any) -> Any:
    return next((ch for ch in _children(func) if ch.kind == CK.COMPOUND_STMT), None)


def _params(func: Any) -> list:
    return [p for p in _children(func) if p.kind == CK.PARM_DECL]


def _callee_name(call: Any) -> str:
    if call.spelling:
        return call.spelling
    kids = _children(call)
    c = _strip(kids[0]) if kids else None
    while c is not None and c.kind == CK.DECL_REF_EXPR and not c.spelling and len(_children(c)) == 1:
        c = _children(c)[0]  # a dependent call's callee: the overloaded name under it
    if c is not None and c.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF):
        return c.spelling
    return ""


def _arguments(call: Any) -> list:
    """A call's argument cursors (a dependent call in a template lists them as children)."""
    try:
        args = list(call.get_arguments())
    except Exception:  # noqa: BLE001
        args = []
    if args:
        return args
    return _children(call)[1:]


def _is_pointer(t: Any) -> bool:
    try:
        return t.get_canonical().kind.name == "POINTER"
    except Exception:  # noqa: BLE001 - a type libclang cannot canonicalise
        return False


def _is_record(t: Any) -> bool:
    try:
        return t.get_canonical().kind.name == "RECORD"
    except Exception:  # noqa: BLE001
        return False


def _pointer_fields(t: Any) -> list[str]:
    """The names of a struct type's pointer members, in declaration order."""
    try:
        return [f.spelling for f in t.get_canonical().get_fields() if _is_pointer(f.type)]
    except Exception:  # noqa: BLE001
        return []


def _is_copy(c: Any) -> bool:
    """A call of a copy or move constructor (a struct passed or initialised by value)."""
    ref = c.referenced if c is not None and c.kind == CK.CALL_EXPR else None
    try:
        return (
            ref is not None and ref.kind == CK.CONSTRUCTOR and (ref.is_copy_constructor() or ref.is_move_constructor())
        )
    except Exception:  # noqa: BLE001
        return False


class LaunchChain:
    """Reads the launch sequence of one translation unit (see the module docstring)."""

    def __init__(self, mb: Any):
        self.mb = mb
        self.grid = ir.GridModel()
        self._steps = 0
        self._site: Any = None
        self._matter: dict[int, bool] = {}
        self._index: dict[tuple, int] = {}
        self._consts: dict[Any, tuple[int | None, int]] = {}  # `_const`'s answers by cursor
        self._sites: list = []  # the user's calls being followed (a launch is placed at the outermost)
        # the template arguments of the host function templates being followed (innermost last):
        # parameter name -> its argument as a kernel instance's name shows it (None: not known)
        self._tbinds: list[dict[str, str | None]] = []
        self._kernels = {k.spelling for k in getattr(mb, "kernels", ())} | {
            t.spelling for t in getattr(mb, "kernel_templates", ())
        }

    # -- entry --------------------------------------------------------------
    def read(self) -> ir.GridModel:
        code = self.mb.code
        funcs = [
            d
            for d in code.decls
            if d.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE) and d.is_definition() and not self._is_device(d)
        ]
        named = set()
        for f in funcs:
            body = _body(f)
            for n in body.walk_preorder() if body is not None else ():
                if n.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF) and n.spelling != f.spelling:
                    named.add(n.spelling)
        for f in funcs:
            if f.spelling in named or f.kind == CK.FUNCTION_TEMPLATE:
                continue
            try:
                self._entry(f)
            except (ValueError, AttributeError, RecursionError):  # a cursor this does not read
                self.grid.notes.append(f"host function '{f.spelling}': launches not followed")
        return self.grid

    def _is_device(self, f: Any) -> bool:
        toks = tokens_of(f)[:12]
        return "__global__" in toks or ("__device__" in toks and "__host__" not in toks)

    def _entry(self, f: Any) -> None:
        body = _body(f)
        if body is None:
            return
        paths = [_Path()]
        self._block(body, paths, 0)

    # -- statements ---------------------------------------------------------
    def _block(self, stmt: Any, paths: list[_Path], depth: int) -> list[_Path]:
        for s in _children(stmt) if stmt.kind == CK.COMPOUND_STMT else [stmt]:
            paths = self._stmt(s, paths, depth)
            if not any(not p.done for p in paths):
                break
        return paths

    def _stmt(self, s: Any, paths: list[_Path], depth: int) -> list[_Path]:
        self._steps += 1
        if self._steps > MAX_STEPS:
            for p in paths:
                p.set_all(ir.PRED_UNKNOWN)
            return paths
        live = [p for p in paths if not p.done]
        dead = [p for p in paths if p.done]
        if not live:
            return paths
        k = s.kind
        if k in (CK.IF_STMT, CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT) and not self._matters(s):
            # no launch, synchronisation, allocation or user call inside (a reference loop): only
            # the pointers it assigns change, to values not followed
            for p in live:
                self._forget_assigned(s, p)
            return paths
        if k == CK.COMPOUND_STMT:
            return dead + self._block(s, live, depth)
        if k == CK.IF_STMT:
            return dead + self._if(s, live, depth)
        if k in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT):
            return dead + self._loop(s, live, depth)
        if k == CK.RETURN_STMT:
            for p in live:
                for ch in _children(s):
                    self._expr(ch, p, depth)
                p.done = True
            return paths
        if k in (CK.BREAK_STMT, CK.CONTINUE_STMT):
            return paths  # the loop walk bounds the iterations
        for p in live:
            self._expr(s, p, depth)
        return paths

    def _matters(self, s: Any) -> bool:
        """Does the statement launch, synchronise, allocate, swap or call a user host function?"""
        key = s.hash
        got = self._matter.get(key)
        if got is None:
            got = False
            for n in s.walk_preorder():
                if n.kind != CK.CALL_EXPR:
                    continue
                name = _callee_name(n)
                if name in _WATCHED:
                    got = True
                    break
                ref = n.referenced
                if ref is not None and self._user(ref) and not self._is_device(ref):
                    got = True
                    break
            self._matter[key] = got
        return got

    def _forget_assigned(self, s: Any, p: _Path) -> None:
        for n in s.walk_preorder():
            if n.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR, CK.UNARY_OPERATOR):
                kids = _children(n)
                lhs = _strip(kids[0]) if kids else None
                if lhs is not None and lhs.kind == CK.DECL_REF_EXPR and lhs.referenced in p.vars:
                    p.vars[lhs.referenced] = None
                member = self._member_of(lhs)
                if member is not None:
                    p.vars[member] = None

    def _if(self, s: Any, paths: list[_Path], depth: int) -> list[_Path]:
        kids = _children(s)
        cond, then = kids[0], kids[1] if len(kids) > 1 else None
        other = kids[2] if len(kids) > 2 else None
        out: list[_Path] = []
        for p in paths:
            self._expr(cond, p, depth)
            for branch in (then, other):
                q = p.copy()
                q.launched = False
                res = self._block(branch, [q], depth) if branch is not None else [q]
                for r in res:
                    if r.done and not r.launched:
                        continue  # an error check's return: a prefix of the path that goes on
                    r.launched = r.launched or p.launched
                    out.append(r)
        return self._merge(out)

    def _merge(self, paths: list[_Path]) -> list[_Path]:
        seen: dict[tuple, _Path] = {}
        for p in paths:
            seen.setdefault(p.key(), p)
        out = list(seen.values())
        if len(out) <= MAX_PATHS:
            return out
        q = out[0].copy()
        q.vars = {d: v for d, v in q.vars.items() if all(o.vars.get(d) == v for o in out)}
        q.set_all(ir.PRED_UNKNOWN)
        q.done = False
        return [q]

    def _loop(self, s: Any, paths: list[_Path], depth: int) -> list[_Path]:
        kids = _children(s)
        if s.kind == CK.DO_STMT:
            body, cond = kids[0], kids[-1]
            lit = _strip(cond)
            toks = tokens_of(lit) if lit is not None else []
            zero = (
                lit is not None
                and lit.kind in (CK.INTEGER_LITERAL, CK.CXX_BOOL_LITERAL_EXPR)
                and (
                    toks in (["0"], ["false"]) or len(toks) != 1  # a macro's `while (0)`: its tokens are the macro's
                )
            )
            if zero or self._const(cond) == 0:
                return self._block(body, paths, depth)  # do { ... } while (0): a macro's statement
            trips = None
        else:
            body = kids[-1]
            trips = self._for_trips(s) if s.kind == CK.FOR_STMT else None
            for ch in kids[:-1]:
                if s.kind == CK.FOR_STMT and ch is kids[0]:
                    for p in paths:
                        self._expr(ch, p, depth)
        if trips is not None and 0 <= trips <= MAX_UNROLL:
            for _ in range(trips):
                paths = self._block(body, paths, depth)
            return paths
        # unknown trip count: 0, 1 or 2 iterations
        out = [p.copy() for p in paths]
        cur = paths
        for _ in range(2):
            cur = [p for p in self._block(body, [q.copy() for q in cur], depth) if not p.done]
            out += [p.copy() for p in cur]
        return self._merge(out)

    def _for_trips(self, s: Any) -> int | None:
        """`for (int i = A; i < B; i++)` with constant A and B: B - A."""
        kids = _children(s)
        if len(kids) != 4:
            return None
        init, cond, inc = kids[0], kids[1], kids[2]
        toks_c = tokens_of(cond)
        toks_i = tokens_of(inc)
        decls = [d for d in _children(init) if d.kind == CK.VAR_DECL] if init.kind == CK.DECL_STMT else []
        if len(decls) != 1 or toks_i not in ([decls[0].spelling, "++"], ["++", decls[0].spelling]):
            return None
        ikids = [k for k in _children(decls[0]) if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
        a = self._const(ikids[0]) if len(ikids) == 1 else None
        if a is None or len(toks_c) < 3 or toks_c[0] != decls[0].spelling or toks_c[1] not in ("<", "<="):
            return None
        ckids = _children(cond)
        b = self._const(ckids[1]) if len(ckids) == 2 else None
        if b is None:
            return None
        return max(0, b - a + (1 if toks_c[1] == "<=" else 0))

    def _const(self, c: Any) -> int | None:
        """`_const_of(c)`, once per cursor of this read. The loops of the host code are followed
        once per known trip and up to three times when the trip is not known, so the same loop
        header's bounds were asked many times, each time evaluating every `const` local of the
        function again (`TensorMaps._env`; issue 29, round 15, docs/DEVELOPING.md). The answer
        is a function of the cursor (the file's constants and the function's `const` locals);
        what an evaluation advanced the counter of unknown names by (`expr.fresh_number`) is
        advanced again on a hit, so every later unknown keeps the name it had without the memo."""
        got = self._consts.get(c)  # (libclang's cursor equality and hash: one node of the parse)
        if got is None:
            before = E._opaque_counter[0]
            got = self._consts[c] = (self._const_of(c), E._opaque_counter[0] - before)
        else:
            E._opaque_counter[0] += got[1]
        return got[0]

    def _const_of(self, c: Any) -> int | None:
        tm = getattr(self.mb, "tensor_maps", None)
        if tm is None:
            return None
        try:
            from .tensor_maps import _Scope

            func = c.semantic_parent
            while func is not None and func.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD):
                func = func.semantic_parent
            if func is None:
                func = self.mb.tu.cursor
            v = tm._value(c, _Scope(func, {}))
        except Exception:  # noqa: BLE001 - an expression the evaluator does not take
            return None
        if isinstance(v, E.Const) and isinstance(v.value, int | bool):
            return int(v.value)
        return None

    # -- expressions --------------------------------------------------------
    def _expr(self, c: Any, p: _Path, depth: int) -> None:
        """The effects of an expression or declaration statement, in evaluation order."""
        if p.done:
            return
        k = c.kind
        if k == CK.LAMBDA_EXPR:
            return
        if k == CK.DECL_STMT:
            for d in _children(c):
                if d.kind == CK.VAR_DECL:
                    self._decl(d, p, depth)
            return
        if k == CK.CALL_EXPR:
            self._call(c, p, depth)
            return
        if k == CK.BINARY_OPERATOR:
            kids = _children(c)
            lhs = _strip(kids[0]) if kids else None
            if len(kids) == 2 and lhs is not None and lhs.kind == CK.DECL_REF_EXPR and self._is_assign(c, kids[0]):
                self._expr(kids[1], p, depth)
                d = lhs.referenced
                if d is not None and (d in p.vars or _is_pointer(d.type)):
                    p.vars[d] = self._value(kids[1], p)
                elif d is not None and _is_record(d.type):
                    self._struct_from(d, kids[1], p)  # `ca = pa;`: its members
                return
            member = self._member_of(lhs) if len(kids) == 2 and self._is_assign(c, kids[0]) else None
            if member is not None:
                self._expr(kids[1], p, depth)
                p.vars[member] = self._value(kids[1], p) if _is_pointer(lhs.type) else None
                return
        if k == CK.COMPOUND_ASSIGNMENT_OPERATOR:
            kids = _children(c)
            lhs = _strip(kids[0]) if kids else None
            if lhs is not None and lhs.kind == CK.DECL_REF_EXPR and lhs.referenced in p.vars:
                p.vars[lhs.referenced] = None  # `p += n`: another address
            member = self._member_of(lhs)
            if member is not None:
                p.vars[member] = None
        for ch in _children(c):
            self._expr(ch, p, depth)

    @staticmethod
    def _is_assign(c: Any, lhs: Any) -> bool:
        """Is the binary operator `=`: the token right after the left operand's extent."""
        toks = tokens_of(c)
        n = len(tokens_of(lhs))
        return len(toks) > n and toks[n] == "="

    def _decl(self, d: Any, p: _Path, depth: int) -> None:
        kids = [k for k in _children(d) if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
        if d.type.get_canonical().kind.name in ("CONSTANTARRAY", "VARIABLEARRAY", "INCOMPLETEARRAY"):
            init = kids[-1] if kids and kids[-1].kind == CK.INIT_LIST_EXPR else None  # not the size
        else:
            init = kids[-1] if kids else None
        if init is not None:
            self._expr(init, p, depth)
        if _is_record(d.type):
            self._struct_from(d, init, p)
            return
        if not _is_pointer(d.type):
            return
        if init is None:
            p.vars[d] = f"{d.spelling}@{d.location.line}"
        else:
            p.vars[d] = self._value(init, p)

    def _value(self, c: Any, p: _Path) -> Any:
        """The token an expression evaluates to (a pointer), None when not known."""
        c = _strip(c)
        while c is not None and c.kind == CK.CALL_EXPR and _is_copy(c):
            c = _strip(_children(c)[0])  # a struct passed by value: its copy
        if c is None:
            return None
        if c.kind == CK.DECL_REF_EXPR:
            d = c.referenced
            if d is None:
                return None
            if d in p.vars:
                return p.vars[d]
            if d.kind == CK.VAR_DECL and _is_record(d.type):
                return None if self._escapes(d) else ("struct", d.hash)
            if d.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
                return d
            return None
        if c.kind in (CK.INTEGER_LITERAL, CK.CXX_NULL_PTR_LITERAL_EXPR):
            return None
        return None

    def _call(self, c: Any, p: _Path, depth: int) -> None:
        name = _callee_name(c)
        kids = _children(c)
        config = next((k for k in kids[1:] if k.kind == CK.CALL_EXPR and k.spelling == "cudaConfigureCall"), None)
        if config is not None:
            args = [k for k in kids[1:] if k is not config]
            for a in args:
                self._expr(a, p, depth)
            ckids = list(config.get_arguments())
            # `k<<<g, b>>>` / `k<<<g, b, smem>>>`: the stream is the declaration's default argument
            # (no tokens of its own): 0, the default stream
            given = len(ckids) > 3 and bool(tokens_of(ckids[3]))
            stream = self._stream(ckids[3], p) if given and not self._is_zero(ckids[3]) else _DEFAULT_STREAM
            blocks = self._const(ckids[0]) if ckids else None
            self._launch(kids[0], args, stream, False, c, p, blocks=blocks)
            return
        args = _arguments(c)
        for a in args:
            self._expr(a, p, depth)
        if name in _LAUNCH_EX and len(args) >= 2:
            cfg = self._addr_of(args[0])
            obj = self._config_object(args[0]) if cfg is None else None
            stream, pdl = self._object_config(obj, p) if obj is not None else self._config(cfg, p)
            self._launch(args[1], args[2:], stream, pdl, c, p)
            return
        if name in _LAUNCH_PLAIN:
            p.set_all(ir.PRED_UNKNOWN)  # arguments through a void ** array: not followed
            self.grid.unfollowed.update(self._kernel_names(args[0], p) if args else ())
            return
        if name in _SYNC:
            p.set_all(ir.PRED_NONE)
            return
        if name in _UNKNOWN_ORDER:
            p.set_all(ir.PRED_UNKNOWN)
            return
        if name in _CREATES and args:
            d = self._addr_of(args[0])
            if d is not None:
                p.vars[d] = f"{d.spelling}@{c.location.line}:{c.location.column}"
            return
        if name == "swap" and len(args) == 2:
            a, b = _strip(args[0]), _strip(args[1])
            if a is not None and b is not None and a.kind == b.kind == CK.DECL_REF_EXPR:
                da, db = a.referenced, b.referenced
                if da in p.vars or db in p.vars:
                    p.vars[da], p.vars[db] = p.vars.get(db), p.vars.get(da)
            return
        callee = c.referenced
        defn = callee.get_definition() if callee is not None else None
        if defn is not None and _body(defn) is None:
            # a function template's specialization: the template's own definition
            defn = next(
                (
                    d
                    for d in self.mb.code.decls
                    if d.kind == CK.FUNCTION_TEMPLATE
                    and d.spelling == defn.spelling
                    and d.location.line == defn.location.line
                    and _body(d) is not None
                ),
                defn,
            )
        if defn is not None and self._user(defn) and not self._is_device(defn):
            self._site = c
            self._tbinds.append(self._template_binds(callee, defn))
            try:
                self._inline(defn, args, p, depth)
            finally:
                self._tbinds.pop()
            return
        if callee is not None and self._user(callee) and defn is None and not _is_copy(c):
            p.set_all(ir.PRED_UNKNOWN)  # a user function whose body is not in the file
            return
        for a in args:  # a struct passed to a function (by reference) may have its members changed
            s = _strip(a)
            s = _strip(_children(s)[0]) if s is not None and s.kind == CK.UNARY_OPERATOR and _children(s) else s
            d = s.referenced if s is not None and s.kind == CK.DECL_REF_EXPR else None
            if d is not None and _is_record(d.type) and not _is_copy(c):
                for key in [k for k in p.vars if isinstance(k, tuple) and k[0] == d.hash]:
                    p.vars[key] = None
        # a library function (printf, std::vector, ...): launches nothing of this file, but it
        # may change a pointer it receives by address
        for a in args:
            d = self._addr_of(a)
            if d is not None and d in p.vars:
                p.vars[d] = None

    def _user(self, d: Any) -> bool:
        f = d.location.file
        return f is not None and self.mb.parsed.is_user_file(f.name)

    def _inline(self, defn: Any, args: list, p: _Path, depth: int) -> None:
        if depth >= MAX_DEPTH:
            p.set_all(ir.PRED_UNKNOWN)
            return
        body = _body(defn)
        if body is None:
            p.set_all(ir.PRED_UNKNOWN)
            return
        params = _params(defn)
        saved = dict(p.vars)
        for i, prm in enumerate(params):
            ptoks = tokens_of(prm)
            pack = ptoks[-2:] == ["...", prm.spelling] or ptoks[-1:] == ["..."]
            if pack and defn.kind == CK.FUNCTION_TEMPLATE:  # a parameter pack (an instance lists each)
                p.vars[prm] = [self._value(a, p) for a in args[i:]]
                break
            if i < len(args):
                p.vars[prm] = self._value(args[i], p)
        self._sites.append(self._site)
        try:
            paths = self._block(body, [p], depth + 1)
        finally:
            self._sites.pop()
        # one path goes on (a helper's branches are not forked out to the caller)
        q = next((r for r in paths if r.launched or not r.done), paths[0] if paths else p)
        if q is not p:
            p.vars, p.last, p.other, p.launched = q.vars, q.last, q.other, q.launched or p.launched
        if len(paths) > 1 and len({r.key() for r in paths}) > 1:
            p.set_all(ir.PRED_UNKNOWN)
        # the caller's variables keep their values; the helper's locals are dropped
        p.vars = {d: (p.vars.get(d) if d in saved else v) for d, v in saved.items()}
        p.done = False

    def _addr_of(self, a: Any) -> Any:
        a = _strip(a)
        if a is None or a.kind != CK.UNARY_OPERATOR:
            return None
        toks = tokens_of(a)
        kids = _children(a)
        if toks[:1] != ["&"] or len(kids) != 1:
            return None
        inner = _strip(kids[0])
        return inner.referenced if inner is not None and inner.kind == CK.DECL_REF_EXPR else None

    @staticmethod
    def _is_zero(c: Any) -> bool:
        return [t for t in tokens_of(c) if t not in ("(", ")")] in (["0"], ["nullptr"], ["NULL"])

    def _stream(self, c: Any, p: _Path) -> str | None:
        v = self._value(c, p)
        if isinstance(v, str):
            return v
        s = _strip(c)
        if s is not None and s.kind == CK.DECL_REF_EXPR and s.referenced is not None and s.referenced not in p.vars:
            # a stream variable the walk never saw assigned (a global, `cudaStreamCreate(&s)`)
            d = s.referenced
            return f"{d.spelling}@{d.location.line}"
        return None

    # -- launches -----------------------------------------------------------
    def _kernel_names(self, c: Any, p: _Path) -> set[str]:
        v = self._value(c, p)
        if v is not None and not isinstance(v, str | list) and hasattr(v, "spelling"):
            return {v.spelling}
        for n in c.walk_preorder():
            if n.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF) and n.spelling in self._kernels:
                return {n.spelling}
        return set()

    def _expand(self, args: list, p: _Path) -> list:
        """The argument values, a parameter pack (`args...`) expanded."""
        out = []
        for a in args:
            s = _strip(a)
            if s is not None and s.kind == CK.PACK_EXPANSION_EXPR:
                inner = _strip(_children(s)[0]) if _children(s) else None
                d = inner.referenced if inner is not None and inner.kind == CK.DECL_REF_EXPR else None
                pack = p.vars.get(d) if d is not None else None
                if isinstance(pack, list):
                    out.extend(pack)
                    continue
                return out + [None] * 64  # not known: every later parameter unknown
            out.append(self._value(a, p))
        return out

    def _launch(
        self, callee: Any, args: list, stream: str | None, pdl: bool | None, site: Any, p: _Path, blocks=None
    ) -> None:
        names = self._kernel_names(callee, p)
        if len(names) != 1:
            p.set_all(ir.PRED_UNKNOWN)
            return
        kernel = names.pop()
        instance = self._instance(callee, kernel)
        decl = next((k for k in getattr(self.mb, "kernels", ()) if k.spelling == kernel), None) or next(
            (t for t in getattr(self.mb, "kernel_templates", ()) if t.spelling == kernel), None
        )
        params = _params(decl) if decl is not None else []
        vals = self._expand(args, p)
        bound_l = []
        for i, prm in enumerate(params):
            v = vals[i] if i < len(vals) else None
            if _is_pointer(prm.type):
                bound_l.append((prm.spelling, v if isinstance(v, str) else None))
            elif _is_record(prm.type):
                # a struct passed by value: its pointer members as the buffers they were assigned
                for f in _pointer_fields(prm.type):
                    got = p.vars.get((v[1], f)) if isinstance(v, tuple) and v[:1] == ("struct",) else None
                    bound_l.append((f"{prm.spelling}.{f}", got if isinstance(got, str) else None))
        bound = tuple(bound_l)
        g = ir.GridLaunch(
            kernel,
            loc_of(self._sites[0] if self._sites else site, self.mb.filename),
            pdl,
            bound,
            p.pred(stream),
            instance,
            blocks=blocks,
        )
        key = (g.kernel, g.location, g.pdl, g.args, g.predecessor, g.instance)
        idx = self._index.get(key)
        if idx is None:
            idx = self._index[key] = len(self.grid.launches)
            self.grid.launches.append(g)
        p.launched = True
        if stream is None:
            p.set_all(ir.PRED_UNKNOWN)
        else:
            p.last[stream] = idx

    def _config(self, cfg: Any, p: _Path) -> tuple[str | None, bool | None]:
        """The stream and the PDL attribute of a `cudaLaunchConfig_t` variable, from the function
        that declares it: `cfg.stream = s`, the attribute array's id and value."""
        if cfg is None:
            return None, None
        func = cfg.semantic_parent
        body = _body(func) if func is not None else None
        if body is None:
            return None, None
        stream: str | None = _DEFAULT_STREAM
        named = False
        value: bool | None = None
        for n in body.walk_preorder():
            if n.kind == CK.DECL_REF_EXPR and n.spelling == K.PDL_LAUNCH_ATTRIBUTE:
                named = True
            if n.kind != CK.BINARY_OPERATOR:
                continue
            kids = _children(n)
            if len(kids) != 2 or not self._is_assign(n, kids[0]):
                continue
            lt = tokens_of(kids[0])
            if lt[:1] == [cfg.spelling] and lt[-1:] == ["stream"]:
                stream = self._stream(kids[1], p)
            elif lt[-1:] == [K.PDL_LAUNCH_VALUE_FIELD]:
                v = self._const(kids[1])
                value = None if v is None or value is False else v != 0
        if not named:
            return stream, False
        return stream, value

    # -- template instances -------------------------------------------------
    def _template_binds(self, callee: Any, defn: Any) -> dict[str, str | None]:
        """A function template's parameters bound to the arguments of the instance a call names
        (`run<config<256, 64>>(...)`: C -> "config<256, 64>"), as an instance's name shows them."""
        from .instances import _template_params, clang_args

        if defn is None or defn.kind != CK.FUNCTION_TEMPLATE or callee is None:
            return {}
        params = [t.spelling for t in _template_params(defn)]
        got = clang_args(callee)
        if got is None or len(got) != len(params):
            return {n: None for n in params}
        return {n: a.show() for n, a in zip(params, got, strict=True)}

    def _instance(self, callee: Any, kernel: str) -> str | None:
        """The name of the instance of template kernel `kernel` a launch names: the
        specialization libclang resolved (`stage<1>`), or the written arguments with the host
        template's parameters bound (`kernel<C>` in `run<config<...>>`). None when the kernel is
        no template or an argument is not known."""
        from .instances import _angle_args, clang_args

        if not any(t.spelling == kernel for t in getattr(self.mb, "kernel_templates", ())):
            return None
        ref = None
        for n in callee.walk_preorder():
            if n.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF) and n.spelling == kernel:
                ref = n
                break
        if ref is None:
            return None
        d = ref.referenced
        if d is not None and d.kind == CK.FUNCTION_DECL:
            got = clang_args(d)
            if got:
                return f"{kernel}<{', '.join(a.show() for a in got)}>"
        toks = tokens_of(ref)
        i = toks.index(kernel) + 1 if kernel in toks else len(toks)
        parsed = _angle_args(toks, i)
        if parsed is None:
            return None
        binds = self._tbinds[-1] if self._tbinds else {}
        shown = []
        for arg in parsed[0]:
            if len(arg) == 1 and arg[0] in binds:
                v = binds[arg[0]]
                if v is None:
                    return None
                shown.append(v)
            elif len(arg) == 1 and (arg[0].isdigit() or arg[0] in ("true", "false")):
                shown.append(arg[0])
            else:
                return None
        return f"{kernel}<{', '.join(shown)}>"

    # -- launch-config objects ----------------------------------------------
    def _config_object(self, a: Any) -> Any:
        """The variable of a launch-config object passed where `cudaLaunchKernelEx` takes a
        `cudaLaunchConfig_t *`: `obj` converted by its class's `operator cudaLaunchConfig_t *()`."""
        c = _strip(a)
        while c is not None and c.kind == CK.CALL_EXPR:
            ref = c.referenced
            if ref is None or ref.kind != CK.CONVERSION_FUNCTION:
                return None
            kids = _children(c)
            c = _strip(kids[0]) if len(kids) == 1 else None
            if c is not None and c.kind == CK.MEMBER_REF_EXPR:
                kids = _children(c)
                c = _strip(kids[0]) if len(kids) == 1 else None
        if c is None or c.kind != CK.DECL_REF_EXPR:
            return None
        d = c.referenced
        if d is None or d.kind != CK.VAR_DECL or d.type.get_canonical().kind.name != "RECORD":
            return None
        return d

    def _object_config(self, var: Any, p: _Path) -> tuple[str | None, bool | None]:
        """The stream and PDL attribute of a launch-config object: what the constructor its
        declaration calls (and the constructor that one delegates to) assigns to the
        `cudaLaunchConfig_t` fields and attributes, `if constexpr` over the class's template
        arguments decided. Not known when the object is used other than in launches after its
        declaration (a member changed later), or the constructor is not readable."""
        func = var.semantic_parent
        body = _body(func) if func is not None else None
        if body is None:
            return None, None
        for n in body.walk_preorder():
            if n.kind == CK.DECL_REF_EXPR and n.referenced == var and not self._in_launch_config(n, body):
                return None, None
        ctor_call = next(
            (
                n
                for n in var.walk_preorder()
                if n.kind == CK.CALL_EXPR and n.referenced is not None and n.referenced.kind == CK.CONSTRUCTOR
            ),
            None,
        )
        if ctor_call is None:
            return None, None
        binds = self._class_binds(var.type)
        state: dict[str, Any] = {"stream": None, "stream_set": False, "named": False, "value": None, "sure": True}
        # the attribute or the stream set by a member the launch may run besides the constructor
        # (the conversion operator, a field's initialiser, a method): not read, so not known
        stream_elsewhere = False
        try:
            members = _children(var.type.get_canonical().get_declaration())
        except Exception:  # noqa: BLE001
            members = []
        for mem in members:
            if mem.kind in (CK.CONSTRUCTOR, CK.CXX_ACCESS_SPEC_DECL):
                continue
            toks = tokens_of(mem)
            if K.PDL_LAUNCH_ATTRIBUTE in toks or K.PDL_LAUNCH_VALUE_FIELD in toks:
                state["sure"] = False
            if mem.kind != CK.FIELD_DECL and "stream" in toks:
                stream_elsewhere = True
        outer = {"args": list(_arguments(ctor_call)), "binds": None}
        if not self._read_ctor(ctor_call.referenced, outer["args"], {}, binds, state, p, 0):
            return None, None
        stream = state["stream"] if state["stream_set"] else _DEFAULT_STREAM
        if stream_elsewhere:
            stream = None
        if not state["named"]:
            return stream, False if state["sure"] else None
        return stream, state["value"] if state["sure"] else None

    def _in_launch_config(self, ref: Any, body: Any) -> bool:
        """Is this reference to a config object the config argument of a `cudaLaunchKernelEx`?"""
        for n in body.walk_preorder():
            if n.kind == CK.CALL_EXPR and _callee_name(n) in _LAUNCH_EX:
                args = _arguments(n)
                if args and any(x == ref for x in args[0].walk_preorder()):
                    return True
        return False

    def _class_binds(self, t: Any) -> dict[str, Any]:
        """A class template instance's non-type template parameters -> their values."""
        import clang.cindex as ci

        try:
            decl = t.get_canonical().get_declaration()
            n = decl.get_num_template_arguments()
            pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(decl)
        except Exception:  # noqa: BLE001 - a type libclang does not resolve
            return {}
        if n <= 0 or pattern is None:
            return {}
        params = [
            ch
            for ch in _children(pattern)
            if ch.kind in (CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TEMPLATE_PARAMETER)
        ]
        out: dict[str, Any] = {}
        for i, prm in enumerate(params[:n]):
            if prm.kind != CK.TEMPLATE_NON_TYPE_PARAMETER:
                continue
            try:
                if decl.get_template_argument_kind(i) != ci.TemplateArgumentKind.INTEGRAL:
                    continue
                v = decl.get_template_argument_value(i)
            except Exception:  # noqa: BLE001
                continue
            is_bool = tokens_of(prm)[:1] == ["bool"]
            out[prm.spelling] = bool(v) if is_bool else int(v)
        return out

    def _const_in(self, c: Any, func: Any, binds: dict[str, Any]) -> int | None:
        """A constant expression of a class template's member, its template parameters bound."""
        tm = getattr(self.mb, "tensor_maps", None)
        if tm is None:
            return None
        try:
            from . import cexpr

            env = self.mb.env_for(func).child()
            for name, v in binds.items():
                env.define(name, E.const(v))
            v = tm._ev(cexpr.parse_expression(tokens_of(c), env.has), env)
        except Exception:  # noqa: BLE001 - an expression the evaluator does not take
            return None
        if isinstance(v, E.Const) and isinstance(v.value, int | bool):
            return int(v.value)
        return None

    def _read_ctor(
        self, ctor: Any, args: list, outer: dict, binds: dict[str, Any], state: dict, p: _Path, depth: int
    ) -> bool:
        """Reads one constructor into `state`; `args` its argument cursors (each a cursor of the
        caller, or of the delegating constructor whose parameters `outer` maps)."""
        defn = ctor.get_definition() if ctor is not None else None
        if defn is None or depth > 4:
            return False
        params = _params(defn)
        here = {prm.hash: (args[i] if i < len(args) else None) for i, prm in enumerate(params)}

        def arg_of(e: Any) -> tuple[bool, Any]:
            s = _strip(e)
            if s is not None and s.kind == CK.DECL_REF_EXPR and s.referenced is not None:
                h = s.referenced.hash
                if h in here:
                    a = here[h]
                    return (True, outer_arg(a)) if a is not None else (True, None)
            return False, e

        def outer_arg(a: Any) -> Any:
            s = _strip(a)
            if s is not None and s.kind == CK.DECL_REF_EXPR and s.referenced is not None and s.referenced.hash in outer:
                return outer[s.referenced.hash]
            return a

        for ch in _children(defn):
            if ch.kind == CK.CALL_EXPR and ch.referenced is not None and ch.referenced.kind == CK.CONSTRUCTOR:
                if ch.referenced.semantic_parent == defn.semantic_parent:  # a delegating constructor
                    inner = {k: outer_arg(v) if v is not None else None for k, v in here.items()}
                    if not self._read_ctor(ch.referenced, list(_arguments(ch)), inner, binds, state, p, depth + 1):
                        return False
        body = _body(defn)
        if body is None:
            return False
        seen_before = state.get("seen", 0)
        self._scan_config(body, defn, binds, state, p, arg_of, True)
        # every mention of the attribute or its value field in the constructor (its member
        # initialisers, a helper's arguments) must be one the scan read or skipped; a delegated-to
        # constructor's own are counted by its own reading
        delegated = sum(
            self._mentions(ch)
            for ch in _children(defn)
            if ch.kind == CK.CALL_EXPR and ch.referenced is not None and ch.referenced.kind == CK.CONSTRUCTOR
        )
        if self._mentions(defn) - delegated != state.get("seen", 0) - seen_before:
            state["sure"] = False
        return True

    @staticmethod
    def _mentions(c: Any) -> int:
        """Mentions of the PDL attribute or its value field under c."""
        return sum(
            1
            for n in c.walk_preorder()
            if n.kind in (CK.DECL_REF_EXPR, CK.MEMBER_REF_EXPR)
            and n.spelling in (K.PDL_LAUNCH_ATTRIBUTE, K.PDL_LAUNCH_VALUE_FIELD)
        )

    def _scan_config(self, s: Any, func: Any, binds: dict, state: dict, p: _Path, arg_of: Any, sure: bool) -> None:
        if s.kind == CK.IF_STMT:
            kids = _children(s)
            toks = tokens_of(s)
            v = self._const_in(kids[0], func, binds) if toks[1:2] == ["constexpr"] else None
            branches = kids[1:3]
            if v is not None:
                taken = branches[0] if v else (branches[1] if len(branches) > 1 else None)
                for b in branches:
                    if b is not taken:
                        state["seen"] = state.get("seen", 0) + self._mentions(b)  # never runs
                if taken is not None:
                    self._scan_config(taken, func, binds, state, p, arg_of, sure)
                return
            for b in branches:
                self._scan_config(b, func, binds, state, p, arg_of, False)
            return
        if s.kind in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.SWITCH_STMT):
            sure = False
        if s.kind == CK.BINARY_OPERATOR:
            kids = _children(s)
            if len(kids) == 2 and self._is_assign(s, kids[0]):
                lhs, rhs = kids[0], kids[1]
                lt = tokens_of(lhs)
                state["seen"] = state.get("seen", 0) + self._mentions(s)
                if any(
                    n.kind == CK.DECL_REF_EXPR and n.spelling == K.PDL_LAUNCH_ATTRIBUTE for n in rhs.walk_preorder()
                ):
                    state["named"] = True
                    state["sure"] = state["sure"] and sure
                elif lt[-1:] == [K.PDL_LAUNCH_VALUE_FIELD]:
                    bound, e = arg_of(rhs)
                    v = None if bound and e is None else (self._const(e) if bound else self._const_in(e, func, binds))
                    state["value"] = None if v is None or state["value"] is False else v != 0
                    state["sure"] = state["sure"] and sure
                elif lt[-1:] == ["stream"] and _strip(lhs) is not None and _strip(lhs).kind == CK.MEMBER_REF_EXPR:
                    bound, e = arg_of(rhs)
                    if e is None:
                        stream = None
                    elif self._is_zero(e):
                        stream = _DEFAULT_STREAM
                    else:
                        stream = self._stream(e, p) if bound else None
                    state["stream"] = stream if sure else None
                    state["stream_set"] = True
                return
        for ch in _children(s):
            self._scan_config(ch, func, binds, state, p, arg_of, sure)

    # -- structs passed by value --------------------------------------------
    def _member_of(self, lhs: Any) -> tuple | None:
        """`v.f` for a struct variable v (not through a pointer): the key of its member f."""
        if lhs is None or lhs.kind != CK.MEMBER_REF_EXPR:
            return None
        kids = _children(lhs)
        base = _strip(kids[0]) if len(kids) == 1 else None
        d = base.referenced if base is not None and base.kind == CK.DECL_REF_EXPR else None
        if d is None or not _is_record(d.type) or "->" in tokens_of(lhs):
            return None
        return (d.hash, lhs.spelling)

    def _struct_from(self, d: Any, init: Any, p: _Path) -> None:
        """The pointer members of struct variable d after its declaration or assignment: from
        an aggregate initialiser in field order, from another struct variable, or unknown."""
        fields = _pointer_fields(d.type)
        allf = []
        try:
            allf = [f for f in d.type.get_canonical().get_fields()]
        except Exception:  # noqa: BLE001
            pass
        vals: dict[str, Any] = {f: None for f in fields}
        c = _strip(init) if init is not None else None
        while c is not None and c.kind == CK.CALL_EXPR and _is_copy(c):
            c = _strip(_children(c)[0])
        if c is not None and c.kind == CK.INIT_LIST_EXPR:
            elems = _children(c)
            if len(elems) <= len(allf):
                for f, e in zip(allf, elems, strict=False):
                    if f.spelling in vals:
                        vals[f.spelling] = self._value(e, p)
        elif (
            c is not None and c.kind == CK.DECL_REF_EXPR and c.referenced is not None and _is_record(c.referenced.type)
        ):
            src = c.referenced.hash
            for f in fields:
                vals[f] = p.vars.get((src, f))
        for f, v in vals.items():
            p.vars[(d.hash, f)] = v if isinstance(v, str) else None

    def _escapes(self, d: Any) -> bool:
        """Is struct variable d's address taken, or a reference bound to it, in the function
        declaring it (its members could change where the walk does not look)?"""
        key = ("escapes", d.hash)
        got = self._matter.get(key)  # type: ignore[call-overload]
        if got is None:
            func = d.semantic_parent
            body = _body(func) if func is not None else None
            toks = tokens_of(body) if body is not None else []
            got = body is None or any(a == "&" and b == d.spelling for a, b in zip(toks, toks[1:], strict=False))
            if not got and body is not None:
                for n in body.walk_preorder():
                    if n.kind == CK.VAR_DECL and n.type.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
                        if any(x.kind == CK.DECL_REF_EXPR and x.referenced == d for x in n.walk_preorder()):
                            got = True
                            break
            self._matter[key] = got  # type: ignore[index]
        return bool(got)
