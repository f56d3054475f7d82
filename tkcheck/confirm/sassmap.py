"""The plain binary's SASS, for what a verdict may say about it.

* `disassemble(binary)`: `cuobjdump -xelf all` pulls the cubins out of the program (or object),
  `nvdisasm -gi` lists them with the inline chain of every instruction (the build has
  `-lineinfo`). The text is kept with the evidence (`sass.txt`).
* `user_frame(funcs, pc, path, line, user_file)`: a compute-sanitizer record names the innermost
  function (often a TK header's, e.g. `tma.cuh:689`) and a pc within the kernel; the instruction
  at that pc carries the chain of call sites, whose frame in the user's file is the line to show
  and to match against a finding.
* `wgmma_order(funcs, user_file, mma_rows, release_rows)`: an operand released while the
  wgmma may still read it cannot happen in a binary only where a `WARPGROUP.DEPBAR` (the
  wgmma wait, inserted by ptxas or written) comes between the wgmma (`HGMMA`) at the finding's
  MMA line and the release arrive (`SYNCS.ARRIVE`) at its release line. ptxas's C7517 note alone
  ("warpgroup.wait is injected ...") does not say where the wait went.

Line attribution is by the line table: each instruction's chain is read as printed; an
instruction scheduled into another line's run is attributed to that line (see sass/facts.py).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..sass.model import Instruction, SourceLoc
from ..sass.parse import RawFunction, parse_sass


def _tools() -> tuple[str | None, str | None]:
    from ..sass.toolchain import ToolchainNotFound, find_toolchain

    try:
        tc = find_toolchain()
    except ToolchainNotFound:
        return None, None
    return tc.cuobjdump, tc.nvdisasm


def disassemble(binary: str | Path, timeout: float = 300.0) -> tuple[str | None, str]:
    """(nvdisasm -gi text of every cubin in `binary`, or None; a note on what failed)."""
    cuobjdump, nvdisasm = _tools()
    if not cuobjdump or not nvdisasm:
        return None, "no cuobjdump/nvdisasm: the SASS was not read"
    with tempfile.TemporaryDirectory(prefix="tkcheck-sass-") as td:
        try:
            p = subprocess.run(
                [cuobjdump, "-xelf", "all", str(Path(binary).resolve())],
                cwd=td,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"cuobjdump: {e}"
        cubins = sorted(Path(td).glob("*.cubin"))
        if not cubins:
            return None, "cuobjdump found no cubin in the binary" + (f": {p.stderr.strip()[:200]}" if p.stderr else "")
        out = []
        for c in cubins:
            try:
                q = subprocess.run(
                    [nvdisasm, "-gi", "-c", str(c)], capture_output=True, text=True, errors="replace", timeout=timeout
                )
            except (OSError, subprocess.TimeoutExpired) as e:
                return None, f"nvdisasm: {e}"
            if q.returncode != 0:
                return None, f"nvdisasm: {q.stderr.strip()[:200]}"
            out.append(q.stdout)
    return "\n".join(out), ""


def functions(sass: str | None) -> list[RawFunction]:
    return parse_sass(sass) if sass else []


def _pc(pc: object) -> int | None:
    if pc is None:
        return None
    try:
        return int(str(pc), 16) if str(pc).lower().startswith("0x") else int(str(pc))
    except ValueError:
        return None


def _at(fn: RawFunction, pc: int) -> Instruction | None:
    best = None
    for ins in fn.instructions:
        if ins.address == pc:
            return ins
        if ins.address < pc:
            best = ins
    return best


def _in(frame: SourceLoc, user_file: str) -> bool:
    return Path(frame.file).name == Path(user_file).name


def user_frame(
    funcs: list[RawFunction], pc: object, path: str | None, line: int | None, user_file: str
) -> tuple[str, int] | None:
    """The (file name, line) in `user_file` of the instruction at `pc` (see the module doc).

    The pc is an offset in the kernel the record happened in, which the record does not name (its
    function is the innermost inlined one): a kernel qualifies when its instruction at the pc is
    where the record says (path:line, when given); the answer must be the same in all that do."""
    p = _pc(pc)
    if p is None:
        return None
    answers = set()
    for fn in funcs:
        ins = _at(fn, p)
        if ins is None or ins.address != p or not ins.inline_chain:
            continue
        if path and line and not any(Path(f.file).name == Path(path).name and f.line == line for f in ins.inline_chain):
            continue
        mine = [f for f in ins.inline_chain if _in(f, user_file)]
        if mine:
            answers.add((Path(mine[0].file).name, mine[0].line))
    return answers.pop() if len(answers) == 1 else None


@dataclass
class Order:
    serialized: bool  # every release arrive follows a wgmma wait after the wgmma
    text: str  # what the SASS shows, for the verdict


def _tagged(ins: Instruction, user_file: str, rows: set[int]) -> bool:
    return any(_in(f, user_file) and f.line in rows for f in ins.inline_chain)


def _full_wait(ins: Instruction) -> bool:
    """`WARPGROUP.DEPBAR.LE gsb0, 0x0`: every wgmma group of the warpgroup has completed."""
    if not ins.opcode.startswith("WARPGROUP.DEPBAR"):
        return False
    n = ins.operands[-1].strip() if ins.operands else ""
    try:
        return int(n, 16 if n.lower().startswith("0x") else 10) == 0
    except ValueError:
        return False


def wgmma_order(funcs: list[RawFunction], user_file: str, release_rows: set[int]) -> Order | None:
    """Whether the binary waits for the wgmma before the release (see the module doc): for each
    release arrive (a `SYNCS.ARRIVE` attributed to a release line), the nearest `HGMMA` before it in
    the code and whether a full `WARPGROUP.DEPBAR` (no group left pending) lies between. HGMMAs
    are not matched by line: ptxas attributes them to neighbouring lines (seen: the P*V wgmma of
    attn_fwd tagged with a reduction's line). None when the SASS shows no such pair."""
    pairs = []
    for fn in funcs:
        ins = fn.instructions
        for a, x in enumerate(ins):
            if not (x.opcode.startswith("SYNCS.ARRIVE") and _tagged(x, user_file, release_rows)):
                continue
            h = next((i for i in range(a - 1, -1, -1) if ins[i].base == "HGMMA"), None)
            if h is None:
                continue
            wait = next((i for i in range(h + 1, a) if _full_wait(ins[i])), None)
            pairs.append((fn, h, a, wait))
    if not pairs:
        return None
    name = Path(user_file).name
    for fn, h, a, wait in pairs:
        if wait is None:
            ins = fn.instructions
            row = next(f.line for f in ins[a].inline_chain if _in(f, user_file) and f.line in release_rows)
            later = next((i for i in range(a + 1, len(ins)) if ins[i].opcode.startswith("WARPGROUP.DEPBAR")), None)
            return Order(
                False,
                f"the SASS issues the release arrive ({ins[a].opcode} at /*{ins[a].address:04x}*/, "
                f"{name}:{row}) after the wgmma (HGMMA at /*{ins[h].address:04x}*/) with no "
                f"WARPGROUP.DEPBAR between"
                + (f"; the wait comes after it (/*{ins[later].address:04x}*/)" if later is not None else ""),
            )
    fn, h, a, wait = pairs[0]
    assert wait is not None  # a pair without its wait returned above
    ins = fn.instructions
    return Order(
        True,
        f"in this binary {ins[wait].opcode} {', '.join(ins[wait].operands)} (/*{ins[wait].address:04x}*/) "
        f"waits for the wgmma (HGMMA at /*{ins[h].address:04x}*/) before the release arrive "
        f"(/*{ins[a].address:04x}*/, {name}:{sorted(release_rows)[0]})"
        + (f", and so at all {len(pairs)} release arrives" if len(pairs) > 1 else ""),
    )


_PTXAS_SERIAL = re.compile(r"\((C75(?:14|15|17|18))\)\s*([^\n]*?)(?: in (?:the )?function|$)", re.M)


def ptxas_serial_note(build_log: str) -> tuple[str, str] | None:
    m = _PTXAS_SERIAL.search(build_log or "")
    return (m.group(1), m.group(2).strip()) if m else None
