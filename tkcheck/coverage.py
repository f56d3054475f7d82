"""What was modelled: per kernel, whether it was analysed, and how many of the synchronisation
operations in its code the model understood.

A "no findings" means something only next to this report: a kernel tkcheck did not analyse, or
whose barriers it could not account, is not proved clean. The census reads the kernel's code
itself (its body, the device functions it reaches by name, the user callbacks of a prototype
template), independent of the model: every call of a TK/CUDA synchronisation API and every
inline-asm statement with synchronisation PTX is one site; a site is modelled when the model has
an operation for it (of a kind the checks reason about). Everything else is an unknown, with
where and why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .findings import Location
from .model import ir

if TYPE_CHECKING:
    from .checks.analysis import Analysis

# The TK / CUDA calls that synchronise or complete asynchronously (knowledge/ops.py's sync part):
# mbarriers, TMA and bulk copies, MMAs and their commits and waits, block/group/cluster/named
# barriers, fences, TMEM waits.
SYNC_APIS = frozenset(
    {
        "init_semaphore",
        "invalidate_semaphore",
        "arrive",
        "arrive_and_wait",
        "wait",
        "careful_wait",
        "expect_bytes",
        "expect",
        "load_async",
        "store_async",
        "store_add_async",
        "store_min_async",
        "store_max_async",
        "store_commit_group",
        "store_async_wait",
        "store_async_read_wait",
        "load_async_wait",
        "__pipeline_memcpy_async",
        "__pipeline_commit",
        "__pipeline_wait_prior",
        "__syncthreads",
        "__syncthreads_or",
        "__syncthreads_and",
        "__syncthreads_count",
        "__syncwarp",
        "sync",
        # cooperative groups' cluster_group split barrier (cluster.sync() is `sync`)
        "barrier_arrive",
        "barrier_wait",
        "mma_AB",
        "mma_ABt",
        "mma_AtB",
        "mma_AtBt",
        "mm_AB",
        "mm_ABt",
        "mm_AtB",
        "mm_AtBt",
        "mma",
        "mm",
        "mma_async_wait",
        "mma_commit_group",
        "mma_fence",
        "commit",
        "tensor_commit",
        "tensor_before_thread_sync",
        "tensor_after_thread_sync",
        "tensor_load_wait",
        "tensor_store_wait",
        "__threadfence",
        "__threadfence_block",
        "__threadfence_system",
        "arrive_aligned",
        "wait_aligned",
        "__cluster_barrier_arrive",
        "__cluster_barrier_wait",
        "cp_async_bulk_wait_group",
        "fence_proxy_async",
        # programmatic dependent launch spelled with the CUDA runtime's device calls (the PTX
        # `griddepcontrol.wait` / `.launch_dependents` they are): PDL events (checks/pdl.py asks about them)
        "cudaGridDependencySynchronize",
        "cudaTriggerProgrammaticLaunchCompletion",
        # TK's multi-GPU counters (barrier_t): signal, signal_all, barrier_all (and its 4-argument wait)
        "signal",
        "signal_all",
        "barrier_all",
    }
    | frozenset(
        {
            # libcu++ (<cuda/barrier>, <cuda/pipeline>): the barrier's own methods (arrive, wait,
            # arrive_and_wait are above), the pipeline's, the async copies and the tx helpers
            "arrive_and_drop",
            "wait_parity",
            "try_wait",
            "try_wait_parity",
            "producer_acquire",
            "producer_commit",
            "consumer_wait",
            "consumer_wait_for",
            "consumer_wait_until",
            "consumer_release",
            "make_pipeline",
            "memcpy_async",
            "memcpy_async_tx",
            "pipeline_consumer_wait_prior",
            "pipeline_producer_commit",
            # cooperative groups' collective copies: cg::memcpy_async (above), cg::wait (above),
            # cg::wait_prior<N>
            "wait_prior",
            "barrier_arrive_tx",
            "barrier_expect_tx",
            "cp_async_bulk_global_to_shared",
            "cp_async_bulk_shared_to_global",
            "cp_async_bulk_tensor_1d_global_to_shared",
            "cp_async_bulk_tensor_2d_global_to_shared",
            "cp_async_bulk_tensor_3d_global_to_shared",
            "cp_async_bulk_tensor_4d_global_to_shared",
            "cp_async_bulk_tensor_5d_global_to_shared",
            "cp_async_bulk_tensor_1d_shared_to_global",
            "cp_async_bulk_tensor_2d_shared_to_global",
            "cp_async_bulk_tensor_3d_shared_to_global",
            "cp_async_bulk_tensor_4d_shared_to_global",
            "cp_async_bulk_tensor_5d_shared_to_global",
            "cp_async_bulk_commit_group",
            "cp_async_bulk_wait_group_read",
            "fence_proxy_async_shared_cta",
        }
    )
)
# the warp collectives of CUDA (knowledge/ops.WARP_COLLECTIVE_CALLS): each a site, modelled as a
# WARP_COLL event with its member mask
SYNC_APIS = SYNC_APIS | frozenset(
    {
        "__shfl_sync",
        "__shfl_up_sync",
        "__shfl_down_sync",
        "__shfl_xor_sync",
        "__ballot_sync",
        "__any_sync",
        "__all_sync",
        "__uni_sync",
        "__match_any_sync",
        "__match_all_sync",
        "__reduce_add_sync",
        "__reduce_min_sync",
        "__reduce_max_sync",
        "__reduce_and_sync",
        "__reduce_or_sync",
        "__reduce_xor_sync",
    }
)
# libcu++ calls whose base name alone is too common to count (`init`, `quit`): a site only when
# spelled with the qualifier (`cuda::init(&bar, n)`), unqualified on an address (`init(&bar, n)`,
# found by argument-dependent lookup) or as a method (`pipe.quit()`); and the
# `cuda::ptx::` wrappers of mbarrier / bulk-copy / fence PTX, each a site under its own name
_LIBCU_CALL = re.compile(
    r"(?:\bcuda\s*::\s*(init)|(?<![\w.:>])\s*\b(init)(?=\s*\(\s*&)|\.\s*(quit)|\bptx\s*::\s*((?:mbarrier|cp_async|fence|barrier_cluster|"
    r"cp_reduce_async|elect_sync|tensormap|griddepcontrol)\w*))\s*(?:<[^;(){}]*?>)?\s*\("
)
# libcu++ / C++ atomics spelled as objects (`cuda::atomic_ref<int, cuda::thread_scope_device> c(x);`,
# `cuda::std::atomic<int>`, `cuda::atomic_thread_fence(...)`): a site each, modelled when the walk
# made the object's calls events (frontend/walk_atomics.py, `KernelModel.atomic_sites`) or the
# fence one; otherwise "not modelled" -- an acquire / release the checks cannot see must show in
# the coverage, never make a kernel look fully modelled
_ATOMIC_OBJECT = re.compile(
    r"\b(?:cuda\s*::\s*(?:std\s*::\s*)?|std\s*::\s*)(atomic_ref|atomic|atomic_thread_fence|atomic_signal_fence)\b\s*[<(]"
)
# PTX that synchronises: an asm statement with any of these is one site
SYNC_PTX = re.compile(
    r"\b(mbarrier\.|cp\.async|cp\.reduce\.async|wgmma\.|tcgen05\.|bar\.sync|bar\.arrive|barrier\.|fence\.|membar\.|"
    r"griddepcontrol\.|red\.release|atom\.release|ld\.acquire|st\.release|st\.async|red\.async|mbarrier::|"
    # the tensor-map proxy: `tensormap.replace` / `tensormap.cp_fenceproxy` (and `fence.proxy.tensormap`, above)
    r"tensormap\.|"
    # warp collectives with a member mask
    r"shfl\.sync|vote\.sync|match\.(?:any|all)\.sync|redux\.sync|elect\.sync|bar\.warp\.sync)"
)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;(){}]*?>)?\s*\(")
_NOT_MODELLED_KINDS = {ir.CALL}


@dataclass
class Unknown:
    location: str  # file:row:col
    why: str


@dataclass
class KernelCoverage:
    file: str
    kernel: str  # with its template arguments
    analysed: bool
    reason: str | None  # why not analysed
    sync_ops: int
    sync_ops_modelled: int
    unknowns: list[Unknown] = field(default_factory=list)
    inconclusive: int = 0  # proofs that ran out of budget (counted by the checks)
    # barriers whose arrivals/bytes per phase, and waits whose due phase, the checks could not
    # establish: nothing is claimed about them (a finding needs a proof), and they are told here
    undecided: int = 0
    # shared scalars and global counters whose ordering (a write against the other warps' reads,
    # stores against the counter that publishes them) the happens-before engine could not decide
    memory_undecided: int = 0
    # the proof obligations the checks raise about this kernel (one per barrier account, per
    # wait's due phase, and its progress: no role blocks forever) and how many they decided
    obligations: int = 0
    obligations_decided: int = 0
    # what decided obligations assume that the kernel itself does not order (a lagging back
    # channel, a k loop that runs at least once): stated with the proof, in every format
    assumptions: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["unknowns"] = [asdict(u) for u in self.unknowns]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "KernelCoverage":
        return cls(**{**d, "unknowns": [Unknown(**u) for u in d.get("unknowns", [])]})

    @property
    def ratio(self) -> float | None:
        return None if self.sync_ops == 0 else self.sync_ops_modelled / self.sync_ops

    @property
    def decided_ratio(self) -> float | None:
        return None if self.obligations == 0 else self.obligations_decided / self.obligations


@dataclass(frozen=True)
class Site:
    file: str  # absolute
    shown: str  # as findings show it
    row: int
    col: int
    name: str  # the API's base name, or "asm"


class CodeIndex(Protocol):
    """What the census reads of the front end's ModelBuilder. Cursors are libclang's (untyped)."""

    @property
    def filename(self) -> str: ...  # the file as findings show it
    @property
    def abs_path(self) -> str: ...
    @property
    def functions(self) -> Mapping[str, object]: ...  # the user's device functions, by name
    def reachable_code(
        self, root: Any, exclude: Collection[Any] = ..., more_roots: Iterable[Any] = ..., dead: Collection[Any] = ...
    ) -> list[Any]: ...
    def user_method_names(self) -> Collection[str]: ...  # member functions (with bodies) of the user's classes


def census(
    builder: CodeIndex,
    root_cursor: Any,
    exclude: Collection[Any] = frozenset(),
    more_roots: Iterable[Any] = (),
    dead: Collection[Any] = (),
) -> list[Site]:
    """The synchronisation sites in the code of the kernel at `root_cursor` (see the docstring);
    `exclude`: declarations that are not this model's code (the other ops of an MK interpreter);
    `dead`: the model's code never run (functions only it names are not reached)."""
    from .frontend.lexer import blank_comments_and_strings
    from .frontend.walk_env import _text_for

    cursors = builder.reachable_code(root_cursor, exclude, more_roots, dead)
    out: dict[tuple[str, int, int], Site] = {}
    # the user's own functions and member functions (a pipeline class's `producer_acquire`, its
    # private static `wait`): the walk inlines them, their sync sites are the PTX / calls inside
    user_functions = set(builder.functions) | set(builder.user_method_names())
    for cur in cursors:
        ext = cur.extent
        if ext.start.file is None:
            continue
        fname = os.path.abspath(ext.start.file.name)
        src = _text_for(fname)
        if src is None:
            continue
        text = src.slice(ext.start.line, ext.start.column, ext.end.line, ext.end.column)
        shown = builder.filename if fname == builder.abs_path else ext.start.file.name
        base_line, base_col = ext.start.line, ext.start.column
        code = blank_comments_and_strings(text)
        code = _blank_inactive(code, base_line, cur.translation_unit, ext.start.file.name)
        for m in _CALL.finditer(code):
            name = m.group(1)
            if name not in SYNC_APIS or name in user_functions:
                continue
            row, col = _pos(text, m.start(1), base_line, base_col)
            out[(fname, row, col)] = Site(fname, shown, row, col, name)
        for m in _LIBCU_CALL.finditer(code):
            g = next(i for i in (1, 2, 3, 4) if m.group(i))
            if g == 2 and "init" in user_functions:
                continue  # the user's own `init(&x, ...)`
            name = m.group(g) if g < 4 else f"ptx::{m.group(g)}"
            row, col = _pos(text, m.start(g), base_line, base_col)
            out[(fname, row, col)] = Site(fname, shown, row, col, name)
        for m in _ATOMIC_OBJECT.finditer(code):
            row, col = _pos(text, m.start(1), base_line, base_col)
            out[(fname, row, col)] = Site(fname, shown, row, col, m.group(1))
        for m in re.finditer(r"\b(?:asm|__asm__)\s*(?:volatile|__volatile__)?\s*\(", code):
            end = code.find(";", m.end())
            stmt = text[m.start() : end if end >= 0 else len(text)]
            if SYNC_PTX.search(stmt):
                row, col = _pos(text, m.start(), base_line, base_col)
                out[(fname, row, col)] = Site(fname, shown, row, col, "asm")
    return sorted(out.values(), key=lambda s: (s.file, s.row, s.col))


