"""Opcode -> fact mapping: the one place that says what a SASS opcode means.

Spellings were read from nvdisasm output of small kernels (tests/sass_kernels/)
compiled with nvcc 13.0 for sm_90a and sm_100a.  The PTX each opcode came from:

| SASS opcode (as printed)                         | PTX source                                         | FactKind          | attrs |
|--------------------------------------------------|----------------------------------------------------|-------------------|-------|
| BAR.SYNC.DEFER_BLOCKING id[, count]              | bar.sync / barrier.sync / __syncthreads (id 0)     | BARRIER_SYNC      | barrier_id, thread_count (int when immediate) |
| BAR.ARV id, count                                | bar.arrive / barrier.arrive                        | BARRIER_ARRIVE    | barrier_id, thread_count |
| BAR.RED.{POPC,AND,OR}.DEFER_BLOCKING id, count, P | bar.red.*                                         | BARRIER_RED       | barrier_id, thread_count, op |
| UCGABAR_ARV / UCGABAR_WAIT                        | barrier.cluster.arrive / .wait                     | CLUSTER_BARRIER   | action ("arrive"/"wait") |
| SYNCS.EXCH.64 URZ, [bar], val                     | mbarrier.init                                      | MBARRIER_INIT     | address |
| SYNCS.ARRIVE.TRANS64 RZ, [bar], Rtx               | mbarrier.arrive.expect_tx                          | MBARRIER_ARRIVE   | arrivals=1, tx="expect" |
| SYNCS.ARRIVE.TRANS64[.RED].A1T0 RZ, [bar], RZ     | mbarrier.arrive (local or .release.cluster)        | MBARRIER_ARRIVE   | arrivals=1, tx=None |
| SYNCS.ARRIVE.TRANS64.RED.A0TR RZ, [bar], Rtx      | mbarrier.expect_tx                                 | MBARRIER_ARRIVE   | arrivals=0, tx="expect" |
| SYNCS.ARRIVE.TRANS64.RED.A0TX RZ, [bar], Rtx      | mbarrier.complete_tx                               | MBARRIER_ARRIVE   | arrivals=0, tx="complete" |
| SYNCS.PHASECHK.TRANS64.TRYWAIT P, [bar], Rparity  | mbarrier.try_wait.parity (and try_wait)            | MBARRIER_WAIT     | test_only=False, parity_operand |
| SYNCS.PHASECHK.TRANS64 P, [bar], Rparity          | mbarrier.test_wait.parity                          | MBARRIER_WAIT     | test_only=True |
| UTMALDG.{1..5}D[.IM2COL...] [smem], [tmap]        | cp.async.bulk.tensor ... global -> shared          | BULK_COPY         | direction="load", tensor=True, dims |
| UTMASTG.{n}D [smem], [tmap]                       | cp.async.bulk.tensor ... shared -> global          | BULK_COPY         | direction="store", tensor=True |
| UTMAPF / UTMAREDG                                 | cp.async.bulk.prefetch.tensor / cp.reduce.async.bulk.tensor | BULK_COPY | direction="prefetch"/"reduce" |
| UBLKCP.S.G [smem], [gmem], bytes                  | cp.async.bulk.shared::cluster.global (load)        | BULK_COPY         | direction="load", tensor=False |
| UBLKCP.G.S [gmem], [smem], bytes                  | cp.async.bulk.global.shared::cta (store)           | BULK_COPY         | direction="store" |
| UBLKCP.S.S                                        | cp.async.bulk.shared::cluster.shared::cta          | BULK_COPY         | direction="copy" |
| UBLKPF.L2 / UBLKRED.G.S.*                         | cp.async.bulk.prefetch.L2 / cp.reduce.async.bulk   | BULK_COPY         | direction="prefetch"/"reduce" |
| UTMACMDFLUSH                                      | cp.async.bulk.commit_group                         | BULK_COMMIT       | |
| HGMMA.MxNxK.Dtype.Atype[.Btype] ...               | wgmma.mma_async (sm_90a)                           | MMA_ASYNC         | family="wgmma", m, n, k, types |
| UTCHMMA / UTCQMMA / UTCIMMA / UTCOMMA / UTCMMA    | tcgen05.mma (kind::f16 -> UTCHMMA, ...) (sm_100a)  | MMA_ASYNC         | family="tcgen05" |
| HMMA / IMMA / QMMA / DMMA / BMMA                  | mma.sync                                           | MMA_SYNC          | |
| WARPGROUP.ARRIVE                                  | wgmma.fence                                        | WARPGROUP_ARRIVE  | |
| WARPGROUP.DEPBAR.LE gsb0, N                       | wgmma.wait_group N (commit_group has no opcode)    | WARPGROUP_WAIT    | pending (int) |
| UTCBAR [bar], ...                                 | tcgen05.commit ... mbarrier::arrive::one           | TCGEN05           | op="commit" |
| UTCATOMSWS.FIND_AND_SET.ALIGN / UTCATOMSWS.AND    | tcgen05.alloc / tcgen05.dealloc                    | TCGEN05           | op="alloc"/"dealloc" |
| LDTM / STTM                                       | tcgen05.ld / tcgen05.st                            | TCGEN05           | op="ld"/"st" |
| UTCCP / UTCSHIFT / other UTC*                     | tcgen05.cp / tcgen05.shift / ...                   | TCGEN05           | op=lower-case opcode |
| FENCE.VIEW.ASYNC.S / .G / ...                     | fence.proxy.async[.shared::cta / .global]          | FENCE_PROXY_ASYNC | space ("S"=shared, "G"=global, None=all) |
| MEMBAR.{ALL,SC}.{CTA,GPU,SYS}                     | fence.* / membar.* (also emitted around .release/.acquire ops) | MEMBAR | scope |
| USETMAXREG.TRY_ALLOC.CTAPOOL UP, n                | setmaxnreg.inc n                                   | SETMAXNREG        | action="inc", count |
| USETMAXREG.DEALLOC.CTAPOOL n                      | setmaxnreg.dec n                                   | SETMAXNREG        | action="dec", count |
| LDL / STL                                         | local memory (spills, dynamically indexed arrays)  | LOCAL_LOAD/STORE  | |
| EXIT / BPT.TRAP                                   | ret/exit, trap (incl. tcgen05 guardrail traps)     | EXIT / TRAP       | |

Modifiers seen on sm_100a (TK's B200 GEMM): `UTCHMMA.2CTA`, `UTCBAR.2CTA.MULTICAST`,
`UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN`, `UTMALDG.5D.MULTICAST.2CTA`, `LDTM.16dp256bit.x4`;
the kind is decided by the base opcode, so these classify as above.  On sm_100a an
`mbarrier.init` is preceded by a `FENCE.VIEW.ASYNC.S` that ptxas inserts itself (same
source line), so a proxy fence at an init line is not proof of a user-written fence.
The tcgen05 guardrail checks ptxas adds on sm_100a end in `BPT.TRAP` (TRAP facts).

Line attribution comes from the `-lineinfo` line table, whose rows cover runs of
instructions: an instruction ptxas schedules into a run of another line gets that
line (seen: an HGMMA tagged with the line of the store address math after it).
So "op X at line L" is reliable as a set over the kernel, not per instruction, and
absence of a fact at one line proves nothing; absence in the whole kernel does.

Not mapped on purpose: `tcgen05.fence::*` and `tcgen05.wait::ld` (no opcode of their
own in the output seen: they become scoreboard waits), `wgmma.commit_group` (the
`gsb0` operand of HGMMA), `fence.mbarrier_init` (a NOP for a CTA-local barrier on
sm_90a), `cp.async.bulk.wait_group` (`DEPBAR.LE SB0, n`, shared with other waits).
The ptxas setmaxnreg-ignored case leaves no USETMAXREG at all (see queries.py).
"""

