"""Cross-checks between the SASS model (tkcheck.sass) and the source KernelModel.

The engine (`check_file` with `CheckOptions(sass=True)`) compiles each file once
(`tkcheck.sass.build.run_sass`), attaches the SassKernel of each model to its Analysis
(`attach`: `an.sass`, `an.sass_result`), and then runs the SASS rules (tagged "sass").
The queries here return typed facts (`MissingTensorCorePath`, `SpillsInSpecializedKernel`,
`MissingSync` and its kinds, `SetmaxnregSassEvidence`); the rules word them. They read the
SASS only through `sass_of(an)`: None means "no SASS for this kernel" (pass off, skipped,
or no unique instantiation), and then they say nothing.

What is proof here (see tkcheck/sass/facts.py): the -lineinfo line table is
approximate per instruction, so a fact *missing at one line* proves nothing; a
fact missing from the *whole kernel* does. Every finding below is of that kind,
or rests on ptxas' own report (spill bytes, C7508).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..findings import Location
from ..model import ir

SASS_TAG = "sass"


# ------------------------------------------------------------ the kernel --


def _template_args_mention(name: str, ident: str) -> bool:
    lt = name.find("<")
    return lt >= 0 and re.search(rf"(?<![\w:]){re.escape(ident)}(?!\w)", name[lt:]) is not None


def match_kernel(result, model: ir.KernelModel):
    """The SassKernel compiled from `model`, or None unless exactly one matches.

    `__global__` kernels match by function name (every instantiation of a template
    kernel matches; several instantiations -> None, since `if constexpr` may differ);
    lcf/lcsf models match the `lcf::kernel<Struct>` instantiation that names the struct.
    """
    from ..sass.model import _bare

    if result is None or not getattr(result, "kernels", None):
        return None
    if model.kind in ("lcf", "lcsf", "lcsc"):
        cands = [
            k
            for k in result.sorted_kernels()
            if _bare(k.short_name.split(" ")[-1]) == "kernel"
            and f"::{model.kind}::" in k.short_name
            and _template_args_mention(k.short_name, model.name)
        ]
    elif " [op " in model.name:
        # one model per op of an MK interpreter's pack (knowledge/mk.py): all of them are the
        # interpreter kernel's SASS; whole-kernel absence of what the op relies on still holds
        fn = model.name.split(" [op ", 1)[0].split("<", 1)[0].strip()
        cands = [
            k
            for k in result.sorted_kernels()
            if _bare(re.sub(r"^(?:void|static|__global__)\s+", "", k.short_name).split("<", 1)[0].strip()) == fn
        ]
    else:
        cands = [
            k
            for k in result.sorted_kernels()
            if k.mangled == model.name or _bare(k.short_name.split(" ")[-1]) == model.name
        ]
    return cands[0] if len(cands) == 1 else None


def attach(an, result, model: ir.KernelModel) -> None:
    """Set `an.sass` (SassKernel or None) and `an.sass_result` (SassResult or None)."""
    an.sass_result = result if result else None
    an.sass = match_kernel(an.sass_result, model) if an.sass_result else None


def sass_of(an):
    """The SassKernel attached to this Analysis, or None."""
    return getattr(an, "sass", None)


# ------------------------------------------------------- model expectations --


def _user_file(an) -> str:
    return an.model.location.filename


def model_async_mma_ops(model: ir.KernelModel) -> list[ir.Op]:
    """Ops that must become async tensor-core MMAs (HGMMA / UTC*MMA): warpgroup-scoped
    TK MMAs, TMEM-accumulator MMAs, and inline PTX wgmma.mma_async / tcgen05.mma."""
    out = []
    for op in model.ops:
        if op.kind == ir.MMA and (
            op.scope == "warpgroup"
            or (op.mma is not None and op.mma.kind_of("acc") == "tmem")
            or (op.mma is not None and op.mma.family == "tcgen05")
        ):
            out.append(op)
        elif raw_asm(op) and op.asm.async_mma:
            out.append(op)
    return out


def raw_asm(op: ir.Op) -> bool:
    """An asm statement recorded as such (mbarrier / bulk-copy / MMA PTX, operands not tracked)."""
    return op.kind == ir.CALL and op.asm is not None


def model_arrive_ops(model: ir.KernelModel) -> list[ir.Op]:
    """mbarrier arrivals the SASS must show as SYNCS.ARRIVE with arrivals >= 1: TK arrives
    (not tcgen05.commit, which becomes UTCBAR), TK expects that also arrive
    (`mbarrier.arrive.expect_tx`) and inline PTX `mbarrier.arrive*`."""
    return [
        op
        for op in model.ops
        if (op.kind == ir.MBAR_ARRIVE and not (op.mbar is not None and op.mbar.tcgen05_commit))
        or op.kind == ir.MBAR_EXPECT
        or (raw_asm(op) and op.asm.arrives)
    ]


def model_expect_ops(model: ir.KernelModel) -> list[ir.Op]:
    """Ops that set an expected tx count: TK expects and inline PTX `mbarrier[.arrive].expect_tx`."""
    return [op for op in model.ops if op.kind == ir.MBAR_EXPECT or (raw_asm(op) and op.asm.expects_tx)]


def model_fence_expectations(model: ir.KernelModel) -> list[ir.Op]:
    """Ops after which a `fence.proxy.async` must exist in the binary: explicit proxy
    fences, and TK's `tma::store_async` family (TK fences inside the call)."""
    out = [op for op in model.ops_of(ir.FENCE) if op.fence_kind == "proxy_async"]
    out += [op for op in model.ops_of(ir.TMA_STORE) if op.asm is None]
    return out