def _blank_inactive(code: str, first_line: int, tu: Any, fname: str) -> str:
    """Blank the lines of a code slice that the preprocessor skipped (`#ifdef MK_DEBUG`), so their
    calls are not counted (the sites of code the walker proved dead are dropped by the caller,
    from `KernelModel.dead_code`)."""
    from .frontend.walk_env import _skipped_lines

    skipped = set(_skipped_lines(tu, fname))
    if not skipped:
        return code
    lines = code.split("\n")
    for i, ln in enumerate(lines):
        if first_line + i in skipped:
            lines[i] = " " * len(ln)
    return "\n".join(lines)


def _pos(text: str, i: int, line: int, col: int) -> tuple[int, int]:
    nl = text.count("\n", 0, i)
    if nl == 0:
        return line, col + i
    return line + nl, i - text.rfind("\n", 0, i)


def _modelled_rows(model: ir.KernelModel) -> dict[tuple[str, int], set[str]]:
    """(file, row) -> the base names of the modelled operations there."""
    rows: dict[tuple[str, int], set[str]] = {}
    # i7model: an asm statement with an instruction the model does not know on a barrier is no
    # modelled site, whatever else of it (a remote store's memory event) was modelled
    blind = {
        (os.path.abspath(op.location.filename), op.location.row)
        for op in model.ops
        if op.unmodelled_barrier_use and op.asm is not None
    }
    # a raw tensor copy through a map in global memory: its descriptor's order in the tensormap
    # proxy is not modelled (walk_asm), so its asm site is not a modelled one
    blind |= {
        (os.path.abspath(op.location.filename), op.location.row)
        for op in model.ops
        if op.asm is not None
        and (
            (op.transfer is not None and op.transfer.map_unordered)
            # an aligned warp instruction modelled as a collective only (tensormap.cp_fenceproxy)
            or (op.warp_coll is not None and op.warp_coll.effect_unmodelled)
        )
    }
    for op in model.ops:
        if op.kind in _NOT_MODELLED_KINDS or op.barrier_unknown is not None or op.unmodelled_barrier_use:
            continue
        if (os.path.abspath(op.location.filename), op.location.row) in blind:
            continue
        if _memory_event_only(op):
            continue  # a load, store or spin head the census does not count: it models no sync site on its row
        # the census matches call sites by their spelled base name; an asm site by any op on its row
        base = op.api.split("::")[-1].split("<")[0]
        loc = op.location
        rows.setdefault((os.path.abspath(loc.filename), loc.row), set()).add(base)
        # a multi-line call: the op's extent covers the rows after its first
        for r in range(loc.row + 1, (loc.end_row or loc.row) + 1):
            rows.setdefault((os.path.abspath(loc.filename), r), set()).add(base)
    # libcu++ atomic objects whose calls the walk made events, relaxed fences (no event of their own)
    for fname, row, name in model.atomic_sites:
        rows.setdefault((os.path.abspath(fname), row), set()).add(name)
    return rows


