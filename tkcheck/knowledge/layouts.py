"""Element -> shared-memory byte maps of ThunderKittens tiles, and of every consumer that reads them.

This is the single place where tkcheck encodes layouts.  Every layout object answers one question:
"at which shared-memory byte does element (row, col) live?", both as a Python int (for messages)
and as a z3 32-bit bit-vector term (for proofs in ``tkcheck.checks.layout_proofs``).

Layout-like objects share a small protocol (``LayoutLike``):

    rows, cols                    logical shape (elements)
    dtype_bytes                   element size
    swizzle_bytes                 32 / 64 / 128, or None for an unswizzled layout
    num_bytes                     bytes the layout occupies from its base
    byte_address(base, r, c)      z3 BitVec(32) term: absolute shared address of element (r, c)
    element_address(base, r, c)   the same, Python int
    describe()                    short human text for messages
    unmeasured                    True where the map rests on hardware behaviour not measured here

Facts and where they come from (ThunderKittens headers; see the comments at each class):

* ``st<T, R, C, swizzle=true, swizzle_bytes=0>`` (include/types/shared/st.cuh): with swizzling, the
  tile is a sequence of column panels of ``P = swizzle_bytes / sizeof(T)`` columns, each panel
  ``R`` rows of ``swizzle_bytes`` bytes; ``a = base + sizeof(T) * ((c/P)*R*P + r*P + c%P)`` and
  then ``a ^ (((a % (swizzle_bytes*8)) >> 7) << 4)`` on the ABSOLUTE address.  Without swizzling
  it is plain row-major.
* TMA (include/types/global/tma.cuh): the tensor map built for a tile type registered on a ``gl``
  uses a 5-D box ``{P, R, C/P, 1, 1}`` and the swizzle mode of the tile type; the hardware lays
  the box densely (innermost first) and swizzles 16-byte chunks with address bits 7.. (see
  ``hw_swizzle``).
* wgmma (include/types/shared/descriptor.cuh, include/ops/group/mma/warpgroup.cuh): TK's
  ``st_descriptor`` encodes layout type and LBO/SBO per swizzle mode; ``WgmmaOperandView`` derives
  the byte map the hardware then reads from those fields and the PTX canonical layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Union

import z3

ADDR_BITS = 32

#: Shared memory a CTA can address on sm_90 / sm_100 (227 KiB usable of 228 KiB).  Used as the
#: default upper bound of a tile base in proofs; the wgmma descriptor keeps 18 address bits, so any
#: base below this bound is representable.
SMEM_LIMIT_BYTES = 227 * 1024

#: ``KITTENS_DEFAULT_ALIGN`` (include/common/util.cuh): st and sv are ``__align__(128)`` on Hopper
#: and Blackwell builds, ``__align__(16)`` otherwise.
TK_DEFAULT_ALIGN_HOPPER = 128
TK_DEFAULT_ALIGN_OTHER = 16

#: ``BASE_TILE_DIM`` (include/common/util.cuh).
BASE_TILE_DIM = 16

#: Element sizes of TK's shared-tile dtypes (``base_types::packing<T>::unpacked_type``).
DTYPE_BYTES: dict[str, int] = {
    "bf16": 2,
    "half": 2,
    "__nv_bfloat16": 2,
    "__half": 2,
    "float": 4,
    "fp8e4m3": 1,
    "fp8e5m2": 1,
    "fp8e8m0": 1,
    # FP4 is only tiled as the packed pair type (st.cuh static_assert on Blackwell).
    "fp4e2m1_2": 1,
}

#: The ``st_xx`` aliases of st.cuh.
TILE_ALIASES: dict[str, str] = {
    "st_bf": "bf16",
    "st_hf": "half",
    "st_fl": "float",
    "st_fp8e4m3": "fp8e4m3",
    "st_fp8e5m2": "fp8e5m2",
    "st_fp8e8m0": "fp8e8m0",
    "st_fp4e2m1_2": "fp4e2m1_2",
}

VALID_SWIZZLE_BYTES = (32, 64, 128)

Bits = Union[int, z3.BitVecRef]


def tile_col_dim(dtype_bytes: int) -> int:
    """``TILE_COL_DIM<T>``: 32 for 1-byte types, 16 otherwise (util.cuh)."""
    return BASE_TILE_DIM * 2 if dtype_bytes == 1 else BASE_TILE_DIM


def tile_row_dim(dtype_bytes: int) -> int:
    """``TILE_ROW_DIM<T>``: always 16 (util.cuh)."""
    return BASE_TILE_DIM


def swizzle_for(dtype_bytes: int, rows: int, cols: int, *, swizzle: bool = True, swizzle_bytes: int = 0) -> int | None:
    """The swizzle width TK's ``st<T, rows, cols, swizzle, swizzle_bytes>`` uses, or None.

    Mirrors ``st::swizzle_bytes`` in st.cuh: an explicit ``swizzle_bytes`` template argument
    (32/64/128) wins; otherwise, with ``w = cols / TILE_COL_DIM<T>``:

    ======== ===================================================
    1 byte   128 if w % 4 == 0, 64 if w % 2 == 0, else 32  (TILE_COL_DIM = 32)
    2 bytes  128 if w % 4 == 0, 64 if w % 2 == 0, else 32  (TILE_COL_DIM = 16)
    4 bytes  128 if w % 2 == 0, else 64                    (TILE_COL_DIM = 16)
    ======== ===================================================

    ``swizzle=false`` tiles are plain row-major: None (``st::swizzle_bytes`` is still computed by
    TK but nothing reads it for the layout, and the TMA map then uses SWIZZLE_NONE).
    ``rows`` does not enter the choice; it is taken for the static_asserts.
    """
    if swizzle_bytes not in (0, *VALID_SWIZZLE_BYTES):
        raise ValueError(f"swizzle_bytes must be 0, 32, 64 or 128 (st.cuh static_assert), got {swizzle_bytes}")
    if dtype_bytes not in (1, 2, 4):
        raise ValueError(f"unsupported element size {dtype_bytes}")
    if swizzle:
        if rows % tile_row_dim(dtype_bytes):
            raise ValueError(f"rows={rows} not a multiple of TILE_ROW_DIM={tile_row_dim(dtype_bytes)} (st.cuh)")
        if cols % tile_col_dim(dtype_bytes):
            raise ValueError(f"cols={cols} not a multiple of TILE_COL_DIM={tile_col_dim(dtype_bytes)} (st.cuh)")
    elif cols % BASE_TILE_DIM:
        raise ValueError(f"cols={cols} not a multiple of BASE_TILE_DIM=16 (st.cuh)")
    if not swizzle:
        return None
    if swizzle_bytes:
        return swizzle_bytes
    w = cols // tile_col_dim(dtype_bytes)
    if dtype_bytes in (1, 2):
        return 128 if w % 4 == 0 else 64 if w % 2 == 0 else 32
    return 128 if w % 2 == 0 else 64


# ----------------------------------------------------------------------------------------------
# Swizzle functions.  Two independent encodings of the same pattern, so that "TK's idx agrees with
# the TMA / wgmma hardware pattern" is something the solver proves rather than something we assume.
# ----------------------------------------------------------------------------------------------


def _bv(x: Bits) -> z3.BitVecRef:
    return x if isinstance(x, z3.BitVecRef) else z3.BitVecVal(x, ADDR_BITS)


def tk_swizzle(addr: Bits, swizzle_bytes: int) -> z3.BitVecRef:
    """TK's arithmetic (st.cuh idx): ``addr ^ (((addr % (swizzle_bytes*8)) >> 7) << 4)``."""
    a = _bv(addr)
    repeat = swizzle_bytes * 8
    return a ^ ((z3.URem(a, repeat) >> 7) << 4)


