"""Text -> model: nvdisasm / cuobjdump SASS listings, ptxas `-v` logs, PTX directives.

Every parser here is total: malformed or unexpected text is skipped, never raised on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tkcheck.sass.model import (
    Instruction,
    PtxasMessage,
    PtxEntryInfo,
    PtxSetmaxnreg,
    ResourceUsage,
    SourceLoc,
)

# ---------------------------------------------------------------------------- SASS


@dataclass
class RawFunction:
    """One function section of a listing (before demangling / resource attachment)."""

    name: str
    instructions: list[Instruction] = field(default_factory=list)
    is_entry: bool = True


_SECTION_HEADER = re.compile(r"^\s*//-+\s+(\S+)\s+-+\s*$")
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_OTHER = re.compile(r"^\s*\.other\s+([^,\s]+)\s*,\s*@\"([^\"]*)\"")
_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*)$")
_LINE_COMMENT = re.compile(r"^\s*//##\s*File\s+(.*)$")
_FRAME = re.compile(r"\"([^\"]*)\"\s*,\s*line\s+(\d+)")
_GUARD = re.compile(r"^@(!?U?P(?:T|\d+))\s+")


def split_operands(text: str) -> tuple[str, ...]:
    """Split on commas outside brackets/braces/parentheses/backticks."""
    out: list[str] = []
    depth = 0
    in_tick = False
    cur: list[str] = []
    for ch in text:
        if ch == "`":
            in_tick = not in_tick
        elif not in_tick and ch in "([{":
            depth += 1
        elif not in_tick and ch in ")]}":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0 and not in_tick:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        out.append(last)
    return tuple(o for o in out if o)


def parse_instruction_text(address: int, body: str, chain: tuple[SourceLoc, ...] = ()) -> Instruction | None:
    """Parse `[@guard] OPCODE operands` (text before the ';')."""
    body = body.strip().strip("{}").strip()
    if not body:
        return None
    guard = None
    m = _GUARD.match(body)
    if m:
        guard = m.group(1)
        body = body[m.end() :]
    parts = body.split(None, 1)
    if not parts:
        return None
    opcode = parts[0]
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Za-z0-9_]+)*", opcode):
        return None
    operands = split_operands(parts[1]) if len(parts) > 1 else ()
    return Instruction(address=address, opcode=opcode, operands=operands, guard=guard, inline_chain=chain)


def _chain_from_comment(text: str) -> tuple[SourceLoc, ...]:
    return tuple(SourceLoc(f, int(l)) for f, l in _FRAME.findall(text))


def parse_sass(text: str) -> list[RawFunction]:
    """Parse an nvdisasm (`-c`, `-g`/`-gi`) or `cuobjdump -sass` listing.

    nvdisasm -gi prints, before the first instruction of a new location,
    `//## File "a", line 5 inlined at "b", line 18` then `//## File "b", line 18`;
    the second (plain) comment repeats the outermost frame and does not replace the
    chain.  Locations persist until the next comment (labels do not reset them).
    """
    funcs: list[RawFunction] = []
    entries: set[str] = set()
    saw_other = False
    cur: RawFunction | None = None
    chain: tuple[SourceLoc, ...] = ()
    last_was_comment = False
    for raw_line in text.splitlines():
        line = raw_line.rstrip()
        if not line.strip():
            continue
        m = _SECTION_HEADER.match(line)
        if m:
            name = m.group(1)
            if name.startswith(".text."):
                cur = RawFunction(name=name[len(".text.") :])
                funcs.append(cur)
            else:
                cur = None
            chain, last_was_comment = (), False
            continue
        m = _CUOBJDUMP_FUNC.match(line)
        if m:
            cur = RawFunction(name=m.group(1))
            funcs.append(cur)
            chain, last_was_comment = (), False
            continue
        m = _OTHER.match(line)
        if m:
            saw_other = True
            if "STO_CUDA_ENTRY" in m.group(2):
                entries.add(m.group(1))
            continue
        m = _LINE_COMMENT.match(line)
        if m:
            new_chain = _chain_from_comment(m.group(1))
            if not new_chain:
                continue
            if last_was_comment and len(new_chain) == 1 and len(chain) > 1 and chain[-1] == new_chain[0]:
                continue  # plain repeat of the outermost frame of the chain just read
            chain, last_was_comment = new_chain, True
            continue
        if cur is None:
            continue
        m = _INSN.match(line)
        if not m:
            continue
        try:
            address = int(m.group(1), 16)
        except ValueError:
            continue
        body = m.group(2).split(";", 1)[0]
        ins = parse_instruction_text(address, body, chain)
        if ins is not None:
            cur.instructions.append(ins)
            last_was_comment = False
    if saw_other:
        for f in funcs:
            f.is_entry = f.name in entries
    return funcs


# ---------------------------------------------------------------------------- ptxas -v

_PTXAS = re.compile(r"^\s*ptxas\s+(info|warning|error|fatal)\s*:\s*(.*)$", re.IGNORECASE)
_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CUMSTACK = re.compile(r"(\d+) bytes cumulative stack size")
_CODE = re.compile(r"\((C\d{3,5})\)")
_QUOTED_MANGLED = re.compile(r"'(_Z[^']+)'")
_NOISE = (
    "Compiling entry function",
    "Function properties for",
    "Used ",
    "Compile time",
    "bytes gmem",
    "bytes smem",
    "Compiling function",
)


@dataclass
class PtxasReport:
    resources: dict[str, ResourceUsage] = field(default_factory=dict)
    messages: list[PtxasMessage] = field(default_factory=list)


def parse_ptxas_log(text: str) -> PtxasReport:
    """Parse the `-Xptxas -v` part of nvcc's output (other lines are ignored)."""
    report = PtxasReport()
    fields: dict[str, dict[str, int]] = {}
    entry: str | None = None  # last "Compiling entry function"
    props_for: str | None = None  # last "Function properties for"
    for line in text.splitlines():
        m = _PTXAS.match(line)
        if not m:
            sm = _STACK.search(line)
            if sm and props_for:
                d = fields.setdefault(props_for, {})
                d["stack_frame_bytes"], d["spill_store_bytes"], d["spill_load_bytes"] = (
                    int(sm.group(1)),
                    int(sm.group(2)),
                    int(sm.group(3)),
                )
            continue
        severity, msg = m.group(1).lower(), m.group(2).strip()
        cm = _COMPILING.search(msg)
        if cm:
            entry = cm.group(1)
            props_for = None
            fields.setdefault(entry, {})
            continue
        pm = _PROPS.search(msg)
        if pm:
            props_for = pm.group(1)
            continue
        um = _USED.search(msg)
        if um and entry:
            d = fields.setdefault(entry, {})
            d["registers"] = int(um.group(1))
            for key, rx in (("barriers", _BARRIERS), ("shared_bytes", _SMEM), ("cumulative_stack_bytes", _CUMSTACK)):
                xm = rx.search(msg)
                if xm:
                    d[key] = int(xm.group(1))
            continue
        if severity == "info" and not _CODE.search(msg):
            continue  # gmem, compile time, etc.
        if any(msg.startswith(n) for n in _NOISE) and not _CODE.search(msg):
            continue
        code = _CODE.search(msg)
        named = _QUOTED_MANGLED.search(msg)
        report.messages.append(
            PtxasMessage(
                severity="error" if severity == "fatal" else severity,
                code=code.group(1) if code else None,
                text=msg,
                function=named.group(1) if named else None,
            )
        )
    for name, d in fields.items():
        report.resources[name] = ResourceUsage(**d)
    return report


