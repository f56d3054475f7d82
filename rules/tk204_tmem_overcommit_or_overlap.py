"""TK204: TMEM tiles past the allocated columns, overlapping live tiles, and the
tcgen05.alloc / dealloc lifecycle."""

from tkcheck.checks import tmem as T
from tkcheck.checks.threads import describe
from tkcheck.findings import Related
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def _el(tile, i):
    return f"{tile.name}[{i}]" if tile.dims and i is not None else tile.name


def check(an):
    out = []
    n = an.threads.n
    for o in T.facts(an, "overcommit"):
        a = o.allocator
        out.append(
            finding(
                "TK204",
                f"`{_el(o.tile, o.index)}` ({o.tile.type.spelling}) occupies TMEM columns {o.cols[0]}..{o.cols[1] - 1}, "
                f"past the {o.budget} columns `{a.name if a else '?'}` allocated"
                + (f" (tensor_allocator<{a.nblocks_per_sm}, {a.ncta}>: 512 / {a.nblocks_per_sm} columns)" if a else ""),
                o.tile.location,
                related=[Related(a.location, f"`{a.name}` allocates {o.budget} columns here")] if a else [],
                witness={"tile": _el(o.tile, o.index), "columns": list(o.cols), "budget": o.budget},
                help="move the tile inside the allocation (column offset + columns <= allocator cols), or shrink it",
            )
        )
    for o in T.facts(an, "overlap"):
        out.append(
            finding(
                "TK204",
                f"`{o.tile.name}[{o.i}]` (columns {o.a[0]}..{o.a[1] - 1}) and `{o.tile.name}[{o.j}]` (columns "
                f"{o.b[0]}..{o.b[1] - 1}) overlap, but the kernel uses them as separate slots "
                f"(`{o.use.api}` picks the slot at run time): writing one slot overwrites the other while it is live",
                o.tile.location,
                related=[related(o.use, f"`{o.tile.name}` indexed by a runtime slot here")],
                witness={"tile": o.tile.name, "slots": [o.i, o.j], "columns": [list(o.a), list(o.b)]},
                help="place the slots at disjoint column ranges (e.g. slot i at i * columns-per-slot)",
            )
        )
    for o in T.facts(an, "clobber"):
        out.append(
            finding(
                "TK204",
                f"`{o.acc.name}` (columns {o.acc_cols[0]}..{o.acc_cols[1] - 1}) and `{o.other.name}` (columns "
                f"{o.other_cols[0]}..{o.other_cols[1] - 1}) overlap in TMEM: `{o.acc.name}` accumulates across the "
                f"iterations of the loop (`{o.accumulate.api}` in iterations {o.iterations[0]} and {o.iterations[1]}), "
                f"and `{o.write.api}` writes `{o.other.name}` in every iteration in between, destroying the partial sum",
                o.write.location,
                related=[
                    related(o.accumulate, f"`{o.acc.name}` accumulates here"),
                    Related(o.acc.location, f"`{o.acc.name}` placed here"),
                    Related(o.other.location, f"`{o.other.name}` placed here"),
                ],
                witness={
                    "accumulator": o.acc.name,
                    "other": o.other.name,
                    "columns": [list(o.acc_cols), list(o.other_cols)],
                    "iterations": list(o.iterations),
                    "assumption": f"the loop runs at least {o.iterations[1] + 1} iterations",
                },
                help="place the accumulator at columns no other live tile uses (tiles may alias only where the "
                "data they hold is dead, like P written over the S it was computed from)",
            )
        )
    for o in T.facts(an, "lifecycle"):
        name = o.op.tmem.allocator if o.op.tmem is not None else None
        if o.kind == "no_dealloc":
            early = "@" in (name or "")  # TK's 2025 allocation functions (no allocator object)
            what = f"`{o.op.api}`" if early else f"`{name}.provision()`"
            free = "a tcgen05.dealloc (`cleanup()` in that TK version)" if early else f"`{name}.deprovision()`"
            out.append(
                finding(
                    "TK204",
                    f"{what} allocates TMEM (tcgen05.alloc) but the kernel never calls {free}: the columns stay "
                    "allocated after the CTA exits",
                    o.op.location,
                    help="call `deprovision()` from the allocating warp after the last TMEM use (after a block or, "
                    "for a CTA pair, a cluster barrier)",
                )
            )
        elif o.kind == "early_exit":
            out.append(
                finding(
                    "TK204",
                    f"{describe(o.threads, n)} may return after `{name}.provision()` and before "
                    f"`{name}.deprovision()`: the allocating warp leaves with the TMEM columns still allocated",
                    o.other.location,
                    related=[related(o.op, "TMEM allocated here")],
                    witness={"threads": describe(o.threads, n)},
                    help="do not return from the allocating warp before deallocating; branch around the work instead",
                )
            )
        elif o.kind == "over_budget":
            out.append(
                finding(
                    "TK204",
                    f"`{name}.provision()` asks for {o.op.tmem.cols if o.op.tmem else None} TMEM columns while "
                    f"`{o.other.tmem.allocator if o.other.tmem else None}` still holds its columns: {o.total} > 512 columns per CTA",
                    o.op.location,
                    related=[related(o.other, "the first allocation, not freed before this one")],
                    witness={"total_columns": o.total},
                    help="use one allocator and carve tiles out of it with `allocate<TT>(col)`",
                )
            )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    // two accumulator slots: the second starts at column 128 and overlaps the first
    tt<float, 128, 256> acc[2] = {tm.allocate<tt<float, 128, 256>>(0), tm.allocate<tt<float, 128, 256>>(128)};
    rt_fl<32, 256> r;
    for (int t = 0; t < n; t++) {
        warpgroup::load_async(r, acc[t % 2]);
        tensor_load_wait();
    }
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    tt<float, 128, 256> acc[2] = {tm.allocate<tt<float, 128, 256>>(0), tm.allocate<tt<float, 128, 256>>(256)};
    rt_fl<32, 256> r;
    for (int t = 0; t < n; t++) {
        warpgroup::load_async(r, acc[t % 2]);
        tensor_load_wait();
    }
}
"""
)

RULE = Rule(
    code="TK204",
    name="tmem-overcommit-or-overlap",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("wrong", "hang"),
    summary="TMEM tiles past the allocated columns or overlapping while live; tcgen05.alloc without dealloc",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Models TK's `tensor_allocator<nblocks_per_sm, ncta, managed>` (alias
`tm_allocator`): it owns `((512 / nblocks_per_sm) / 32) * 32` columns of the CTA's
TMEM, and `allocate<tt<T, R, C>>(col)` hands out the tile at column `col`, spanning
`C * sizeof(T) / 4` 32-bit columns (TK packs two 16-bit values per column). Reports:

* **overcommit**: a tile whose columns end past the allocator's columns (TK traps
  on this only in debug builds);
* **overlap**: two elements of one array of tiles whose lanes x columns intersect,
  when the kernel selects the element by a runtime index (a ring of accumulator
  slots: one slot is written by the next MMA while the previous one is read, so
  the slots are live at the same time by construction). Tiles that share a
  region under different names (P written over the S it was computed from) are
  legal when their live ranges do not overlap and are **not** reported: tkcheck
  does not compute TMEM live ranges across roles;
* **clobber**: two tiles of one allocation that intersect, one of them an
  accumulator carried across the iterations of a loop (an accumulating
  `mma*` into it in two iterations) and the other written in every iteration of
  that loop (an MMA into it or `tcgen05.st`): the write lands between two
  accumulations and destroys the partial sum (O placed inside S);
* **lifecycle** (explicit `provision()` / `deprovision()`, i.e. `managed = false`):
  `provision()` with no `deprovision()` in the kernel; a `return` of the
  allocating warp between them; two allocators of one CTA holding more than 512
  columns at once. Managed allocators deallocate in their destructor and are
  not checked.

Blackwell-only (sm_100a): the budget (128 lanes x 512 columns per CTA) and the
`tcgen05.alloc` / `tcgen05.dealloc` requirements are those of the PTX ISA; the
column arithmetic is TK's `tensor.cuh` / `tt.cuh`. Not measured on a Blackwell GPU
in this project. Only constant offsets are judged.

## Why is this bad?
Overlapping accumulators make one MMA overwrite another tile's partial sums (wrong
results, often striped); a tile past the allocation addresses columns another CTA
of the SM may own; memory that is not deallocated before the CTA exits stays
allocated, and a later `tcgen05.alloc` on that SM blocks (hang).

## Example
```cuda
{_BAD}
```

Use instead:
```cuda
{_GOOD}
```
""",
)
