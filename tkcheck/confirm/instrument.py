"""Source-level instrumentation of a kernel copy (never the user's file).

`instrument(text, filename, plan)` returns an instrumented copy (`Instrumented.text`) whose first
line includes a generated header (`Instrumented.prelude`, written beside the copy as
PRELUDE_NAME by `Instrumented.write`), so that every helper is declared before any code or
`#include` of the file, whatever their order (a harness with `main` included after the kernel);
`#line` keeps the user's line numbers. What the copy does:

* watchdog: every mbarrier `wait(bar, parity)` call site becomes
  `::tkcheck_wd_wait(&(bar), parity, site, ...)`, which spins on
  `mbarrier.try_wait.parity` for a bounded time (TKCHECK_WD_MS, default 2000 ms
  of %globaltimer), then prints
  `TKCHECK_WATCHDOG site=<id> <file>:<line> barrier=<name> parity=<p> block=<b> warp=<w> ...`,
  keeps trying for a grace period so that other stuck waits report too, and traps; records have
  one budget per kind (watchdog, poison, NaN rows, order: TKCHECK_PER_KIND) and at most
  TKCHECK_PER_SITE per site and kind, so a consumer wait stuck in every block cannot crowd out
  the one producer wait, nor poison records the NaN rows;
* phase log: `arrive` / `expect` / `wait` events of block 0 (site, stage,
  parity, the barrier's current phase parity, warp) go into a device ring
  buffer; the first watchdog record dumps its last 32 events as
  `TKCHECK_PHASE` lines;
* stage poisoning: before each `tma::expect*` on a barrier that TMA loads
  complete on, the stage's buffers (the loads' destinations) are filled with
  0xFF bytes (NaN in bf16/half/float/fp8e4m3) followed by
  `fence.proxy.async.shared::cta`, so that a consumer reading the stage before
  its bytes landed reads NaN; after each consumer wait on such a barrier, the
  same buffers are scanned and poisoned 16-byte words reported as
  `TKCHECK_POISON` (a stale/early read caught in the act);
* NaN rows: before each `tma::store_async(dst, tile, ...)`, the tile's rows
  holding NaN are counted and reported as `TKCHECK_NAN` (the stripe); before each
  `warp::store` / `warpgroup::store` of a register tile (an accumulator written to memory), each
  lane checks its fragment and the warp reports the rows holding NaN (a no-op for other kinds).

Template-owned waits (`prototype::lcf` / `lcsf`) live in TK's headers, not in
the user's file: `instrument_template_dir` rewrites the `wait(` calls of a
*copy* of TK's prototype folder in the temporary tree the same way.

The rewriting is lexical over the user's code (comments and strings skipped);
every call is an expression statement in TK code, so each edit is a comma
expression in place of the call, on the call's own line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .widen import Widening

RECORD_RE = re.compile(r"TKCHECK_(WATCHDOG|POISON|NAN|PHASE|WATCHDOG_LATE|ORDER)\b(.*)")


@dataclass
class Call:
    start: int  # offset of the callee's first character (qualifier included)
    end: int  # offset after the closing parenthesis
    callee: str  # as spelled, qualifier included
    args: list[str]
    row: int


@dataclass
class Site:
    id: int
    kind: str  # wait | arrive | expect | store | twait (template wait)
    file: str
    line: int
    barrier: str  # as spelled
    detail: str = ""

    def describe(self) -> str:
        return f"{self.kind} {self.barrier} at {self.file}:{self.line}"


@dataclass
class Plan:
    """What to put in. Everything on by default; `for_findings` narrows it."""

    watchdog: bool = True
    phase_log: bool = True
    poison: bool = True
    nan_rows: bool = True
    watchdog_ms: int = 2000
    grace_ms: int = 300
    widening: Widening | None = None  # race-widening delays / poison at release
    init_probe: bool = False  # use before init: report waits that start before the (delayed) first init
    init_probe_rows: tuple[int, ...] = ()  # ... at the waits on these lines of the user's file


PRELUDE_NAME = "tkcheck_prelude.cuh"


@dataclass
class Instrumented:
    text: str  # the copy of the user's file; its first line includes PRELUDE_NAME
    sites: list[Site] = field(default_factory=list)
    poisoned: dict[str, list[str]] = field(default_factory=dict)  # barrier base -> buffers
    notes: list[str] = field(default_factory=list)
    prelude: str = ""  # the text of PRELUDE_NAME (the device helpers and the site table)

    def write(self, folder: Path, name: str) -> Path:
        """Write the copy as `folder/name` and its prelude beside it; returns the copy's path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / PRELUDE_NAME).write_text(self.prelude, encoding="utf-8")
        dst = folder / name
        dst.write_text(self.text, encoding="utf-8")
        return dst

    def site(self, sid: int) -> Site | None:
        return next((s for s in self.sites if s.id == sid), None)


