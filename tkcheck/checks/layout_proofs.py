"""Decision procedures over the layouts of ``tkcheck.knowledge.layouts``.

Each proof asks z3 for an element (r, c) and an aligned base at which two element->byte maps
disagree.  unsat = the maps agree for EVERY element and EVERY admissible base (bit-vector
quantification by negation); sat = a concrete counterexample, shrunk to a small (row, col, base);
unknown / timeout = ``Unknown`` -- never a finding.

Results:
    Equivalent(what, seconds, assumptions)
    Counterexample(row, col, offset_a, offset_b, base, swizzle_a, swizzle_b, ...)
    Unknown(reason, seconds)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Union

import z3

from tkcheck.solver import checked, limited, timed_check
from tkcheck.solver import current as solver_context
from tkcheck.knowledge.layouts import (
    ADDR_BITS,
    ALIGNMENT_REQUIREMENTS,
    SMEM_LIMIT_BYTES,
    HandwrittenLayout,
    LayoutLike,
    SharedTileLayout,
    TiledBuffer,
    ldmatrix_row_elems,
)

#: Accepted for compatibility and ignored: every query runs under the solver's deterministic budget
#: (tkcheck.solver.current(): the check's own), with its wall-clock safety net.
DEFAULT_TIMEOUT_MS = None


@dataclass(frozen=True)
class Equivalent:
    what: str
    seconds: float
    assumptions: tuple[str, ...] = ()
    ok = True
    proved = True

    def __str__(self) -> str:
        extra = f" (assuming {'; '.join(self.assumptions)})" if self.assumptions else ""
        return f"equivalent: {self.what}{extra} [{self.seconds * 1000:.1f} ms]"


@dataclass(frozen=True)
class Counterexample:
    """Element (row, col) lands at different bytes.  Offsets are relative to ``base`` (the
    absolute shared address of the tile base in the witness); ``offset_b`` is None when the
    element is outside the second layout's memory altogether."""

    row: int
    col: int
    offset_a: int
    offset_b: int | None
    base: int
    swizzle_a: int | None
    swizzle_b: int | None
    what_a: str = ""
    what_b: str = ""
    seconds: float = 0.0
    minimal: bool = True
    ok = False
    proved = True

    @property
    def address_a(self) -> int:
        return self.base + self.offset_a

    @property
    def address_b(self) -> int | None:
        return None if self.offset_b is None else self.base + self.offset_b

    def message(self) -> str:
        def sw(x: int | None) -> str:
            return "none" if x is None else f"{x}B"

        where_b = (
            f"outside {self.what_b}" if self.offset_b is None else f"at byte {self.offset_b:+d} under {self.what_b}"
        )
        return (
            f"element ({self.row}, {self.col}) is at byte {self.offset_a:+d} under {self.what_a} "
            f"but {where_b} (swizzle {sw(self.swizzle_a)} vs {sw(self.swizzle_b)}; "
            f"tile base {self.base:#x})"
        )

    def __str__(self) -> str:
        return f"counterexample: {self.message()} [{self.seconds * 1000:.1f} ms]"


@dataclass(frozen=True)
class Unknown:
    reason: str
    seconds: float = 0.0
    ok = False
    proved = False

    def __str__(self) -> str:
        return f"unknown: {self.reason} [{self.seconds * 1000:.1f} ms]"


ProofResult = Union[Equivalent, Counterexample, Unknown]
BaseConstraint = Union[None, z3.BoolRef, Callable[[z3.BitVecRef], z3.BoolRef]]


# ----------------------------------------------------------------------------------------------
# core
# ----------------------------------------------------------------------------------------------


def _is_pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def _domain(
    base: z3.BitVecRef, base_alignment: int, footprint: int, base_constraint: BaseConstraint
) -> list[z3.BoolRef]:
    if not _is_pow2(base_alignment):
        raise ValueError(f"base_alignment must be a power of two, got {base_alignment}")
    cs = [base & (base_alignment - 1) == 0, z3.ULE(base, max(SMEM_LIMIT_BYTES - footprint, 0))]
    if base_constraint is not None:
        cs.append(base_constraint(base) if callable(base_constraint) else base_constraint)
    return cs


