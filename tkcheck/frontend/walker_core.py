"""What the composed parts of `builder.KernelWalker` may use of the walker: its state and its core
operations, declared so that a part states its needs and mypy checks them.

The walker's remaining mixins (types, statements, values, calls, inline expansion) still share
`self`; a part (`walk_asm.AsmLowering`, `walk_tmem.TmemLowering`) holds a `WalkerCore` instead
and reaches nothing of the walker that this protocol does not list.
"""
from __future__ import annotations

from typing import Any, Protocol

from ..model import ir
from . import cexpr
from .walk_env import Ctx, Env


class WalkerCore(Protocol):
    """The walk state and core operations a composed part of the walker relies on."""

    filename: str                       # the parsed file's path, as locations name it
    model: ir.KernelModel | None        # the model being built (None before the walk starts)

    def emit(self, op: ir.Op, ctx: Ctx) -> None:
        """Append `op` to the model (numbered, with the context's callers), unless `ctx` is dry."""

    def ev(self, node: cexpr.Node, ctx: Ctx, cursor: Any = None) -> Any:
        """The model value of an expression (an Expr, an Obj, a tile record, or None)."""

    def resolve_type(self, node: cexpr.Node | None, env: Env) -> Any:
        """A type node -> TileType | StructType | None."""

    def targ_int(self, targs: Any, ctx: Ctx, i: int) -> int | None:
        """The `i`th template argument as an integer constant, if it is one."""

    def note_unmodelled(self, c: Any, why: str) -> None:
        """Record that the code at cursor `c` is not modelled, and why."""
