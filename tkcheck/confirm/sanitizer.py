"""compute-sanitizer: the command lines tkcheck uses and a parser for its XML (`--xml --save`).

The XML (Compute Sanitizer 2025.x) is a `<ComputeSanitizerOutput>` of `<record>`s, each with
`kind` (Racecheck, Synccheck, SyncLog, Memcheck, Initcheck, Sanitizer, ...), `level`, `who`
(threadIdx/blockIdx), `what` (text, type, deadlock, barrier, ...) and `where` (func, pc, and
file/line when the binary was built with -lineinfo). The prose on stdout is never parsed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = ("racecheck", "synccheck", "memcheck", "initcheck")


def command(
    tool: str, binary_argv: list[str], xml_path: str, extra: tuple[str, ...] = (), deadlock_timeout_ms: int = 3000
) -> list[str]:
    """The compute-sanitizer argv for one tool run, saving XML to `xml_path`."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r} (one of {', '.join(TOOLS)})")
    argv = ["compute-sanitizer", "--tool", tool, "--print-limit", "50"]
    if tool == "racecheck":
        argv += ["--racecheck-deadlock-timeout", str(deadlock_timeout_ms), "--racecheck-continue-on-deadlock", "no"]
    elif tool == "memcheck":
        argv += ["--check-bulk-copy", "yes"]
    return argv + list(extra) + ["--xml", "--save", xml_path] + list(binary_argv)


@dataclass
class SanitizerRecord:
    tool: str  # file's tool (racecheck, ...) when known
    kind: str  # the record's <kind>
    level: str
    text: str  # what/text (+ type)
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    func: str | None = None
    pc: str | None = None
    file: str | None = None
    line: int | None = None
    deadlock: bool = False
    extra: dict = field(default_factory=dict)
    user: tuple[str, int] | None = None  # the first frame in the user's file (set from the SASS)
    frames: list = field(default_factory=list)  # device frames the XML lists: (func, path, line, pc)

    @property
    def is_error(self) -> bool:
        return self.level.lower() != "warning" and self.kind != "Sanitizer"

    def places(self) -> set[tuple[str, int]]:
        """(file name, line) of the record, of its device frames, of its frame in the user's file
        and of each racing access that names one."""
        out = {(Path(self.file).name, self.line)} if self.file and self.line else set()
        if self.user:
            out.add(self.user)
        for _, path, line, _pc in self.frames:
            if path and line:
                out.add((Path(path).name, line))
        for acc in self.extra.get("accesses", ()):
            if len(acc) > 5 and acc[5]:
                out.add(acc[5])
            if acc[2] and acc[3]:
                out.add((Path(acc[2]).name, acc[3]))
        return out

    def message(self) -> str:
        """The record's kind and message as the XML gives them ("Precise: Invalid __global__ read of
        size 16 bytes: misaligned address")."""
        kind = self.kind if self.kind and self.kind.lower() not in (self.tool or "").lower() else ""
        return f"{kind}: {self.text}" if kind and self.text else (self.text or kind or "error")

    def short(self) -> str:
        """Tool, kind, message, where (the user's line first, then the innermost place), who."""
        here = (
            f"{Path(self.file).name}:{self.line}"
            if self.file and self.line
            else (f"{self.func}+{self.pc}" if self.func and self.pc else (self.func or ""))
        )
        if self.user and here and here != f"{self.user[0]}:{self.user[1]}":
            where = f" at {self.user[0]}:{self.user[1]} (in {here})"
        elif self.user:
            where = f" at {self.user[0]}:{self.user[1]}"
        else:
            where = f" at {here}" if here and self.file else (f" in {here}" if here else "")
        who = ""
        if self.block is not None:
            who = f" block ({self.block[0]},{self.block[1]},{self.block[2]})"
        if self.thread is not None:
            who += f" thread ({self.thread[0]},{self.thread[1]},{self.thread[2]})"
        return f"{self.tool or self.kind}: {self.message()}{where}{who}"


# synccheck reports these on correct TK kernels (docs/EVALUATION.md, "The dynamic baseline"):
# the same named barrier reached from different role branches (legal `bar.sync id, count`),
# and "Missing wait" on arrive-only barriers. They are shown, never taken as evidence.
FALSE_ALARMS = ("Divergent thread(s) in block", "Missing wait")


def known_false_alarm(r: "SanitizerRecord") -> bool:
    return r.kind == "Synccheck" and any(x in r.text for x in FALSE_ALARMS)


class SanitizerXMLError(ValueError):
    pass


def _xyz(e: ET.Element | None) -> tuple[int, int, int] | None:
    if e is None:
        return None
    try:
        return tuple(int(e.findtext(k, "0")) for k in ("x", "y", "z"))  # type: ignore[return-value]
    except ValueError:
        return None


