"""The language server: LSP over stdio, checks of the editor's unsaved buffers.

One process serves a session. A reader thread only reads and frames messages
(`jsonrpc.read_message`) into a queue; the main thread answers requests and runs the checks,
one at a time, each in a child forked from this warm process (`tkcheck server` hands in the
command line's `run_jobs`: a result in the cache is answered here; a check that crashes, passes
--file-timeout or the memory limit costs that check, not the server; and z3 answers as in a
process of its own, as the command line's do). An edit marks its document due after the debounce; when no message has
come for that long, the due documents are checked (only those: a change re-checks that file).

Warm between edits: the results memo (`_Memo`, keyed by the file's path, its bytes and its
CheckOptions: an edit undone, a save, a re-open answer without a check), the result cache and
the precompiled TK headers in the cache folder (as the CLI's), the imported rules and z3.

Safe as the command line: the options come from the same config discovery and allow-lists
(`tkcheck.cli.cli._config_for` / `_options_for`), a found config is never trusted to run a
program and the SASS pass (a compiler run) is off; bad input is an LSP error response or a
message to the user, never the end of the server.
"""

from __future__ import annotations

import os
import queue
import re
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from . import jsonrpc as R

if TYPE_CHECKING:
    from ..engine import CheckOptions, FileResult
    from ..findings import Finding, Location

SOURCE_SUFFIXES = (".cu", ".cuh")
SEVERITY = {"error": 1, "warning": 2, "note": 3}
MEMO_SIZE = 32


class OptionsError(Exception):
    """The options of a file cannot be made (a broken config): told to the user, no check."""


# ----------------------------------------------------------------- positions


def uri_to_path(uri: str) -> str | None:
    """The file a `file:` URI names; None for any other scheme (an untitled buffer)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "file":
        return None
    path = urllib.parse.unquote(parts.path)
    if parts.netloc and parts.netloc != "localhost":
        path = f"//{parts.netloc}{path}"
    return os.path.normpath(path)


def path_to_uri(path: str) -> str:
    return "file://" + urllib.parse.quote(os.path.abspath(path))


def _utf16_column(line: str, byte_column: int) -> int:
    """LSP's character offset (UTF-16 code units) of a 1-based byte column of `line`."""
    head = line.encode("utf-8")[: max(byte_column - 1, 0)].decode("utf-8", errors="replace")
    return len(head.encode("utf-16-le")) // 2


_WORD = re.compile(r"[A-Za-z0-9_:<>.]+|.")


class Lines:
    """A text's lines, for turning tkcheck's (row, byte column) into LSP positions."""

    def __init__(self, text: str):
        self.lines = text.split("\n")

    def line(self, row: int) -> str:
        return self.lines[row - 1].rstrip("\r") if 0 < row <= len(self.lines) else ""

    def position(self, row: int, column: int) -> dict[str, int]:
        return {"line": max(row - 1, 0), "character": _utf16_column(self.line(row), column)}

    def range_of(self, loc: Location) -> dict[str, Any]:
        start = self.position(loc.row, loc.column)
        if loc.end_row is not None and loc.end_column is not None:
            end = self.position(loc.end_row, loc.end_column)
            if (end["line"], end["character"]) > (start["line"], start["character"]):
                return {"start": start, "end": end}
        # no end: the word (or character) the finding points at
        line = self.line(loc.row)
        head = line.encode("utf-8")[: max(loc.column - 1, 0)].decode("utf-8", errors="replace")
        m = _WORD.match(line, len(head))
        width = len(m.group(0).encode("utf-16-le")) // 2 if m else 0
        return {"start": start, "end": {"line": start["line"], "character": start["character"] + width}}


# ----------------------------------------------------------------- documents and results


@dataclass
class Document:
    uri: str
    path: str
    text: str
    version: int | None = None
    due: float | None = None  # when a debounced check is due (monotonic seconds)
    result: FileResult | None = None
    lines: Lines | None = None  # of the text `result` was made from
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # in the order of `diagnostics`


class _Memo:
    """The last MEMO_SIZE results, keyed by (path, text, options)."""

    def __init__(self, size: int = MEMO_SIZE):
        self.size = size
        self.items: OrderedDict[tuple, FileResult] = OrderedDict()

    def get(self, key: tuple) -> FileResult | None:
        res = self.items.get(key)
        if res is not None:
            self.items.move_to_end(key)
        return res

    def put(self, key: tuple, res: FileResult) -> None:
        self.items[key] = res
        self.items.move_to_end(key)
        while len(self.items) > self.size:
            self.items.popitem(last=False)


