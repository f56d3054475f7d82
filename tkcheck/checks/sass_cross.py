"""Cross-checks between the SASS model (tkcheck.sass) and the source KernelModel.

The engine (`check_file` with `CheckOptions(sass=True)`) compiles each file once
(`run_sass`), attaches the SassKernel of each model to its Analysis (`attach`:
`an.sass`, `an.sass_result`), and then runs the SASS rules (TK601-TK603, tagged
"sass"). Rules read the SASS only through `sass_of(an)`: None means "no SASS for
this kernel" (pass off, skipped, or no unique instantiation), and then they say
nothing.

What is proof here (see tkcheck/sass/facts.py): the -lineinfo line table is
approximate per instruction, so a fact *missing at one line* proves nothing; a
fact missing from the *whole kernel* does. Every finding below is of that kind,
or rests on ptxas' own report (spill bytes, C7508).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, Location, Related
from ..model import ir

SASS_TAG = "sass"
# The flags TK's own makefiles use (-O3 and the constexpr/lambda extensions, C++20).
BASE_FLAGS = ("-std=c++20", "-O3", "--expt-relaxed-constexpr", "--expt-extended-lambda")
_TK_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](kittens|prototype)\.cuh[>"]', re.M)


# ------------------------------------------------------------------ running --

def build_config(text: str, parse_opts, sass_arch: str | None = None) -> tuple[dict | None, str | None]:
    """(compile_and_disassemble keyword arguments, None) or (None, why the pass is skipped)."""
    arch = sass_arch or parse_opts.arch
    include_dirs = list(parse_opts.include_dirs)
    defines = list(parse_opts.defines)
    if arch.startswith("sm_90"):
        defines.append("KITTENS_HOPPER")
    elif arch.startswith("sm_10"):
        defines += ["KITTENS_HOPPER", "KITTENS_BLACKWELL"]
    if parse_opts.tk_include:
        include_dirs += [d for d in parse_opts.tk_dirs() if d not in include_dirs]
    elif _TK_INCLUDE.search(text):
        return None, ("SASS pass skipped: the file includes ThunderKittens and compiling it needs the "
                      "real headers (give --tk-include)")
    return dict(arch=arch, include_dirs=include_dirs, defines=defines, extra_flags=list(BASE_FLAGS)), None


def run_sass(path: str, text: str, parse_opts, *, sass_arch: str | None = None,
             cache_dir: str | None = None):
    """Compile + disassemble one file. Returns SassResult or Skipped (never raises).

    `cache_dir` None: no cache is read or written (`--no-cache`)."""
    from ..sass import Skipped, compile_and_disassemble

    cfg, why = build_config(text, parse_opts, sass_arch)
    if cfg is None:
        return Skipped("no-headers", why)
    return compile_and_disassemble(path, cache_dir=cache_dir, **cfg)


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
        cands = [k for k in result.sorted_kernels()
                 if _bare(k.short_name.split(" ")[-1]) == "kernel"
                 and f"::{model.kind}::" in k.short_name
                 and _template_args_mention(k.short_name, model.name)]
    elif " [op " in model.name:
        # one model per op of an MK interpreter's pack (knowledge/mk.py): all of them are the
        # interpreter kernel's SASS; whole-kernel absence of what the op relies on still holds
        fn = model.name.split(" [op ", 1)[0].split("<", 1)[0].strip()
        cands = [k for k in result.sorted_kernels()
                 if _bare(re.sub(r"^(?:void|static|__global__)\s+", "", k.short_name).split("<", 1)[0].strip()) == fn]
    else:
        cands = [k for k in result.sorted_kernels()
                 if k.mangled == model.name or _bare(k.short_name.split(" ")[-1]) == model.name]
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
        if op.kind == ir.MMA and (op.scope == "warpgroup" or op.detail.get("acc_kind") == "tmem"
                                  or (op.mma is not None and op.mma.family == "tcgen05")):
            out.append(op)
        elif _raw_asm(op) and op.asm.async_mma:
            out.append(op)
    return out


def _raw_asm(op: ir.Op) -> bool:
    """An asm statement recorded as such (mbarrier / bulk-copy / MMA PTX, operands not tracked)."""
    return op.kind == ir.CALL and op.asm is not None


def model_arrive_ops(model: ir.KernelModel) -> list[ir.Op]:
    """mbarrier arrivals the SASS must show as SYNCS.ARRIVE with arrivals >= 1: TK arrives
    (not tcgen05.commit, which becomes UTCBAR), TK expects that also arrive
    (`mbarrier.arrive.expect_tx`) and inline PTX `mbarrier.arrive*`."""
    return [op for op in model.ops
            if (op.kind == ir.MBAR_ARRIVE and op.detail.get("via") != "tcgen05.commit")
            or (op.kind == ir.MBAR_EXPECT and op.detail.get("arrives") == 1)
            or (_raw_asm(op) and op.asm.arrives)]


def model_expect_ops(model: ir.KernelModel) -> list[ir.Op]:
    """Ops that set an expected tx count: TK expects and inline PTX `mbarrier[.arrive].expect_tx`."""
    return [op for op in model.ops
            if op.kind == ir.MBAR_EXPECT or (_raw_asm(op) and op.asm.expects_tx)]


def model_fence_expectations(model: ir.KernelModel) -> list[ir.Op]:
    """Ops after which a `fence.proxy.async` must exist in the binary: explicit proxy
    fences, and TK's `tma::store_async` family (TK fences inside the call)."""
    out = [op for op in model.ops_of(ir.FENCE) if op.detail.get("fence_kind") == "proxy_async"]
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

