"""What the composed parts of `builder.KernelWalker` may use of the walker: its state, its core
operations and its other parts, declared so that a part states its needs and mypy checks them.

The walker is the walk's state plus parts, one concern each: `walk_types.TypeResolution` (types
and launch shape), `walk_exprs.ExprEvaluation` (expressions to model values; it numbers the ops
emitted), `walk_statements.StatementWalk` (statements, branches, loops and their carried
variables), `walk_calls.CallLowering` (calls to model ops), `walk_inline.InlineExpansion` (the
user's functions inlined), `walk_asm.AsmLowering` (inline PTX) and `walk_tmem.TmemLowering`
(tensor memory). Each part holds the walker typed as one of the protocols below and reaches
nothing of it that its protocol does not list. The core operations of `WalkerCore` are parts'
own methods that the walker binds once; the rest of a part's interface is reached through the
part (`w.types.struct_type(...)`), so a call names the part that answers it.
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
    from .walk_atomics import AtomicLowering
    from .walk_calls import CallLowering
    from .walk_exprs import ExprEvaluation
    from .walk_inline import InlineExpansion
    from .walk_libcu import LibcuLowering
    from .walk_ptxns import PtxnsLowering
    from .walk_statements import StatementWalk
    from .walk_tmem import TmemLowering
    from .walk_types import TypeResolution


class WalkerCore(Protocol):
    """The walk state and core operations every composed part of the walker may rely on."""

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


class TypesWalker(WalkerCore, Protocol):
    """What `walk_types.TypeResolution` uses beyond the core: the file's declarations, the walk's
    type state, and the static members that expressions evaluate."""

    mb: ModelBuilder  # the file's declarations (structs, aliases, scopes, launch configurations)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    op_pack: list  # the op structs of the kernel's template pack, when it is one
    struct_cache: dict[Any, Any]  # struct instances (by name), tile types and global values (by cursor)
    unbound_args: list[str]  # template arguments of the instantiation not understood
    exprs: ExprEvaluation


class ExprWalker(WalkerCore, Protocol):
    """What `walk_exprs.ExprEvaluation` uses beyond the core: the file's declarations, the walk's
    state an expression reads or records, and the parts it hands calls, types and declared
    structs to."""

    mb: ModelBuilder  # the file's declarations (globals, functions, the source text)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    mk_op: StructType | None  # the MK interpreter op this model runs (knowledge/mk.py)
    phasebit_reads: dict[Expr, ir.PhasebitFacts]  # parity expression -> the get_phasebit it is
    struct_cache: dict[Any, Any]  # struct instances (by name), tile types and global values (by cursor)
    calls: CallLowering
    stmts: StatementWalk
    types: TypeResolution
    inline: InlineExpansion  # a user struct's operator (`++pos`) inlined on the object


class StatementWalker(WalkerCore, Protocol):
    """What `walk_statements.StatementWalk` uses beyond the core: the file's declarations and the
    parts a statement hands its inline asm, TMEM tiles, assignments and types to."""

    mb: ModelBuilder  # the file's declarations (macros, recovered rows, scopes)
    struct_cache: dict[Any, Any]  # struct instances (by name), tile types and global values (by cursor)
    asm: AsmLowering
    tmem: TmemLowering
    exprs: ExprEvaluation
    types: TypeResolution
    libcu: LibcuLowering
    atomics: AtomicLowering
    ptxns: PtxnsLowering


class InlineWalker(WalkerCore, Protocol):
    """What `walk_inline.InlineExpansion` uses beyond the core: the file's declarations, the walk
    of a body, and the parts whose name resolution it binds a call's arguments with."""

    mb: ModelBuilder  # the file's declarations (functions, structs, scopes)
    cursor: Any  # the kernel's cursor (its namespace picks overloads)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    mk_role: str | None  # the MK worker role whose loop is being walked, if any
    exprs: ExprEvaluation
    stmts: StatementWalk
    types: TypeResolution

    def walk(self, c: Any, ctx: Ctx) -> str | None:
        """Walk the statement at cursor `c`; how it left its block ("return", "break", ...) or None."""


class CallWalker(WalkerCore, Protocol):
    """What `walk_calls.CallLowering` uses beyond the core: the file's declarations, the walk's
    state a call reads or records, and the parts it hands a call to (inline asm addresses, TMEM,
    inlining) or shares evaluation with."""

    mb: ModelBuilder  # the file's declarations (functions, partial specializations)
    ns_names: set[str]  # namespace qualifiers that name no object of their own
    mk_op: StructType | None  # the MK interpreter op this model runs (knowledge/mk.py)
    mk_role: str | None  # the MK worker role whose loop is being walked, if any
    tk_lane_guarded: bool  # old TK: a TMA op's thread-scope spelling guards lane 0
    phasebit_reads: dict[Expr, ir.PhasebitFacts]  # parity expression -> the get_phasebit it is
    asm: AsmLowering
    tmem: TmemLowering
    inline: InlineExpansion
    exprs: ExprEvaluation
    stmts: StatementWalk
    types: TypeResolution
    libcu: LibcuLowering
    atomics: AtomicLowering
    ptxns: PtxnsLowering


class AsmWalker(WalkerCore, Protocol):
    """What `walk_asm.AsmLowering` uses beyond the core: the expression part (the addresses of
    global loads and atomics, their loaded values)."""

    exprs: ExprEvaluation
    stmts: StatementWalk  # an asm statement tkcheck could not read is an unmodelled barrier use
    mb: ModelBuilder  # the user's macros (an asm statement a macro wrote)
    tensor_boxes: dict[str, int]  # `CUtensorMap` parameter -> box bytes (tensor_maps.py)
    tensor_map_params: set[str]  # the kernel's `CUtensorMap` parameters (by value: `__grid_constant__`)