def _memory_event_only(op: ir.Op) -> bool:
    """The generic memory events (plain loads and stores, shared scalars, spin-loop heads)."""
    if op.api == "tensormap.replace" and op.asm is not None:
        return False  # a patch of a tensor map (round 10): the sync site's whole effect is this write
    if op.kind in (ir.SPIN, ir.GLOBAL_STORE):
        return True
    if op.kind == ir.GLOBAL_LOAD and op.global_access is not None and op.global_access.form == "plain":
        return True
    # (an ordered access -- `ld.acquire` / `st.release` of PTX, an atomic_ref's -- synchronises)
    return op.kind == ir.SMEM_ACCESS and op.access is not None and op.access.via == "scalar" and op.access.order is None


def _matches(site: Site, names: set[str]) -> bool:
    if site.name in names:
        return True
    # TK spellings the front end records under another name (`expect` -> expect_bytes, ...)
    aliases = {
        "expect": {"expect_bytes"},
        # `mm<transpose::N, transpose::T>` is recorded as the form it dispatches to (mm_ABt)
        "mm": {"mma", "mm_AB", "mm_ABt", "mm_AtB", "mm_AtBt"},
        "mma": {"mma_AB", "mma_ABt", "mma_AtB", "mma_AtBt"},
        "careful_wait": {"wait"},
        "arrive_and_wait": {"arrive"},
        "commit": {"mma_commit", "tensor_commit", "commit"},
    }
    if site.name.startswith("ptx::") and site.name[len("ptx::") :] in names:
        return True  # a `cuda::ptx::` wrapper, recorded as `cuda::ptx::<name>` (frontend/walk_ptxns.py)
    return bool(aliases.get(site.name, set()) & names) or (site.name == "asm" and bool(names))