# ------------------------------------------------------------------ lexing


def _code_mask(text: str) -> list[bool]:
    """True for characters that are code (not comment, string, char literal, preprocessor line)."""
    n = len(text)
    mask = [True] * n
    i = 0
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            for k in range(i, j):
                mask[k] = False
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                mask[k] = False
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                mask[k] = False
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            for k in range(i, j):
                mask[k] = False
            i = j
        else:
            i += 1
    return mask


def _split_args(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """Top-level comma split of the argument list starting at `open_paren` ('(').

    Returns (args, offset after ')') or None when unbalanced.
    """
    depth = 0
    args: list[str] = []
    cur = open_paren + 1
    i = open_paren
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
            depth += 1
        elif c in ")]}":
            if not stack or stack[-1] != c:
                return None
            stack.pop()
            depth -= 1
            if depth == 0:
                last = text[cur:i].strip()
                if last or args:
                    args.append(last)
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[cur:i].strip())
            cur = i + 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j
        i += 1
    return None


_SYNC_RE = re.compile(r"(?<![\w.>])(__syncthreads|(?:warpgroup|group\s*<\s*(\d+)\s*>)\s*::\s*sync)\s*\(")
_CALL_RE = re.compile(
    r"(?<![\w.>])((?:(?:kittens|tma|warpgroup|warp|group<\s*\d+\s*>)\s*::\s*)*)"
    r"(wait|arrive|expect_bytes|expect|load_async|store_async)\s*\("
)


def find_calls(text: str) -> list[Call]:
    mask = _code_mask(text)
    out = []
    for m in _CALL_RE.finditer(text):
        if not mask[m.start(2)]:
            continue
        qual = re.sub(r"\s+", "", m.group(1))
        name = m.group(2)
        # member calls (x.wait(...)) and other namespaces are excluded by the lookbehind
        if name in ("expect", "expect_bytes", "load_async", "store_async") and "tma::" not in qual:
            continue
        if name in ("wait", "arrive") and qual not in ("", "kittens::"):
            continue
        sp = _split_args(text, m.end() - 1)
        if sp is None:
            continue
        args, end = sp
        # a declaration or definition (`void wait(semaphore& s, int p) {`) is not a call
        before = text[max(0, m.start() - 40) : m.start()]
        if re.search(r"(void|inline|static|auto)\s*$", before):
            continue
        out.append(Call(m.start(), end, qual + name, args, text.count("\n", 0, m.start()) + 1))
    return out


_REG_STORE_RE = re.compile(r"(?<![\w.>])(?:kittens\s*::\s*)?(?:warpgroup|warp|group\s*<\s*\d+\s*>)\s*::\s*store\s*\(")


def find_register_stores(text: str) -> list[Call]:
    """`warp::store(dst, src[, coord])` / `warpgroup::store(...)` calls: `src` may be a register tile
    (the NaN scan is a no-op for other kinds, decided at compile time)."""
    mask = _code_mask(text)
    out = []
    for m in _REG_STORE_RE.finditer(text):
        if not mask[m.start()]:
            continue
        sp = _split_args(text, m.end() - 1)
        if sp is None or len(sp[0]) < 2:
            continue
        before = text[max(0, m.start() - 40) : m.start()]
        if re.search(r"(void|inline|static|auto)\s*$", before):
            continue
        out.append(Call(m.start(), sp[1], m.group(0).rstrip("( "), sp[0], text.count("\n", 0, m.start()) + 1))
    return out


_INDEXED = re.compile(r"^\s*(.+?)\s*\[\s*([^\[\]]+?)\s*\]\s*$")


def _base_index(expr: str) -> tuple[str, str | None]:
    m = _INDEXED.match(expr)
    if not m:
        return expr.strip(), None
    return m.group(1), m.group(2)


def _c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _stage_expr(index: str | None) -> str:
    return "-1" if index is None else f"(int)({index})"


# ------------------------------------------------------------------ the device code

