"""libcu++'s `cuda::ptx::` wrappers as the PTX instruction each one is.

Every `cuda::ptx::` function is exactly one PTX instruction, its tag arguments (`sem_release`,
`scope_cta`, `space_shared`, `op_add` ...) choosing the instruction's qualifiers and its other
arguments its operands. A call is lowered by writing that instruction and walking it as inline
PTX (`AsmLowering.walk_instruction`), the operands bound to the call's arguments: one semantics
for `mbarrier.init` whether it is written in an asm statement or as `cuda::ptx::mbarrier_init`.
Shared-memory addresses (the mbarrier, a bulk copy's shared side) are passed to the wrappers as
generic pointers; the instruction takes them as `__cvta_generic_to_shared` of the pointer, as an
asm statement's operand is written.

A wrapper whose instruction inline PTX does not model either (a token `try_wait`,
`mbarrier_expect_tx`, a copy or reduction into another CTA's shared memory) stays what that
instruction is there: an opaque call the coverage census reports as not modelled.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import expr as E
from . import cexpr
from .walk_env import CK, Ctx

# the qualifier a tag argument stands for (`cuda::ptx::space_cluster` -> .shared::cluster)
_TAG = re.compile(r"(?:^|::)((?:sem|scope|space|op)_[a-z_]+?)(?:_t)?\s*(?:\{\s*\}|\(\s*\))?$")
_SPACE = {"space_shared": "shared::cta", "space_cluster": "shared::cluster", "space_global": "global"}
_REDUCE_OP = {
    "op_add": "add",
    "op_min": "min",
    "op_max": "max",
    "op_inc": "inc",
    "op_dec": "dec",
    "op_and_op": "and",
    "op_or_op": "or",
    "op_xor_op": "xor",
}
# the wrappers this module lowers (any other `cuda::ptx::` name: an unknown call, a census site)
WRAPPERS = frozenset(
    {
        "mbarrier_init",
        "mbarrier_arrive",
        "mbarrier_arrive_expect_tx",
        "mbarrier_expect_tx",
        "mbarrier_try_wait",
        "mbarrier_try_wait_parity",
        "mbarrier_test_wait",
        "mbarrier_test_wait_parity",
        "cp_async_bulk",
        "cp_async_bulk_tensor",
        "cp_async_bulk_commit_group",
        "cp_async_bulk_wait_group",
        "cp_async_bulk_wait_group_read",
        "cp_reduce_async_bulk",
        "fence_proxy_async",
        "fence_mbarrier_init",
        "elect_sync",
        "griddepcontrol_wait",
        "griddepcontrol_launch_dependents",
    }
)
WAITS = frozenset({"mbarrier_try_wait_parity", "mbarrier_test_wait_parity"})


def _tag(node: cexpr.Node) -> str | None:
    """The tag an argument names (`space_cluster` for `cuda::ptx::space_cluster`), or None."""
    if not isinstance(node, cexpr.Name | cexpr.Call | cexpr.Init):
        return None
    try:
        text = cexpr.render(node)
    except KeyError:
        return None
    m = _TAG.search(text.replace(" ", ""))
    return m.group(1) if m else None


def _shared(node: cexpr.Node) -> cexpr.Node:
    """The shared-memory address the instruction takes for a generic pointer argument."""
    return cexpr.Call(cexpr.Name.simple("__cvta_generic_to_shared"), (node,))


def _n32(node: cexpr.Node) -> cexpr.Node | None:
    """N of a `cuda::ptx::n32_t<N>{}` argument."""
    match node:
        case cexpr.Call(cexpr.Name(segs), _) | cexpr.Name(segs):
            pass
        case cexpr.Init(_):
            return None
        case _:
            return None
    targs = segs[-1].targs if segs else None
    if segs and segs[-1].name == "n32_t" and targs and len(targs) == 1:
        return targs[0]
    return None


def is_cuda_ptx_call(cursor: Any, base: str, segments: list[str]) -> bool:
    """Whether `...::base(...)` in the statement at `cursor` calls libcu++'s `cuda::ptx::base`:
    libclang's referenced declaration sits in namespace cuda::ptx (an alias `namespace ptx =
    cuda::ptx` included); when libclang resolves nothing, the spelling says `ptx::`."""
    if base not in WRAPPERS:
        return False
    resolved = False
    try:
        for c in cursor.walk_preorder() if cursor is not None else ():
            if c.kind != CK.CALL_EXPR or c.spelling != base or c.referenced is None:
                continue
            resolved = True
            parent = c.referenced.semantic_parent
            grand = parent.semantic_parent if parent is not None else None
            if parent is None or parent.spelling != "ptx" or grand is None or grand.spelling != "cuda":
                return False
    except (ValueError, AttributeError):
        resolved = False
    return resolved or "ptx" in segments


class PtxnsLowering:
    """The walker's part for libcu++'s `cuda::ptx::` wrappers."""

    def __init__(self, walker: Any):
        self.w = walker

    def call(self, base: str, args: tuple[cexpr.Node, ...], ctx: Ctx, cursor: Any, looped: bool = False) -> Any:
        """Lower `cuda::ptx::base(args)`; its value (an elect_sync's election, a wait's result)
        or None. NotImplemented: a shape of the call this module does not know (the caller
        treats it as an unknown call)."""
        tags = [t for t in (_tag(a) for a in args) if t is not None]
        vals = [a for a in args if _tag(a) is None]
        spaces = [_SPACE[t] for t in tags if t in _SPACE]
        ins = self._instruction(base, tags, spaces, vals)
        if ins is None:
            return NotImplemented
        if base == "elect_sync":
            # elect.sync's predicate, as an asm statement's is modelled: lane 0 of the warp
            return E.binop("==", E.binop("%", E.TID, E.Const(32)), E.Const(0))
        ptx, operands = ins
        self.w.asm.walk_instruction(cursor, ctx, ptx, operands, f"cuda::ptx::{base}", looped=looped)
        if base.startswith("mbarrier_t"):
            return E.Const(1) if looped else E.opaque(f"cuda::ptx::{base}")
        if base.startswith("mbarrier_arrive"):
            return E.opaque("mbarrier state")
        return None

    @staticmethod
    def _instruction(
        base: str, tags: list[str], spaces: list[str], v: list[cexpr.Node]
    ) -> tuple[str, list[cexpr.Node]] | None:
        """The PTX instruction of the wrapper and its operands (`%N` is operands[N])."""
        cluster = "space_cluster" in tags or "scope_cluster" in tags
        bar_space = "shared::cluster" if cluster else "shared::cta"
        if base == "mbarrier_init" and len(v) == 2:
            return "mbarrier.init.shared::cta.b64 [%0], %1;", [_shared(v[0]), v[1]]
        if base == "mbarrier_arrive" and len(v) in (1, 2):
            scope = "cluster" if cluster else "cta"
            count = ", %1" if len(v) == 2 else ""
            return f"mbarrier.arrive.release.{scope}.{bar_space}.b64 _, [%0]{count};", [_shared(a) for a in v[:1]] + v[
                1:
            ]
        if base == "mbarrier_arrive_expect_tx" and len(v) == 2:
            scope = "cluster" if cluster else "cta"
            return f"mbarrier.arrive.expect_tx.release.{scope}.{bar_space}.b64 _, [%0], %1;", [_shared(v[0]), v[1]]
        if base == "mbarrier_expect_tx" and len(v) == 2:
            return f"mbarrier.expect_tx.relaxed.cta.{bar_space}.b64 [%0], %1;", [_shared(v[0]), v[1]]
        if base in ("mbarrier_try_wait", "mbarrier_test_wait", *WAITS) and len(v) == 2:
            what = "try_wait" if "try" in base else "test_wait"
            parity = ".parity" if base.endswith("parity") else ""
            return f"mbarrier.{what}{parity}.shared::cta.b64 p, [%0], %1;", [_shared(v[0]), v[1]]
        if base == "cp_async_bulk" and len(spaces) == 2:
            dst, src = spaces
            if len(v) == 4:
                # global (or this CTA's shared) -> shared::cluster, completing on an mbarrier
                return (
                    f"cp.async.bulk.{dst}.{src}.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];",
                    [_shared(v[0]), _shared(v[1]) if src != "global" else v[1], v[2], _shared(v[3])],
                )
            if len(v) == 3 and dst == "global":
                return f"cp.async.bulk.global.{src}.bulk_group [%0], [%1], %2;", [v[0], _shared(v[1]), v[2]]
            return None
        if base == "cp_async_bulk_tensor" and len(spaces) == 2:
            dst, src = spaces
            if len(v) == 4 and src == "global":
                return (
                    f"cp.async.bulk.tensor.{dst}.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {{%2}}], [%3];",
                    [_shared(v[0]), v[1], v[2], _shared(v[3])],
                )
            if len(v) == 3 and dst == "global":
                return f"cp.async.bulk.tensor.global.{src}.tile.bulk_group [%0, {{%1}}], [%2];", [
                    v[0],
                    v[1],
                    _shared(v[2]),
                ]
            return None
        if base == "cp_reduce_async_bulk" and len(spaces) == 2:
            dst, src = spaces
            op = next((_REDUCE_OP[t] for t in tags if t in _REDUCE_OP), "add")
            if len(v) == 3 and dst == "global":
                return f"cp.reduce.async.bulk.global.{src}.bulk_group.{op} [%0], [%1], %2;", [v[0], _shared(v[1]), v[2]]
            if len(v) == 4:
                return (
                    f"cp.reduce.async.bulk.{dst}.{src}.mbarrier::complete_tx::bytes.{op} [%0], [%1], %2, [%3];",
                    [_shared(v[0]), _shared(v[1]), v[2], _shared(v[3])],
                )
            return None
        if base == "cp_async_bulk_commit_group" and not v:
            return "cp.async.bulk.commit_group;", []
        if base in ("cp_async_bulk_wait_group", "cp_async_bulk_wait_group_read") and len(v) == 1:
            n = _n32(v[0])
            if n is None:
                return None
            read = ".read" if base.endswith("read") else ""
            return f"cp.async.bulk.wait_group{read} %0;", [n]
        if base == "fence_proxy_async" and not v:
            return (f"fence.proxy.async.{spaces[0]};" if spaces else "fence.proxy.async;"), []
        if base == "fence_mbarrier_init" and not v:
            return "fence.mbarrier_init.release.cluster;", []
        if base in ("griddepcontrol_wait", "griddepcontrol_launch_dependents") and not v:
            return f"griddepcontrol.{base[len('griddepcontrol_') :]};", []
        if base == "elect_sync" and len(v) == 1:
            return "elect.sync _|p, %0;", [v[0]]
        return None