def for_model(
    builder: CodeIndex,
    model: ir.KernelModel,
    root_cursor: Any,
    exclude: Collection[Any] = frozenset(),
    more_roots: Iterable[Any] = (),
) -> KernelCoverage:
    # code the walker proved is never run in this model (a branch of a constant condition:
    # `if (config::CLUSTER_BLOCKS == 1) ... else ...`, `if constexpr`) is not its code
    sites = [
        s
        for s in census(builder, root_cursor, exclude, more_roots, tuple(model.dead_code))
        if not any(f == s.file and a <= (s.row, s.col) <= b for f, a, b in model.dead_code)
    ]
    # asm statements macros wrote (their text is the macro's, which the census does not read):
    # the walk's record of those that synchronise or that it could not read
    have = {(s.file, s.row, s.col) for s in sites}
    for loc in model.macro_asm:
        fname = os.path.abspath(loc.filename)
        made = [o for o in model.ops if o.location.filename == loc.filename and o.location.row == loc.row]
        if all(_memory_event_only(o) for o in made):
            continue  # a plain shared load or store in a macro: no sync site, as the census's regex
        if (fname, loc.row, loc.column) not in have:
            have.add((fname, loc.row, loc.column))
            sites.append(Site(fname, loc.filename, loc.row, loc.column, "asm"))
    rows = _modelled_rows(model)
    modelled = 0
    unknowns: list[Unknown] = []
    for s in sites:
        names = rows.get((s.file, s.row), set())
        if _matches(s, names):
            modelled += 1
        else:
            unknowns.append(Unknown(f"{s.shown}:{s.row}:{s.col}", f"{s.name}: not modelled"))
    seen = {u.location for u in unknowns}
    seen_texts = {(u.location, u.why) for u in unknowns}
    for loc, why in model.unmodelled:
        own = f"{loc.filename}:{loc.row}:{loc.column}"
        key, text = _user_place(loc, model, why)
        if own not in seen and (key, text) not in seen_texts:
            unknowns.append(Unknown(key, text))
            seen.add(own)
            seen_texts.add((key, text))
    return KernelCoverage(
        builder.filename,
        model.name,
        True,
        None,
        len(sites),
        modelled,
        unknowns,
        inconclusive=int(getattr(model, "inconclusive", 0) or 0),
    )


def _user_place(loc: Location, model: ir.KernelModel, why: str, callers: Iterable[Location] = ()) -> tuple[str, str]:
    """Where an unknown is told, as "file:row:col", and its text: a line of tkcheck's own
    protocol files (knowledge/protocols/*.cu) is no place a user can act on: the innermost
    caller in the user's code, else the kernel's own declaration (the user's template struct),
    naming the template's step in the text."""
    from .knowledge.protocols import in_protocol_file

    def in_protocols(loc: Location) -> bool:
        return in_protocol_file(loc.filename)

    if not in_protocols(loc):
        return f"{loc.filename}:{loc.row}:{loc.column}", why
    user = next((c for c in reversed(tuple(callers)) if not in_protocols(c)), None) or model.location
    return (
        f"{user.filename}:{user.row}:{user.column}",
        f"{why} (in tkcheck's model of the {model.kind} template, at its {os.path.basename(loc.filename)} step)",
    )