# ---------------------------------------------------------------------------- PTX

_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.entry\s+([^\s(]+)")
_PTX_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.func\b")
_PTX_FILE = re.compile(r"^\s*\.file\s+(\d+)\s+\"([^\"]*)\"")
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_PTX_MAXNTID = re.compile(r"^\s*\.maxntid\s+([\d,\s]+)")
_PTX_MINCTA = re.compile(r"^\s*\.minnctapersm\s+(\d+)")
_PTX_MAXNREG = re.compile(r"^\s*\.maxnreg\s+(\d+)")
_PTX_SETMAXNREG = re.compile(r"\bsetmaxnreg\.(inc|dec)\.[\w.]*?\s+(\d+)?")


def parse_ptx(text: str) -> dict[str, PtxEntryInfo]:
    """Register-cap directives and `setmaxnreg` sites of each `.entry` in PTX text.

    The inline chain of a PTX `.loc` is exact for its first two frames (the location
    and its `inlined_at`); deeper frames are reconstructed from the chain most recently
    recorded for the `inlined_at` location, which is right for TK's usual code shapes
    but is a best effort.
    """
    files: dict[str, str] = {}
    chains: dict[tuple[str, str, str], tuple[SourceLoc, ...]] = {}
    out: dict[str, PtxEntryInfo] = {}
    name: str | None = None
    info: dict[str, object] = {}
    sites: list[PtxSetmaxnreg] = []
    chain: tuple[SourceLoc, ...] = ()

    def flush() -> None:
        if name is not None:
            out[name] = PtxEntryInfo(setmaxnreg=tuple(sites), **info)  # type: ignore[arg-type]

    for line in text.splitlines():
        m = _PTX_FILE.match(line)
        if m:
            files[m.group(1)] = m.group(2)
            continue
        m = _PTX_LOC.match(line)
        if m:
            f, l, c = m.group(1), m.group(2), m.group(3)
            here = SourceLoc(f, int(l))  # file id; resolved at the end
            if m.group(4):
                key = (m.group(4), m.group(5), m.group(6))
                parent = chains.get(key) or (SourceLoc(key[0], int(key[1])),)
                chain = (here,) + parent
            else:
                chain = (here,)
            chains[(f, l, c)] = chain
            continue
        m = _PTX_ENTRY.match(line)
        if m:
            flush()
            name, info, sites, chain = m.group(1), {}, [], ()
            continue
        if _PTX_FUNC.match(line):
            flush()
            name, info, sites, chain = None, {}, [], ()
            continue
        if name is None:
            continue
        m = _PTX_MAXNTID.match(line)
        if m:
            dims = tuple(int(x) for x in re.findall(r"\d+", m.group(1)))
            info["maxntid"] = dims or None
            continue
        m = _PTX_MINCTA.match(line)
        if m:
            info["minnctapersm"] = int(m.group(1))
            continue
        m = _PTX_MAXNREG.match(line)
        if m:
            info["maxnreg"] = int(m.group(1))
            continue
        m = _PTX_SETMAXNREG.search(line)
        if m and not line.lstrip().startswith("//"):
            sites.append(
                PtxSetmaxnreg(action=m.group(1), count=int(m.group(2)) if m.group(2) else None, inline_chain=chain)
            )
    flush()

    # `.file` directives may come after the functions that use them: resolve ids last.
    def resolve(c: tuple[SourceLoc, ...]) -> tuple[SourceLoc, ...]:
        return tuple(SourceLoc(files.get(l.file, l.file), l.line) for l in c)

    return {
        n: PtxEntryInfo(
            maxntid=e.maxntid,
            minnctapersm=e.minnctapersm,
            maxnreg=e.maxnreg,
            setmaxnreg=tuple(PtxSetmaxnreg(s.action, s.count, resolve(s.inline_chain)) for s in e.setmaxnreg),
        )
        for n, e in out.items()
    }