def is_warp_specialized(an) -> bool:
    m = an.model
    if m.kind in ("lcf", "lcsf", "lcsc"):
        return True
    if any(True for _ in m.ops_of(ir.SETMAXNREG)) or any(op.role_hint for op in m.ops):
        return True
    loads = list(m.ops_of(ir.TMA_LOAD))
    mmas = [op for op in m.ops_of(ir.MMA)]
    if loads and mmas:
        lt = [an.threads.executing(o) for o in loads]
        mt = [an.threads.executing(o) for o in mmas]
        if all(s for s in lt + mt):
            la = frozenset().union(*lt)
            ma = frozenset().union(*mt)
            return not (la & ma)
    return False


# ------------------------------------------------------------------ helpers --


def sass_location(ins, path: str) -> Location | None:
    """Where in the user's file `path` the instruction came from (line table), or None."""
    loc = ins.loc_in(path)
    return Location(path, loc.line, 1) if loc is not None else None


def kernel_label(k) -> str:
    return k.short_name if len(k.short_name) <= 120 else k.short_name[:117] + "..."


def instructions_at(kernel, path: str, line: int) -> list:
    """Instructions whose inline chain passes through `path:line` (any frame)."""
    want = os.path.realpath(path)
    out = []
    for ins in kernel.instructions:
        for fr in ins.inline_chain:
            if fr.line == line and os.path.realpath(fr.file) == want:
                out.append(ins)
                break
    return out


# ---------------------------------------------------------------- the facts --
# Each names the kernel's SASS (`kernel`), the user's file (`path`) and what the source model and
# the binary disagree on; all are whole-kernel absences or ptxas' own report.


@dataclass(frozen=True, eq=False)
class SassFact:
    kernel: Any  # SassKernel
    path: str  # the user's file


@dataclass(frozen=True, eq=False)
class MissingTensorCorePath(SassFact):
    """The source issues async tensor-core MMAs (`ops`); the SASS has no HGMMA / UTC*MMA, only
    the legacy mma.sync facts `sync` (maybe none)."""

    ops: list
    sync: list


def missing_tensor_core_path(an) -> MissingTensorCorePath | None:
    from ..sass.model import FactKind

    k = sass_of(an)
    if k is None:
        return None
    ops = model_async_mma_ops(an.model)
    if not ops or k.facts_of(FactKind.MMA_ASYNC):
        return None
    return MissingTensorCorePath(k, _user_file(an), ops, k.facts_of(FactKind.MMA_SYNC))


@dataclass(frozen=True, eq=False)
class SpillsInSpecializedKernel(SassFact):
    """ptxas reports spill bytes (`report`) in a warp-specialized kernel. `local`: the kernel's
    local-memory instructions by address; `in_user`: those the line table puts in the user's file,
    with their place; `setmaxnreg`: the model's register reallocations."""

    report: Any  # sass.queries.SpillReport
    local: list
    in_user: list  # [(Instruction, Location)]
    setmaxnreg: list