def stated_assumptions(an: Analysis) -> list[str]:
    """What the decided obligations of one kernel assume that the kernel itself does not order,
    one note each, at the user's line (a wait phase proved for a back channel whose signallers
    may run a phase ahead: `checks.phases._lagging_release`; a global access ordered after the
    PDL wait through mbarriers whose chain passes loops not proved to run: `checks.pdl`)."""
    from .checks import phases

    out = []
    for wp in phases.phases(an):
        if wp.status == "ok" and wp.stated:
            place, what = _user_place(wp.op.location, an.model, "decided with an assumption", wp.op.callers)
            out.append(f"{place}: wait on '{wp.barrier}' ({wp.role}) {what}: {wp.stated}")
    from .checks import pdl

    if pdl.conflicts(an).asked and pdl.assumed(an):
        acc = pdl.accesses(an)
        for aid, why in pdl.assumed(an).items():
            op = acc[aid][0]
            place, what = _user_place(op.location, an.model, "ordered after the grid dependency wait", op.callers)
            out.append(
                f"{place}: `{op.api}` {what} through the mbarrier waits before it, assuming {'; '.join(why)} "
                "(else it may run before the wait, against the prerequisite grid's accesses)"
            )
    return out


def add_undecided(entry: KernelCoverage | None, an: Analysis) -> None:
    """Count the proof obligations the contract checks raise about one analysed kernel, how many
    they decided, and describe the undecided ones: one per barrier account (arrivals and bytes
    per phase, `checks.completion`), one per wait's due phase (`checks.phases`), and one for the
    kernel's progress (`checks.protocol`'s exploration of its roles: explored or not) when it
    waits on a barrier, one per cp.async read (`checks.async_groups`), and one per shared
    scalar or published counter whose ordering `checks.happens_before` was asked about.
    `undecided` keeps counting the accounts, phases and cp.async reads alone."""
    if entry is None:
        return
    from .checks import async_groups, completion, phases, protocol

    n = 0
    for name, acc in sorted(completion.accounts(an).items()):
        if not (acc.inits or acc.waits):
            continue
        entry.obligations += 1
        if acc.unknown:
            n += 1
            entry.unknowns.append(
                Unknown(
                    *_user_place(
                        acc.barrier.location,
                        an.model,
                        f"barrier '{name}': arrivals/bytes per phase not established: {acc.unknown[0]}",
                    )
                )
            )
        else:
            entry.obligations_decided += 1
    for wp in phases.phases(an):
        entry.obligations += 1
        if wp.status == "unknown":
            n += 1
            entry.unknowns.append(
                Unknown(
                    *_user_place(
                        wp.op.location,
                        an.model,
                        f"wait on '{wp.barrier}': the phase it is due to see not established: "
                        f"{wp.reason or 'not recognised'}",
                        wp.op.callers,
                    )
                )
            )
        else:
            entry.obligations_decided += 1
    if any(op.kind == ir.MBAR_WAIT for op in an.model.ops):
        entry.obligations += 1
        ex = protocol.explore(an)
        if ex.status == "explored":
            entry.obligations_decided += 1
        else:
            loc = an.model.location
            entry.unknowns.append(
                Unknown(
                    f"{loc.filename}:{loc.row}:{loc.column}",
                    f"progress (no role blocked forever) not established: {ex.reason or 'roles not explored'}",
                )
            )
    seen = set()
    for ob in async_groups.obligations(an):
        entry.obligations += 1
        if ob.status != "undecided":
            entry.obligations_decided += 1
        loc = ob.read.location
        key = (loc.filename, loc.row, ob.reason)
        if ob.status != "undecided" or key in seen:
            continue
        seen.add(key)
        n += 1
        entry.unknowns.append(
            Unknown(f"{loc.filename}:{loc.row}:{loc.column}", f"cp.async data read here: not decided: {ob.reason}")
        )
    entry.undecided += n
    add_memory_undecided(entry, an)
    add_spin_undecided(entry, an)
    add_lock_undecided(entry, an)
    add_version_undecided(entry, an)
    add_bulk_store_undecided(entry, an)
    add_release_undecided(entry, an)
    add_descriptor_undecided(entry, an)
    add_warp_collective_undecided(entry, an)
    add_pdl_undecided(entry, an)
    add_grid_data_undecided(entry, an)
    add_grid_barrier_data_undecided(entry, an)
    add_peer_start_undecided(entry, an)


def add_peer_start_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per kernel with a remote shared-memory access (DSMEM, a remote arrive, a
    multicast) before anything that may tell its CTA that the peer runs (`checks.cluster_start`):
    decided when an early access is proved or every such access was evaluated; otherwise listed
    at the first one not evaluated, with why."""
    from .checks import cluster_start

    ps = cluster_start.peer_start(an)
    if not ps.asked:
        return
    entry.obligations += 1
    if not ps.undecided:
        entry.obligations_decided += 1
        return
    op, why = ps.undecided[0]
    entry.unknowns.append(
        Unknown(
            *_user_place(
                op.location,
                an.model,
                f"`{op.api}` touches a peer CTA's shared memory before any cluster barrier: whether that CTA "
                f"has started not established: {why}",
                op.callers,
            )
        )
    )


def add_grid_barrier_data_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One undecided obligation per grid barrier whose conditions read global data that another
    block may write at the same time (`wide_barriers.data_undecided`): whether every block
    reaches it as often is not established."""
    from .checks import wide_barriers

    for site, _ld, why in wide_barriers.data_undecided(an):
        entry.obligations += 1
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    site.location,
                    an.model,
                    f"grid barrier `{site.api}`: reached as often by every block not established: {why}",
                    site.callers,
                )
            )
        )


