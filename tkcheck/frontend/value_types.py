"""Values the front end's evaluator binds names to while walking a kernel.

Scalars are model expressions (`tkcheck.model.expr.Expr`). Everything else is
one of the small classes below: a reference to a modelled object (barrier,
shared buffer, register tile, global layout), a record of named fields (the
`args` of a TK prototype callback, a user struct instance), a type, a user
struct, a callable user function, or a group scope alias (`using consumers =
group<8>`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.ir import Ref, TileType


@dataclass(frozen=True)
class Obj:
    kind: str  # barrier | buffer | regtile | gl | tmem | struct | semaphore_value
    ref: Ref
    type: TileType | None = None
    reinterpreted_from: TileType | None = None
    # tmem: (lane offset, column offset in 32-bit TMEM columns) from the tile element's base,
    # accumulated through `.subtile<TT>(row, col)`; None: at the base
    tmem_offset: tuple | None = None
    # shared: the CTA of the cluster whose copy of the object this is (an Expr: distributed shared
    # memory reached through `cluster.map_shared_rank(p, r)`); None: the CTA's own
    cta: Any = None
    # shared: declared `volatile` (`__shared__ volatile unsigned head;`): every access is a
    # volatile load / store (PTX ld.volatile / st.volatile: relaxed, never cached in a register)
    volatile: bool = False
    # shared: a pointer to this element made by the program (`&z_s[8]`, `z_s + 8`), so `p[i]` is
    # the element i further on, not a new dimension; `pointee_bytes` the size it points to when
    # a cast made it another (`reinterpret_cast<float2 *>(&z_s[8])`: 8). Not part of identity.
    elem_ptr: bool = field(default=False, compare=False)
    pointee_bytes: int | None = field(default=None, compare=False)

    def sub(self, member: str, mtype: TileType | None, kind: str | None = None) -> "Obj":
        return Obj(
            kind or self.kind,
            Ref(f"{self.ref.name}.{member}", self.ref.index),
            mtype,
            cta=self.cta,
            volatile=self.volatile,
        )

    def at(self, index, etype: TileType | None, spelling: str | None = None) -> "Obj":
        """The element at `index`; `spelling`: the subscript as the user wrote it (`full[k % STAGES]`)."""
        return Obj(
            self.kind,
            Ref(self.ref.name, self.ref.index + (index,), spelling),
            etype,
            cta=self.cta,
            volatile=self.volatile,
        )


@dataclass(frozen=True)
class NamedBar:
    """A TK `barrier<num_warps>` object: a named hardware barrier `id` of `32 * warps` threads
    (`barrier<8> b(2)`; `b[i]` is barrier id + i). `arrive(b)` is `bar.arrive id, 32*N`,
    `arrive_and_wait(b)` is `bar.sync id, 32*N` (their group forms the same). `warps` is None
    when the template argument was not evaluated."""

    id: Any
    warps: int | None


@dataclass
class Rec:
    """A record of named values (lcf callback args, user struct instances).

    A local object of a user struct (`state<config> mks{...}`) has `path` (its variable) and
    `struct` (for its member functions): its scalar fields live in the walker's Env under
    `path.field` (listed in `scalars`), so they are variables like any other -- assigned in
    branches, carried by loops (`for (mks.index = 0; ...; mks.next())`) -- while fields that
    refer to objects (barrier arrays, tiles) stay in `fields`."""

    fields: dict[str, Any] = field(default_factory=dict)
    type_name: str = ""
    struct: Any = None
    path: str | None = None
    scalars: tuple = ()
    stype: Any = None  # the StructType of a user struct instance (functors)


@dataclass(frozen=True)
class TypeVal:
    type: TileType


@dataclass
class StructType:
    """A user struct/class (possibly a template instantiated with its defaults)."""

    name: str
    cursor: Any  # clang cursor of the declaration
    env: Any  # Env holding its template parameters and members
    members: dict[str, Any] = field(default_factory=dict)  # name -> cursor (fields, types, functions)


@dataclass
class Func:
    name: str
    cursors: list  # overload set (clang cursors with bodies)
    owner: StructType | None = None


@dataclass
class Lambda:
    """A lambda expression: its clang cursor (parameters and body) and the scope it was
    written in (captures by reference see and change that scope; by value, changes stay
    inside the call)."""

    cursor: Any
    env: Any
    by_value: bool = False


@dataclass(frozen=True)
class CgGroup:
    """A cooperative-groups group object, known by its C++ type (knowledge/ops.py
    `cg_group_type`): kind block | tile | coalesced | cluster | grid | group (a thread_group of
    unknown kind); size: a thread_block_tile's threads."""

    kind: str
    size: int | None = None


@dataclass(frozen=True)
class DsmemPtr:
    """`cluster.map_shared_rank(p, r)`: the address p names in the shared memory of CTA `cta`
    of the cluster (distributed shared memory). `target` is the element p points at; indexing
    the pointer (`peer[e]`) offsets its last subscript."""

    target: Obj
    cta: Any


@dataclass(frozen=True)
class UnknownPtr:
    """A pointer variable whose value the model does not follow (a local pointer a loop body
    assigns in a way the walk does not solve: swapped with another, rotated, advanced
    conditionally). `space`: the memory its values were in (shared | global); `candidates`:
    the objects it held before the loop (it may hold any of them, or another address). An
    access through it is an UNKNOWN_ACCESS: coverage, never a finding and never no event."""

    name: str
    space: str
    candidates: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class ChoicePtr:
    """A pointer variable holding one of a few values, each under a block-uniform condition
    (`options`: (condition, value)): a pointer a loop rotates holds at iteration k the value of
    residue k mod p (`k % p == j`), and after the loop the value of `trip % p`. An access through
    it is one access per option, each under its condition."""

    name: str
    options: tuple[tuple[Any, Any], ...]


@dataclass(frozen=True)
class GroupScope:
    warps: int


@dataclass(frozen=True)
class Allocator:
    alignment: int