PRELUDE = r"""// ---- tkcheck confirm instrumentation (generated; this is a temporary copy) ----
#include <cstdio>
#include <cstdint>
#ifndef TKCHECK_WD_MS
#define TKCHECK_WD_MS %(wd_ms)d
#endif
#ifndef TKCHECK_GRACE_MS
#define TKCHECK_GRACE_MS %(grace_ms)d
#endif
#ifndef TKCHECK_PER_SITE
#define TKCHECK_PER_SITE 4
#endif
#ifndef TKCHECK_PER_KIND
#define TKCHECK_PER_KIND 32
#endif
// one record budget per kind (watchdog, poison, NaN rows, order) and at most TKCHECK_PER_SITE
// records per site: a stuck consumer wait reported by every block cannot crowd out the one
// producer wait, nor poison records the NaN rows at the store
__device__ unsigned int tkcheck_wd_count = 0;
__device__ unsigned int tkcheck_kind_count[4] = {0, 0, 0, 0};   // 0 watchdog 1 poison 2 nan 3 order
__device__ unsigned int tkcheck_site_count[4][512];
static __device__ __forceinline__ bool tkcheck_take(int kind, int site) {
    if (atomicAdd(&tkcheck_site_count[kind & 3][site & 511], 1u) >= (unsigned)TKCHECK_PER_SITE) return false;
    return atomicAdd(&tkcheck_kind_count[kind & 3], 1u) < (unsigned)TKCHECK_PER_KIND;
}
__device__ unsigned int tkcheck_dumped = 0;
__device__ unsigned int tkcheck_log_n = 0;
__device__ int4 tkcheck_log[1024];
__device__ const char* const tkcheck_site_desc[] = { %(sites)s };
static __device__ __forceinline__ unsigned long long tkcheck_now() {
    unsigned long long t; asm volatile("mov.u64 %%0, %%globaltimer;" : "=l"(t)); return t; }
static __device__ __forceinline__ int tkcheck_block() {
    return (int)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)); }
static __device__ __forceinline__ int tkcheck_tid() {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }
static __device__ __forceinline__ unsigned tkcheck_try(unsigned a, int parity) {
    unsigned done;
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%%1], %%2;\n selp.u32 %%0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(a), "r"(parity) : "memory");
    return done; }
static __device__ __forceinline__ int tkcheck_phase(const void* bar) {
    // parity of the barrier's current (incomplete) phase: phase 0 completed <=> current parity 1
    unsigned a = (unsigned)__cvta_generic_to_shared(bar), done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%%1], 0;\n selp.u32 %%0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(a) : "memory");
    return (int)done; }
static __device__ __noinline__ void tkcheck_event(int ev, int site, const void* bar, int stage, int parity) {
    if (tkcheck_block() != 0) return;
    unsigned m = __activemask();
    if ((threadIdx.x & 31) != (unsigned)(__ffs(m) - 1)) return;
    unsigned i = atomicAdd(&tkcheck_log_n, 1u);
    tkcheck_log[i & 1023] = make_int4((int)i, (site << 4) | ev, stage,
                                      (parity & 1) | (tkcheck_phase(bar) << 1) | ((tkcheck_tid() / 32) << 2));
}
static __device__ void tkcheck_dump_log() {
    if (atomicExch(&tkcheck_dumped, 1u) != 0u) return;
    unsigned n = *(volatile unsigned*)&tkcheck_log_n;
    unsigned lo = n > 32u ? n - 32u : 0u;
    for (unsigned i = lo; i < n; i++) {
        volatile int* q = (volatile int*)&tkcheck_log[i & 1023];
        int4 e = make_int4(q[0], q[1], q[2], q[3]);
        const char* evs[] = {"wait", "arrive", "expect", "?"};
        printf("TKCHECK_PHASE seq=%%d ev=%%s site=%%d %%s stage=%%d parity=%%d phase=%%d warp=%%d block=0\n",
               e.x, evs[(e.y & 15) & 3], e.y >> 4, tkcheck_site_desc[e.y >> 4], e.z, e.w & 1, (e.w >> 1) & 1, e.w >> 2);
    }
}
// use-before-init probe: per block, 1 while the initialising thread is held in front of
// its (delayed) init, 2 once the init ran; a wait that starts while it reads 1 used an
// uninitialised barrier. Blocks beyond the array are not probed.
__device__ int tkcheck_init_state[4096];
static __device__ __forceinline__ void tkcheck_init_mark(int v) {
    int b = tkcheck_block();
    if (b < 4096) { *(volatile int*)&tkcheck_init_state[b] = v; __threadfence(); }
}
static __device__ __forceinline__ void tkcheck_init_first() {
    // only the first time: the probe claims "no init has run yet" while this reads 1
    int b = tkcheck_block();
    if (b < 4096 && *(volatile int*)&tkcheck_init_state[b] == 0) tkcheck_init_mark(1);
}
static __device__ __forceinline__ bool tkcheck_init_probe(int site) {
#ifdef TKCHECK_INIT_PROBE
    // only at the uses the use-before-init findings name: a wait on a barrier another thread initialised
    // (and made visible) says nothing about this init
    if (!tkcheck_probe_site[site]) return false;
    int b = tkcheck_block();
    if (b < 4096 && *(volatile int*)&tkcheck_init_state[b] == 1) {
        unsigned m = __activemask();
        if ((threadIdx.x & 31) == (unsigned)(__ffs(m) - 1)) {
            if (tkcheck_take(3, site))
                printf("TKCHECK_ORDER site=%%d %%s kind=use-before-init block=%%d warp=%%d thread=%%d\n",
                       site, tkcheck_site_desc[site], b, tkcheck_tid() / 32, tkcheck_tid());
        }
        return true;
    }
#endif
    return false;
}
static __device__ __noinline__ void tkcheck_wd_wait(const void* bar, int parity, int site, int stage) {
    unsigned a = (unsigned)__cvta_generic_to_shared(bar);
    bool probed = tkcheck_init_probe(site);
    tkcheck_event(0, site, bar, stage, parity);
    if (tkcheck_try(a, parity)) return;
    unsigned m = __activemask();
    bool leader = (threadIdx.x & 31) == (unsigned)(__ffs(m) - 1);
    unsigned long long t0 = tkcheck_now();
    const unsigned long long limit = (unsigned long long)TKCHECK_WD_MS * 1000000ull;
    while (!tkcheck_try(a, parity)) {
        if (!probed) probed = tkcheck_init_probe(site);
        unsigned long long now = tkcheck_now();
        if (now - t0 > limit) {
            if (leader) {
                unsigned i = atomicAdd(&tkcheck_wd_count, 1u);
                if (tkcheck_take(0, site))
                    printf("TKCHECK_WATCHDOG site=%%d %%s parity=%%d stage=%%d phase=%%d block=%%d warp=%%d thread=%%d waited_ms=%%d\n",
                           site, tkcheck_site_desc[site], parity, stage, tkcheck_phase(bar), tkcheck_block(),
                           tkcheck_tid() / 32, tkcheck_tid(), (int)((now - t0) / 1000000ull));
                if (i == 0u) tkcheck_dump_log();
            }
            unsigned long long t1 = tkcheck_now();
            const unsigned long long grace = (unsigned long long)TKCHECK_GRACE_MS * 1000000ull;
            while (tkcheck_now() - t1 < grace) {
                if (tkcheck_try(a, parity)) {
                    if (leader) printf("TKCHECK_WATCHDOG_LATE site=%%d %%s block=%%d warp=%%d\n", site,
                                       tkcheck_site_desc[site], tkcheck_block(), tkcheck_tid() / 32);
                    return;
                }
            }
            __trap();
        }
    }
}
__device__ unsigned int tkcheck_bar_cnt[64 * 16][1024];
__device__ unsigned long long tkcheck_bar_warp[64][1024][32];   // per site, block, warp: use << 32 | lanes
static __device__ __noinline__ void tkcheck_bar(int site, int id, int warps) {
    // a bounded pre-count in front of a block/named barrier, one ticket per warp and use. A warp
    // may reach this point split in pieces (lane 0 back from an init branch after the others):
    // each piece ORs its lanes into the warp's word; a piece whose lanes are already there starts
    // the warp's next use. Only a use's first piece takes the ticket and watches; a use not
    // completed by `warps` warps within the limit is reported. Blocks from 1024 on are not watched.
    unsigned m = __activemask();
    if ((threadIdx.x & 31) != (unsigned)(__ffs(m) - 1)) { __syncwarp(m); return; }
    int b = tkcheck_block();
    if (b >= 1024 || warps <= 0) { __syncwarp(m); return; }
    unsigned long long* ws = &tkcheck_bar_warp[site & 63][b][(tkcheck_tid() / 32) & 31];
    unsigned long long old = *(volatile unsigned long long*)ws, seen;
    bool first;
    do {
        seen = old;
        unsigned lanes = (unsigned)seen;
        first = lanes == 0u || (lanes & m) != 0u;
        unsigned long long nw = first ? ((((seen >> 32) + 1ull) << 32) | m) : (seen | m);
        old = atomicCAS(ws, seen, nw);
    } while (old != seen);
    if (!first) { __syncwarp(m); return; }
    unsigned* c = &tkcheck_bar_cnt[(site & 63) * 16 + (id & 15)][b];
    unsigned t = atomicAdd(c, 1u);
    unsigned target = (t / (unsigned)warps + 1u) * (unsigned)warps;
    unsigned long long t0 = tkcheck_now();
    const unsigned long long limit = (unsigned long long)TKCHECK_WD_MS * 1000000ull;
    while ((int)(*(volatile unsigned*)c - target) < 0) {
        if (tkcheck_now() - t0 > limit) {
            unsigned i = atomicAdd(&tkcheck_wd_count, 1u);
            if (tkcheck_take(0, site))
                printf("TKCHECK_WATCHDOG site=%%d %%s bar_id=%%d parity=-1 stage=-1 phase=-1 block=%%d warp=%%d thread=%%d arrived_warps=%%d expected_warps=%%d\n",
                       site, tkcheck_site_desc[site], id, b, tkcheck_tid() / 32, tkcheck_tid(),
                       (int)(*(volatile unsigned*)c - (target - (unsigned)warps)), warps);
            if (i == 0u) tkcheck_dump_log();
            unsigned long long t1 = tkcheck_now();
            while (tkcheck_now() - t1 < (unsigned long long)TKCHECK_GRACE_MS * 1000000ull) {}
            __trap();
        }
    }
    __syncwarp(m);
}
static __device__ __forceinline__ void tkcheck_delay(long long cycles) {
    // race widening: a bounded spin (clock64 cycles of this SM). Inlined: a call between a wgmma and
    // its wait makes ptxas serialize the wgmma (C7510), which would hide the race being widened.
    // The "memory" clobbers keep the compiler from moving the delayed accesses across the spin.
    asm volatile("" ::: "memory");
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { __nanosleep(32); }
    asm volatile("" ::: "memory");
}
template <class T> static __device__ __forceinline__ void tkcheck_poison(T& t) {
    // last word first: an engine reading the tile front to back (TMA store, wgmma over k) meets
    // the poison soonest where it reads last
    uint4* p = reinterpret_cast<uint4*>(&t);
    const uint4 v = make_uint4(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu);
    for (int i = (int)(sizeof(T) / 16) - 1; i >= 0; i--) p[i] = v;
}
static __device__ __forceinline__ void tkcheck_poison_fence() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
template <class T> static __device__ __noinline__ void tkcheck_check(T& t, int site, const char* name, int stage) {
    unsigned m = __activemask();
    int lanes = __popc(m), rank = __popc(m & ((1u << (threadIdx.x & 31)) - 1u));
    const uint4* p = reinterpret_cast<const uint4*>(&t);
    int bad = 0, first = -1;
    for (int i = rank; i < (int)(sizeof(T) / 16); i += lanes) {
        uint4 v = p[i];
        if ((v.x & v.y & v.z & v.w) == 0xFFFFFFFFu) { bad++; if (first < 0) first = i; }
    }
    unsigned any = __ballot_sync(m, bad > 0);
    if (!any) return;
    for (int o = 16; o > 0; o >>= 1) bad += __shfl_xor_sync(m, bad, o);   // approximate when m is partial
    if ((threadIdx.x & 31) == (unsigned)(__ffs(m) - 1)) {
        if (tkcheck_take(1, site))
            printf("TKCHECK_POISON site=%%d %%s buffer=%%s stage=%%d block=%%d warp=%%d poisoned_16B=%%d of %%d\n",
                   site, tkcheck_site_desc[site], name, stage, tkcheck_block(), tkcheck_tid() / 32, bad,
                   (int)(sizeof(T) / 16));
    }
}
// NaN rows of a tile about to be stored (TMA store of a shared tile: one thread scans it)
template <class T> static __device__ __noinline__ void tkcheck_nan_rows(const T& t, int site, const char* name) {
    int n = 0, first = -1, last = -1;
    for (int r = 0; r < T::rows; r++) {
        bool bad = false;
        for (int c = 0; c < T::cols && !bad; c++) { float v = (float)t[{r, c}]; bad = (v != v); }
        if (bad) { n++; if (first < 0) first = r; last = r; }
    }
    if (n && tkcheck_take(2, site))
        printf("TKCHECK_NAN site=%%d %%s buffer=%%s block=%%d warp=%%d nan_rows=%%d of %%d first=%%d last=%%d\n",
               site, tkcheck_site_desc[site], name, tkcheck_block(), tkcheck_tid() / 32, n, (int)T::rows, first, last);
}
// NaN rows of a register tile about to be stored (warp/warpgroup::store of an accumulator): each
// lane checks its own fragment (TK's row layout: lane l holds rows l/4 and l/4+8 of each 16-row
// tile), the warp ORs the rows together. Inlined: no call, no stack copy of the tile. A tile of
// another kind (a shared tile stored to global) compiles to nothing.
template <class T> static __device__ __forceinline__ void tkcheck_nan_regs(const T& t, int site, const char* name) {
    if constexpr (requires { t.tiles[0][0].data[0].x; T::height; T::width; }) {
        constexpr int per = (int)(sizeof(t.tiles[0][0].data) / sizeof(t.tiles[0][0].data[0]));
        unsigned long long rows = 0ull;
        const int lane = (int)(threadIdx.x & 31);
        #pragma unroll
        for (int i = 0; i < T::height; i++) {
            #pragma unroll
            for (int j = 0; j < T::width; j++) {
                #pragma unroll
                for (int k = 0; k < per; k++) {
                    float a = (float)t.tiles[i][j].data[k].x, b = (float)t.tiles[i][j].data[k].y;
                    int r = 16 * i + lane / 4 + 8 * (k & 1);
                    if ((a != a || b != b) && r < 64) rows |= 1ull << r;
                }
            }
        }
        unsigned m = __activemask();
        for (int o = 16; o > 0; o >>= 1) rows |= __shfl_xor_sync(m, rows, o);
        if (rows && lane == __ffs(m) - 1 && tkcheck_take(2, site)) {
            int n = __popcll(rows), first = __ffsll((long long)rows) - 1, last = 63 - __clzll((long long)rows);
            printf("TKCHECK_NAN site=%%d %%s buffer=%%s block=%%d warp=%%d nan_rows=%%d of %%d first=%%d last=%%d\n",
                   site, tkcheck_site_desc[site], name, tkcheck_block(), tkcheck_tid() / 32, n,
                   T::height * 16 < 64 ? T::height * 16 : 64, first, last);
        }
    }
}
// ---- end of tkcheck prelude ----
"""