def add_grid_data_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per global location whose accesses by two blocks the grid-barrier query
    asked (`checks.grid_data`): decided unless a pair on it is undecided (and no race on it);
    an undecided one is listed once per location with its reason, at the later access."""
    from .checks import grid_data

    facts = grid_data.grid_data(an)
    raced = {r.base for r in facts.races}
    entry.obligations += len(facts.asked)
    open_ = {}
    for a, b, why in facts.undecided:
        ga = a.global_access
        base = ga.base if ga is not None else None
        if base is None or base in raced or base in open_:
            continue
        open_[base] = (a, b, why)
    entry.obligations_decided += len(facts.asked - set(open_))
    for base, (a, b, why) in sorted(open_.items()):
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    b.location,
                    an.model,
                    f"global data `{base}`: accesses by two blocks (lines {a.location.row} and {b.location.row}) "
                    f"not proved ordered by a grid barrier or racing: {why}",
                    b.callers,
                )
            )
        )


def add_warp_collective_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per warp-collective instruction the kernel uses (`checks.warp_collectives`:
    does every lane named by a member mask execute the collective as often as the lanes that do?),
    decided unless a site of it was left undecided, listed with its reason."""
    from .checks import warp_collectives

    facts = warp_collectives.collectives(an)
    entry.obligations += facts.asked
    entry.obligations_decided += facts.asked - len({u.instr for u in facts.undecided})
    for u in facts.undecided:
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    u.site.location,
                    an.model,
                    f"warp collective {u.instr}: whether every lane named by its member mask executes it is not "
                    f"decided: {u.why}",
                    u.site.callers,
                )
            )
        )


def add_pdl_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per kernel with a PDL op or launched with programmatic stream
    serialisation (`checks.pdl`): are its global accesses that conflict with a grid still running
    ordered after its `griddepcontrol.wait`? Decided when every such pair was decided (a race or
    ordered); undecided with the first reason (a launch chain not in the file, a buffer not
    followed, an access not proved before or after the wait)."""
    from .checks import pdl

    facts = pdl.conflicts(an)
    if not facts.asked:
        return
    entry.obligations += 1
    if not facts.undecided:
        entry.obligations_decided += 1
        return
    loc = an.model.location
    entry.unknowns.append(
        Unknown(
            f"{loc.filename}:{loc.row}:{loc.column}",
            f"grid dependency (PDL): global accesses against the prerequisite grid not decided: {facts.undecided[0]}",
        )
    )


def add_descriptor_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per shared-memory descriptor operand of an MMA in a kernel that carves
    stage regions by hand (`checks.descriptors`): which stage it reads, so that a refill of that
    stage under the MMA in flight is asked; undecided when its start address falls in none."""
    from .checks import descriptors

    unresolved = descriptors.unresolved_descriptors(an)
    entry.obligations += descriptors.asked_descriptors(an)
    entry.obligations_decided += descriptors.asked_descriptors(an) - len(unresolved)
    for op, role in unresolved:
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    op.location,
                    an.model,
                    f"`{op.api}` reads its {role.upper()} operand through a shared-memory descriptor whose "
                    "start address lies in no stage region the copies fill (bounds not established): "
                    "a refill of it in flight is not asked",
                    op.callers,
                )
            )
        )


def add_release_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per release arrive and buffer it hands back that the release engine
    asked about (`checks.releases`: is the released element read after the arrive?), decided
    unless a read of it was left undecided, listed with its reason."""
    from .checks import releases

    facts = releases.reads_after_release(an)
    undecided = {(id(a), r.buffer.name): (a, r, why) for a, r, why in facts.undecided if r.buffer is not None}
    entry.obligations += len(facts.asked)
    entry.obligations_decided += len(facts.asked - set(undecided))
    for a, r, why in undecided.values():
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    r.location,
                    an.model,
                    f"read of '{r.buffer}' after `{a.api}` on '{a.barrier}' released it: not proved before or "
                    f"after the refill: {why}",
                    r.callers,
                )
            )
        )


def _source(st: ir.Op) -> str:
    return f"from '{st.buffer}'" if st.buffer is not None else f"`{st.api}`"


def add_bulk_store_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """Two obligations per TMA store the bulk-store engine asks about (`checks.bulk_stores`):
    its source's next write (covered by a read wait of the storing thread or not), when the
    store's path reaches one, and its thread's exit (the store waited for before it or not);
    an undecided one is listed with its reason."""
    from .checks import bulk_stores

    seen: set = set()
    for ru in bulk_stores.reuses(an):
        entry.obligations += 1
        if ru.status != "undecided":
            entry.obligations_decided += 1
            continue
        at = ru.write if ru.write is not None else ru.store
        key = (at.location.filename, at.location.row, at.location.column, "reuse")
        if key in seen:
            continue
        seen.add(key)
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    at.location,
                    an.model,
                    f"TMA store {_source(ru.store)}: whether a read wait covers it before this write "
                    f"not established: {ru.why}",
                    at.callers,
                )
            )
        )
    for fl in bulk_stores.exits(an):
        entry.obligations += 1
        if fl.status != "undecided":
            entry.obligations_decided += 1
            continue
        st = fl.store
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    st.location,
                    an.model,
                    f"TMA store {_source(st)}: waited for before its thread exits not established: {fl.why}",
                    st.callers,
                )
            )
        )


def add_spin_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per spin loop the progress engine asked about (`checks.protocol.spin_waits`:
    every spin whose progress no other question owns): decided when it proved the spin never
    ends or always ends, else listed with why the argument did not settle it."""
    from .checks import protocol

    facts = protocol.spin_waits(an)
    decided = (
        len(facts.never)
        + len(facts.own_store)
        + len(facts.counter_hangs)
        + len(facts.proved)
        + len(facts.unreached)
        + len(facts.hoisted)
    )
    entry.obligations += decided + len(facts.undecided)
    entry.obligations_decided += decided
    for sp, why in facts.undecided:
        loc = sp.location
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    loc,
                    an.model,
                    f"spin loop: that every thread running it leaves it not established: {why}",
                    sp.callers,
                )
            )
        )