def _api(op: ir.Op) -> str:
    if _raw_asm(op):
        return f"inline PTX {op.asm.instruction}" if op.asm.instruction else "inline PTX"
    return op.api


def _call_site(op: ir.Op) -> list[Related]:
    """The kernel-body line that (through device functions) reaches `op`."""
    return [Related(op.callers[0], "called from here")] if op.callers else []


def _text(ins) -> str:
    return " ".join(ins.text().split("(*")[0].split())


def _addr(ins) -> str:
    return f"0x{ins.address:04x}"


def _sass_loc(ins, path: str) -> Location | None:
    loc = ins.loc_in(path)
    return Location(path, loc.line, 1) if loc is not None else None


def _kernel_label(k) -> str:
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


def _span(ins_list) -> str:
    if not ins_list:
        return ""
    lo, hi = min(i.address for i in ins_list), max(i.address for i in ins_list)
    return f"0x{lo:04x}" if lo == hi else f"0x{lo:04x}-0x{hi:04x}"


def _where_compiled(kernel, path: str, op: ir.Op) -> str:
    """', compiled to SASS 0x..-0x.. (N instructions)' for the op's line, or ''."""
    ins = instructions_at(kernel, path, op.location.row)
    return f" (line {op.location.row} compiled to SASS {_span(ins)}, {len(ins)} instructions)" if ins else ""


def _witness(kernel, **kw) -> dict[str, Any]:
    w = {"sass_kernel": _kernel_label(kernel), "arch": kernel.arch}
    w.update(kw)
    return w


# --------------------------------------------------------------------- TK601 --

def check_tensor_core_path(an) -> list[Finding]:
    from ..sass.model import FactKind

    k = sass_of(an)
    if k is None:
        return []
    ops = model_async_mma_ops(an.model)
    if not ops or k.facts_of(FactKind.MMA_ASYNC):
        return []
    path = _user_file(an)
    sync = k.facts_of(FactKind.MMA_SYNC)
    first = ops[0]
    if sync:
        got = f"only {len(sync)} legacy mma.sync instructions ({sync[0].instruction.opcode} at {_addr(sync[0].instruction)})"
    else:
        got = "no tensor-core instruction at all"
    arch_hint = ""
    if k.arch in ("sm_90", "sm_100", "sm_101", "sm_103", "sm_120"):
        arch_hint = (f"; it was built for {k.arch}, where the arch-specific features of "
                     f"{k.arch}a (wgmma, setmaxnreg, tcgen05) are not available and code behind "
                     f"__CUDA_ARCH_FEAT_* / arch-specific guards is compiled out")
    related = _call_site(first) + [Related(o.location, f"{_api(o)}: a tensor-core MMA in the source") for o in ops[1:4]]
    if sync:
        loc = _sass_loc(sync[0].instruction, path)
        if loc:
            related.append(Related(loc, f"SASS {_addr(sync[0].instruction)}: {_text(sync[0].instruction)}"))
    return [Finding(
        "TK601",
        f"the source issues {len(ops)} async tensor-core MMA call(s) ({_api(first)}) but the SASS of "
        f"'{_kernel_label(k)}' ({k.arch}, {len(k.instructions)} instructions) has no HGMMA/UTC*MMA: "
        f"{got}{arch_hint}{_where_compiled(k, path, first)}",
        first.location, related=related,
        witness=_witness(k, model_mma_ops=len(ops), sass_async_mma=0, sass_mma_sync=len(sync),
                         sass_instructions=len(k.instructions)),
        help="build for the arch-specific target (-gencode arch=compute_90a,code=sm_90a, or sm_100a "
             "on Blackwell); plain sm_90/compute_90 drops wgmma")]


