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


class LaunchChain:
    """Reads the launch sequence of one translation unit (see the module docstring)."""

    def __init__(self, mb: Any):
        self.mb = mb
        self.grid = ir.GridModel()
        self._steps = 0
        self._site: Any = None
        self._matter: dict[int, bool] = {}
        self._index: dict[tuple, int] = {}
        self._sites: list = []  # the user's calls being followed (a launch is placed at the outermost)
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
                return
        if k == CK.COMPOUND_ASSIGNMENT_OPERATOR:
            kids = _children(c)
            lhs = _strip(kids[0]) if kids else None
            if lhs is not None and lhs.kind == CK.DECL_REF_EXPR and lhs.referenced in p.vars:
                p.vars[lhs.referenced] = None  # `p += n`: another address
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
        if not _is_pointer(d.type):
            return
        if init is None:
            p.vars[d] = f"{d.spelling}@{d.location.line}"
        else:
            p.vars[d] = self._value(init, p)

    def _value(self, c: Any, p: _Path) -> Any:
        """The token an expression evaluates to (a pointer), None when not known."""
        c = _strip(c)
        if c is None:
            return None
        if c.kind == CK.DECL_REF_EXPR:
            d = c.referenced
            if d is None:
                return None
            if d in p.vars:
                return p.vars[d]
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
            stream = self._stream(ckids[3], p) if len(ckids) > 3 and not self._is_zero(ckids[3]) else _DEFAULT_STREAM
            blocks = self._const(ckids[0]) if ckids else None
            self._launch(kids[0], args, stream, False, c, p, blocks=blocks)
            return
        args = _arguments(c)
        for a in args:
            self._expr(a, p, depth)
        if name in _LAUNCH_EX and len(args) >= 2:
            cfg = self._addr_of(args[0])
            stream, pdl = self._config(cfg, p)
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
            self._inline(defn, args, p, depth)
            return
        if callee is not None and self._user(callee) and defn is None:
            p.set_all(ir.PRED_UNKNOWN)  # a user function whose body is not in the file
            return
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
        decl = next((k for k in getattr(self.mb, "kernels", ()) if k.spelling == kernel), None) or next(
            (t for t in getattr(self.mb, "kernel_templates", ()) if t.spelling == kernel), None
        )
        params = _params(decl) if decl is not None else []
        vals = self._expand(args, p)
        bound = tuple(
            (prm.spelling, vals[i] if i < len(vals) and isinstance(vals[i], str) else None)
            for i, prm in enumerate(params)
            if _is_pointer(prm.type)
        )
        g = ir.GridLaunch(
            kernel,
            loc_of(self._sites[0] if self._sites else site, self.mb.filename),
            pdl,
            bound,
            p.pred(stream),
            blocks=blocks,
        )
        key = (g.kernel, g.location, g.pdl, g.args, g.predecessor)
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
