"""What the composed parts of `builder.KernelWalker` may use of the walker: its state and its core
operations, declared so that a part states its needs and mypy checks them.

The walker's remaining mixins (types, statements, values, calls) still share `self`; a part holds
the walker typed as one of these protocols instead and reaches nothing of it that the protocol
does not list: `walk_asm.AsmLowering` and `walk_tmem.TmemLowering` a `WalkerCore`,
`walk_inline.InlineExpansion` an `InlineWalker` (the core plus what inlining needs).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import StructType
from .walk_env import Ctx, Env

if TYPE_CHECKING:
    from .builder import ModelBuilder


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


class InlineWalker(WalkerCore, Protocol):
    """What `walk_inline.InlineExpansion` uses beyond the core: the file's declarations, the walk of
    a body, and the name resolution it binds a call's arguments with."""

    mb: ModelBuilder                    # the file's declarations (functions, structs, scopes)
    cursor: Any                         # the kernel's cursor (its namespace picks overloads)
    ns_names: set[str]                  # namespace qualifiers that name no object of their own
    mk_role: str | None                 # the MK worker role whose loop is being walked, if any

    def walk(self, c: Any, ctx: Ctx) -> str | None:
        """Walk the statement at cursor `c`; how it left its block ("return", "break", ...) or None."""

    def deref(self, v: Any, name: str, ctx: Ctx, targs: Any = None) -> Any:
        """The value a name's binding stands for (a declaration evaluated, a type resolved)."""

    def opaque_from(self, node: cexpr.Node, parts: Any) -> Expr:
        """An unknown value; uniform when everything it is computed from is."""

    def struct_type(self, cursor: Any, targs: dict[str, Any], parent_env: Env | None = None) -> StructType:
        """The struct (instance of a class template, with `targs`) at `cursor`."""

    def bind_template_params_list(self, params: list[Any], env: Env) -> None:
        """Bind template parameters to their defaults in `env`."""

    def unmodelled_use(self, vals: list[Any], ctx: Ctx, cursor: Any, what: str) -> None:
        """Record that a call tkcheck does not model received the barriers among `vals`."""