from __future__ import annotations

import re

from tkcheck.sass.model import Fact, FactKind, Instruction

_HGMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def parse_int(text: str) -> int | None:
    """An immediate operand as an int ("0x80", "12", "-0x1"), else None."""
    t = text.strip()
    try:
        if re.fullmatch(r"-?0x[0-9a-fA-F]+", t):
            return int(t, 16)
        if re.fullmatch(r"-?\d+", t):
            return int(t, 10)
    except ValueError:
        return None
    return None


def _bar_attrs(ins: Instruction) -> list[tuple[str, object]]:
    ops = list(ins.operands)
    bar_id = ops[0] if ops else None
    count = ops[1] if len(ops) > 1 and not ops[1].lstrip("!").startswith(("P", "UP")) else None
    out: list[tuple[str, object]] = [
        ("barrier_id", parse_int(bar_id) if bar_id else None),
        ("barrier_id_operand", bar_id),
        ("thread_count", parse_int(count) if count else None),
        ("thread_count_operand", count),
    ]
    return out


def _mbar_arrive_attrs(ins: Instruction) -> list[tuple[str, object]]:
    mods = ins.modifiers
    arrivals: int | None = 1
    tx: str | None = "expect"
    for m in mods:
        mm = re.fullmatch(r"A(\d+)T(\w+)", m)
        if mm:
            arrivals = int(mm.group(1))
            t = mm.group(2)
            tx = None if t == "0" else ("complete" if t == "X" else "expect")
    address = ins.operands[1] if len(ins.operands) > 1 else None
    tx_operand = ins.operands[2] if len(ins.operands) > 2 else None
    return [
        ("arrivals", arrivals),
        ("tx", tx),
        ("address", address),
        ("tx_operand", tx_operand),
        ("red", "RED" in mods),
    ]