def add_lock_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per spin on a read-modify-write (`checks.locks`): decided when it was read
    as a lock whose progress is settled (freed by its first release, or never freed), else listed
    with why. (Which data a lock protects is a memory obligation: add_memory_undecided.)"""
    from .checks import locks

    facts = locks.locks(an)
    decided = len(facts.freed) + len(facts.never_freed)
    entry.obligations += decided + len(facts.undecided)
    entry.obligations_decided += decided
    for sp, why in facts.undecided:
        entry.unknowns.append(Unknown(*_user_place(sp.location, an.model, why, sp.callers)))


def add_version_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One obligation per read validated by a version word (`checks.versions`: are the reader's
    data loads ordered against the writer's stores by the version protocol?): decided unless its
    order was left undecided, listed with why."""
    from .checks import versions

    facts = versions.versions(an)
    open_ = {id(l1) for l1, _ in facts.undecided}
    entry.obligations += len(facts.reads) + sum(
        1 for l1, _ in facts.undecided if all(r.first is not l1 for r in facts.reads)
    )
    entry.obligations_decided += sum(1 for r in facts.reads if id(r.first) not in open_)
    for l1, why in facts.undecided:
        entry.unknowns.append(
            Unknown(
                *_user_place(
                    l1.location, an.model, f"read validated by a version word: order not established: {why}", l1.callers
                )
            )
        )


def add_memory_undecided(entry: KernelCoverage, an: Analysis) -> None:
    """One entry per shared location, and per global signal, with a pair the happens-before
    engine left undecided (and no race found on it)."""
    from .checks import happens_before

    facts = happens_before.memory(an)
    raced = {r.first.buffer.name for r in facts.races if r.first.buffer is not None}
    published = {id(p.signal) for p in facts.publications} | {id(a.observe) for a in facts.acquisitions}
    seen: set = set()
    # one obligation per location whose ordering was asked: decided unless a pair on it is
    # listed below as undecided
    entry.obligations += len(facts.examined)
    entry.obligations_decided += len(facts.examined)
    for a, b, why in facts.undecided:
        key: Any
        if a.kind == ir.UNKNOWN_ACCESS and a.buffer is not None:
            # an access through a pointer whose target is not followed: one obligation per site
            key = ("pointer", a.location.filename, a.location.row, a.location.column)
            what = f"{a.api}: its target is not known, no ordering asked of it"
        elif a.kind == ir.SMEM_ACCESS and a.buffer is not None:
            key = ("shared", a.buffer.name)
            if a.buffer.name in raced:
                continue
            what = f"shared scalar '{a.buffer.name}': a write and another thread's access not proved ordered or racing"
        elif a is b and (ga := a.global_access) is not None and ("lock", ga.base, ga.where) in facts.examined:
            # a word of global data in a kernel with a spin lock (checks/locks.py)
            key = ("lock", ga.base, ga.where)
            what = f"global data `{ga.text}` and the kernel's spin lock: that every access is held by it, or races, not established"
        else:
            sig = b if b.kind == ir.GLOBAL_SIGNAL else a
            key = ("global", id(sig))
            if id(sig) in published:
                continue
            what = f"global memory and the counter `{sig.api}`: release / acquire ordering not established"
        if key in seen:
            continue
        seen.add(key)
        loc = a.location
        entry.unknowns.append(Unknown(f"{loc.filename}:{loc.row}:{loc.column}", f"{what}: {why}"))
        entry.memory_undecided += 1
        if key in facts.examined:
            entry.obligations_decided -= 1
        else:
            entry.obligations += 1  # a pair asked outside the examined locations (an acquire side)
    if an.threads.n is None:
        _add_unknown_block(entry, an, facts, seen)