# --------------------------------------------------------------------- TK602 --

def check_spills(an) -> list[Finding]:
    from ..sass.queries import spills

    k = sass_of(an)
    if k is None or not is_warp_specialized(an):
        return []
    rep = spills(k)
    if rep is None:
        return []
    path = _user_file(an)
    local = sorted((f.instruction for f in k.facts if f.kind.value in ("local_load", "local_store")),
                   key=lambda i: i.address)
    in_user = [(i, _sass_loc(i, path)) for i in local]
    in_user = [(i, l) for i, l in in_user if l is not None]
    loc = in_user[0][1] if in_user else Location(path, an.model.location.row, an.model.location.column)
    cite = (f"; first local-memory access SASS {_addr(in_user[0][0])} `{_text(in_user[0][0])}` "
            f"(source line {in_user[0][1].row})" if in_user else
            (f"; first local-memory access SASS {_addr(local[0])} `{_text(local[0])}`" if local else ""))
    regs = k.resources.registers
    setmax = [op for op in an.model.ops_of(ir.SETMAXNREG)]
    sm = ""
    if setmax:
        sm = "; setmaxnreg: " + ", ".join(
            f"{'inc' if o.detail.get('inc') else 'dec'} at line {o.location.row}" for o in setmax[:4])
    related = [Related(l, f"SASS {_addr(i)}: {_text(i)}") for i, l in in_user[1:4]]
    related += [Related(o.location, "register reallocation (setmaxnreg)") for o in setmax[:2]]
    return [Finding(
        "TK602",
        f"warp-specialized kernel '{_kernel_label(k)}' spills registers: ptxas reports "
        f"{rep.spill_store_bytes} bytes spill stores / {rep.spill_load_bytes} bytes spill loads "
        f"({regs if regs is not None else '?'} registers, {rep.stack_frame_bytes} bytes stack frame, "
        f"{rep.local_stores} STL / {rep.local_loads} LDL in the SASS){cite}{sm}",
        loc, related=related,
        witness=_witness(k, spill_store_bytes=rep.spill_store_bytes, spill_load_bytes=rep.spill_load_bytes,
                         registers=regs, local_stores=rep.local_stores, local_loads=rep.local_loads,
                         sass_address=_addr(in_user[0][0]) if in_user else (_addr(local[0]) if local else None)),
        help="give the role that needs registers more (`warpgroup::increase_registers<N>` with a matching "
             "`decrease_registers` in the producer, and `__launch_bounds__(threads, 1)` so ptxas knows the "
             "cap), or make its register tiles smaller")]


# --------------------------------------------------------------------- TK603 --

def check_disagreement(an) -> list[Finding]:
    from ..sass.model import FactKind

    k = sass_of(an)
    if k is None:
        return []
    path = _user_file(an)
    out: list[Finding] = []
    arrives = k.facts_of(FactKind.MBARRIER_ARRIVE)
    arr1 = [f for f in arrives if isinstance(f.get("arrivals"), int) and f.get("arrivals") >= 1]
    exp = [f for f in arrives if f.get("tx") == "expect"]
    ops = model_arrive_ops(an.model)
    if ops and not arr1:
        first = ops[0]
        out.append(Finding(
            "TK603",
            f"the source arrives on mbarriers at {len(ops)} site(s) (first: {_api(first) if _raw_asm(first) else first.describe()}) but the "
            f"SASS of '{_kernel_label(k)}' has no mbarrier arrive instruction (SYNCS.ARRIVE...A1) "
            f"anywhere{_where_compiled(k, path, first)}: the binary does not do what the source "
            "analysis checked",
            first.location, related=_call_site(first) + [Related(o.location, "arrive in the source") for o in ops[1:4]],
            witness=_witness(k, model_arrive_sites=sorted({o.location.row for o in ops}),
                             sass_arrive_sites=[], sass_arrive_instructions=len(arrives)),
            help="check the preprocessor conditions and the build flags (arch, defines) around the arrive: "
                 "the analysed source and the compiled one differ"))
    eops = model_expect_ops(an.model)
    if eops and not exp:
        first = eops[0]
        out.append(Finding(
            "TK603",
            f"the source sets an expected transaction count at {len(eops)} site(s) (first: {_api(first) if _raw_asm(first) else first.describe()}) "
            f"but the SASS of '{_kernel_label(k)}' has no expect_tx arrive (SYNCS.ARRIVE.TRANS64 with a byte "
            f"count) anywhere{_where_compiled(k, path, first)}",
            first.location,
            witness=_witness(k, model_expect_sites=sorted({o.location.row for o in eops}), sass_expect_tx=0),
            help="check the preprocessor conditions and build flags around the expect: the analysed source "
                 "and the compiled one differ"))
    fences = k.facts_of(FactKind.FENCE_PROXY_ASYNC)
    stores = [f for f in k.facts_of(FactKind.BULK_COPY) if f.get("direction") in ("store", "reduce")]
    fops = model_fence_expectations(an.model)
    if fops and stores and not fences:
        st = stores[0].instruction
        first = fops[0]
        sloc = _sass_loc(st, path)
        rel = _call_site(first) + [Related(sloc, f"SASS {_addr(st)}: {_text(st)} (bulk store with no proxy fence in the kernel)")] if sloc else []
        out.append(Finding(
            "TK603",
            f"the source has a fence.proxy.async before its TMA/bulk stores ({_api(first) if _raw_asm(first) else first.describe()}, line "
            f"{first.location.row}) but the SASS of '{_kernel_label(k)}' has no FENCE.VIEW.ASYNC anywhere while "
            f"it issues {len(stores)} bulk store(s) (first: {_addr(st)} `{_text(st)}`"
            f"{', source line ' + str(sloc.row) if sloc else ''}): shared-memory writes may not be visible to the "
            "async proxy that reads them",
            first.location, related=rel,
            witness=_witness(k, sass_address=_addr(st), sass_bulk_stores=len(stores), sass_proxy_fences=0,
                             model_fence_sites=sorted({o.location.row for o in fops})),
            help="make the fence unconditional (or guarded by the same condition as the store) and check the "
                 "build flags: the analysed source and the compiled one differ"))
    return out