def _check_here(path: str, opts: CheckOptions, text: str) -> FileResult:
    """A check in this process (tests; `tkcheck server` checks in a forked child, see __init__)."""
    from ..engine import check_file

    return check_file(path, opts, text=text)


def _memo_key(path: str, text: str, opts: CheckOptions) -> tuple:
    """(path, text, options): the options as text (ParseOptions holds lists), the rules sorted."""
    from dataclasses import replace

    return (path, text, repr(replace(opts, enabled=frozenset())), tuple(sorted(opts.enabled)))


def _is_source(path: str) -> bool:
    return path.endswith(SOURCE_SUFFIXES)


# ----------------------------------------------------------------- the server


class Server:
    """`options_for(path) -> CheckOptions` (raises OptionsError), `forget_config()` after a config
    may have changed; `debounce` seconds of quiet after an edit before it is checked."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        options_for: Callable[[str], CheckOptions],
        forget_config: Callable[[], None] = lambda: None,
        debounce: float = 0.3,
        log: Callable[[str], None] | None = None,
        check: Callable[[str, CheckOptions, str], FileResult] | None = None,
    ):
        self.out = R.Writer(writer)
        self.reader = reader
        self.options_for = options_for
        self.forget_config = forget_config
        self.debounce = debounce
        self.docs: dict[str, Document] = {}
        self.memo = _Memo()
        self.inbox: queue.Queue = queue.Queue()
        self.initialized = False
        self.shutting_down = False
        self.exit_code: int | None = None
        self.checks = 0  # checks made (not answered from the memo): for tests and --verbose
        self.log = log or (lambda s: None)
        self.root: str | None = None
        self.check = check or _check_here

    # -- the loop

    def _read_loop(self) -> None:
        try:
            while True:
                self.inbox.put(R.read_message(self.reader))
        except (R.Closed, OSError, ValueError):
            pass
        self.inbox.put(None)

    def serve(self) -> int:
        threading.Thread(target=self._read_loop, name="tkcheck-lsp-reader", daemon=True).start()
        while self.exit_code is None:
            due = [d.due for d in self.docs.values() if d.due is not None]
            wait = max(0.0, min(due) - time.monotonic()) if due else None
            try:
                msg = self.inbox.get(timeout=wait)
            except queue.Empty:
                self._check_due()
                continue
            if msg is None:  # the client went away without `exit`
                return 0 if self.shutting_down else 1
            self._dispatch(msg)
        return self.exit_code

    def _check_due(self) -> None:
        now = time.monotonic()
        for doc in list(self.docs.values()):
            if doc.due is not None and doc.due <= now:
                doc.due = None
                self._check(doc)

    def _dispatch(self, msg: dict[str, Any] | R.ProtocolError) -> None:
        if isinstance(msg, R.ProtocolError):
            self.out.error(None, msg.code, msg.message)
            return
        method = msg.get("method")
        id_ = msg.get("id")
        is_request = "id" in msg
        if not isinstance(method, str):
            if is_request and "result" not in msg and "error" not in msg:
                self.out.error(id_, R.INVALID_REQUEST, "a request names its method")
            return  # a response to a request of ours: none is sent
        if is_request and not isinstance(id_, (int, str)):
            self.out.error(None, R.INVALID_REQUEST, "a request id is a number or a string")
            return
        params = msg.get("params", {})
        if params is None:
            params = {}
        handler = self.REQUESTS.get(method) if is_request else self.NOTIFICATIONS.get(method)
        if is_request:
            if method != "initialize" and not self.initialized:
                self.out.error(id_, R.SERVER_NOT_INITIALIZED, "initialize first")
                return
            if self.shutting_down and method != "shutdown":
                self.out.error(id_, R.INVALID_REQUEST, "the server is shutting down")
                return
            if handler is None:
                self.out.error(id_, R.METHOD_NOT_FOUND, f"method not supported: {method}")
                return
            try:
                self.out.respond(id_, handler(self, params))
            except _BadParams as e:
                self.out.error(id_, R.INVALID_PARAMS, str(e))
            except Exception as e:  # noqa: BLE001 - an answer, never the end of the server
                self.out.error(id_, R.INTERNAL_ERROR, f"internal error: {type(e).__name__}: {e}")
            return
        if method == "exit":
            self.exit_code = 0 if self.shutting_down else 1
            return
        if handler is None or (not self.initialized and method != "initialized"):
            return  # notifications we do not handle are dropped, as LSP says ($/..., before initialize)
        try:
            handler(self, params)
        except _BadParams as e:
            self._show(1, f"tkcheck: {method}: {e}")
        except Exception as e:  # noqa: BLE001
            self._show(1, f"tkcheck: internal error in {method}: {type(e).__name__}: {e}")

    def _show(self, kind: int, message: str) -> None:
        self.out.notify("window/showMessage", {"type": kind, "message": message})

    # -- lifecycle

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        from .. import __version__

        _need_dict(params, "params")
        root = params.get("rootUri")
        if isinstance(root, str):
            self.root = uri_to_path(root)
        self.initialized = True
        return {
            "capabilities": {
                "positionEncoding": "utf-16",
                "textDocumentSync": {"openClose": True, "change": 1, "save": {"includeText": True}},
                "hoverProvider": True,
                "codeActionProvider": {"codeActionKinds": ["quickfix"]},
            },
            "serverInfo": {"name": "tkcheck", "version": __version__},
        }

    def shutdown(self, params: Any) -> None:
        self.shutting_down = True
        return None

    # -- documents

    def did_open(self, params: dict[str, Any]) -> None:
        td = _need_dict(_need_dict(params, "params").get("textDocument"), "textDocument")
        uri, text = _need_str(td.get("uri"), "textDocument.uri"), _need_str(td.get("text"), "textDocument.text")
        path = uri_to_path(uri) or os.path.abspath(os.path.basename(urllib.parse.urlsplit(uri).path) or "untitled.cu")
        doc = Document(uri, path, text, td.get("version") if isinstance(td.get("version"), int) else None)
        self.docs[uri] = doc
        if _is_source(path) or td.get("languageId") in ("cuda", "cuda-cpp"):
            self._check(doc)  # opened: at once

    def did_change(self, params: dict[str, Any]) -> None:
        p = _need_dict(params, "params")
        td = _need_dict(p.get("textDocument"), "textDocument")
        doc = self.docs.get(_need_str(td.get("uri"), "textDocument.uri"))
        if doc is None:
            raise _BadParams("didChange of a document that is not open")
        changes = p.get("contentChanges")
        if not isinstance(changes, list):
            raise _BadParams("contentChanges is a list")
        for ch in changes:
            ch = _need_dict(ch, "contentChanges[]")
            if "range" in ch and ch["range"] is not None:
                doc.text = _apply_range_change(doc.text, ch["range"], _need_str(ch.get("text"), "text"))
            else:
                doc.text = _need_str(ch.get("text"), "contentChanges[].text")
        if isinstance(td.get("version"), int):
            doc.version = td["version"]
        doc.due = time.monotonic() + self.debounce

    def did_save(self, params: dict[str, Any]) -> None:
        p = _need_dict(params, "params")
        uri = _need_str(_need_dict(p.get("textDocument"), "textDocument").get("uri"), "textDocument.uri")
        path = uri_to_path(uri) or ""
        if not _is_source(path):
            self.forget_config()  # tkcheck.toml / pyproject.toml may have changed
            self.memo = _Memo()
            for d in self.docs.values():
                if _is_source(d.path):
                    d.due = time.monotonic()
            return
        doc = self.docs.get(uri)
        if doc is None:
            return
        if isinstance(p.get("text"), str):
            doc.text = p["text"]
        doc.due = None
        self._check(doc)  # saved: at once (the memo answers when nothing changed)

    def did_close(self, params: dict[str, Any]) -> None:
        td = _need_dict(_need_dict(params, "params").get("textDocument"), "textDocument")
        uri = _need_str(td.get("uri"), "textDocument.uri")
        if self.docs.pop(uri, None) is not None:
            self.out.notify("textDocument/publishDiagnostics", {"uri": uri, "diagnostics": []})

    def did_change_watched_files(self, params: Any) -> None:
        self.forget_config()
        self.memo = _Memo()

    # -- checking

    def _check(self, doc: Document) -> None:
        from ..frontend.parse import MAX_FILE_BYTES

        text = doc.text
        if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
            self._publish(doc, None, text, f"not checked: the buffer is larger than {MAX_FILE_BYTES} bytes")
            return
        try:
            opts = self.options_for(doc.path)
        except OptionsError as e:
            self._show(1, f"tkcheck: {e}")
            self._publish(doc, None, text, f"not checked: {e}")
            return
        key = _memo_key(doc.path, text, opts)
        res = self.memo.get(key)
        if res is None:
            t0 = time.perf_counter()
            res = self.check(doc.path, opts, text)
            self.checks += 1
            if not res.internal_errors:  # a check that failed (a limit, a crash) is tried again
                self.memo.put(key, res)
            self.log(f"checked {doc.path} in {time.perf_counter() - t0:.3f} s")
        self._publish(doc, res, text)

    def _publish(self, doc: Document, res: FileResult | None, text: str, why: str | None = None) -> None:
        lines = Lines(text)
        diags: list[dict[str, Any]] = []
        findings: list[Finding] = []
        if why is not None:
            diags.append(
                {
                    "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                    "severity": 3,
                    "source": "tkcheck",
                    "message": why,
                }
            )
        for f in res.findings if res is not None else []:
            diags.append(self._diagnostic(doc, f, lines))
            findings.append(f)
        if res is not None:
            for n in res.internal_errors + res.skipped_passes:
                diags.append(
                    {
                        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "severity": 3,
                        "source": "tkcheck",
                        "message": n,
                    }
                )
        doc.result, doc.lines, doc.diagnostics, doc.findings = res, lines, diags, findings
        params: dict[str, Any] = {"uri": doc.uri, "diagnostics": diags}
        if doc.version is not None:
            params["version"] = doc.version
        self.out.notify("textDocument/publishDiagnostics", params)

    def _lines_of(self, path: str, doc: Document, lines: Lines) -> Lines | None:
        if os.path.normpath(path) == os.path.normpath(doc.path):
            return lines
        other = next((d for d in self.docs.values() if os.path.normpath(d.path) == os.path.normpath(path)), None)
        if other is not None:
            return Lines(other.text)
        try:
            from ..frontend.parse import read_source

            return Lines(read_source(path))
        except Exception:  # noqa: BLE001 - a header that cannot be read: byte columns stand
            return None

    def _diagnostic(self, doc: Document, f: Finding, lines: Lines) -> dict[str, Any]:
        here = os.path.normpath(f.location.filename) == os.path.normpath(doc.path)
        message = _message(f)
        if here:
            rng = lines.range_of(f.location)
        else:  # a finding placed in a header: shown at the top of the file, saying where
            rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
            message = f"{f.location.filename}:{f.location.row}:{f.location.column}: {message}"
        related = []
        for r in f.related:
            rl = self._lines_of(r.location.filename, doc, lines)
            related.append(
                {
                    "location": {
                        "uri": doc.uri
                        if os.path.normpath(r.location.filename) == doc.path
                        else path_to_uri(r.location.filename),
                        "range": rl.range_of(r.location)
                        if rl is not None
                        else {
                            "start": {"line": r.location.row - 1, "character": r.location.column - 1},
                            "end": {"line": r.location.row - 1, "character": r.location.column - 1},
                        },
                    },
                    "message": r.message,
                }
            )
        d: dict[str, Any] = {
            "range": rng,
            "severity": SEVERITY.get(f.severity, 1),
            "code": f.code,
            "source": "tkcheck",
            "message": message,
        }
        if related:
            d["relatedInformation"] = related
        return d

    # -- requests on a document

    def _doc_of(self, params: Any) -> Document:
        td = _need_dict(_need_dict(params, "params").get("textDocument"), "textDocument")
        uri = _need_str(td.get("uri"), "textDocument.uri")
        doc = self.docs.get(uri)
        if doc is None:
            raise _BadParams(f"document not open: {uri}")
        return doc

    def hover(self, params: dict[str, Any]) -> dict[str, Any] | None:
        doc = self._doc_of(params)
        pos = _need_position(params.get("position"))
        hit = [
            (d, f)
            for d, f in zip(doc.diagnostics[: len(doc.findings)], doc.findings)
            if _contains(d["range"], pos, whole_line=False)
        ] or [
            (d, f)
            for d, f in zip(doc.diagnostics[: len(doc.findings)], doc.findings)
            if _contains(d["range"], pos, whole_line=True)
        ]
        if not hit:
            return None
        from .. import registry

        parts = []
        for d, f in hit:
            rule = registry.get(f.code)
            head = f"**{f.code}** {f.name or (rule.name if rule else '')}"
            body = [head, "", _message(f)]
            if rule is not None:
                body += ["", "---", "", rule.summary, "", rule.doc.rstrip()]
            parts.append("\n".join(body))
        return {"contents": {"kind": "markdown", "value": "\n\n---\n\n".join(parts)}, "range": hit[0][0]["range"]}

    def code_action(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        doc = self._doc_of(params)
        rng = _need_dict(params.get("range"), "range")
        start, end = _need_position(rng.get("start")), _need_position(rng.get("end"))
        actions = []
        for d, f in zip(doc.diagnostics[: len(doc.findings)], doc.findings):
            if not f.fixes:
                continue
            r = d["range"]
            if r["end"]["line"] < start["line"] or r["start"]["line"] > end["line"]:
                continue
            for fix in f.fixes:
                changes: dict[str, list[dict[str, Any]]] = {}
                for e in fix.edits:
                    el = self._lines_of(e.location.filename, doc, doc.lines or Lines(doc.text))
                    if el is None:
                        break
                    uri = (
                        doc.uri
                        if os.path.normpath(e.location.filename) == doc.path
                        else path_to_uri(e.location.filename)
                    )
                    loc = e.location
                    changes.setdefault(uri, []).append(
                        {
                            "range": {
                                "start": el.position(loc.row, loc.column),
                                "end": el.position(loc.end_row or loc.row, loc.end_column or loc.column),
                            },
                            "newText": e.text,
                        }
                    )
                else:
                    actions.append(
                        {
                            "title": f"{fix.description} ({f.code})",
                            "kind": "quickfix",
                            "diagnostics": [d],
                            "isPreferred": fix.safe,
                            "edit": {"changes": changes},
                        }
                    )
        return actions

    REQUESTS: dict[str, Callable[[Server, Any], Any]] = {
        "initialize": initialize,
        "shutdown": shutdown,
        "textDocument/hover": hover,
        "textDocument/codeAction": code_action,
    }
    NOTIFICATIONS: dict[str, Callable[[Server, Any], Any]] = {
        "initialized": lambda self, p: None,
        "textDocument/didOpen": did_open,
        "textDocument/didChange": did_change,
        "textDocument/didSave": did_save,
        "textDocument/didClose": did_close,
        "workspace/didChangeWatchedFiles": did_change_watched_files,
        "workspace/didChangeConfiguration": did_change_watched_files,
    }


# ----------------------------------------------------------------- helpers


class _BadParams(Exception):
    pass


def _need_dict(v: Any, what: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _BadParams(f"{what} is an object")
    return v


def _need_str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise _BadParams(f"{what} is a string")
    return v


def _need_position(v: Any) -> dict[str, int]:
    p = _need_dict(v, "position")
    line, ch = p.get("line"), p.get("character")
    if not isinstance(line, int) or not isinstance(ch, int) or line < 0 or ch < 0:
        raise _BadParams("a position is {line, character}, non-negative integers")
    return {"line": line, "character": ch}


def _contains(rng: dict[str, Any], pos: dict[str, int], whole_line: bool) -> bool:
    s, e = rng["start"], rng["end"]
    if whole_line:
        return bool(s["line"] <= pos["line"] <= e["line"])
    return bool((s["line"], s["character"]) <= (pos["line"], pos["character"]) <= (e["line"], e["character"]))


def _offset(text: str, pos: Any) -> int:
    """The string index of an LSP position (UTF-16 character offset) in `text`."""
    p = _need_position(pos)
    lines = text.split("\n")
    if p["line"] >= len(lines):
        return len(text)
    start = sum(len(x) + 1 for x in lines[: p["line"]])
    line = lines[p["line"]]
    units = 0
    for i, c in enumerate(line):
        if units >= p["character"]:
            return start + i
        units += 2 if ord(c) > 0xFFFF else 1
    return start + len(line)


def _apply_range_change(text: str, rng: Any, new: str) -> str:
    r = _need_dict(rng, "range")
    a, b = _offset(text, r.get("start")), _offset(text, r.get("end"))
    if b < a:
        raise _BadParams("a range ends before it starts")
    return text[:a] + new + text[b:]


def _message(f: Finding) -> str:
    """The finding's message with its counterexample, trace and help, as plain lines."""
    from ..render._common import format_witness

    out = [f.message]
    if f.witness:
        out.append(f"counterexample: {format_witness(f.witness)}")
    if f.trace:
        out.append("trace:")
        for i, step in enumerate(f.trace, 1):
            who = f"{step.role}: " if step.role else ""
            line = f"  {i}. {who}{step.text}"
            if step.location is not None:
                line += f" (line {step.location.row})"
            if step.blocked:
                line += "  <-- blocked"
            elif step.fault:
                line += "  <-- wrong phase"
            out.append(line)
    if f.help:
        out.append(f"help: {f.help}")
    return "\n".join(out)


def run_stdio(
    options_for: Callable[[str], CheckOptions],
    forget_config: Callable[[], None],
    debounce: float,
    check: Callable[[str, CheckOptions, str], FileResult] | None = None,
) -> int:
    """Serve on this process's stdin/stdout; returns the exit status (0 after shutdown + exit).

    The protocol gets private copies of the two descriptors; descriptor 0 then reads /dev/null
    and descriptor 1 writes to stderr, so that nothing a checked file names (`#include
    "/dev/stdin"`) reads the client's messages and nothing libclang or z3 prints reaches them."""
    sys.stdout.flush()
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    server = Server(proto_in, proto_out, options_for, forget_config, debounce, check=check)
    return server.serve()