def _add_unknown_block(entry: KernelCoverage, an: Analysis, facts: Any, seen: set) -> None:
    """With the block size unknown, no thread set is computed and no pair of threads on a shared
    location is asked: one undecided obligation per shared location the kernel writes and
    accesses again, never a silent pass."""
    why = (
        f"the block's shape is not known (the kernel reads `{an.model.reads_yz_without_shape}`; "
        "`__launch_bounds__` counts threads only, and no launch with a constant block is in the "
        "translation unit)"
        if an.model.reads_yz_without_shape
        else "the block size is not known (no `__launch_bounds__`, and no launch with a constant block "
        "in the translation unit)"
    )
    accessed: dict[str, list[ir.Op]] = {}
    for o in an.model.ops:
        if o.kind == ir.SMEM_ACCESS and o.buffer is not None:
            accessed.setdefault(o.buffer.name, []).append(o)
    for name, ops in sorted(accessed.items()):
        writes = [o for o in ops if o.access_mode == "write"]
        key = ("shared", name)
        if not writes or len(ops) < 2 or key in seen or key in facts.examined:
            continue
        seen.add(key)
        loc = writes[0].location
        entry.unknowns.append(
            Unknown(
                f"{loc.filename}:{loc.row}:{loc.column}",
                f"shared '{name}': a write and other threads' accesses not asked: {why}",
            )
        )
        entry.memory_undecided += 1
        entry.obligations += 1


def not_analysed(
    builder: CodeIndex, name: str, root_cursor: Any, reason: str, loc: Location | None = None
) -> KernelCoverage:
    sites = census(builder, root_cursor) if root_cursor is not None else []
    where = f"{loc.filename}:{loc.row}:{loc.column}" if loc is not None else builder.filename
    return KernelCoverage(builder.filename, name, False, reason, len(sites), 0, [Unknown(where, reason)])


# ----------------------------------------------------------------- summaries


def summary(entries: list[KernelCoverage]) -> dict[str, Any]:
    analysed = [e for e in entries if e.analysed]
    ops = sum(e.sync_ops for e in analysed)
    mod = sum(e.sync_ops_modelled for e in analysed)
    reasons: dict[str, int] = {}
    for e in entries:
        if not e.analysed:
            key = _reason_kind(e.reason or "")
            reasons[key] = reasons.get(key, 0) + 1
    obl = sum(e.obligations for e in analysed)
    dec = sum(e.obligations_decided for e in analysed)
    return {
        "obligations_decided_pct": round(100.0 * dec / obl, 1) if obl else None,
        "obligations": obl,
        "obligations_decided": dec,
        "kernels": len(entries),
        "analysed": len(analysed),
        "not_analysed": len(entries) - len(analysed),
        "sync_ops": ops,
        "sync_ops_modelled": mod,
        "sync_ops_modelled_pct": round(100.0 * mod / ops, 1) if ops else None,
        "not_analysed_by_reason": dict(sorted(reasons.items())),
        "inconclusive": sum(e.inconclusive for e in entries),
        "undecided": sum(e.undecided for e in entries),
        "memory_undecided": sum(e.memory_undecided for e in entries),
    }


def _reason_kind(reason: str) -> str:
    r = reason.split(":")[0].strip()
    return r if len(r) <= 60 else r[:57] + "..."


def summary_line(entries: list[KernelCoverage]) -> str:
    """ "3 kernels analysed (92% of 120 proof obligations decided; 96% of sync ops modelled); 1 not
    analysed: template never instantiated": the decided share first."""
    s = summary(entries)
    if not entries:
        return "no kernels found"
    parts = [f"{s['analysed']} kernel{'s' if s['analysed'] != 1 else ''} analysed"]
    if s["analysed"]:
        inner = []
        if s["obligations"]:
            inner.append(
                f"{s['obligations_decided_pct']:g}% of {s['obligations']} proof obligation"
                f"{'s' if s['obligations'] != 1 else ''} decided"
            )
        pct = s["sync_ops_modelled_pct"]
        inner.append(f"{pct:g}% of sync ops modelled" if pct is not None else "no sync ops")
        if s["undecided"]:
            inner.append(f"{s['undecided']} barrier or wait{'s' if s['undecided'] != 1 else ''} undecided")
        if s["memory_undecided"]:
            m = s["memory_undecided"]
            inner.append(f"{m} memory ordering{'s' if m != 1 else ''} undecided")
        parts[0] += f" ({'; '.join(inner)})"
    line = parts[0]
    if s["not_analysed"]:
        why = ", ".join(f"{k}" + (f" ({v})" if v > 1 else "") for k, v in s["not_analysed_by_reason"].items())
        line += f"; {s['not_analysed']} not analysed: {why}"
    if s["inconclusive"]:
        line += f"; {s['inconclusive']} proof{'s' if s['inconclusive'] != 1 else ''} inconclusive"
    return line


def below(entries: list[KernelCoverage], pct: float) -> list[KernelCoverage]:
    """Kernels under a coverage requirement: not analysed, or fewer of their proof obligations
    decided than pct %, or fewer of their sync ops modelled than pct % (an op not modelled may
    raise obligations nobody counted)."""
    out: list[KernelCoverage] = []
    for e in entries:
        if not e.analysed or short_of(e, pct) is not None:
            out.append(e)
    return out


def short_of(e: KernelCoverage, pct: float) -> str | None:
    """Which share of an analysed kernel is under pct %: "obligations", "sync_ops" or None."""
    if e.obligations and 100.0 * e.obligations_decided / e.obligations < pct:
        return "obligations"
    if e.sync_ops and 100.0 * e.sync_ops_modelled / e.sync_ops < pct:
        return "sync_ops"
    return None
