"""Questions rules ask of the SASS model (setmaxnreg, tensor-core path, spills, source/SASS cross-checks).

Each helper answers from what the binary shows; none of them guesses.  Where the
answer depends on something the SASS cannot show, the helper says so in its docstring.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tkcheck.sass.model import (
    Fact,
    FactKind,
    PtxasMessage,
    PtxSetmaxnreg,
    SassKernel,
    SassResult,
    SourceLoc,
)

SETMAXNREG_IGNORED_CODE = "C7508"


def has_tensor_core_ops(kernel: SassKernel, *, include_sync_mma: bool = False) -> bool:
    """True when the kernel issues async tensor-core MMAs (HGMMA, UTC*MMA).

    With include_sync_mma, legacy `mma.sync` (HMMA/IMMA/...) counts too.
    """
    kinds = (FactKind.MMA_ASYNC, FactKind.MMA_SYNC) if include_sync_mma else (FactKind.MMA_ASYNC,)
    return bool(kernel.facts_of(*kinds))


@dataclass(frozen=True)
class SpillReport:
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    local_loads: int  # LDL instructions in the SASS
    local_stores: int  # STL instructions in the SASS
    sites: tuple[SourceLoc, ...]  # innermost source lines of the LDL/STL


def spills(kernel: SassKernel) -> SpillReport | None:
    """The kernel's register spills, or None when ptxas reports none.

    ptxas' spill counters are the proof; LDL/STL alone can also be a dynamically
    indexed local array (reported by `local_memory_traffic`, not here).
    """
    r = kernel.resources
    stores, loads = r.spill_store_bytes or 0, r.spill_load_bytes or 0
    if stores == 0 and loads == 0:
        return None
    ldl = kernel.facts_of(FactKind.LOCAL_LOAD)
    stl = kernel.facts_of(FactKind.LOCAL_STORE)
    sites = sorted({f.loc for f in ldl + stl if f.loc is not None})
    return SpillReport(
        spill_store_bytes=stores,
        spill_load_bytes=loads,
        stack_frame_bytes=r.stack_frame_bytes or 0,
        local_loads=len(ldl),
        local_stores=len(stl),
        sites=tuple(sites),
    )


def local_memory_traffic(kernel: SassKernel) -> list[Fact]:
    """Every LDL/STL (spills and local arrays alike)."""
    return kernel.facts_of(FactKind.LOCAL_LOAD, FactKind.LOCAL_STORE)


@dataclass(frozen=True)
class SetmaxnregIgnored:
    kernel: str  # mangled name
    sites: tuple[PtxSetmaxnreg, ...]  # the setmaxnreg of the PTX, with source chains
    message: PtxasMessage | None  # the C7508 line, when ptxas printed one


def setmaxnreg_ignored(result: SassResult) -> list[SetmaxnregIgnored]:
    """Kernels whose `setmaxnreg` ptxas dropped.

    Proof: the kernel's PTX issues setmaxnreg and its SASS has no USETMAXREG.  ptxas
    prints C7508 once per compile without naming the kernel, so the message is
    attached to every kernel proved this way (and only when it was printed).
    """
    msg = next((m for m in result.messages if m.code == SETMAXNREG_IGNORED_CODE), None)
    out = []
    for k in result.sorted_kernels():
        if k.ptx is None or not k.ptx.setmaxnreg:
            continue
        if k.facts_of(FactKind.SETMAXNREG):
            continue
        out.append(SetmaxnregIgnored(kernel=k.mangled, sites=k.ptx.setmaxnreg, message=msg))
    return out


def ptxas_warnings(result: SassResult, code: str | None = None) -> list[PtxasMessage]:
    """ptxas warnings/infos with a code (C7508, ...) or severity warning/error."""
    return [m for m in result.messages if (code is None or m.code == code)]


def sites_by_line(
    kernel: SassKernel, kind: FactKind, path: str | None = None, *, call_site: bool = False
) -> dict[SourceLoc, list[Fact]]:
    """Facts of `kind` grouped by source line (see SassKernel.lines_for for attribution)."""
    out: dict[SourceLoc, list[Fact]] = defaultdict(list)
    for f in kernel.facts_of(kind):
        ins = f.instruction
        loc = ins.loc_in(path) if path else (ins.call_site if call_site else ins.loc)
        if loc is not None:
            out[loc].append(f)
    return dict(sorted(out.items()))


def arrive_sites(kernel: SassKernel, path: str | None = None) -> dict[SourceLoc, list[Fact]]:
    """mbarrier arrive / expect_tx / complete_tx instructions per source line."""
    return sites_by_line(kernel, FactKind.MBARRIER_ARRIVE, path)


def wait_sites(kernel: SassKernel, path: str | None = None) -> dict[SourceLoc, list[Fact]]:
    return sites_by_line(kernel, FactKind.MBARRIER_WAIT, path)


def fence_sites(kernel: SassKernel, path: str | None = None) -> dict[SourceLoc, list[Fact]]:
    """fence.proxy.async (FENCE.VIEW.ASYNC.*) per source line."""
    return sites_by_line(kernel, FactKind.FENCE_PROXY_ASYNC, path)


def bulk_copy_sites(kernel: SassKernel, path: str | None = None) -> dict[SourceLoc, list[Fact]]:
    return sites_by_line(kernel, FactKind.BULK_COPY, path)


@dataclass(frozen=True)
class NamedBarrierUse:
    barrier_id: int
    thread_count: int | None  # None: whole block (no count operand) or count in a register
    kind: FactKind
    loc: SourceLoc | None


def named_barriers(kernel: SassKernel) -> list[NamedBarrierUse]:
    """Every BAR.SYNC/ARV/RED whose id is an immediate, in address order."""
    out = []
    for f in kernel.facts_of(FactKind.BARRIER_SYNC, FactKind.BARRIER_ARRIVE, FactKind.BARRIER_RED):
        bid = f.get("barrier_id")
        if isinstance(bid, int):
            cnt = f.get("thread_count")
            out.append(NamedBarrierUse(bid, cnt if isinstance(cnt, int) else None, f.kind, f.loc))
    return out


def mma_shapes(kernel: SassKernel) -> set[tuple[int, int, int]]:
    """(m, n, k) of each HGMMA shape the kernel issues."""
    out = set()
    for f in kernel.facts_of(FactKind.MMA_ASYNC):
        m, n, k = f.get("m"), f.get("n"), f.get("k")
        if isinstance(m, int) and isinstance(n, int) and isinstance(k, int):
            out.add((m, n, k))
    return out


def summary(kernel: SassKernel) -> dict[str, int]:
    """Count of facts per kind (kind value -> count), sorted; handy for reports and tests."""
    return {k.value: len(v) for k, v in sorted(kernel.facts_by_kind().items(), key=lambda kv: kv[0].value)}