def tk_swizzle_int(addr: int, swizzle_bytes: int) -> int:
    return addr ^ (((addr % (swizzle_bytes * 8)) >> 7) << 4)


#: Hardware swizzle as bit fields: B bits of the 16-byte chunk index (address bits 4..4+B-1) are
#: XORed with address bits 7..7+B-1 (CuTe's Swizzle<B,4,3>): 128B: B=3, 64B: B=2, 32B: B=1.
#: Used by the TMA unit (CU_TENSOR_MAP_SWIZZLE_*) and by the wgmma / tcgen05 canonical layouts.
HW_SWIZZLE_BITS = {128: 3, 64: 2, 32: 1}


def hw_swizzle(addr: Bits, swizzle_bytes: int) -> z3.BitVecRef:
    """The hardware's pattern, written with bit extraction (not TK's modulo arithmetic)."""
    a = _bv(addr)
    b = HW_SWIZZLE_BITS[swizzle_bytes]
    chunk = z3.Extract(4 + b - 1, 4, a)
    row_bits = z3.Extract(7 + b - 1, 7, a)
    parts = []
    if ADDR_BITS - 1 >= 4 + b:
        parts.append(z3.Extract(ADDR_BITS - 1, 4 + b, a))
    parts.append(chunk ^ row_bits)
    parts.append(z3.Extract(3, 0, a))
    return z3.Concat(*parts)


def hw_swizzle_int(addr: int, swizzle_bytes: int) -> int:
    b = HW_SWIZZLE_BITS[swizzle_bytes]
    mask = (1 << b) - 1
    return addr ^ (((addr >> 7) & mask) << 4)


def _udiv_const(x: z3.BitVecRef, d: int) -> z3.BitVecRef:
    if d & (d - 1) == 0:
        return z3.LShR(x, d.bit_length() - 1)
    return z3.UDiv(x, d)


def _urem_const(x: z3.BitVecRef, d: int) -> z3.BitVecRef:
    if d & (d - 1) == 0:
        return x & (d - 1)
    return z3.URem(x, d)