# ---------------------------------------------------------------- TK406 aid --

@dataclass(frozen=True)
class SetmaxnregSassEvidence:
    """What the binary says about a kernel's setmaxnreg (for TK406 setmaxnreg-ineffective).

    ignored: the PTX issues setmaxnreg and the SASS has no USETMAXREG (ptxas dropped it:
    proof). `message` is ptxas' C7508 line when it printed one (it names no kernel).
    """
    kernel: str                       # demangled (short) name
    ignored: bool
    ptx_sites: tuple                  # PtxSetmaxnreg (action, count, inline_chain)
    sass_sites: tuple                 # ((address, SourceLoc | None, opcode text), ...) when honoured
    message: str | None               # "(C7508) Potential Performance Loss: 'setmaxnreg' ignored; ..."
    registers: int | None             # ptxas "Used N registers"
    maxntid: tuple | None             # .maxntid of the entry (from __launch_bounds__)
    maxnreg: int | None
    source_lines: tuple[int, ...]     # lines in the user's file of the PTX setmaxnreg sites

    def describe(self) -> str:
        if not self.ignored:
            return f"ptxas kept {len(self.sass_sites)} USETMAXREG in '{self.kernel}'"
        why = self.message or "the PTX has setmaxnreg and the SASS has no USETMAXREG"
        cap = "no register cap at entry (no __launch_bounds__ maxThreads / maxnreg)" if not (
            self.maxntid or self.maxnreg) else f"maxntid={self.maxntid}, maxnreg={self.maxnreg}"
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
    lines = sorted({fr.line for s in k.ptx.setmaxnreg for fr in s.inline_chain
                    if os.path.realpath(fr.file) == path})
    sass_sites = tuple((f.instruction.address, f.loc, f.instruction.text())
                       for f in k.facts_of(FactKind.SETMAXNREG))
    ignored = not sass_sites
    return SetmaxnregSassEvidence(
        kernel=_kernel_label(k), ignored=ignored, ptx_sites=tuple(k.ptx.setmaxnreg), sass_sites=sass_sites,
        message=msg if ignored else None, registers=k.resources.registers, maxntid=k.ptx.maxntid,
        maxnreg=k.ptx.maxnreg, source_lines=tuple(lines))


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
        "kernel": m.name, "sass_kernel": _kernel_label(k), "arch": k.arch,
        "instructions": len(k.instructions),
        "mapped_to_user_file": sum(1 for i in k.instructions if i.loc_in(path) is not None),
        "model_async_mma": len(model_async_mma_ops(m)),
        "sass_hgmma": len(k.facts_of(FactKind.MMA_ASYNC)),
        "model_arrive_lines": model_arr, "sass_arrive_lines": sass_arr,
        "model_expect_lines": model_exp, "sass_expect_lines": sass_exp,
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
