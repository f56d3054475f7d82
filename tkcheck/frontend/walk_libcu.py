"""libcu++'s synchronisation objects as the IR's events: `cuda::barrier<thread_scope_block>`,
the partitioned and the unified `cuda::pipeline`, and `cuda::memcpy_async` (what each call does
is the table `knowledge/ops.py` LIBCU_*).

* A `__shared__ cuda::barrier<cuda::thread_scope_block>` is an mbarrier. `init(&bar, n)` is its
  init; `bar.arrive(n)` an arrival that returns a token, `bar.wait(token)` a wait on the phase of
  that token, `bar.arrive_and_wait()` both, `bar.wait_parity(p)` a parity wait,
  `bar.arrive_and_drop()` an arrival with `BarrierFacts.drop` (PTX `mbarrier.arrive_drop`). The token is the
  parity of the phase the thread arrived in: a per-thread count of the thread's arrivals on the
  barrier (each participant arrives once per phase), carried by loops like a user's phase bit.
* A `__shared__ cuda::pipeline_shared_state<scope, S>` is a ring of S (produced, consumed)
  mbarrier pairs, named `state.produced[i]` / `state.consumed[i]`. `cuda::make_pipeline(block,
  &state, role)` (or `producer_count`) initialises them (thread 0: produced with the producer
  count, consumed with the consumer count) and syncs the block. The pipeline object carries two
  per-thread counters, `head` (the producer's commits) and `tail` (the consumer's releases), as
  scalars of the object that loops carry: producer_acquire waits on consumed[head % S] with
  parity (head / S + 1) % 2 (a fresh stage is free), producer_commit arrives on
  produced[head % S] and advances head; consumer_wait waits on produced[tail % S] with parity
  (tail / S) % 2, consumer_release arrives on consumed[tail % S] and advances tail.
  `memcpy_async(..., pipe)` is a cp.async copy of the issuing thread; producer_commit's arrival
  carries `BarrierFacts.cp_async` (libcu++ issues `cp.async.mbarrier.arrive` first: the phase
  completes once the thread's copies have landed), so a wait observing that phase observes the
  copies complete (the cp.async engine's mbarrier runs, checks/async_groups.py).
  `memcpy_async(..., bar)` with a `cuda::barrier` names the barrier in `CopyFacts.mbarrier`: the
  copy holds the phase in progress open until it lands.
* The unified pipeline (`cuda::make_pipeline()`, thread scope) is cp.async groups: producer_commit
  commits a group, consumer_wait waits for all but the head - tail - 1 newest,
  `pipeline_consumer_wait_prior<N>(pipe)` for all but N; acquire and release do nothing.

* A `cuda::latch<scope>` constructed by placement new in `__shared__` storage (`new (mem)
  cuda::latch<...>(n)`, the storage reached again through a reference or pointer initialised
  from it: `*reinterpret_cast<latch *>(mem)`) is a one-phase mbarrier named after the storage:
  the construction is its init with count n (under the constructing thread's guard, so the
  init-visibility, account and progress engines ask about it as about any init), `count_down(n)`
  an arrival of n, `wait()` a wait for phase 0, `arrive_and_wait(n)` both (table
  `knowledge/ops.LIBCU_LATCH_METHODS`). `try_wait()`, a thread-scope latch, a latch in global
  memory or in storage the walk cannot name stay opaque calls (coverage).

* A `cuda::binary_semaphore<scope>` in global memory (`sems[i]` / `*s` of a kernel pointer) is
  libcu++'s `__atomic_semaphore<scope, 1>`, an int that is 1 while free: `acquire()` is a spin
  loop on `exchange(0, acquire)` going on while the old value is not 1, `try_acquire()` one such
  exchange whose value is `old == 1`, `release()` a release store of 1 (table
  `knowledge/ops.LIBCU_SEMAPHORE_METHODS`); checks/locks.py reads the spin as a lock. A counting
  semaphore of a larger maximum stays an opaque call.

Anything else of libcu++ (a barrier of another scope, arrays of pipeline states,
consumer_wait_for, quit) is not modelled: the coverage census names it at the
user's line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import Obj, Rec
from .walk_arith import _ArrVal
from .walk_env import CK, Ctx, ci, loc_of

_BARRIER_T = re.compile(r"\bbarrier<\s*(?:::)?(?:cuda::)?(?:\w+::)*thread_scope_(\w+)")
_STATE_T = re.compile(r"\bpipeline_shared_state<\s*(?:::)?(?:cuda::)?(?:\w+::)*thread_scope_(\w+)\s*,\s*(.+)>\s*$")
_CHAR_LIT = re.compile(r"'\\x([0-9a-fA-F]+)'|'\\(\d+)'|\(unsigned char\)\s*(\d+)|^(\d+)$")

PIPELINE = "cuda::pipeline"
STATE = "cuda::pipeline_shared_state"
BARRIER = "cuda::barrier"


def _stages(text: str) -> int | None:
    m = _CHAR_LIT.search(text.strip())
    if not m:
        return None
    if m.group(1):
        return int(m.group(1), 16)
    if m.group(2):
        return int(m.group(2), 8)
    return int(m.group(3) or m.group(4))


def _assume(e: Any, guard: ir.Guard) -> Any:
    """`e` with every `c ? a : b` whose condition the guard's thread predicate fixes (a conjunct
    of it, or the negation of one) replaced by that branch: a role's own counter at its ops."""
    if not isinstance(e, Expr):
        return e
    facts: set[Expr] = set()
    todo = [guard.thread]
    while todo:
        x = todo.pop()
        if isinstance(x, E.Bin) and x.op == "&&":
            todo.extend((x.a, x.b))
        else:
            facts.add(x)

    def fix(x: Expr) -> Expr | None:
        if isinstance(x, E.Ite):
            if x.c in facts:
                return E.rewrite(x.t, fix)
            if E.negate(x.c) in facts:
                return E.rewrite(x.e, fix)
        return None

    return E.rewrite(e, fix)