def _prelude(plan: Plan, sites: list[Site]) -> str:
    by_id = {s.id: s for s in sites}
    n = max(by_id, default=-1) + 1
    descs = (
        ", ".join(
            _c_str(f"{by_id[i].file}:{by_id[i].line} barrier={by_id[i].barrier}") if i in by_id else '""'
            for i in range(n)
        )
        or '""'
    )
    probe = ""
    if plan.init_probe:
        user = next((s.file for s in sites if s.id < TEMPLATE_FIRST_ID), None)
        marks = ", ".join(
            "1"
            if i in by_id
            and by_id[i].kind == "wait"
            and by_id[i].file == user
            and by_id[i].line in plan.init_probe_rows
            else "0"
            for i in range(max(n, 1))
        )
        probe = f"#define TKCHECK_INIT_PROBE 1\n__device__ const unsigned char tkcheck_probe_site[] = {{ {marks} }};\n"
    return "#pragma once\n" + probe + PRELUDE % {"wd_ms": plan.watchdog_ms, "grace_ms": plan.grace_ms, "sites": descs}


# ------------------------------------------------------------------ rewriting


def _subst_index(buf: str, load_index: str | None, index: str | None) -> str | None:
    """The buffer a load writes, with the load's stage variable replaced by `index`."""
    if load_index == index:
        return buf
    if load_index is None or index is None or not re.fullmatch(r"[A-Za-z_]\w*", load_index):
        return None
    return re.sub(rf"\b{re.escape(load_index)}\b", f"({index})", buf)