def parse_xml(data: str | bytes, tool: str = "") -> list[SanitizerRecord]:
    """Records of one `--xml --save` file. An empty or truncated file (a run killed at its
    timeout) gives the records that could be read; text that is not sanitizer XML raises
    SanitizerXMLError."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if not data.strip():
        return []
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        # a run killed mid-write: keep the complete records
        cut = data.rfind("</record>")
        if cut < 0 or "<ComputeSanitizerOutput" not in data:
            raise SanitizerXMLError("not a compute-sanitizer XML file (cannot parse it)") from None
        try:
            root = ET.fromstring(data[: cut + len("</record>")] + "</ComputeSanitizerOutput>")
        except ET.ParseError as e:
            raise SanitizerXMLError(f"not a compute-sanitizer XML file: {e}") from None
    if root.tag != "ComputeSanitizerOutput":
        raise SanitizerXMLError(f"not a compute-sanitizer XML file (root <{root.tag}>)")
    out = []
    for r in root.iter("record"):
        what = r.find("what")
        where = r.find("where")
        text = (what.findtext("text", "") if what is not None else "").strip()
        for key in ("type", "error"):
            typ = (what.findtext(key, "") if what is not None else "").strip()
            if typ and typ not in text:
                text = f"{text}: {typ}" if text else typ
        line = where.findtext("line") if where is not None else None
        rec = SanitizerRecord(
            tool=tool,
            kind=r.findtext("kind", "").strip(),
            level=r.findtext("level", "Error").strip(),
            text=text,
            thread=_xyz(r.find("who/threadIdx")),
            block=_xyz(r.find("who/blockIdx")),
            func=where.findtext("func") if where is not None else None,
            pc=where.findtext("pc") if where is not None else None,
            file=(where.findtext("file") or where.findtext("path")) if where is not None else None,
            line=int(line) if line and line.isdigit() else None,
            deadlock=(what is not None and what.findtext("deadlock", "").strip() == "true"),
        )
        if what is not None:
            # racecheck: the two sides of a hazard, each with its place when built with -lineinfo
            acc = []
            for side in list(what.findall("source")) + list(what.findall("destination")):
                w = side.find("where")
                if w is None:
                    continue
                ln = w.findtext("line")
                acc.append(
                    (
                        side.findtext("direction", "").strip(),
                        w.findtext("func"),
                        w.findtext("path") or w.findtext("file"),
                        int(ln) if ln and ln.isdigit() else None,
                        w.findtext("pc"),
                        None,
                    )
                )
            if acc:
                rec.extra["accesses"] = acc
            for k in ("barrier", "activeMask", "size", "address", "accessType", "space"):
                v = what.findtext(k)
                if v is not None:
                    rec.extra[k] = v.strip()
        # device frames, where the XML lists them (the host stack is not the kernel's)
        for st in r:
            if st.tag == "hostStack" or not st.tag.lower().endswith("stack"):
                continue
            for fr in st.iter("frame"):
                ln = fr.findtext("line")
                rec.frames.append(
                    (
                        fr.findtext("func"),
                        fr.findtext("path") or fr.findtext("file"),
                        int(ln) if ln and ln.strip().isdigit() else None,
                        fr.findtext("pc"),
                    )
                )
        out.append(rec)
    return out


def parse_file(path: str | Path, tool: str = "") -> list[SanitizerRecord]:
    p = Path(path)
    if not tool:
        tool = next((t for t in TOOLS if t in p.name), "")
    return parse_xml(p.read_bytes(), tool)


@dataclass
class ToolRun:
    tool: str
    rc: int | None  # None: not run; 124/137: timed out
    records: list[SanitizerRecord]
    log: str = ""  # what the tool printed (kept with the evidence)

    @property
    def timed_out(self) -> bool:
        return self.rc in (124, 137, -9, -15)

    def summary(self) -> str:
        errs = [r for r in self.records if r.is_error]
        dead = [r for r in errs if r.deadlock]
        parts = []
        if dead:
            parts.append(f"{len(dead)} deadlock records")
        kinds: dict[str, int] = {}
        for r in errs:
            if r.deadlock:
                continue
            key = r.text.split(":")[-1].strip() or r.kind
            kinds[key] = kinds.get(key, 0) + 1
        parts += [f"{n}x {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:2]]
        if self.timed_out:
            parts.append("timed out")
        elif not errs and self.rc not in (0, None):
            parts.append(f"no records, exit {self.rc}")
        return f"{self.tool}: " + (", ".join(parts) if parts else "clean")