def _mbar_wait_attrs(ins: Instruction) -> list[tuple[str, object]]:
    return [
        ("test_only", "TRYWAIT" not in ins.modifiers),
        ("address", ins.operands[1] if len(ins.operands) > 1 else None),
        ("parity_operand", ins.operands[2] if len(ins.operands) > 2 else None),
    ]


def _bulk_attrs(ins: Instruction) -> list[tuple[str, object]]:
    base, mods = ins.base, ins.modifiers
    dims = None
    for m in mods:
        mm = re.fullmatch(r"(\d)D", m)
        if mm:
            dims = int(mm.group(1))
    direction = {
        "UTMALDG": "load",
        "UTMASTG": "store",
        "UTMAPF": "prefetch",
        "UTMAREDG": "reduce",
        "UBLKPF": "prefetch",
        "UBLKRED": "reduce",
    }.get(base)
    if base == "UBLKCP":
        pair = mods[:2]
        pairs: dict[tuple[str, ...], str] = {("S", "G"): "load", ("G", "S"): "store", ("S", "S"): "copy"}
        direction = pairs.get(tuple(pair), "copy")
    return [
        ("direction", direction),
        ("tensor", base.startswith("UTMA")),
        ("dims", dims),
        ("multicast", "MULTICAST" in mods),
    ]


def _mma_async_attrs(ins: Instruction) -> list[tuple[str, object]]:
    if ins.base == "HGMMA":
        m = n = k = None
        mods = ins.modifiers
        if mods:
            sm = _HGMMA_SHAPE.match(mods[0])
            if sm:
                m, n, k = (int(x) for x in sm.groups())
        types = tuple(x for x in mods[1:] if x not in ("SP",))
        return [("family", "wgmma"), ("m", m), ("n", n), ("k", k), ("types", ".".join(types))]
    return [("family", "tcgen05"), ("variant", ins.base)]


def _tcgen05_attrs(ins: Instruction) -> list[tuple[str, object]]:
    base, mods = ins.base, ins.modifiers
    if base == "UTCBAR":
        op = "commit"
    elif base == "UTCATOMSWS":
        op = "alloc" if "FIND_AND_SET" in mods else ("dealloc" if "AND" in mods else "atomsws")
    elif base == "LDTM":
        op = "ld"
    elif base == "STTM":
        op = "st"
    else:
        op = base.lower()
    return [("op", op)]


def _fence_attrs(ins: Instruction) -> list[tuple[str, object]]:
    mods = ins.modifiers  # ("VIEW", "ASYNC", "S")
    space = mods[2] if len(mods) > 2 else None
    return [("space", space)]


def _membar_attrs(ins: Instruction) -> list[tuple[str, object]]:
    mods = ins.modifiers
    return [("scope", mods[-1] if mods else None), ("sc", "SC" in mods)]