def _idents(expr: str) -> set[str]:
    """Identifiers of an expression, members (after . or ->) excluded."""
    return set(re.findall(r"(?<![\w.>])([A-Za-z_]\w*)", expr))


def _loop_vars(text: str) -> set[str]:
    return set(re.findall(r"\bfor\s*\(\s*(?:const\s+)?(?:int|unsigned|auto|size_t|uint32_t)\s+([A-Za-z_]\w*)", text))


def _loads_by_barrier(calls: list[Call]) -> dict[str, list[tuple[str, str | None]]]:
    out: dict[str, list[tuple[str, str | None]]] = {}
    for c in calls:
        if c.callee.endswith("load_async") and len(c.args) >= 4:
            base, idx = _base_index(c.args[-1])
            entry = (c.args[0], idx)
            if entry not in out.setdefault(base, []):
                out[base].append(entry)
    return out


def instrument(
    text: str, filename: str, plan: Plan | None = None, template_sites: list[Site] | None = None
) -> Instrumented:
    """The instrumented copy of `text` (the user's file named `filename`)."""
    plan = plan or Plan()
    name = Path(filename).name
    calls = find_calls(text)
    loads = _loads_by_barrier(calls)
    sites: list[Site] = []
    edits: list[tuple[int, int, str]] = []
    poisoned: dict[str, list[str]] = {}
    notes: list[str] = []
    if plan.widening is not None:
        # first in the list: at an offset shared with a load's poison prefix, the delay goes after it
        edits += _widening_edits(text, plan.widening, notes)
    for c in calls:
        short = c.callee.split("::")[-1]
        if short == "wait" and len(c.args) == 2 and plan.watchdog:
            base, idx = _base_index(c.args[0])
            s = Site(len(sites), "wait", name, c.row, c.args[0])
            sites.append(s)
            rep = f"::tkcheck_wd_wait(&({c.args[0]}), (int)({c.args[1]}), {s.id}, {_stage_expr(idx)})"
            checks = []
            if plan.poison and base in loads:
                for buf, lidx in loads[base]:
                    b = _subst_index(buf, lidx, idx)
                    if b is not None and _loop_vars(text) & (_idents(b) - _idents(c.args[0])):
                        b = None
                    if b is None:
                        notes.append(f"{name}:{c.row}: cannot name the stage of {buf} at this wait; not scanned")
                        continue
                    checks.append(f"::tkcheck_check({b}, {s.id}, {_c_str(b)}, {_stage_expr(idx)})")
            if checks:
                rep = "(" + ", ".join([rep] + checks) + ")"
            edits.append((c.start, c.end, rep))
        elif short == "arrive" and len(c.args) in (1, 2) and plan.phase_log:
            base, idx = _base_index(c.args[0])
            s = Site(len(sites), "arrive", name, c.row, c.args[0])
            sites.append(s)
            edits.append((c.start, c.start, f"::tkcheck_event(1, {s.id}, &({c.args[0]}), {_stage_expr(idx)}, -1), "))
        elif short in ("expect", "expect_bytes") and len(c.args) >= 2 and plan.phase_log:
            base, idx = _base_index(c.args[0])
            s = Site(len(sites), "expect", name, c.row, c.args[0])
            sites.append(s)
            edits.append((c.start, c.start, f"::tkcheck_event(2, {s.id}, &({c.args[0]}), {_stage_expr(idx)}, -1), "))
        elif short == "load_async" and len(c.args) >= 4 and plan.poison:
            # the slot is free when its refill is issued: poison it right before the load
            base, _ = _base_index(c.args[-1])
            edits.append((c.start, c.start, f"::tkcheck_poison({c.args[0]}), ::tkcheck_poison_fence(), "))
            poisoned.setdefault(base, [])
            if c.args[0] not in poisoned[base]:
                poisoned[base].append(c.args[0])
        elif short == "store_async" and len(c.args) >= 3 and plan.nan_rows:
            s = Site(len(sites), "store", name, c.row, c.args[1])
            sites.append(s)
            edits.append((c.start, c.start, f"::tkcheck_nan_rows({c.args[1]}, {s.id}, {_c_str(c.args[1])}), "))
    if plan.nan_rows:
        for c in find_register_stores(text):
            s = Site(len(sites), "store", name, c.row, c.args[1])
            sites.append(s)
            edits.append((c.start, c.start, f"::tkcheck_nan_regs({c.args[1]}, {s.id}, {_c_str(c.args[1])}), "))
    if plan.watchdog:
        mask = _code_mask(text)
        for m in _SYNC_RE.finditer(text):
            if not mask[m.start()]:
                continue
            sp = _split_args(text, m.end() - 1)
            if sp is None:
                continue
            args, _ = sp
            row = text.count("\n", 0, m.start()) + 1
            if m.group(1) == "__syncthreads":
                bid, warps = "0", "(int)((blockDim.x * blockDim.y * blockDim.z + 31) / 32)"
            else:
                if len(args) != 1:
                    continue
                bid, warps = args[0], ("4" if m.group(2) is None else m.group(2))
            s = Site(len(sites), "sync", name, row, m.group(1).replace(" ", ""))
            sites.append(s)
            edits.append((m.start(), m.start(), f"::tkcheck_bar({s.id}, (int)({bid}), {warps}), "))
    # template waits get ids after the user's sites
    all_sites = list(sites)
    for ts in template_sites or ():
        if ts.id < len(sites):
            raise ValueError("template site ids must follow the user's sites (use TEMPLATE_FIRST_ID)")
        all_sites.append(ts)
    out = text
    for start, end, rep in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + rep + out[end:]
    # the helpers live in a generated header that the copy includes on its first line, before any
    # code or #include of the file (a harness included after the kernel, a main in a header): the
    # copy's line numbers stay the user's through #line
    pre = _prelude(plan, all_sites)
    head = f'#include "{PRELUDE_NAME}"\n#line 1 "{name}"\n'
    return Instrumented(head + out, all_sites, poisoned, notes, prelude=pre)


