"""SASS front end: compile a kernel with nvcc, disassemble it with line information,
and model what the binary really does (see facts.py for the opcode -> fact table).

The pass is optional: without a CUDA compiler `compile_and_disassemble` returns a
`Skipped` with one informational line.
"""

from tkcheck.sass.build import BASE_FLAGS, build_config, run_sass
from tkcheck.sass.compile import DEFAULT_CACHE_DIR, compile_and_disassemble
from tkcheck.sass.facts import classify
from tkcheck.sass.model import (
    Fact,
    FactKind,
    Instruction,
    PtxasMessage,
    PtxEntryInfo,
    PtxSetmaxnreg,
    ResourceUsage,
    SassKernel,
    SassResult,
    Skipped,
    SourceLoc,
)
from tkcheck.sass.parse import parse_ptx, parse_ptxas_log, parse_sass
from tkcheck.sass.queries import (
    arrive_sites,
    bulk_copy_sites,
    fence_sites,
    has_tensor_core_ops,
    local_memory_traffic,
    mma_shapes,
    named_barriers,
    ptxas_warnings,
    setmaxnreg_ignored,
    sites_by_line,
    spills,
    summary,
    wait_sites,
)
from tkcheck.sass.toolchain import Toolchain, ToolchainNotFound, find_toolchain

__all__ = [
    "BASE_FLAGS",
    "build_config",
    "run_sass",
    "DEFAULT_CACHE_DIR",
    "compile_and_disassemble",
    "classify",
    "Fact",
    "FactKind",
    "Instruction",
    "PtxasMessage",
    "PtxEntryInfo",
    "PtxSetmaxnreg",
    "ResourceUsage",
    "SassKernel",
    "SassResult",
    "Skipped",
    "SourceLoc",
    "parse_ptx",
    "parse_ptxas_log",
    "parse_sass",
    "arrive_sites",
    "bulk_copy_sites",
    "fence_sites",
    "has_tensor_core_ops",
    "local_memory_traffic",
    "mma_shapes",
    "named_barriers",
    "ptxas_warnings",
    "setmaxnreg_ignored",
    "sites_by_line",
    "spills",
    "summary",
    "wait_sites",
    "Toolchain",
    "ToolchainNotFound",
    "find_toolchain",
]