def _shrink(s: z3.Solver, var: z3.BitVecRef, current: int) -> tuple[int, bool]:
    """Smallest value of ``var`` (unsigned) still satisfiable, by bisection; pins it in ``s``.
    At most ADDR_BITS steps, each within the solver budget (no clock: the same answer under any load)."""
    lo, hi, exact = 0, current, True
    while lo < hi:
        mid = (lo + hi) // 2
        res = timed_check(s, z3.ULE(var, mid))  # (shrinking a proved counterexample: unknown just stops it)
        if res == z3.sat:
            hi = min(mid, s.model().eval(var, model_completion=True).as_long())
        elif res == z3.unsat:
            lo = mid + 1
        else:
            exact = False
            break
    s.add(var == hi)
    return hi, exact


def _prove_maps(
    addr_a: Callable,
    addr_b: Callable,
    rows: int,
    cols: int,
    *,
    base_alignment: int,
    footprint: int,
    base_constraint: BaseConstraint,
    timeout_ms: int | None,
    what_a: str,
    what_b: str,
    swizzle_a,
    swizzle_b,
    extra_domain: Callable[[z3.BitVecRef, z3.BitVecRef], list] | None = None,
    minimise: bool = True,
) -> ProofResult:
    t0 = time.monotonic()
    base = z3.BitVec("base", ADDR_BITS)
    r = z3.BitVec("row", ADDR_BITS)
    c = z3.BitVec("col", ADDR_BITS)
    try:
        a = addr_a(base, r, c)
        b = addr_b(base, r, c)
    except NotImplementedError as e:
        return Unknown(f"layout not modelled: {e}", time.monotonic() - t0)
    s = limited(z3.Solver())
    s.add(*_domain(base, base_alignment, footprint, base_constraint))
    s.add(z3.ULT(r, rows), z3.ULT(c, cols))
    if extra_domain:
        s.add(*extra_domain(r, c))
    s.add(a != b)
    res = checked(s)
    if res == z3.unsat:
        return Equivalent(
            f"{what_a} == {what_b} for all {rows}x{cols} elements, every {base_alignment}-byte-aligned base",
            time.monotonic() - t0,
        )
    if res != z3.sat:
        return Unknown(
            f"solver: {s.reason_unknown() or 'unknown'} (budget {solver_context().budget} steps)", time.monotonic() - t0
        )
    m = s.model()
    rv = m.eval(r, model_completion=True).as_long()
    cv = m.eval(c, model_completion=True).as_long()
    bv = m.eval(base, model_completion=True).as_long()
    exact = True
    if minimise:
        rv, e1 = _shrink(s, r, rv)
        cv, e2 = _shrink(s, c, cv)
        bv, e3 = _shrink(s, base, bv)
        exact = e1 and e2 and e3
        if checked(s) == z3.sat:
            m = s.model()
    ev = lambda t: m.eval(t, model_completion=True).as_long()  # noqa: E731
    rv, cv, bv = ev(r), ev(c), ev(base)
    av = ev(a)
    bval = ev(b)
    return Counterexample(
        rv, cv, av - bv, bval - bv, bv, swizzle_a, swizzle_b, what_a, what_b, time.monotonic() - t0, exact
    )


def _unmeasured_guard(res: ProofResult, *layouts) -> ProofResult:
    um = [l.describe() for l in layouts if getattr(l, "unmeasured", False)]
    if not um:
        return res
    if isinstance(res, Counterexample):
        return Unknown(
            "depends on unmeasured hardware behaviour of " + ", ".join(um) + f"; the model predicts: {res.message()}",
            res.seconds,
        )
    if isinstance(res, Equivalent):
        return Equivalent(
            res.what, res.seconds, res.assumptions + tuple(f"the header-derived model of {u}" for u in um)
        )
    return res


# ----------------------------------------------------------------------------------------------
# public procedures
# ----------------------------------------------------------------------------------------------


