"""What the composed parts of `builder.KernelWalker` may use of the walker: its state and its core
operations, declared so that a part states its needs and mypy checks them.

The walker's remaining mixins (types, statements, values) still share `self`; a part holds the
walker typed as one of these protocols instead and reaches nothing of it that the protocol does
not list: `walk_asm.AsmLowering` and `walk_tmem.TmemLowering` a `WalkerCore`,
`walk_inline.InlineExpansion` an `InlineWalker` (the core plus what inlining needs),
`walk_calls.CallLowering` a `CallWalker` (the core plus what lowering a call needs, the other
parts included).
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
    from .walk_asm import AsmLowering
    from .walk_inline import InlineExpansion
    from .walk_tmem import TmemLowering


class WalkerCore(Protocol):
    """The walk state and core operations a composed part of the walker relies on."""

    filename: str  # the parsed file's path, as locations name it
    model: ir.KernelModel | None  # the model being built (None before the walk starts)

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

    mb: ModelBuilder  # the file's declarations (functions, structs, scopes)
    cursor: Any  # the kernel's cursor (its namespace picks overloads)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    mk_role: str | None  # the MK worker role whose loop is being walked, if any

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


class CallWalker(WalkerCore, Protocol):
    """What `walk_calls.CallLowering` uses beyond the core: the file's declarations, the walk's
    state a call reads or records, the evaluation helpers it shares with expressions, and the
    parts it hands a call to (inline asm addresses, TMEM, inlining)."""

    mb: ModelBuilder  # the file's declarations (functions, partial specializations)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    mk_op: StructType | None  # the MK interpreter op this model runs (knowledge/mk.py)
    mk_role: str | None  # the MK worker role whose loop is being walked, if any
    tk_lane_guarded: bool  # old TK: a TMA op's thread-scope spelling guards lane 0
    phasebit_reads: dict[Expr, ir.PhasebitFacts]  # parity expression -> the get_phasebit it is
    asm: AsmLowering
    tmem: TmemLowering
    inline: InlineExpansion

    def assign(self, node: cexpr.Assign, ctx: Ctx, cursor: Any) -> Any:
        """Evaluate an assignment (its effect on the environment); the value assigned."""

    def global_target(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> bool:
        """Whether `node` is an address in global memory."""

    def opaque_from(self, node: cexpr.Node, parts: Any) -> Expr:
        """An unknown value; uniform when everything it is computed from is."""

    def struct_type(self, cursor: Any, targs: dict[str, Any], parent_env: Env | None = None) -> StructType:
        """The struct (instance of a class template, with `targs`) at `cursor`."""

    def env_for_decl(self, cursor: Any) -> Env:
        """The environment a nested declaration's names resolve in."""

    def unmodelled_use(self, vals: list[Any], ctx: Ctx, cursor: Any, what: str) -> None:
        """Record that a call tkcheck does not model received the barriers among `vals`."""
