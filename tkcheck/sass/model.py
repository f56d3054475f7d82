"""The SASS model: what one compiled kernel contains, mapped back to source lines.

Plain data only (no subprocesses, no rule logic). `parse.py` builds it from
disassembler text, `facts.py` classifies instructions, `queries.py` answers the
questions rules ask.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable


@dataclass(frozen=True, order=True)
class SourceLoc:
    """A source position from `-lineinfo` (1-based line; no column in SASS)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction.

    `inline_chain` is innermost first: `inline_chain[0]` is where the instruction's
    code was written (often inside a TK header), the last entry is the line in the
    kernel function that (transitively) called it.  Empty when the disassembly has
    no line information.
    """

    address: int
    opcode: str  # full dotted opcode, e.g. "HGMMA.64x8x16.F32.BF16"
    operands: tuple[str, ...]  # comma-separated operands, as printed
    guard: str | None = None  # predicate guard without '@', e.g. "!P0", "UP1"
    inline_chain: tuple[SourceLoc, ...] = ()

    @property
    def base(self) -> str:
        """Opcode without modifiers ("BAR" for "BAR.SYNC.DEFER_BLOCKING")."""
        return self.opcode.split(".", 1)[0]

    @property
    def modifiers(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])

    @property
    def loc(self) -> SourceLoc | None:
        """Innermost source location (where the instruction's code was written)."""
        return self.inline_chain[0] if self.inline_chain else None

    @property
    def call_site(self) -> SourceLoc | None:
        """Outermost source location (the line in the kernel body)."""
        return self.inline_chain[-1] if self.inline_chain else None

    def loc_in(self, path: str) -> SourceLoc | None:
        """Innermost frame of the chain that lies in `path` (compared by real path)."""
        want = _norm(path)
        for frame in self.inline_chain:
            if _norm(frame.file) == want:
                return frame
        return None

    def text(self) -> str:
        guard = f"@{self.guard} " if self.guard else ""
        ops = ", ".join(self.operands)
        return f"{guard}{self.opcode} {ops}".rstrip()


class FactKind(str, Enum):
    """Kinds of classified SASS facts. The opcode -> kind table is in facts.py."""

    BARRIER_SYNC = "barrier_sync"  # BAR.SYNC id[, count]
    BARRIER_ARRIVE = "barrier_arrive"  # BAR.ARV id, count
    BARRIER_RED = "barrier_red"  # BAR.RED.{POPC,AND,OR} id[, count]
    CLUSTER_BARRIER = "cluster_barrier"  # UCGABAR_ARV / UCGABAR_WAIT
    MBARRIER_INIT = "mbarrier_init"  # SYNCS.EXCH.64
    MBARRIER_ARRIVE = "mbarrier_arrive"  # SYNCS.ARRIVE.TRANS64[.RED][.AxTy]
    MBARRIER_WAIT = "mbarrier_wait"  # SYNCS.PHASECHK.TRANS64[.TRYWAIT]
    BULK_COPY = "bulk_copy"  # UTMALDG/UTMASTG/UBLKCP/UTMAPF/UBLKPF/UBLKRED/UTMAREDG
    BULK_COMMIT = "bulk_commit"  # UTMACMDFLUSH (cp.async.bulk.commit_group)
    MMA_ASYNC = "mma_async"  # HGMMA (wgmma), UTC*MMA (tcgen05.mma)
    MMA_SYNC = "mma_sync"  # HMMA/IMMA/QMMA/DMMA (mma.sync, ldmatrix-era)
    WARPGROUP_ARRIVE = "warpgroup_arrive"  # WARPGROUP.ARRIVE (wgmma.fence)
    WARPGROUP_WAIT = "warpgroup_wait"  # WARPGROUP.DEPBAR.LE gsb0, N (wgmma.wait_group N)
    TCGEN05 = "tcgen05"  # UTCBAR, UTCATOMSWS, LDTM, STTM, UTCCP, ... (non-MMA)
    FENCE_PROXY_ASYNC = "fence_proxy_async"  # FENCE.VIEW.ASYNC.{S,G,...}
    MEMBAR = "membar"  # MEMBAR.*
    SETMAXNREG = "setmaxnreg"  # USETMAXREG.{TRY_ALLOC,DEALLOC}.CTAPOOL
    LOCAL_LOAD = "local_load"  # LDL
    LOCAL_STORE = "local_store"  # STL
    EXIT = "exit"  # EXIT
    TRAP = "trap"  # BPT.TRAP


@dataclass(frozen=True)
class Fact:
    """A classified instruction. `attrs` holds kind-specific decoded fields
    (see facts.py for each kind's keys); values are ints, strs, bools or None."""

    kind: FactKind
    instruction: Instruction
    attrs: tuple[tuple[str, object], ...] = ()

    def get(self, key: str, default: object = None) -> object:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def loc(self) -> SourceLoc | None:
        return self.instruction.loc


@dataclass(frozen=True)
class ResourceUsage:
    """ptxas `-v` report for one entry function."""

    registers: int | None = None
    stack_frame_bytes: int | None = None
    spill_store_bytes: int | None = None
    spill_load_bytes: int | None = None
    shared_bytes: int | None = None  # static smem (dynamic smem is a launch parameter)
    barriers: int | None = None
    cumulative_stack_bytes: int | None = None


@dataclass(frozen=True)
class PtxasMessage:
    """One ptxas warning/info message that is not part of the resource report."""

    severity: str  # "warning" | "info" | "error"
    code: str | None  # e.g. "C7508", when printed
    text: str
    function: str | None  # mangled entry it names or was printed under, if any


@dataclass(frozen=True)
class PtxSetmaxnreg:
    """A `setmaxnreg` found in the PTX of an entry, with its `.loc` chain."""

    action: str  # "inc" | "dec"
    count: int | None
    inline_chain: tuple[SourceLoc, ...] = ()


@dataclass(frozen=True)
class PtxEntryInfo:
    """What the PTX of an entry says about register caps (launch bounds)."""

    maxntid: tuple[int, ...] | None = None
    minnctapersm: int | None = None
    maxnreg: int | None = None
    setmaxnreg: tuple[PtxSetmaxnreg, ...] = ()


@dataclass
class SassKernel:
    """One entry function of a cubin."""

    mangled: str
    demangled: str | None
    arch: str
    instructions: list[Instruction] = field(default_factory=list)
    resources: ResourceUsage = field(default_factory=ResourceUsage)
    ptx: PtxEntryInfo | None = None
    _facts: list[Fact] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.demangled or self.mangled

    @property
    def short_name(self) -> str:
        """Demangled name without parameter list ("ns::kernel<...>")."""
        name = self.name
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            ch = name[i]
            if ch == ")":
                depth += 1
            elif ch == "(":
                depth -= 1
                if depth == 0:
                    return name[:i]
        return name

    @property
    def facts(self) -> list[Fact]:
        if self._facts is None:
            from tkcheck.sass.facts import classify

            self._facts = [f for f in (classify(i) for i in self.instructions) if f is not None]
        return self._facts

    def facts_of(self, *kinds: FactKind) -> list[Fact]:
        return [f for f in self.facts if f.kind in kinds]

    def facts_by_kind(self) -> dict[FactKind, list[Fact]]:
        out: dict[FactKind, list[Fact]] = {}
        for f in self.facts:
            out.setdefault(f.kind, []).append(f)
        return out

    def lines_for(self, kind: FactKind, path: str | None = None, *, call_site: bool = False) -> list[SourceLoc]:
        """Sorted distinct source locations of the facts of `kind`.

        With `path`, each fact is attributed to its innermost frame inside that file
        (facts with no frame in it are left out); with `call_site`, to the outermost
        frame; otherwise to the innermost frame.
        """
        locs: set[SourceLoc] = set()
        for f in self.facts_of(kind):
            ins = f.instruction
            loc = ins.loc_in(path) if path else (ins.call_site if call_site else ins.loc)
            if loc is not None:
                locs.add(loc)
        return sorted(locs)


@dataclass
class SassResult:
    """Everything one compile produced for one (source, arch, flags)."""

    source_path: str
    arch: str
    kernels: dict[str, SassKernel]  # by mangled name
    messages: list[PtxasMessage] = field(default_factory=list)
    ptxas_log: str = ""
    command: tuple[str, ...] = ()
    cache_hit: bool = False
    compile_seconds: float = 0.0
    disassemble_seconds: float = 0.0
    disassembler: str = ""

    def kernel(self, name: str) -> SassKernel | None:
        """Look a kernel up by mangled name, demangled name, or bare function name."""
        if name in self.kernels:
            return self.kernels[name]
        for k in self.kernels.values():
            if name in (k.demangled, k.short_name) or _bare(k.short_name) == name:
                return k
        return None

    def sorted_kernels(self) -> list[SassKernel]:
        return [self.kernels[k] for k in sorted(self.kernels)]


@dataclass(frozen=True)
class Skipped:
    """The SASS pass did not run. `reason` is one line for the user.

    kind: "no-toolchain" | "compile-failed" | "disassembly-failed" | "timeout" | "bad-input"
    | "internal-error".
    `detail` holds compiler output where there is some.
    """

    kind: str
    reason: str
    detail: str = ""

    def __bool__(self) -> bool:  # lets callers write `if not result: ...`
        return False


def _bare(name: str) -> str:
    """Function name without namespace and template arguments."""
    depth = 0
    cut = len(name)
    for i in range(len(name) - 1, -1, -1):
        ch = name[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
            if depth == 0:
                cut = i
        elif ch == ":" and depth == 0:
            return name[i + 1 : cut]
    return name[:cut]


def _norm(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def iter_facts(kernels: Iterable[SassKernel], kind: FactKind) -> Iterable[tuple[SassKernel, Fact]]:
    for k in kernels:
        for f in k.facts_of(kind):
            yield k, f