def spills_in_specialized_kernel(an) -> SpillsInSpecializedKernel | None:
    from ..sass.queries import spills

    k = sass_of(an)
    if k is None or not is_warp_specialized(an):
        return None
    rep = spills(k)
    if rep is None:
        return None
    path = _user_file(an)
    local = sorted(
        (f.instruction for f in k.facts if f.kind.value in ("local_load", "local_store")), key=lambda i: i.address
    )
    in_user = [(i, sass_location(i, path)) for i in local]
    in_user = [(i, l) for i, l in in_user if l is not None]
    return SpillsInSpecializedKernel(k, path, rep, local, in_user, list(an.model.ops_of(ir.SETMAXNREG)))


@dataclass(frozen=True, eq=False)
class MissingSync(SassFact):
    """The source has a synchronisation at `ops` that the SASS lacks in the whole kernel."""

    ops: list


@dataclass(frozen=True, eq=False)
class MissingArrive(MissingSync):
    """mbarrier arrivals in the source, no arrive with arrivals >= 1 among the SASS's
    `sass_arrives` mbarrier arrive instructions."""

    sass_arrives: int = 0


@dataclass(frozen=True, eq=False)
class MissingExpectTx(MissingSync):
    """Expected transaction counts in the source, no expect_tx arrive in the SASS."""


@dataclass(frozen=True, eq=False)
class MissingProxyFence(MissingSync):
    """Proxy fences before TMA/bulk stores in the source; the SASS has the bulk stores (`stores`,
    facts) and no FENCE.VIEW.ASYNC."""

    stores: list = field(default_factory=list)


def missing_syncs(an) -> list[MissingSync]:
    """Arrive, expect_tx and proxy-fence absences, in that order."""
    from ..sass.model import FactKind

    k = sass_of(an)
    if k is None:
        return []
    path = _user_file(an)
    out: list[MissingSync] = []
    arrives = k.facts_of(FactKind.MBARRIER_ARRIVE)
    arr1 = [f for f in arrives if isinstance(f.get("arrivals"), int) and f.get("arrivals") >= 1]
    exp = [f for f in arrives if f.get("tx") == "expect"]
    ops = model_arrive_ops(an.model)
    if ops and not arr1:
        out.append(MissingArrive(k, path, ops, sass_arrives=len(arrives)))
    eops = model_expect_ops(an.model)
    if eops and not exp:
        out.append(MissingExpectTx(k, path, eops))
    fences = k.facts_of(FactKind.FENCE_PROXY_ASYNC)
    stores = [f for f in k.facts_of(FactKind.BULK_COPY) if f.get("direction") in ("store", "reduce")]
    fops = model_fence_expectations(an.model)
    if fops and stores and not fences:
        out.append(MissingProxyFence(k, path, fops, stores=stores))
    return out


# ------------------------------------------------------- setmaxnreg evidence --


@dataclass(frozen=True)
class SetmaxnregSassEvidence:
    """What the binary says about a kernel's setmaxnreg (for the setmaxnreg-ineffective rule).

    ignored: the PTX issues setmaxnreg and the SASS has no USETMAXREG (ptxas dropped it:
    proof). `message` is ptxas' C7508 line when it printed one (it names no kernel).
    """

    kernel: str  # demangled (short) name
    ignored: bool
    ptx_sites: tuple  # PtxSetmaxnreg (action, count, inline_chain)
    sass_sites: tuple  # ((address, SourceLoc | None, opcode text), ...) when honoured
    message: str | None  # "(C7508) Potential Performance Loss: 'setmaxnreg' ignored; ..."
    registers: int | None  # ptxas "Used N registers"
    maxntid: tuple | None  # .maxntid of the entry (from __launch_bounds__)
    maxnreg: int | None
    source_lines: tuple[int, ...]  # lines in the user's file of the PTX setmaxnreg sites

    def describe(self) -> str:
        if not self.ignored:
            return f"ptxas kept {len(self.sass_sites)} USETMAXREG in '{self.kernel}'"
        why = self.message or "the PTX has setmaxnreg and the SASS has no USETMAXREG"
        cap = (
            "no register cap at entry (no __launch_bounds__ maxThreads / maxnreg)"
            if not (self.maxntid or self.maxnreg)
            else f"maxntid={self.maxntid}, maxnreg={self.maxnreg}"
        )
        return f"ptxas dropped setmaxnreg in '{self.kernel}': {why} [{cap}; {self.registers} registers]"