def prove_same_map(
    layout_a: LayoutLike,
    layout_b: LayoutLike,
    base_alignment: int = 128,
    base_constraint: BaseConstraint = None,
    *,
    timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """Do ``layout_a`` and ``layout_b`` put every element at the same byte, for every base aligned
    to ``base_alignment`` (and satisfying ``base_constraint``, a z3 Bool or a function of the base
    bit-vector)?  Compared over the common (rows x cols) domain."""
    rows, cols = min(layout_a.rows, layout_b.rows), min(layout_a.cols, layout_b.cols)
    res = _prove_maps(
        layout_a.byte_address,
        layout_b.byte_address,
        rows,
        cols,
        base_alignment=base_alignment,
        footprint=max(layout_a.num_bytes, layout_b.num_bytes),
        base_constraint=base_constraint,
        timeout_ms=timeout_ms,
        what_a=layout_a.describe(),
        what_b=layout_b.describe(),
        swizzle_a=layout_a.swizzle_bytes,
        swizzle_b=layout_b.swizzle_bytes,
    )
    return _unmeasured_guard(res, layout_a, layout_b)


def prove_reinterpret(
    buffer_tiles: list[SharedTileLayout],
    view: LayoutLike,
    base_alignment: int = 128,
    base_constraint: BaseConstraint = None,
    *,
    grid: tuple[int, int] | None = None,
    stride_bytes: int | None = None,
    timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """``reinterpret_cast<View&>(buffer[0])`` where ``buffer_tiles`` lie back to back (tile i at
    ``i * sizeof(tile)`` unless ``stride_bytes``) and are read as one logical matrix arranged as
    ``grid`` (rows of tiles, cols of tiles; default: side by side when the view is wider, stacked
    when it is taller -- TK's GEMM idiom is side by side).  Equivalent iff every element of the
    view is the byte the buffer's own tile types put that logical element at."""
    n = len(buffer_tiles)
    t0 = buffer_tiles[0]
    if grid is None:
        grid = (n, 1) if (view.rows > t0.rows and view.cols <= t0.cols) else (1, n)
    buf = TiledBuffer(tuple(buffer_tiles), grid, stride_bytes)
    if view.rows > buf.rows or view.cols > buf.cols:
        # The view has elements the buffer does not hold: report the first one outside.
        rr = buf.rows if view.rows > buf.rows else 0
        cc = 0 if view.rows > buf.rows else buf.cols
        return Counterexample(
            rr,
            cc,
            view.element_address(0, rr, cc),
            None,
            0,
            view.swizzle_bytes,
            buf.swizzle_bytes,
            view.describe(),
            buf.describe(),
            0.0,
            True,
        )
    return prove_same_map(view, buf, base_alignment, base_constraint, timeout_ms=timeout_ms)


def prove_handwritten(
    addr_fn: Callable[[z3.BitVecRef], z3.BitVecRef],
    tile_layout: SharedTileLayout,
    base_alignment: int = 128,
    relative: bool = False,
    base_constraint: BaseConstraint = None,
    *,
    pre: Callable | None = None,
    text: str = "hand-written address",
    timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """Kernel address math ``addr_fn`` (a z3 function of one 32-bit address) against the tile's
    layout.  ``relative=False``: applied to ``base + pre(r, c)``; ``relative=True``: the result is
    added to ``base`` after applying it to ``pre(r, c)``.  ``pre`` defaults to the tile's
    column-panel offset before swizzling."""
    hw = HandwrittenLayout(tile_layout, addr_fn, relative, pre, text)
    return prove_same_map(tile_layout, hw, base_alignment, base_constraint, timeout_ms=timeout_ms)


def prove_ldmatrix_rows(
    tile: LayoutLike,
    base_alignment: int = 128,
    base_constraint: BaseConstraint = None,
    *,
    timeout_ms: int | None = DEFAULT_TIMEOUT_MS,
) -> ProofResult:
    """ldmatrix reads 16 contiguous bytes from each lane's ``idx(row, col)`` (col a multiple of
    16/sizeof).  Proves, for every such row segment, that element col+j sits at
    ``idx(row, col) + j*sizeof`` and that the segment start is 16-byte aligned -- i.e. that TK's
    ``load(rt, st)`` / ``store(st, rt)`` see the tile's own layout."""
    e = ldmatrix_row_elems(tile.dtype_bytes)
    s = tile.dtype_bytes

    def seg(base, r, c):  # the byte ldmatrix reads for (r, c): segment start + position
        c0 = c & ~(e - 1)
        return tile.byte_address(base, r, c0) + (c - c0) * s

    def own(base, r, c):
        return tile.byte_address(base, r, c)

    res = _prove_maps(
        own,
        seg,
        tile.rows,
        tile.cols,
        base_alignment=base_alignment,
        footprint=tile.num_bytes,
        base_constraint=base_constraint,
        timeout_ms=timeout_ms,
        what_a=tile.describe(),
        what_b=f"ldmatrix 16-byte rows of {tile.describe()}",
        swizzle_a=tile.swizzle_bytes,
        swizzle_b=tile.swizzle_bytes,
    )
    if not isinstance(res, Equivalent):
        return res
    t0 = time.monotonic()
    res2 = _prove_maps(
        lambda b, r, c: tile.byte_address(b, r, c) & 15,
        lambda b, r, c: z3.BitVecVal(0, ADDR_BITS),
        tile.rows,
        tile.cols,
        base_alignment=base_alignment,
        footprint=tile.num_bytes,
        base_constraint=base_constraint,
        timeout_ms=timeout_ms,
        what_a="ldmatrix row address mod 16",
        what_b="0",
        swizzle_a=tile.swizzle_bytes,
        swizzle_b=None,
        extra_domain=lambda r, c: [c & (e - 1) == 0],
    )
    if isinstance(res2, Equivalent):
        return Equivalent(
            f"ldmatrix rows of {tile.describe()} are contiguous and 16-byte aligned "
            f"for every {base_alignment}-aligned base",
            res.seconds + time.monotonic() - t0,
        )
    return res2


# ----------------------------------------------------------------------------------------------
# alignment
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Misaligned:
    consumer: str
    required: int
    guaranteed: int
    witness_base: int
    why: str = ""

    def message(self) -> str:
        return (
            f"{self.consumer} needs a {self.required}-byte-aligned shared address, but the base "
            f"is only known to be {self.guaranteed}-byte aligned (e.g. {self.witness_base:#x})"
            + (f": {self.why}" if self.why else "")
        )


@dataclass(frozen=True)
class AlignmentReport:
    guaranteed: int
    violations: tuple[Misaligned, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.violations


Requirement = Union[str, tuple[str, int], tuple[str, int, str]]


def check_alignment(
    base_alignment: int, consumer_requirements: Iterable[Requirement], base_offset: int = 0
) -> AlignmentReport:
    """Bases are ``k * base_alignment + base_offset`` (``base_offset=0``: an allocation aligned to
    ``base_alignment``; a non-zero offset models e.g. ``&buf + 16``).  Each requirement is a key of
    ``ALIGNMENT_REQUIREMENTS`` or ``(consumer, bytes[, why])``; see also
    ``relative_xor_requirement(swizzle_bytes)``.  A violation carries the smallest admissible base
    that breaks it."""
    if not _is_pow2(base_alignment):
        raise ValueError(f"base_alignment must be a power of two, got {base_alignment}")
    guaranteed = base_alignment
    if base_offset:
        guaranteed = min(base_alignment, base_offset & -base_offset)
    out = []
    for req in consumer_requirements:
        if isinstance(req, str):
            need, why = ALIGNMENT_REQUIREMENTS[req]
            name = req
        else:
            name, need = req[0], req[1]
            why = req[2] if len(req) > 2 else ""
        if not _is_pow2(need):
            raise ValueError(f"alignment requirement must be a power of two, got {need}")
        if guaranteed % need == 0:
            continue
        # smallest admissible base not divisible by `need`
        k = 0 if base_offset % need else 1
        out.append(Misaligned(name, need, guaranteed, k * base_alignment + base_offset, why))
    return AlignmentReport(guaranteed, tuple(out))