class LayoutLike(Protocol):
    # read-only members: the layouts are frozen dataclasses
    @property
    def rows(self) -> int: ...
    @property
    def cols(self) -> int: ...
    @property
    def dtype_bytes(self) -> int: ...
    @property
    def swizzle_bytes(self) -> int | None: ...
    @property
    def num_bytes(self) -> int: ...
    @property
    def unmeasured(self) -> bool: ...
    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef: ...
    def element_address(self, base: int, r: int, c: int) -> int: ...
    def describe(self) -> str: ...


# ----------------------------------------------------------------------------------------------
# Shared tiles and vectors
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SharedTileLayout:
    """``st<T, rows, cols, ...>`` as TK's ``st::idx`` computes it (st.cuh).

    ``swizzle_bytes=None`` is the unswizzled (``swizzle=false``) row-major layout.  Build from
    template arguments with :meth:`tk`, which applies :func:`swizzle_for`.
    """

    dtype_bytes: int
    rows: int
    cols: int
    swizzle_bytes: int | None
    name: str = ""
    unmeasured: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.dtype_bytes not in (1, 2, 4):
            raise ValueError(f"unsupported element size {self.dtype_bytes}")
        if self.swizzle_bytes is not None and self.swizzle_bytes not in VALID_SWIZZLE_BYTES:
            raise ValueError(f"swizzle_bytes must be None, 32, 64 or 128, got {self.swizzle_bytes}")
        if self.rows <= 0 or self.cols <= 0:
            raise ValueError("tile shape must be positive")

    @classmethod
    def tk(
        cls, dtype: int | str, rows: int, cols: int, swizzle: bool = True, swizzle_bytes: int = 0
    ) -> "SharedTileLayout":
        """``st<dtype, rows, cols, swizzle, swizzle_bytes>`` (dtype: TK name or element size)."""
        db = DTYPE_BYTES[dtype] if isinstance(dtype, str) else dtype
        sb = swizzle_for(db, rows, cols, swizzle=swizzle, swizzle_bytes=swizzle_bytes)
        tname = dtype if isinstance(dtype, str) else f"{db}B"
        extra = "" if swizzle and not swizzle_bytes else f", {str(swizzle).lower()}, {swizzle_bytes}"
        return cls(db, rows, cols, sb, name=f"st<{tname}, {rows}, {cols}{extra}>")

    # -- geometry ---------------------------------------------------------------------------
    @property
    def panel_cols(self) -> int:
        """P: columns per panel (swizzle_bytes / sizeof(T)); the whole width when unswizzled."""
        return self.cols if self.swizzle_bytes is None else self.swizzle_bytes // self.dtype_bytes

    @property
    def num_bytes(self) -> int:
        """``sizeof(dtype) * rows * cols`` (``size_bytes<ST>``)."""
        return self.dtype_bytes * self.rows * self.cols

    @property
    def sizeof(self) -> int:
        """``sizeof(st<...>)``: the payload rounded up to KITTENS_DEFAULT_ALIGN (Hopper/Blackwell)."""
        a = TK_DEFAULT_ALIGN_HOPPER
        return (self.num_bytes + a - 1) // a * a

    @property
    def footprint_bytes(self) -> int:
        """Bytes TK's idx can touch.  Larger than num_bytes only when an explicit swizzle_bytes
        is wider than a row (cols*sizeof(T) not a multiple of swizzle_bytes): TK documents that
        as a requirement but does not static_assert it."""
        if self.swizzle_bytes is None:
            return self.num_bytes
        panels = -(-self.cols // self.panel_cols)
        return panels * self.rows * self.swizzle_bytes

    @property
    def swizzle_repeat(self) -> int | None:
        return None if self.swizzle_bytes is None else self.swizzle_bytes * 8

    def describe(self) -> str:
        sw = "no swizzle" if self.swizzle_bytes is None else f"{self.swizzle_bytes}B swizzle"
        n = self.name or f"st<{self.dtype_bytes}B, {self.rows}, {self.cols}>"
        return f"{n} ({sw})"

    # -- maps ---------------------------------------------------------------------------------
    def linear_offset(self, r: Bits, c: Bits) -> z3.BitVecRef:
        """Byte offset before the swizzle XOR (the column-panel arrangement)."""
        r, c = _bv(r), _bv(c)
        s = self.dtype_bytes
        if self.swizzle_bytes is None:
            return (r * self.cols + c) * s
        p = self.panel_cols
        return (_udiv_const(c, p) * (self.rows * p) + r * p + _urem_const(c, p)) * s

    def linear_offset_int(self, r: int, c: int) -> int:
        s = self.dtype_bytes
        if self.swizzle_bytes is None:
            return (r * self.cols + c) * s
        p = self.panel_cols
        return ((c // p) * self.rows * p + r * p + c % p) * s

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        """``st::idx(uint32_t ptr, {r, c})`` as a z3 term (absolute-address swizzle)."""
        a = _bv(base) + self.linear_offset(r, c)
        return a if self.swizzle_bytes is None else tk_swizzle(a, self.swizzle_bytes)

    def element_address(self, base: int, r: int, c: int) -> int:
        a = base + self.linear_offset_int(r, c)
        return a if self.swizzle_bytes is None else tk_swizzle_int(a, self.swizzle_bytes)

    def element_offset(self, r: int, c: int) -> int:
        """Byte offset of (r, c) from a base aligned to the swizzle repeat (for messages)."""
        return self.element_address(0, r, c)

    # -- views ----------------------------------------------------------------------------------
    def subtile(self, rows: int, cols: int, row_idx: Bits, col_idx: Bits) -> "SubtileView":
        """``tile.subtile<rows, cols>({row_idx, col_idx})`` -> ``st_subtile`` (offsets in tiles)."""
        ri, ci = row_idx, col_idx
        ro = ri * rows if isinstance(ri, int) else _bv(ri) * rows
        co = ci * cols if isinstance(ci, int) else _bv(ci) * cols
        return SubtileView(self, rows, cols, ro, co)

    def column_subtile(self, subtile_cols: int, idx: int) -> tuple[int, "SharedTileLayout"]:
        """``tile.subtile<subtile_cols>(idx)`` (st.cuh): a real ``st`` reference at a byte offset.

        TK static_asserts that the parent has swizzling on and ``subtile_cols`` is a multiple of
        the panel width; the returned tile keeps the parent's swizzle_bytes explicitly.
        Returns (byte offset from the parent's base, layout of the returned tile).
        """
        if self.swizzle_bytes is None:
            raise ValueError("subtile<cols>(idx) needs a swizzled parent (st.cuh static_assert)")
        p = self.panel_cols
        if subtile_cols <= 0 or subtile_cols % p:
            raise ValueError(f"subtile_cols={subtile_cols} must be a multiple of {p} (st.cuh static_assert)")
        off = self.dtype_bytes * self.rows * p * (subtile_cols // p) * idx
        sub = SharedTileLayout(
            self.dtype_bytes,
            self.rows,
            subtile_cols,
            self.swizzle_bytes,
            name=f"{self.name or 'st'}.subtile<{subtile_cols}>({idx})",
        )
        return off, sub

    def window(self, rows: int, cols: int, row_offset: Bits, col_offset: Bits) -> "TileWindow":
        """The parent's own map restricted to a window: what a correct subtile view must equal."""
        return TileWindow(self, rows, cols, row_offset, col_offset)


@dataclass(frozen=True)
class SharedVecLayout:
    """``sv<T, length>`` (sv.cuh): contiguous, never swizzled.  ``data`` is rounded up to a
    multiple of 128 bytes on Hopper/Blackwell (``num_alloc_elements``).  Exposed as a 1 x length
    layout so the same proofs apply (row is always 0)."""

    dtype_bytes: int
    length: int
    name: str = ""
    unmeasured: bool = field(default=False, compare=False)

    rows = 1
    swizzle_bytes = None

    @property
    def cols(self) -> int:
        return self.length

    @property
    def num_bytes(self) -> int:
        return self.dtype_bytes * self.length

    @property
    def alloc_bytes(self) -> int:
        return (self.num_bytes + 127) // 128 * 128

    def describe(self) -> str:
        return f"{self.name or f'sv<{self.dtype_bytes}B, {self.length}>'} (contiguous)"

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        return _bv(base) + _bv(c) * self.dtype_bytes

    def element_address(self, base: int, r: int, c: int) -> int:
        return base + c * self.dtype_bytes

    def subvec(self, sub_length: int, idx: int) -> tuple[int, "SharedVecLayout"]:
        """``v.subvec<sub_length>(idx)``: (byte offset, layout)."""
        return self.dtype_bytes * sub_length * idx, SharedVecLayout(self.dtype_bytes, sub_length)


@dataclass(frozen=True)
class _WindowOfTile:
    """A (rows x cols) window at (row_offset, col_offset) of a parent tile: dtype, swizzle and
    size are the parent's. Offsets may be z3 terms (a loop index)."""

    parent: SharedTileLayout
    rows: int
    cols: int
    row_offset: Bits
    col_offset: Bits
    unmeasured: bool = field(default=False, compare=False)

    @property
    def dtype_bytes(self) -> int:
        return self.parent.dtype_bytes

    @property
    def swizzle_bytes(self) -> int | None:
        return self.parent.swizzle_bytes

    @property
    def num_bytes(self) -> int:
        return self.parent.num_bytes


@dataclass(frozen=True)
class SubtileView(_WindowOfTile):
    """``st_subtile<ST, rows, cols>`` exactly as TK's ``st_subtile::idx`` computes it (st.cuh).

    Swizzled parents: the parent's formula at (r + row_offset, c + col_offset) with the parent's
    ``underlying_rows`` -- consistent with the parent by construction.
    Unswizzled parents: TK computes ``ptr + sizeof(T)*((r+ro)*cols + (c+co))`` with the SUBTILE's
    ``cols``, not ``underlying_cols``; that differs from the parent whenever the subtile is
    narrower.  (``st::subtile<R,C>(int2)`` itself only compiles for default template flags, since
    it constructs ``st_subtile<st<T,R,C>>`` from ``*this``; the unswizzled view is reachable by
    constructing ``st_subtile`` directly.)
    """

    def describe(self) -> str:
        return (
            f"st_subtile<{self.parent.describe()}, {self.rows}, {self.cols}> at ({self.row_offset}, {self.col_offset})"
        )

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        rr, cc = _bv(r) + _bv(self.row_offset), _bv(c) + _bv(self.col_offset)
        if self.parent.swizzle_bytes is None:
            return _bv(base) + (rr * self.cols + cc) * self.dtype_bytes
        return self.parent.byte_address(base, rr, cc)

    def element_address(self, base: int, r: int, c: int) -> int:
        ro, co = _int(self.row_offset), _int(self.col_offset)
        if self.parent.swizzle_bytes is None:
            return base + ((r + ro) * self.cols + (c + co)) * self.dtype_bytes
        return self.parent.element_address(base, r + ro, c + co)


@dataclass(frozen=True)
class TileWindow(_WindowOfTile):
    """The parent tile's map on a (rows x cols) window at (row_offset, col_offset)."""

    def describe(self) -> str:
        return f"{self.parent.describe()} window {self.rows}x{self.cols} at ({self.row_offset}, {self.col_offset})"

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        return self.parent.byte_address(base, _bv(r) + _bv(self.row_offset), _bv(c) + _bv(self.col_offset))

    def element_address(self, base: int, r: int, c: int) -> int:
        return self.parent.element_address(base, r + _int(self.row_offset), c + _int(self.col_offset))


def _int(x: Bits) -> int:
    if isinstance(x, int):
        return x
    v = z3.simplify(x)
    if z3.is_bv_value(v):
        return int(v.as_long())
    raise ValueError(f"symbolic offset {x} has no Python value")


@dataclass(frozen=True)
class AtOffset:
    """``layout`` placed ``byte_offset`` bytes after the base (e.g. ``subtile<cols>(idx)``, or a
    tile that is member k of a struct)."""

    layout: "LayoutLike"
    byte_offset: int
    unmeasured: bool = field(default=False, compare=False)

    @property
    def rows(self) -> int:
        return self.layout.rows

    @property
    def cols(self) -> int:
        return self.layout.cols

    @property
    def dtype_bytes(self) -> int:
        return self.layout.dtype_bytes

    @property
    def swizzle_bytes(self) -> int | None:
        return self.layout.swizzle_bytes

    @property
    def num_bytes(self) -> int:
        return self.byte_offset + self.layout.num_bytes

    def describe(self) -> str:
        return f"{self.layout.describe()} at +{self.byte_offset}"

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        return self.layout.byte_address(_bv(base) + self.byte_offset, r, c)

    def element_address(self, base: int, r: int, c: int) -> int:
        return self.layout.element_address(base + self.byte_offset, r, c)


@dataclass(frozen=True)
class TiledBuffer:
    """Tiles of one shape placed back to back in memory (``st<...> b[N]`` or consecutive struct
    members), read as one logical matrix: buffer index ``i`` holds logical tile
    ``(i // grid_cols, i % grid_cols)``.  ``grid=(1, N)`` is TK's GEMM idiom (N column blocks read
    as one wide operand); ``(N, 1)`` stacks rows.  Tile i starts at ``i * stride_bytes`` (default
    ``sizeof(st)``: the payload rounded up to 128 bytes)."""

    tiles: tuple[SharedTileLayout, ...]
    grid: tuple[int, int]
    stride_bytes: int | None = None
    unmeasured: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not self.tiles:
            raise ValueError("empty buffer")
        t0 = self.tiles[0]
        for t in self.tiles:
            if (t.dtype_bytes, t.rows, t.cols) != (t0.dtype_bytes, t0.rows, t0.cols):
                raise ValueError("a tiled buffer needs tiles of one element size and shape")
        if self.grid[0] * self.grid[1] != len(self.tiles):
            raise ValueError(f"grid {self.grid} does not hold {len(self.tiles)} tiles")

    @property
    def stride(self) -> int:
        return self.stride_bytes if self.stride_bytes is not None else self.tiles[0].sizeof

    @property
    def dtype_bytes(self) -> int:
        return self.tiles[0].dtype_bytes

    @property
    def rows(self) -> int:
        return self.grid[0] * self.tiles[0].rows

    @property
    def cols(self) -> int:
        return self.grid[1] * self.tiles[0].cols

    @property
    def swizzle_bytes(self) -> int | None:
        s = {t.swizzle_bytes for t in self.tiles}
        return s.pop() if len(s) == 1 else None

    @property
    def num_bytes(self) -> int:
        return self.stride * (len(self.tiles) - 1) + self.tiles[-1].num_bytes

    def describe(self) -> str:
        return f"{len(self.tiles)} x {self.tiles[0].describe()} as a {self.grid[0]}x{self.grid[1]} grid"

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        t0 = self.tiles[0]
        r, c = _bv(r), _bv(c)
        tr, tc = _udiv_const(r, t0.rows), _udiv_const(c, t0.cols)
        rr, cc = _urem_const(r, t0.rows), _urem_const(c, t0.cols)
        out = None
        for i in reversed(range(len(self.tiles))):
            a = self.tiles[i].byte_address(_bv(base) + i * self.stride, rr, cc)
            gi, gj = divmod(i, self.grid[1])
            out = a if out is None else z3.If(z3.And(tr == gi, tc == gj), a, out)
        return out

    def element_address(self, base: int, r: int, c: int) -> int:
        t0 = self.tiles[0]
        i = (r // t0.rows) * self.grid[1] + c // t0.cols
        return self.tiles[i].element_address(base + i * self.stride, r % t0.rows, c % t0.cols)


# ----------------------------------------------------------------------------------------------
# Consumers: TMA, wgmma / tcgen05 descriptors, ldmatrix
# ----------------------------------------------------------------------------------------------


class _ViewOfTile:
    """Shape and size of a consumer's view are those of the tile it reads."""

    tile: "SharedTileLayout"

    @property
    def rows(self) -> int:
        return self.tile.rows

    @property
    def cols(self) -> int:
        return self.tile.cols

    @property
    def dtype_bytes(self) -> int:
        return self.tile.dtype_bytes

    @property
    def swizzle_bytes(self) -> int | None:
        return self.tile.swizzle_bytes

    @property
    def num_bytes(self) -> int:
        return self.tile.num_bytes


@dataclass(frozen=True)
class TmaBoxLayout(_ViewOfTile):
    """Where a TMA copy with the tensor map TK builds for ``tile`` (``create_tensor_map<ST>``,
    tma.cuh) puts element (r, c) of the box.

    Swizzled ST: box ``{P, rows, cols/P}`` (P = swizzle_bytes/sizeof), swizzle mode from
    ST::swizzle_bytes; the box is written densely, innermost dimension first, so
    (r, c) -> ``((c/P)*rows + r)*P + c%P`` elements, then the hardware 16-byte-chunk XOR with
    address bits 7.. (``hw_swizzle``).  Measured on H200 (CONTRACTS.md): the XOR uses absolute
    shared address bits.  Unswizzled ST: box ``{cols, rows}``, SWIZZLE_NONE, row-major.
    """

    tile: SharedTileLayout
    unmeasured: bool = field(default=False, compare=False)

    @property
    def box_dims(self) -> tuple[int, ...]:
        if self.tile.swizzle_bytes is None:
            return (self.tile.cols, self.tile.rows)
        p = self.tile.panel_cols
        return (p, self.tile.rows, self.tile.cols // p, 1, 1)

    def describe(self) -> str:
        mode = "SWIZZLE_NONE" if self.swizzle_bytes is None else f"SWIZZLE_{self.swizzle_bytes}B"
        return f"TMA box {list(self.box_dims)} {mode} (from {self.tile.describe()})"

    def _dense(self, r: z3.BitVecRef, c: z3.BitVecRef) -> z3.BitVecRef:
        t = self.tile
        if t.swizzle_bytes is None:
            return (r * t.cols + c) * t.dtype_bytes
        p = t.panel_cols
        return ((_udiv_const(c, p) * t.rows + r) * p + _urem_const(c, p)) * t.dtype_bytes

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        a = _bv(base) + self._dense(_bv(r), _bv(c))
        return a if self.swizzle_bytes is None else hw_swizzle(a, self.swizzle_bytes)

    def element_address(self, base: int, r: int, c: int) -> int:
        t = self.tile
        if t.swizzle_bytes is None:
            return base + (r * t.cols + c) * t.dtype_bytes
        p = t.panel_cols
        a = base + (((c // p) * t.rows + r) * p + c % p) * t.dtype_bytes
        return hw_swizzle_int(a, t.swizzle_bytes)


#: TK's st_descriptor constants (descriptor.cuh), per swizzle mode:
#: (layout_type, LBO MN-major per 16 rows, SBO, K-major chunk advance (chunk%per_row)*32 +
#: (chunk/per_row)*(rows/16)*group).  Kept as the header writes them.  Keyed by a tile's
#: swizzle_bytes, None included: an unswizzled tile has no descriptor (a KeyError).
_TK_WGMMA_DESC: dict[int | None, tuple[int, int, int, int, int, int]] = {
    # swizzle: (layout_type, mn_lbo_per_16_rows, sbo, mn_chunk_advance, k_chunks_per_row, k_group)
    128: (1, 2048, 1024, 2048, 4, 2048),
    64: (2, 1024, 512, 1024, 2, 1024),
    32: (3, 512, 256, 512, 1, 512),
}


def _desc_field(x: z3.BitVecRef) -> z3.BitVecRef:
    """``matrix_descriptor_encode``: ``(x & 0x3FFFF) >> 4`` (14-bit field, 16-byte units)."""
    return z3.LShR(x & 0x3FFFF, 4)


@dataclass(frozen=True)
class WgmmaOperandView(_ViewOfTile):
    """The byte the Hopper wgmma unit reads for element (r, c) of shared tile ``tile`` when TK
    builds the descriptor (``st_descriptor<ST, MN_major>``) and walks K with
    ``chunk_descriptor(k)`` (include/ops/group/mma/warpgroup.cuh).

    Derivation (PTX ISA "matrix descriptor" + the canonical layouts, as CuTe writes them; T =
    swizzle_bytes, s = sizeof(elem), LBO/SBO/layout type as TK encodes them; base_offset = 0):

    * K-major (``MN_major=0``: A of mma_AB/ABt, B of ABt; tile = rows M|N x cols K).  One wgmma
      reads a 32-byte K slice ``j`` (``k = c / (32/s)``) from start ``base + adv(j)`` with
      ``adv(j) = (j % (T/32))*32 + (j / (T/32))*(rows/16)*16*T`` (TK's chunk_descriptor) and
      canonical layout ``((8,m),(32/s)) : ((T, SBO), 1)``: row r at ``(r/8)*SBO + (r%8)*T``,
      element ``c % (32/s)`` at ``+ (c % (32/s))*s``.  LBO is unused (the K slice fits in T).
    * MN-major (``MN_major=1``: B of mma_AB, A/B of AtB...; tile = rows K x cols M|N), 16-bit
      types only (TK's mma_AB static_asserts fp8 away; PTX: transpose only for 16-bit):
      canonical ``((T/s, m),(8, k)) : ((1, LBO), (T, SBO))`` i.e. column c at
      ``(c % (T/s))*s + (c / (T/s))*LBO``, row r at ``(r % 8)*T + (r / 8)*SBO``; K is walked in
      16-row slices with start advance ``j * 16*T`` (TK: 2048/1024/512).
    * Then the hardware swizzle (``hw_swizzle``) on the absolute address (CONTRACTS.md: measured
      on H200 with TK's descriptors; base_offset left 0).

    The start address goes through the descriptor's 14-bit, 16-byte-granular field, so a base
    that is not 16-byte aligned loses its low bits -- the proof sees that too.
    Unswizzled tiles and 4-byte (tf32) operands: TK's st_descriptor static_asserts swizzle and
    TK's wgmma wrappers have no tf32 path, so ``supported`` is False and proofs answer Unknown.
    """

    tile: SharedTileLayout
    mn_major: bool
    unmeasured: bool = field(default=False, compare=False)
    arch: str = "sm_90a"

    @property
    def supported(self) -> str | None:
        """None when the map is derived; otherwise why not."""
        t = self.tile
        if t.swizzle_bytes is None:
            return "TK's st_descriptor static_asserts a swizzled tile"
        if t.dtype_bytes == 4:
            return "TK has no tf32 wgmma path; 4-byte operand layouts are not derived"
        if self.mn_major and t.dtype_bytes != 2:
            return "MN-major (transposed) operands exist only for 16-bit types"
        if t.cols % t.panel_cols and not self.mn_major:
            return "tile width is not a whole number of swizzle panels"
        return None

    @property
    def descriptor_fields(self) -> dict[str, int]:
        """layout_type, LBO and SBO (bytes) as TK's st_descriptor constructor encodes them."""
        lt, mn_lbo16, sbo, _, _, _ = _TK_WGMMA_DESC[self.tile.swizzle_bytes]
        lbo = mn_lbo16 * self.tile.rows // 16 if self.mn_major else 16
        return {"layout_type": lt, "lbo": lbo, "sbo": sbo}

    def describe(self) -> str:
        f = self.descriptor_fields if self.swizzle_bytes else {}
        major = "MN-major" if self.mn_major else "K-major"
        return (
            f"{'tcgen05' if self.arch.startswith('sm_10') else 'wgmma'} {major} descriptor of "
            f"{self.tile.describe()} {f}"
        )

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        why = self.supported
        if why:
            raise NotImplementedError(why)
        t = self.tile
        s, T = t.dtype_bytes, t.swizzle_bytes
        assert T is not None  # `supported` rejects an unswizzled tile
        lt, mn_lbo16, sbo, mn_adv, per_row, group = _TK_WGMMA_DESC[T]
        r, c = _bv(r), _bv(c)
        if not self.mn_major:
            ke = 32 // s  # elements per 32-byte K slice
            j = _udiv_const(c, ke)
            adv = _urem_const(j, per_row) * 32 + _udiv_const(j, per_row) * ((t.rows // 16) * group)
            inner = _udiv_const(r, 8) * sbo + _urem_const(r, 8) * T + _urem_const(c, ke) * s
        else:
            lbo = mn_lbo16 * t.rows // 16
            j = _udiv_const(r, 16)  # 16 K rows per 16-bit wgmma
            adv = j * mn_adv
            rk = _urem_const(r, 16)
            p = T // s
            inner = _urem_const(c, p) * s + _udiv_const(c, p) * lbo + _urem_const(rk, 8) * T + _udiv_const(rk, 8) * sbo
        # base_desc + matrix_descriptor_encode(adv): 14-bit start field in 16-byte units.
        start = ((_desc_field(_bv(base)) + _desc_field(adv)) & 0x3FFF) << 4
        return hw_swizzle(start + inner, T)

    def element_address(self, base: int, r: int, c: int) -> int:
        v = z3.simplify(self.byte_address(base, r, c))
        return int(v.as_long())


def tcgen05_operand_view(tile: SharedTileLayout, mn_major: bool) -> WgmmaOperandView:
    """Blackwell tcgen05 smem operand: NOT MEASURED here -- do not rely on it for findings.

    What the headers say: TK builds it with the same ``st_descriptor`` (same LBO/SBO/chunk
    advance), sets bit 46, and writes the swizzle code ``mode << 62`` into what is a 3-bit field
    (61..63) on tcgen05, giving 2/4/6 = 128B/64B/32B.  We therefore reuse the wgmma derivation and
    mark the view ``unmeasured``: proofs then report a difference as Unknown, never as a
    counterexample."""
    return WgmmaOperandView(tile, mn_major, unmeasured=True, arch="sm_100a")


def ldmatrix_row_elems(dtype_bytes: int) -> int:
    """Elements in one ldmatrix row (16 bytes): each lane passes the address of one such row."""
    return 16 // dtype_bytes


#: TK's register <-> shared tile moves (include/ops/group/memory/tile/shared_to_register.cuh):
#: 16-bit and 8-bit row layouts: ldmatrix.x4 (ldsm4 / ldsm4t) with one ``src.idx(row, col)`` per
#: lane, col a multiple of 8 (16-bit) or 16 (8-bit); each lane's address must start 16 contiguous
#: bytes holding (row, col .. col+16/s-1).  Consistent by construction as long as the tile's own
#: idx keeps each aligned 16-byte chunk intact -- which ``prove_ldmatrix_rows`` proves.
#: 32-bit row layout: hand-written ``addr ^ (blit ^ swizzle)`` with ``blit = 4`` for lanes 2,3 of
#: each quad (bank-conflict trick, swapped back in registers); column layout: scalar ``lds`` at
#: ``src.idx``.  Consistent by construction (they use the same idx arithmetic).
LDMATRIX_NOTE = "TK load/store between rt and st address shared memory through the tile's own idx"


#: Alignment a consumer needs of a shared-memory base (bytes).  Keys name consumers.
ALIGNMENT_REQUIREMENTS: dict[str, tuple[int, str]] = {
    "tma_tensor": (
        128,
        "cp.async.bulk.tensor shared address must be 128-byte aligned "
        "(measured: 16 bytes off a 128-byte boundary faults)",
    ),
    "bulk_copy": (16, "non-tensor cp.async.bulk needs 16-byte aligned shared addresses"),
    "wgmma_descriptor": (
        16,
        "descriptor start address is stored in 16-byte units; TK tiles are "
        "128-byte aligned by KITTENS_DEFAULT_ALIGN (measured correct at "
        "128-aligned, non-1024-aligned bases)",
    ),
    "ldmatrix": (16, "each ldmatrix row address must be 16-byte aligned"),
}


def relative_xor_requirement(swizzle_bytes: int) -> tuple[str, int, str]:
    """A consumer that XORs a BUFFER-RELATIVE offset agrees with the absolute-address swizzle of
    TMA / wgmma / TK idx only if the base is aligned to the pattern's repeat."""
    return (
        "relative_xor",
        swizzle_bytes * 8,
        f"buffer-relative {swizzle_bytes}B swizzle XOR needs the base aligned to swizzle_bytes*8 = {swizzle_bytes * 8}",
    )


@dataclass(frozen=True)
class HandwrittenLayout(_ViewOfTile):
    """A kernel's own address math, ``addr_fn``, a z3 function of one 32-bit address.

    ``relative=False``: ``addr_fn(base + pre(r, c))`` (the XOR sees absolute address bits).
    ``relative=True``:  ``base + addr_fn(pre(r, c))`` (the XOR sees the buffer offset only).
    ``pre`` defaults to the tile's column-panel offset before the swizzle.
    """

    tile: SharedTileLayout
    addr_fn: Callable[[z3.BitVecRef], z3.BitVecRef]
    relative: bool
    pre: Callable[[z3.BitVecRef, z3.BitVecRef], z3.BitVecRef] | None = None
    text: str = "hand-written address"
    unmeasured: bool = field(default=False, compare=False)

    @property
    def swizzle_bytes(self) -> int | None:
        return None  # the kernel's own math, not a swizzle mode

    def describe(self) -> str:
        return f"{self.text} ({'buffer-relative' if self.relative else 'absolute'})"

    def byte_address(self, base: Bits, r: Bits, c: Bits) -> z3.BitVecRef:
        off = (self.pre or self.tile.linear_offset)(_bv(r), _bv(c))
        if self.relative:
            return _bv(base) + self.addr_fn(off)
        return self.addr_fn(_bv(base) + off)

    def element_address(self, base: int, r: int, c: int) -> int:
        return int(z3.simplify(self.byte_address(base, r, c)).as_long())