def setmaxnreg_sass_evidence(an) -> SetmaxnregSassEvidence | None:
    """SASS evidence on this kernel's setmaxnreg, or None (no SASS, or no setmaxnreg in its PTX).

    Call from a rule: `ev = sass_cross.setmaxnreg_sass_evidence(an)`; `ev.ignored` is proof
    that ptxas ignored the register reallocation (cite `ev.message`, `ev.source_lines`).
    """
    from ..sass.model import FactKind
    from ..sass.queries import SETMAXNREG_IGNORED_CODE

    k = sass_of(an)
    if k is None or k.ptx is None or not k.ptx.setmaxnreg:
        return None
    res = getattr(an, "sass_result", None)
    msg = None
    if res is not None:
        m = next((m for m in res.messages if m.code == SETMAXNREG_IGNORED_CODE), None)
        msg = m.text if m else None
    path = os.path.realpath(_user_file(an))
    lines = sorted({fr.line for s in k.ptx.setmaxnreg for fr in s.inline_chain if os.path.realpath(fr.file) == path})
    sass_sites = tuple((f.instruction.address, f.loc, f.instruction.text()) for f in k.facts_of(FactKind.SETMAXNREG))
    ignored = not sass_sites
    return SetmaxnregSassEvidence(
        kernel=kernel_label(k),
        ignored=ignored,
        ptx_sites=tuple(k.ptx.setmaxnreg),
        sass_sites=sass_sites,
        message=msg if ignored else None,
        registers=k.resources.registers,
        maxntid=k.ptx.maxntid,
        maxnreg=k.ptx.maxnreg,
        source_lines=tuple(lines),
    )


# ------------------------------------------------------------ corpus report --


def _model_lines(ops, path: str) -> list[int]:
    return sorted({o.location.row for o in ops if os.path.realpath(o.location.filename) == os.path.realpath(path)})


def _sass_lines(kernel, kind, path: str, pred=None) -> list[int]:
    lines = set()
    for f in kernel.facts_of(kind):
        if pred is not None and not pred(f):
            continue
        loc = f.instruction.loc_in(path)
        if loc is not None:
            lines.add(loc.line)
    return sorted(lines)


def cross_report(an) -> dict[str, Any] | None:
    """What the SASS and the model say about one kernel, side by side (for reports).

    Per-line sets are attributed to the innermost frame in the user's file; they are
    informational (the line table is approximate), the rules use whole-kernel facts.
    """
    from ..sass.model import FactKind

    k = sass_of(an)
    if k is None:
        return None
    path = _user_file(an)
    m = an.model
    arr_pred = lambda f: isinstance(f.get("arrivals"), int) and f.get("arrivals") >= 1  # noqa: E731
    exp_pred = lambda f: f.get("tx") == "expect"  # noqa: E731
    model_arr = _model_lines(model_arrive_ops(m), path)
    model_exp = _model_lines(model_expect_ops(m), path)
    sass_arr = _sass_lines(k, FactKind.MBARRIER_ARRIVE, path, arr_pred)
    sass_exp = _sass_lines(k, FactKind.MBARRIER_ARRIVE, path, exp_pred)
    ev = setmaxnreg_sass_evidence(an)
    rep = {
        "kernel": m.name,
        "sass_kernel": kernel_label(k),
        "arch": k.arch,
        "instructions": len(k.instructions),
        "mapped_to_user_file": sum(1 for i in k.instructions if i.loc_in(path) is not None),
        "model_async_mma": len(model_async_mma_ops(m)),
        "sass_hgmma": len(k.facts_of(FactKind.MMA_ASYNC)),
        "model_arrive_lines": model_arr,
        "sass_arrive_lines": sass_arr,
        "model_expect_lines": model_exp,
        "sass_expect_lines": sass_exp,
        "model_fence_expectations": len(model_fence_expectations(m)),
        "sass_proxy_fences": len(k.facts_of(FactKind.FENCE_PROXY_ASYNC)),
        "sass_bulk_stores": sum(1 for f in k.facts_of(FactKind.BULK_COPY) if f.get("direction") in ("store", "reduce")),
        "model_setmaxnreg": sum(1 for _ in m.ops_of(ir.SETMAXNREG)),
        "sass_usetmaxreg": len(k.facts_of(FactKind.SETMAXNREG)),
        "setmaxnreg_ignored": bool(ev and ev.ignored),
        "registers": k.resources.registers,
        "spill_bytes": (k.resources.spill_store_bytes or 0) + (k.resources.spill_load_bytes or 0),
        "warp_specialized": is_warp_specialized(an),
    }
    return rep