_BLOCK_START = re.compile(r"(if|for|while|do|return|switch|else)\b|[{}]")


def _line_offsets(text: str) -> list[int]:
    offs = [0]
    for i, c in enumerate(text):
        if c == "\n":
            offs.append(i + 1)
    return offs


def _widening_edits(text: str, w: Widening, notes: list[str]) -> list[tuple[int, int, str]]:
    """Edits for a widen.Widening: delays in front of statements, poison after release calls."""
    mask = _code_mask(text)
    offs = _line_offsets(text)
    lines = text.split("\n")
    out: list[tuple[int, int, str]] = []
    for d in w.delays:
        if not 0 < d.line <= len(lines):
            continue
        ln = lines[d.line - 1]
        col = len(ln) - len(ln.lstrip())
        at = offs[d.line - 1] + col
        if col >= len(ln) or not mask[at]:
            notes.append(f"line {d.line}: no statement to delay; not widened")
            continue
        prev = next(
            (lines[r].split("//")[0].rstrip() for r in range(d.line - 2, -1, -1) if lines[r].split("//")[0].strip()), ""
        )
        if prev.endswith(")") or re.search(r"\b(else|do)$", prev):
            notes.append(f"line {d.line}: the statement is a body without braces; not widened")
            continue
        cond = d.cond or "true"
        act = f"::tkcheck_delay((long long)({d.cycles}))"
        if d.before:
            act = f"({d.before}, {act})"
        if _BLOCK_START.match(ln[col:]):
            rep = f"{{ if ({cond}) {act}; }} "
        else:
            rep = f"(({cond}) ? {act} : (void)0), "
        out.append((at, at, rep))
    for p in w.poisons:
        if not 0 < p.line <= len(lines):
            continue
        base = offs[p.line - 1]
        ln = lines[p.line - 1]
        m = None
        for m0 in re.finditer(
            rf"(?<![\w.>])((?:[A-Za-z_]\w*\s*(?:<[^<>()]*>)?\s*::\s*)*)(\w*{re.escape(p.anchor)}\w*)"
            rf"\s*(?:<[^<>()]*>)?\s*\(",
            ln,
        ):
            if mask[base + m0.start()]:
                m = m0
                break
        if m is None:
            notes.append(f"line {p.line}: no {p.anchor} call to poison after; not widened")
            continue
        sp = _split_args(text, base + m.end() - 1)
        if sp is None:
            continue
        start, end = base + m.start(), sp[1]
        out.append((start, start, "("))
        after = p.code or f"::tkcheck_poison({p.tile}), ::tkcheck_poison_fence()"
        out.append((end, end, f", {after})"))
    return out