def _affine(e: Expr) -> dict[str, int] | None:
    """e as a sum of integer multiples of variables plus a constant (key ""), or None."""
    if isinstance(e, E.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return {"": e.value}
    if isinstance(e, E.Var) and e.kind != E.OPAQUE:
        return {e.name: 1}
    if isinstance(e, E.Bin) and e.op in ("+", "-"):
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        out = dict(a)
        for k, v in b.items():
            out[k] = out.get(k, 0) + sign * v
        return out
    if isinstance(e, E.Bin) and e.op == "*":
        a, b = _affine(e.a), _affine(e.b)
        if a is None or b is None:
            return None
        for x, y in ((a, b), (b, a)):
            if set(x) <= {""}:
                return {k: v * x.get("", 0) for k, v in y.items()}
    return None


def _plus(e: Expr, n: int) -> Expr:
    """e + n, folding into a constant term e already has (`(x + 1) + 1` is `x + 2`): a counter
    advanced twice a round stays `start + c`, which the loop recurrence solves."""
    if isinstance(e, E.Bin) and e.op == "+" and isinstance(e.b, E.Const) and isinstance(e.b.value, int):
        return E.binop("+", e.a, E.Const(e.b.value + n))
    return E.binop("+", e, E.Const(n))


def _difference(a: Expr, b: Expr) -> int | None:
    """a - b when it is a constant whatever the variables hold."""
    d = _affine(E.binop("-", a, b))
    if d is None or any(v for k, v in d.items() if k):
        return None
    return d.get("", 0)


def _strip_cursor(c: Any) -> Any:
    """c below implicit conversions, parentheses, `*`, `&` and casts (one operand each)."""
    for _ in range(16):
        if c.kind not in (
            CK.UNEXPOSED_EXPR,
            CK.PAREN_EXPR,
            CK.UNARY_OPERATOR,
            CK.CXX_REINTERPRET_CAST_EXPR,
            CK.CXX_STATIC_CAST_EXPR,
            CK.CSTYLE_CAST_EXPR,
        ):
            return c
        kids = [k for k in c.get_children() if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
        if len(kids) != 1:
            return None
        c = kids[0]
    return None


def _latch_scope(canonical: str) -> str | None:
    """The scope of a `cuda::latch<thread_scope_X>` type (None: not a latch, or thread scope:
    a latch of one thread orders no other)."""
    m = K.LIBCU_LATCH_T.search(canonical)
    return m.group(1) if m and m.group(1) != "thread" else None


def _latch_storage(c: Any, depth: int = 0) -> Any:
    """The `__shared__` variable a latch expression lives in: `mem` of `new (mem) latch(n)`,
    of `*reinterpret_cast<latch *>(mem)` and of a reference or pointer initialised from it
    (`latch &l = *reinterpret_cast<latch *>(mem); l.wait()`). None: not known."""
    c = _strip_cursor(c)
    if c is None or c.kind != CK.DECL_REF_EXPR or depth > 4:
        return None
    d = c.referenced
    if d is None or d.kind != CK.VAR_DECL:
        return None
    if any(k.kind == CK.CUDASHARED_ATTR for k in d.get_children()):
        return d
    tk = d.type.kind
    if tk == ci.TypeKind.LVALUEREFERENCE or (tk == ci.TypeKind.POINTER and _never_reassigned(d)):
        inits = [k for k in d.get_children() if k.kind.is_expression()]
        return _latch_storage(inits[-1], depth + 1) if len(inits) == 1 else None
    return None


def _discarded(cursor: Any, mname: str) -> bool:
    """Is the statement at cursor `(void)obj.mname()`: the call's value cast away?"""
    c = cursor
    while c.kind == CK.PAREN_EXPR:
        kids = list(c.get_children())
        if len(kids) != 1:
            return False
        c = kids[0]
    if c.kind not in (CK.CSTYLE_CAST_EXPR, CK.CXX_STATIC_CAST_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR):
        return False
    if c.type.kind != ci.TypeKind.VOID:
        return False
    call = _strip_cursor(c)
    return call is not None and call.kind == CK.CALL_EXPR and call.spelling == mname


def _is_one(v: Any) -> bool:
    return isinstance(v, Expr) and v.eval({}) == 1


_ASSIGNING = frozenset({"=", "+=", "-=", "++", "--"})


def _never_reassigned(d: Any) -> bool:
    """A pointer variable that keeps its initial value: its name is never followed by an
    assignment, incremented or decremented, nor has its address taken, in its function (read
    on the tokens: a name shadowed elsewhere only makes this answer no)."""
    if d.type.is_const_qualified():
        return True
    fn = d.semantic_parent
    if fn is None:
        return False
    toks = [t.spelling for t in fn.get_tokens()]
    name = d.spelling
    for i, t in enumerate(toks):
        if t != name:
            continue
        # `p = q`, `p += 1` (not the declaration's own `T *p = init`, nor a store `*p = v`)
        if i + 1 < len(toks) and toks[i + 1] in _ASSIGNING and not (i > 0 and toks[i - 1] == "*"):
            return False
        if i > 0 and toks[i - 1] in ("&", "++", "--"):
            return False
    return True


def _member_object(cursor: Any, mname: str) -> Any:
    """The object cursor of the one member call `obj.mname(...)` / `p->mname(...)` in the
    statement at cursor (None: none, or several)."""
    found = []
    try:
        for c in cursor.walk_preorder():
            if c.kind == CK.MEMBER_REF_EXPR and c.spelling == mname:
                kids = list(c.get_children())
                if kids:
                    found.append(kids[0])
    except (ValueError, AttributeError):
        return None
    return found[0] if len(found) == 1 else None


class LibcuLowering:
    """The walker's part for libcu++'s barrier, pipeline and memcpy_async."""

    def __init__(self, walker: Any):
        self.w = walker
        # a barrier's token is the parity of the thread's arrival count: exact while each phase
        # gets one arrival per participant. Where a thread arrives at two sites of one round (two
        # phases a round) the arrival account is not decided, so the token parities are not
        # either: the waits of such a barrier wait on an unknown parity (undecided, never a hang)
        self._arrive_sites: dict[str, set[tuple]] = {}
        self._token_waits: dict[str, list[ir.Op]] = {}
        self._several: set[str] = set()
        self._latches: set[str] = set()  # the latches constructed (their storage's names)

    # -- declarations ------------------------------------------------------------
    def shared_object(self, name: str, canonical: str, dims: Sequence[Expr], loc: Any, ctx: Ctx) -> Any:
        """The value of a `__shared__` libcu++ object (None: not one this module models)."""
        m = self.w.model
        if m is None:
            return None
        mb = _BARRIER_T.search(canonical)
        if mb and "pipeline" not in canonical.split("<")[0]:
            if mb.group(1) != "block" or dims:
                return None
            m.barriers[name] = ir.Barrier(name, (), loc, "static")
            obj = Obj("barrier", ir.Ref(name), ir.TileType("semaphore", BARRIER))
            rec = Rec({"@bar": obj}, BARRIER, None, name, ("arrivals",))
            ctx.env.define(f"{name}.arrivals", E.Const(0))
            return rec
        ms = _STATE_T.search(canonical)
        if ms:
            n = _stages(ms.group(2))
            if ms.group(1) != "block" or dims or not n:
                return None
            fields: dict[str, Any] = {"@stages": n}
            for role in ("produced", "consumed"):
                bname = f"{name}.{role}"
                m.barriers[bname] = ir.Barrier(bname, (E.Const(n),), loc, "static")
                fields[role] = Obj("barrier", ir.Ref(bname), ir.TileType("semaphore", BARRIER))
            return Rec(fields, STATE)
        return None

    def bind(self, name: str, value: Any, ctx: Ctx) -> Any:
        """A declared pipeline object (`auto pipe = cuda::make_pipeline(...)`): its counters
        become the scope's variables `pipe.head` / `pipe.tail`, carried by loops."""
        if isinstance(value, Rec) and value.type_name == PIPELINE and value.path is None:
            value.path = name
            value.scalars = ("head", "tail")
            ctx.env.define(f"{name}.head", E.Const(0))
            ctx.env.define(f"{name}.tail", E.Const(0))
        return value

    # -- helpers -------------------------------------------------------------------
    def _loc(self, cursor: Any):
        return loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location

    def _arrival(self, api: str, ref: ir.Ref, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> None:
        """An arrival of `args[0]` (else 1) on the barrier object `ref` (`cuda::barrier::arrive`,
        `cuda::latch::count_down`): an mbarrier arrive of that count."""
        n = self.w.ev(args[0], ctx, cursor) if args else E.Const(1)
        self._op(
            ir.MBAR_ARRIVE,
            api,
            ctx,
            cursor,
            barrier=ref,
            count=n if isinstance(n, Expr) else E.opaque("count"),
            mbar=ir.BarrierFacts(),
        )

    def _op(self, kind: str, api: str, ctx: Ctx, cursor: Any, **kw: Any) -> ir.Op:
        op = ir.Op(kind, api, self._loc(cursor), ctx.guard, ctx.loops, **kw)
        self.w.emit(op, ctx)
        return op

    def _get(self, rec: Rec, field: str, ctx: Ctx) -> Expr:
        v = ctx.env.lookup(f"{rec.path}.{field}")
        return _assume(v, ctx.guard) if isinstance(v, Expr) else E.opaque(f"{rec.path}.{field}")

    def _set(self, rec: Rec, field: str, value: Expr, ctx: Ctx) -> None:
        ctx.env.assign(f"{rec.path}.{field}", value)

    @staticmethod
    def _unwrap(node: cexpr.Node) -> cexpr.Node:
        """`std::move(tok)` / `cuda::std::move(tok)` -> `tok`; `&x` -> `x`."""
        while True:
            if (
                isinstance(node, cexpr.Call)
                and isinstance(node.callee, cexpr.Name)
                and node.callee.segments[-1].name == "move"
                and len(node.args) == 1
            ):
                node = node.args[0]
            elif isinstance(node, cexpr.Un) and node.op == "&" and isinstance(node.a, cexpr.Name):
                node = node.a
            else:
                return node

    def _value(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> Any:
        return self.w.ev(self._unwrap(node), ctx, cursor)

    def _size(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> Expr:
        """A copy's size: `cuda::aligned_size_t<16>(n)` is n."""
        if (
            isinstance(node, cexpr.Call)
            and isinstance(node.callee, cexpr.Name)
            and node.callee.segments[-1].name == "aligned_size_t"
            and len(node.args) == 1
        ):
            node = node.args[0]
        v = self.w.ev(node, ctx, cursor)
        return v if isinstance(v, Expr) else E.opaque("copy size")

    # -- calls -------------------------------------------------------------------------
    def call(self, base: str, qual: str, btargs: Any, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """A free libcu++ function; NotImplemented when the call is not one this module models."""
        if base not in K.LIBCU_FUNCTIONS:
            return NotImplemented
        if base == "make_pipeline":
            return self._make_pipeline(args, ctx, cursor, qual)
        if base == "memcpy_async" and len(args) in (4, 5):
            sync = self._value(args[-1], ctx, cursor)
            if not (isinstance(sync, Rec) and sync.type_name in (PIPELINE, BARRIER)):
                return NotImplemented
            dst_i = len(args) - 4
            return self._copy(args[dst_i], args[dst_i + 2], sync, ctx, cursor, f"{qual}::{base}" if qual else base)
        if base == "init" and len(args) >= 2:
            bar = self._value(args[0], ctx, cursor)
            if not (isinstance(bar, Rec) and bar.type_name == BARRIER):
                return NotImplemented
            n = self.w.ev(args[1], ctx, cursor)
            self._op(
                ir.MBAR_INIT,
                "cuda::init",
                ctx,
                cursor,
                barrier=bar.fields["@bar"].ref,
                count=n if isinstance(n, Expr) else E.opaque("count"),
            )
            return None
        if base == "pipeline_consumer_wait_prior" and len(args) == 1:
            pipe = self._value(args[0], ctx, cursor)
            n = self.w.targ_int(btargs, ctx, 0)
            if not (isinstance(pipe, Rec) and pipe.type_name == PIPELINE and pipe.fields.get("@unified")) or n is None:
                return NotImplemented
            self._op(ir.CP_ASYNC_WAIT, "cuda::pipeline_consumer_wait_prior", ctx, cursor, count=E.Const(n))
            self._set(pipe, "tail", E.binop("-", self._get(pipe, "head", ctx), E.Const(n)), ctx)
            return None
        if base == "barrier_arrive_tx" and len(args) == 3:
            bar = self._value(args[0], ctx, cursor)
            if not (isinstance(bar, Rec) and bar.type_name == BARRIER):
                return NotImplemented
            n = self.w.ev(args[1], ctx, cursor)
            tx = self.w.ev(args[2], ctx, cursor)
            api = "cuda::device::barrier_arrive_tx"
            # mbarrier.arrive.expect_tx: one arrival with the bytes; more arrivals after it
            ref = bar.fields["@bar"].ref
            self._op(
                ir.MBAR_EXPECT,
                api,
                ctx,
                cursor,
                barrier=ref,
                bytes=tx if isinstance(tx, Expr) else E.opaque("tx"),
                mbar=ir.BarrierFacts(),
            )
            if not (isinstance(n, Expr) and n.eval({}) == 1):
                more = E.binop("-", n, E.Const(1)) if isinstance(n, Expr) else E.opaque("count")
                self._op(ir.MBAR_ARRIVE, api, ctx, cursor, barrier=ref, count=more, mbar=ir.BarrierFacts())
            return self._advance(bar, ctx, cursor)
        if base == "barrier_expect_tx" and len(args) == 2:
            # r16-expecttx: `mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], tx`: the bytes of
            # the current phase raised, no arrival (the thread's token does not advance)
            bar = self._value(args[0], ctx, cursor)
            if not (isinstance(bar, Rec) and bar.type_name == BARRIER):
                return NotImplemented
            tx = self.w.ev(args[1], ctx, cursor)
            self._op(
                ir.MBAR_EXPECT,
                "cuda::device::barrier_expect_tx",
                ctx,
                cursor,
                barrier=bar.fields["@bar"].ref,
                bytes=tx if isinstance(tx, Expr) else E.opaque("tx"),
                mbar=ir.BarrierFacts(tx_only=True),
            )
            return None
        if base in ("cp_async_bulk_global_to_shared", "memcpy_async_tx") and len(args) == 4:
            # `cuda::device::memcpy_async_tx(dst, src, aligned_size_t<16>(n), bar)` is the same
            # bulk copy (cp.async.bulk ... mbarrier::complete_tx::bytes): its bytes land on the barrier
            bar = self._value(args[3], ctx, cursor)
            dst = self._value(args[0], ctx, cursor)
            if isinstance(dst, _ArrVal):
                dst = dst.obj  # an array as the destination: the whole array
            if not (isinstance(bar, Rec) and bar.type_name == BARRIER) or not isinstance(dst, Obj):
                return NotImplemented
            size = self._size(args[2], ctx, cursor)
            self._op(
                ir.TMA_LOAD,
                f"{qual}::{base}" if qual else base,
                ctx,
                cursor,
                barrier=bar.fields["@bar"].ref,
                buffer=dst.ref,
                operands=(dst.ref,),
                bytes=size,
                mbar=ir.BarrierFacts(),
                transfer=ir.TransferFacts(),
            )
            return None
        return NotImplemented

    def method(self, obj: Rec, mname: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """A method of a pipeline or barrier object; NotImplemented when not modelled."""
        if obj.type_name == PIPELINE and mname in K.LIBCU_PIPELINE_METHODS and obj.path is not None:
            return self._pipeline_method(obj, mname, ctx, cursor)
        if obj.type_name == BARRIER and mname in K.LIBCU_BARRIER_METHODS:
            return self._barrier_method(obj, mname, args, ctx, cursor)
        return NotImplemented

    # -- the barrier ----------------------------------------------------------------------
    def _advance(self, bar: Rec, ctx: Ctx, cursor: Any = None) -> Expr:
        """The token of this arrival (the parity of the thread's phase), and the next."""
        name = bar.fields["@bar"].ref.name
        if not ctx.dry and cursor is not None:
            loc = self._loc(cursor)
            sites = self._arrive_sites.setdefault(name, set())
            sites.add((loc.row, loc.column, ctx.loops))
            if sum(1 for (_, _, lp) in sites if lp and lp == ctx.loops) > 1:
                self._several.add(name)
                for w in self._token_waits.get(name, []):
                    w.parity = E.opaque("token")
        k = self._get(bar, "arrivals", ctx)
        self._set(bar, "arrivals", _plus(k, 1), ctx)
        return E.binop("%", k, E.Const(2))

    def _barrier_method(self, bar: Rec, mname: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        ref = bar.fields["@bar"].ref
        api = f"cuda::barrier::{mname}"
        if mname == "arrive":
            self._arrival(api, ref, args, ctx, cursor)
            return self._advance(bar, ctx, cursor)
        if mname == "arrive_and_wait" and not args:
            # `wait(arrive())`: the arrival, then the wait on its phase
            parity = self._advance(bar, ctx, cursor)
            self._op(ir.MBAR_ARRIVE, api, ctx, cursor, barrier=ref, count=E.Const(1), mbar=ir.BarrierFacts())
            self._token_wait(ref, parity, api, ctx, cursor)
            return None
        if mname == "arrive_and_drop" and not args:
            # libcu++ lowers it to `mbarrier.arrive_drop` (cuda/__barrier): an arrival on the
            # phase in progress that also lowers the expected count of it and every later phase
            # by one; no token (the thread leaves the barrier), so its arrival count stays
            self._op(ir.MBAR_ARRIVE, api, ctx, cursor, barrier=ref, count=E.Const(1), mbar=ir.BarrierFacts(drop=True))
            return None
        if mname == "wait" and len(args) == 1:
            p = self._value(args[0], ctx, cursor)
            if not isinstance(p, Expr):
                return NotImplemented
            self._token_wait(ref, p, api, ctx, cursor)
            return None
        if mname == "wait_parity" and len(args) == 1:
            p = self._value(args[0], ctx, cursor)
            if not isinstance(p, Expr):
                return NotImplemented
            self._op(ir.MBAR_WAIT, api, ctx, cursor, barrier=ref, parity=p, mbar=ir.BarrierFacts())
            return None
        return NotImplemented

    def _token_wait(self, ref: ir.Ref, parity: Expr, api: str, ctx: Ctx, cursor: Any) -> None:
        if ref.name in self._several:
            parity = E.opaque("token")
        op = self._op(ir.MBAR_WAIT, api, ctx, cursor, barrier=ref, parity=parity, mbar=ir.BarrierFacts())
        if not ctx.dry:
            self._token_waits.setdefault(ref.name, []).append(op)

    # -- the latch ---------------------------------------------------------------------------
    def placement_new(self, c: Any, ctx: Ctx) -> bool:
        """`new (mem) cuda::latch<scope>(n)` in the statement at cursor c: the init of the latch
        named after `mem` (a `__shared__` variable). False: not a latch construction lowered."""
        m = self.w.model
        if m is None or c is None:
            return False
        new = _strip_cursor(c)
        if new is None or new.kind != CK.CXX_NEW_EXPR:
            return False
        scope = _latch_scope(new.type.get_pointee().get_canonical().spelling)
        kids = [k for k in new.get_children() if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
        if scope is None or len(kids) != 2 or kids[1].kind != CK.CALL_EXPR:
            return False
        store = _latch_storage(kids[0])
        args = [a for a in kids[1].get_arguments()]
        if store is None or len(args) != 1:
            return False
        name = store.spelling
        toks = [t.spelling for t in args[0].get_tokens()]
        node = cexpr.parse_expression(toks, None) if toks else cexpr.Unknown("")
        n = self.w.ev(node, ctx, c) if not isinstance(node, cexpr.Unknown) else None
        if name not in m.barriers:
            m.barriers[name] = ir.Barrier(name, (), self._loc(store), "static")
        self._latches.add(name)
        self._op(
            ir.MBAR_INIT,
            "cuda::latch::latch",
            ctx,
            c,
            barrier=ir.Ref(name),
            count=n if isinstance(n, Expr) else E.opaque("latch count"),
        )
        return True

    def latch_method(self, mname: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """A method of a latch this walk constructed (`placement_new`); NotImplemented when not
        one lowered (table `knowledge/ops.LIBCU_LATCH_METHODS`)."""
        if mname not in ("count_down", "wait", "arrive_and_wait") or cursor is None:
            return NotImplemented
        obj = _member_object(cursor, mname)
        if obj is None or _latch_scope(obj.type.get_canonical().spelling) is None:
            return NotImplemented
        store = _latch_storage(obj)
        if store is None or store.spelling not in self._latches:
            return NotImplemented
        ref = ir.Ref(store.spelling)
        api = f"cuda::latch::{mname}"
        if mname == "wait" and args:
            return NotImplemented
        if mname in ("count_down", "arrive_and_wait"):
            if len(args) > 1:
                return NotImplemented
            self._arrival(api, ref, args, ctx, cursor)
        if mname in ("wait", "arrive_and_wait"):
            # the latch's one phase: the counter reaching 0 completes phase 0
            self._op(ir.MBAR_WAIT, api, ctx, cursor, barrier=ref, parity=E.Const(0), mbar=ir.BarrierFacts())
        return None

    # -- the binary semaphore ----------------------------------------------------------------
    def semaphore_method(self, callee: cexpr.Member, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """`acquire()`, `try_acquire()`, `release()` of a binary semaphore in global memory (the
        module's text); NotImplemented when not one lowered."""
        mname = callee.field
        m = self.w.model
        if m is None or cursor is None or mname not in ("acquire", "try_acquire", "release"):
            return NotImplemented
        obj = _member_object(cursor, mname)
        sm = K.LIBCU_BINARY_SEMAPHORE_T.search(obj.type.get_canonical().spelling) if obj is not None else None
        if sm is None or (mname == "release" and args and not _is_one(self.w.ev(args[0], ctx, cursor))):
            return NotImplemented
        if mname != "release" and args:
            return NotImplemented
        word = self._semaphore_word(callee, ctx, cursor)
        if word is None:
            return NotImplemented
        base, index, where = word
        scope = K.THREAD_SCOPES.get(sm.group(1))
        text = cexpr.render(cexpr.Call(callee, tuple(args)))[:80]
        api = f"cuda::binary_semaphore::{mname}"
        loc = self._loc(cursor)

        def event(kind_ctx: Ctx, atomic: str, sem: str, value: int, old: Any, discarded: bool = False) -> None:
            self.w.emit(
                ir.Op(
                    ir.GLOBAL_SIGNAL,
                    api,
                    loc,
                    kind_ctx.guard,
                    kind_ctx.loops,
                    global_access=ir.GlobalAccessFacts(
                        sem,
                        text,
                        atomic=atomic,
                        dtype="int",
                        result=old.name if old is not None else None,
                        form="object",
                        base=base,
                        scope=scope,
                        operand=E.Const(value),
                        index=index,
                        where=where,
                        operands=(E.Const(value),),
                        discarded=discarded,
                    ),
                ),
                kind_ctx,
            )

        if mname == "release":
            event(ctx, "st", "release", 1, None)
            return None
        old = E.opaque(f"{text}: the old value")
        if mname == "try_acquire":
            event(ctx, "exch", "acquire", 0, old, _discarded(cursor, mname))
            return E.binop("==", old, E.Const(1))
        # `while (!try_acquire()) wait(0);`: a spin loop on the exchange
        st = self.w.stmts
        st._loop_ids += 1
        lid = st._loop_ids
        cond = E.binop("!=", old, E.Const(1))
        counter = E.Var(f"k{lid}", E.LOOP, label=f"iteration of the acquire loop at line {loc.row}")
        loop = ir.Loop(lid, None, counter, None, None, None, loc, ctx.loops[-1] if ctx.loops else None)
        loop.cond, loop.data_cond = cond, True
        if not ctx.dry:
            m.loops[lid] = loop
        lctx = replace(ctx, loops=ctx.loops + (lid,))
        spin = ir.Op(ir.SPIN, api, loc, lctx.guard, lctx.loops)
        spin.spin = ir.SpinFacts(cond, empty=True)
        self.w.emit(spin, lctx)
        event(lctx, "exch", "acquire", 0, old)
        return None

    def _semaphore_word(
        self, callee: cexpr.Member, ctx: Ctx, cursor: Any
    ) -> tuple[str, Expr | None, str | None] | None:
        """(base, element index, where) of the semaphore's word: `p[i]` of a kernel pointer p is
        (p, i, None), `p->...` / `(*p)....` is (p, None, ""); None: another address."""
        node = callee.obj
        ex = self.w.exprs
        dry = replace(ctx, dry=True)
        if callee.arrow or (isinstance(node, cexpr.Un) and node.op == "*"):
            ptr = node if callee.arrow else node.a  # type: ignore[union-attr]
            v = self.w.ev(ptr, dry, cursor)
            return (v.name, None, "") if ex.one_word(v) else None
        if isinstance(node, cexpr.Index):
            v = self.w.ev(node.obj, dry, cursor)
            i = self.w.ev(node.index, dry, cursor)
            if not ex.one_word(v) or not isinstance(i, Expr) or i.is_opaque():
                return None
            return v.name, i, None
        return None

    # -- the pipeline -------------------------------------------------------------------------
    def _make_pipeline(self, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, qual: str) -> Any:
        if not args:
            self._op(ir.NOP, "cuda::make_pipeline", ctx, cursor)
            return Rec({"@unified": True}, PIPELINE)
        if len(args) != 3:
            return NotImplemented
        state = self._value(args[1], ctx, cursor)
        if not (isinstance(state, Rec) and state.type_name == STATE) or not self._whole_block(cursor):
            return NotImplemented
        n = self.w.model.num_threads() if self.w.model is not None else None
        producers = self._producers(args[2], n, ctx, cursor)
        if producers is None:
            pc: Expr = E.opaque("producer count")
            cc: Expr = E.opaque("consumer count")
        else:
            pc, cc = producers
        stages = state.fields["@stages"]
        api = "cuda::make_pipeline"
        # thread 0 of the block initialises every stage's pair, then the block syncs
        init_ctx = replace(ctx, guard=ctx.guard.with_thread(E.binop("==", E.TID, E.Const(0))))
        for i in range(stages):
            for role, count in (("consumed", cc), ("produced", pc)):
                self._op(
                    ir.MBAR_INIT,
                    api,
                    init_ctx,
                    cursor,
                    barrier=ir.Ref(state.fields[role].ref.name, (E.Const(i),)),
                    count=count,
                )
        self._op(
            ir.SYNC,
            api,
            ctx,
            cursor,
            scope="block",
            count=self.w.model.block_threads if self.w.model is not None else None,
            sync=ir.SyncFacts("block", syncthreads=True),
        )
        return Rec({"@state": state, "@stages": stages}, PIPELINE)

    def _whole_block(self, cursor: Any) -> bool:
        """The group of `make_pipeline(group, ...)` is the thread block (its type, as libclang
        resolves it)."""
        if cursor is None:
            return False
        try:
            for c in cursor.walk_preorder():
                if c.kind == CK.CALL_EXPR and c.spelling == "make_pipeline":
                    kids = list(c.get_arguments())
                    if kids:
                        return "thread_block" in kids[0].type.get_canonical().spelling
        except (ValueError, AttributeError):
            return False
        return False

    def _producers(self, node: cexpr.Node, n: int | None, ctx: Ctx, cursor: Any) -> tuple[Expr, Expr] | None:
        """(producer count, consumer count) from the role or producer-count argument."""

        def role_of(x: cexpr.Node) -> str | None:
            if isinstance(x, cexpr.Name) and len(x.segments) >= 2 and x.segments[-2].name == "pipeline_role":
                return x.segments[-1].name
            return None

        if n is None:
            return None
        r = role_of(node)
        if r is not None:
            p = n if r == "producer" else 0
            return E.Const(p), E.Const(n - p)
        if isinstance(node, cexpr.Cond) and role_of(node.a) and role_of(node.b):
            cond = self.w.ev(node.cond, ctx, cursor)
            if not isinstance(cond, Expr) or role_of(node.a) == role_of(node.b):
                return None
            if role_of(node.a) != "producer":
                cond = E.negate(cond)
            p = 0
            for t in range(n):
                v = cond.eval({E.TID.name: t, E.TID_Y.name: 0, E.TID_Z.name: 0})
                if v is None:
                    return None
                p += 1 if v else 0
            return E.Const(p), E.Const(n - p)
        count = self.w.ev(node, ctx, cursor)
        if isinstance(count, Expr) and not count.depends_on(E.THREAD):
            return count, E.binop("-", E.Const(n), count)
        return None

    def _pipeline_method(self, pipe: Rec, mname: str, ctx: Ctx, cursor: Any) -> Any:
        api = f"cuda::pipeline::{mname}"
        if pipe.fields.get("@unified"):
            if mname == "producer_commit":
                self._op(ir.CP_ASYNC_COMMIT, api, ctx, cursor)
                self._set(pipe, "head", _plus(self._get(pipe, "head", ctx), 1), ctx)
                return None
            if mname == "consumer_wait":
                # `if (head == tail) return; wait_group(head - tail - 1); ++tail;`
                # (head - tail is a number in a walk with values, symbolic in the dry walk that
                # finds a loop's updates: there the stage is taken as pending, as in any use that
                # committed before it waits)
                h, t = self._get(pipe, "head", ctx), self._get(pipe, "tail", ctx)
                d = _difference(h, t)
                if d is not None and d <= 0 and not ctx.loops:
                    self._op(ir.NOP, api, ctx, cursor)
                    return None
                n = E.Const(d - 1) if d is not None and d > 0 else E.opaque("head - tail - 1")
                self._op(ir.CP_ASYNC_WAIT, api, ctx, cursor, count=n)
                self._set(pipe, "tail", _plus(t, 1), ctx)
                return None
            if mname in ("producer_acquire", "consumer_release"):
                self._op(ir.NOP, api, ctx, cursor)
                return None
            return NotImplemented
        state: Rec = pipe.fields["@state"]
        s = E.Const(pipe.fields["@stages"])
        produced, consumed = state.fields["produced"].ref.name, state.fields["consumed"].ref.name
        if mname in ("producer_acquire", "producer_commit"):
            h = self._get(pipe, "head", ctx)
            slot = E.binop("%", h, s)
            if mname == "producer_acquire":
                # a stage is free once its consumers released it: a fresh stage (phase -1) is
                parity = E.binop("%", E.binop("+", E.binop("/", h, s), E.Const(1)), E.Const(2))
                self._op(ir.MBAR_WAIT, api, ctx, cursor, barrier=ir.Ref(consumed, (slot,)), parity=parity)
                return None
            # `cp.async.mbarrier.arrive` then an arrival: the stage's phase completes once the
            # thread's copies before the commit have landed
            self._op(
                ir.MBAR_ARRIVE,
                api,
                ctx,
                cursor,
                barrier=ir.Ref(produced, (slot,)),
                count=E.Const(1),
                mbar=ir.BarrierFacts(cp_async=True),
            )
            self._set(pipe, "head", _plus(h, 1), ctx)
            return None
        if mname in ("consumer_wait", "consumer_release"):
            t = self._get(pipe, "tail", ctx)
            slot = E.binop("%", t, s)
            if mname == "consumer_wait":
                parity = E.binop("%", E.binop("/", t, s), E.Const(2))
                self._op(ir.MBAR_WAIT, api, ctx, cursor, barrier=ir.Ref(produced, (slot,)), parity=parity)
                return None
            self._op(
                ir.MBAR_ARRIVE,
                api,
                ctx,
                cursor,
                barrier=ir.Ref(consumed, (slot,)),
                count=E.Const(1),
                mbar=ir.BarrierFacts(),
            )
            self._set(pipe, "tail", _plus(t, 1), ctx)
            return None
        return NotImplemented

    # -- copies ------------------------------------------------------------------------------
    def _copy(self, dst_n: cexpr.Node, size_n: cexpr.Node, sync: Rec, ctx: Ctx, cursor: Any, api: str) -> Any:
        """`memcpy_async(dst, src, size, pipe | bar)`: a cp.async copy of the issuing thread."""
        dst = self.w.ev(dst_n, ctx, cursor)
        size = self._size(size_n, ctx, cursor)
        ref = dst.ref if isinstance(dst, Obj) else None
        self._op(
            ir.CP_ASYNC,
            api,
            ctx,
            cursor,
            buffer=ref,
            operands=(ref,) if ref is not None else (),
            bytes=size,
            copy=ir.CopyFacts(
                "libcu",
                None if ref is not None else cexpr.render(dst_n),
                mbarrier=sync.fields["@bar"].ref if sync.type_name == BARRIER else None,
            ),
        )
        return None