def _setmaxnreg_attrs(ins: Instruction) -> list[tuple[str, object]]:
    mods = ins.modifiers
    action = "inc" if "TRY_ALLOC" in mods else ("dec" if "DEALLOC" in mods else None)
    count = parse_int(ins.operands[-1]) if ins.operands else None
    return [("action", action), ("count", count)]


def _wg_wait_attrs(ins: Instruction) -> list[tuple[str, object]]:
    pending = parse_int(ins.operands[-1]) if ins.operands else None
    return [("pending", pending)]


def _cluster_attrs(ins: Instruction) -> list[tuple[str, object]]:
    return [("action", "arrive" if ins.base.endswith("ARV") else "wait")]


def _none(ins: Instruction) -> list[tuple[str, object]]:
    return []


_BAR_RED_OPS = ("POPC", "AND", "OR")


def classify(ins: Instruction) -> Fact | None:
    """The fact an instruction stands for, or None when it is not one tkcheck tracks."""
    base, mods, op = ins.base, ins.modifiers, ins.opcode
    kind: FactKind | None = None
    extra: list[tuple[str, object]] = []
    if base == "BAR":
        if mods[:1] == ("SYNC",):
            kind = FactKind.BARRIER_SYNC
        elif mods[:1] == ("ARV",):
            kind = FactKind.BARRIER_ARRIVE
        elif mods[:1] == ("RED",):
            kind = FactKind.BARRIER_RED
            extra = [("op", next((m for m in mods if m in _BAR_RED_OPS), None))]
        if kind is not None:
            extra = _bar_attrs(ins) + extra
    elif base in ("UCGABAR_ARV", "UCGABAR_WAIT"):
        kind, extra = FactKind.CLUSTER_BARRIER, _cluster_attrs(ins)
    elif op.startswith("SYNCS.EXCH.64"):
        kind = FactKind.MBARRIER_INIT
        extra = [("address", ins.operands[1] if len(ins.operands) > 1 else None)]
    elif op.startswith("SYNCS.ARRIVE.TRANS64"):
        kind, extra = FactKind.MBARRIER_ARRIVE, _mbar_arrive_attrs(ins)
    elif op.startswith("SYNCS.PHASECHK.TRANS64"):
        kind, extra = FactKind.MBARRIER_WAIT, _mbar_wait_attrs(ins)
    elif base in ("UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UBLKCP", "UBLKPF", "UBLKRED"):
        kind, extra = FactKind.BULK_COPY, _bulk_attrs(ins)
    elif base == "UTMACMDFLUSH":
        kind = FactKind.BULK_COMMIT
    elif base == "HGMMA" or (base.startswith("UTC") and base.endswith("MMA")):
        kind, extra = FactKind.MMA_ASYNC, _mma_async_attrs(ins)
    elif base in ("HMMA", "IMMA", "QMMA", "DMMA", "BMMA", "OMMA"):
        kind = FactKind.MMA_SYNC
    elif op == "WARPGROUP.ARRIVE":
        kind = FactKind.WARPGROUP_ARRIVE
    elif op.startswith("WARPGROUP.DEPBAR"):
        kind, extra = FactKind.WARPGROUP_WAIT, _wg_wait_attrs(ins)
    elif base.startswith("UTC") or base in ("LDTM", "STTM"):
        kind, extra = FactKind.TCGEN05, _tcgen05_attrs(ins)
    elif op.startswith("FENCE.VIEW.ASYNC"):
        kind, extra = FactKind.FENCE_PROXY_ASYNC, _fence_attrs(ins)
    elif base == "MEMBAR":
        kind, extra = FactKind.MEMBAR, _membar_attrs(ins)
    elif base == "USETMAXREG":
        kind, extra = FactKind.SETMAXNREG, _setmaxnreg_attrs(ins)
    elif base == "LDL":
        kind = FactKind.LOCAL_LOAD
    elif base == "STL":
        kind = FactKind.LOCAL_STORE
    elif base == "EXIT":
        kind = FactKind.EXIT
    elif op.startswith("BPT.TRAP"):
        kind = FactKind.TRAP
    if kind is None:
        return None
    return Fact(kind=kind, instruction=ins, attrs=tuple(extra))