def template_wait_sites(text: str, filename: str, first_id: int) -> tuple[str, list[Site]]:
    """Rewrite the `wait(` calls of a TK template header copy; returns (text, sites)."""
    name = Path(filename).name
    calls = [c for c in find_calls(text) if c.callee.split("::")[-1] == "wait" and len(c.args) == 2]
    sites = []
    out = text
    for c in sorted(calls, key=lambda c: c.start, reverse=True):
        sites.append((c, None))
    sites_out: list[Site] = []
    for k, c in enumerate(sorted(calls, key=lambda c: c.start)):
        sites_out.append(Site(first_id + k, "twait", name, c.row, c.args[0]))
    by_start = {c.start: s for c, s in zip(sorted(calls, key=lambda c: c.start), sites_out)}
    for c in sorted(calls, key=lambda c: c.start, reverse=True):
        s = by_start[c.start]
        _, idx = _base_index(c.args[0])
        out = (
            out[: c.start]
            + (f"::tkcheck_wd_wait(&({c.args[0]}), (int)({c.args[1]}), {s.id}, {_stage_expr(idx)})")
            + out[c.end :]
        )
    return out, sites_out


TEMPLATE_FILES = ("lcf/lcf.cuh", "lcsf/lcsf.cuh")


def instrument_template_dir(src: Path, dst: Path, first_id: int) -> list[Site]:
    """Copy TK's prototype folder `src` to `dst` (a temporary tree) with its template waits watched."""
    import shutil

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    sites: list[Site] = []
    for rel in TEMPLATE_FILES:
        p = dst / rel
        if not p.is_file():
            continue
        text, s = template_wait_sites(p.read_text(encoding="utf-8"), rel, first_id + len(sites))
        p.write_text(text, encoding="utf-8")
        sites += s
    return sites


