"""TK305: a TMA load fills stage s of a ring but completes on another stage's barrier."""

from tkcheck import solver
from tkcheck.checks import phases
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related


def _moving(op: ir.Op, index, names=None) -> list:
    names = names if names is not None else {f"k{lid}" for lid in op.loops}
    return [ix for ix in index if any(v.kind == E.LOOP and v.name in names for v in ix.free_vars())]


def _stage(op: ir.Op) -> E.Expr | None:
    """The index of the buffer that moves with the loop (the stage), when there is one. With
    a loop of sub-tile loads (`B_s[s][p]`), the dims that move with the loops the barrier's
    index moves with."""
    if op.buffer is None or not op.loops:
        return None
    moving = _moving(op, op.buffer.index)
    if len(moving) > 1 and op.barrier is not None:
        names = {v.name for ix in op.barrier.index for v in ix.free_vars() if v.kind == E.LOOP}
        moving = _moving(op, op.buffer.index, names)
        if len(moving) > 1 or any(v.kind == E.LOOP and v.name not in names for ix in moving for v in ix.free_vars()):
            return None
    return moving[0] if len(moving) == 1 else None


def _bar_stage(op: ir.Op) -> E.Expr | None:
    """The barrier's index that moves with the loop: `full[s]`, or `bar[warp][s]` of a
    per-warp barrier array (its other dims are fixed per thread)."""
    if len(op.barrier.index) == 1:
        return op.barrier.index[0]
    moving = _moving(op, op.barrier.index)
    return moving[0] if len(moving) == 1 else None


def check(an):
    m = an.model
    out = []
    loads = [
        o
        for o in m.ops_of(ir.TMA_LOAD)
        if o.barrier is not None and o.barrier.index and o.buffer is not None and _bar_stage(o) is not None
    ]
    groups: dict[tuple, list[ir.Op]] = {}
    for o in loads:
        groups.setdefault((o.barrier.name, o.loops), []).append(o)
    for (bname, lps), ops in sorted(groups.items(), key=lambda kv: kv[1][0].order):
        matched, suspects = [], []
        for o in ops:
            st, bi = _stage(o), _bar_stage(o)
            if st is None or st.is_opaque() or bi.is_opaque():
                continue
            if solver.always(E.binop("==", st, bi), an.solver_timeout_ms) is True:
                matched.append(o)
            else:
                suspects.append((o, st, bi))
        # evidence of the intended stage <-> barrier pairing: a load of the same loop that
        # completes on its own stage's barrier, or the expect the load is issued with
        # (same loop, same threads) naming the barrier of the load's stage
        expects = [
            e
            for e in m.ops
            if e.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD)
            and e.barrier is not None
            and e.barrier.name == bname
            and e.loops
            and e.loops == lps[: len(e.loops)]
            and e.order < max(o.order for o in ops)
            and all(e is not o for o in ops)
        ]
        for o, st, bi in list(suspects):
            for e in expects:
                eb = _bar_stage(e) if e.barrier.index else None
                if eb is None or eb.is_opaque() or an.threads.issuers(e) != an.threads.issuers(o):
                    continue
                if e.kind == ir.TMA_LOAD and (
                    _stage(e) is None or solver.always(E.binop("==", _stage(e), eb), an.solver_timeout_ms) is not True
                ):
                    continue  # a load as evidence must itself pair its stage with its barrier
                if solver.always(E.binop("==", st, eb), an.solver_timeout_ms) is True:
                    matched.append(e)
                    break
        if not matched:
            continue
        for o, st, bi in suspects:
            ks = [m.loops[lid].counter for lid in o.loops]
            w = phases._smallest_counterexample(E.binop("!=", st, bi), ks[-1] if ks else None, [], an.solver_timeout_ms)
            if w is None:
                continue
            env = dict(w)
            k = {f"k{lid}": env.get(f"k{lid}") for lid in o.loops}
            sv, bv = st.eval(env), bi.eval(env)
            if sv is None or bv is None or sv == bv:
                continue
            it = next((v for v in k.values() if v is not None), None)
            out.append(
                finding(
                    "TK305",
                    f"TMA load into '{o.buffer.shown()}' completes on '{o.barrier.shown()}': at iteration {it} it fills stage {sv} "
                    f"but signals the barrier of stage {bv}",
                    o.location,
                    related=[
                        related(
                            x,
                            f"'{x.buffer.shown()}' completes on its own stage's barrier '{x.barrier.shown()}'"
                            if x.kind == ir.TMA_LOAD
                            else f"the expect it is issued with names '{x.barrier.shown()}'",
                        )
                        for x in matched[:3]
                    ],
                    witness={"iteration": it, "buffer_stage": sv, "barrier_stage": bv, "barrier": bname},
                    help=f"complete every load of stage s on {bname}[s]: the consumer that waits {bname}[{sv}] "
                    f"otherwise reads the tile before its bytes land, and stage {bv} completes on bytes of another stage",
                )
            )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
constexpr int STAGES = 2;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile a[STAGES], b[STAGES];
    __shared__ semaphore full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 4, 0); }
    }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) {
            for (int k = 0; k < n; k++) {
                int s = k % STAGES;
                wait(empty[s], ((k / STAGES) % 2) ^ 1);
                tma::expect(full[s], a[s], b[s]);
                tma::load_async(a[s], A, {0, 0, 0, k}, full[s]);
                tma::load_async(b[s], A, {0, 0, 1, k}, full[(s + 1) % STAGES]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            int s = k % STAGES;
            wait(full[s], (k / STAGES) % 2);
            if (laneid() == 0) arrive(empty[s]);
        }
    }
}
"""
)

_GOOD = _BAD.replace(
    "tma::load_async(b[s], A, {0, 0, 1, k}, full[(s + 1) % STAGES]);",
    "tma::load_async(b[s], A, {0, 0, 1, k}, full[s]);",
)

RULE = Rule(
    code="TK305",
    name="load-completes-on-wrong-barrier",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes",),
    explains={
        "stripes": Explains(5, "a load completes on another stage's barrier: stage reuse out of order"),
        "hang": Explains(3, "a stage's barrier gets too few bytes"),
    },
    confirm=Confirm(widen=("delay-load",)),
    summary="A TMA load into ring stage s completes on the barrier of another stage",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For the TMA loads that complete on a ring of barriers, compares the stage index
of the destination buffer with the index of the completion barrier. When the
other loads of the same loop pair stage s with barrier s (proved for every
iteration), a load whose buffer stage differs from its barrier's stage for
some iteration is reported with that iteration.

## Why is this bad?
The consumer of stage s waits on barrier s; bytes for stage s that complete
on barrier s+1 are not covered by that wait, so the consumer can read the
tile before it lands (stripes), while stage s+1's phase is completed by bytes
that belong to stage s.

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
