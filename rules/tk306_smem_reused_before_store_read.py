"""TK306: a shared buffer is overwritten while a tma::store_async may still be reading it."""
from tkcheck.checks import solver
from tkcheck.checks.threads import describe
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related

WRITES = (ir.SMEM_ACCESS, ir.TMA_LOAD)


def _writes(o: ir.Op) -> bool:
    if o.kind == ir.TMA_LOAD:
        return True
    return o.kind == ir.SMEM_ACCESS and o.detail.get("access") == "write"


def _same_element(a: ir.Ref, b: ir.Ref, threads_a, threads_b) -> bool:
    """Proved: some thread of b writes the element some thread of a reads."""
    if a.name != b.name or len(a.index) != len(b.index):
        return False
    if a.index == b.index and not any(ix.depends_on(E.THREAD) or ix.is_opaque() for ix in a.index):
        return all(not ix.depends_on(E.LOOP) for ix in a.index) or True
    if any(ix.is_opaque() or ix.depends_on(E.LOOP) for ix in a.index + b.index):
        return False
    if threads_a is None or threads_b is None:
        return False
    ea = {tuple(ix.eval({"tid": t}) for ix in a.index) for t in threads_a}
    eb = {tuple(ix.eval({"tid": t}) for ix in b.index) for t in threads_b}
    return any(None not in e for e in ea & eb)


def check(an):
    m = an.model
    out = []
    ops = m.ops
    for st in m.ops_of(ir.TMA_STORE):
        if st.buffer is None or not st.guard.exact:
            continue
        iss = an.threads.issuers(st)
        if not iss:
            continue
        # program order after the store in the same loop body, then (when the store is in a
        # loop) around the back edge into the next iteration, up to the store itself
        body = st.loops
        after = [o for o in ops if o.order > st.order and o.loops[:len(body)] == body]
        wrap = [o for o in ops if o.order < st.order and o.loops[:len(body)] == body] if body else []
        path = after + wrap
        for pos, o in enumerate(path):
            if o.loops != st.loops or not _writes(o) or o.buffer is None:
                continue
            if not o.guard.exact or tuple(map(str, o.guard.uniform)) != tuple(map(str, st.guard.uniform)):
                break
            wt = an.threads.executing(o) if o.kind == ir.SMEM_ACCESS else an.threads.issuers(o)
            if not wt or not _same_element(st.buffer, o.buffer, iss, wt):
                continue
            between = path[:pos]
            waited = False
            unknown = False
            for x in between:
                if x.kind == ir.TMA_STORE_WAIT:
                    ex = an.threads.executing(x)
                    n = x.count.eval({}) if x.count is not None else 0
                    if ex is None or n is None:
                        unknown = True
                    elif iss <= ex and n == 0 and x.loops == st.loops:
                        waited = True
                    elif n:
                        unknown = True
                if x.kind in (ir.CALL,) and "asm" in x.api:
                    unknown = True
                if x.kind == ir.EXIT:
                    unknown = True
            if waited or unknown:
                break
            out.append(finding(
                "TK306",
                f"'{o.buffer}' is overwritten by {o.api} while the tma::store_async from it (issued by "
                f"{describe(iss, an.threads.n)}) may still be reading it: no store_async_read_wait in between",
                o.location,
                related=[related(st, f"tma::store_async reads '{st.buffer}' asynchronously here")],
                witness={"buffer": str(o.buffer), "store_line": st.location.row, "overwrite_line": o.location.row},
                help="call tma::store_async_read_wait() on the storing thread after the store and before the "
                     "buffer is written again (then a barrier so the other writers see it)"))
            break
    return out


_BAD = HEADER + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C) {
    __shared__ tile c;
    rt_fl<16, 64> acc0, acc1;
    warp::zero(acc0);
    warp::zero(acc1);
    warpgroup::store(c, acc0);
    warpgroup::sync(1);
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
    }
    warpgroup::sync(1);
    warpgroup::store(c, acc1);       // the first store may still be reading c
    warpgroup::sync(1);
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 1});
        tma::store_async_wait();
    }
}
"""

_GOOD = _BAD.replace("""        tma::store_async(C, c, {0, 0, 0, 0});
    }""", """        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_read_wait();
    }""")

RULE = Rule(
    code="TK306",
    name="smem-reused-before-store-read",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes",),
    summary="A shared buffer is written again while a TMA store may still be reading it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Follows every `tma::store_async(global, tile, coord)` along program order and
reports the first later write into the same shared tile (register-tile store,
TMA load) when no `tma::store_async_read_wait()` (or `store_async_wait()`)
executed by the storing thread lies in between.

## Why is this bad?
A bulk store reads shared memory asynchronously after the instruction issues.
Until the storing thread's read wait returns, writing the tile races with the
copy engine: the global result mixes the old and new contents (stripes).

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