TEMPLATE_FIRST_ID = 200


def uses_template(text: str) -> bool:
    """Does the kernel use TK's prototype templates (whose waits live in TK's headers)?"""
    mask = _code_mask(text)
    code = "".join(c if m else " " for c, m in zip(text, mask))
    return bool(
        re.search(r"#\s*include\s*[<\"]prototype\.cuh|\bprototype\s*::|\blc[fs]\w*\s*::", text)
        or re.search(r"\bprototype\s*::", code)
    )


# ------------------------------------------------------------------ records


@dataclass
class Record:
    kind: str  # WATCHDOG | POISON | NAN | PHASE | WATCHDOG_LATE | ORDER
    fields: dict[str, str]
    file: str | None
    line: int | None
    raw: str

    def get_int(self, key: str) -> int | None:
        try:
            return int(self.fields[key])
        except (KeyError, ValueError):
            return None


_FIELD_RE = re.compile(r"(\w+)=(\S+)")
_LOC_RE = re.compile(r"\s([\w./-]+\.(?:cu|cuh|cpp|h|hpp|cc)):(\d+)\b")


def parse_records(log: str) -> list[Record]:
    """The TKCHECK_* lines of a run's output (a hung run's log works too)."""
    out = []
    for line in log.splitlines():
        m = RECORD_RE.search(line)
        if not m:
            continue
        rest = m.group(2)
        loc = _LOC_RE.search(" " + rest)
        fields = dict(_FIELD_RE.findall(rest))
        out.append(
            Record(m.group(1), fields, loc.group(1) if loc else None, int(loc.group(2)) if loc else None, line.strip())
        )
    return out
