"""JSON-RPC 2.0 over a byte stream with LSP's framing (`Content-Length: N\\r\\n\\r\\n` + N bytes of
UTF-8 JSON), written by hand: the language server needs the framing, requests, responses and
notifications, nothing more (docs/DEVELOPING.md, "The language server", says why no library).

Bad input never raises out of `read_message`: a header without a length, a body that is not JSON
or not an object comes back as a `ProtocolError` value, which the server answers with a JSON-RPC
error (id null); a body longer than `MAX_MESSAGE_BYTES` is read and dropped the same way.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import IO, Any

# A message larger than this is refused (read and dropped), so a client cannot make the server
# hold an arbitrary amount of memory; a CUDA file tkcheck checks is at most 2 MB, and its JSON
# (escaped) some 6x that at worst.
MAX_MESSAGE_BYTES = 16 << 20
MAX_HEADER_BYTES = 8192

# JSON-RPC and LSP error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800


@dataclass
class ProtocolError:
    """A message that could not be read: answered with `code` and `message` (id null)."""

    code: int
    message: str


class Closed(Exception):
    """The stream ended."""


def _read_headers(stream: IO[bytes]) -> dict[str, str]:
    headers: dict[str, str] = {}
    total = 0
    while True:
        line = stream.readline(MAX_HEADER_BYTES + 1)
        if not line:
            raise Closed()
        total += len(line)
        if total > MAX_HEADER_BYTES:
            raise ValueError("header longer than 8192 bytes")
        text = line.decode("ascii", errors="replace").strip()
        if not text:
            if headers:
                return headers
            continue  # blank lines between messages
        name, sep, value = text.partition(":")
        if not sep:
            raise ValueError(f"not a header line: {text[:80]!r}")
        headers[name.strip().lower()] = value.strip()


def read_message(stream: IO[bytes]) -> dict[str, Any] | ProtocolError:
    """The next message, or a ProtocolError for one that could not be read. Raises Closed at
    the end of the stream (also when it ends inside a message)."""
    try:
        headers = _read_headers(stream)
    except ValueError as e:
        return ProtocolError(PARSE_ERROR, f"bad message header: {e}")
    raw = headers.get("content-length")
    try:
        length = int(raw) if raw is not None else -1
    except ValueError:
        length = -1
    if length < 0:
        return ProtocolError(PARSE_ERROR, "message without a valid Content-Length header")
    if length > MAX_MESSAGE_BYTES:
        left = length
        while left:
            chunk = stream.read(min(left, 1 << 20))
            if not chunk:
                raise Closed()
            left -= len(chunk)
        return ProtocolError(INVALID_REQUEST, f"message of {length} bytes refused (at most {MAX_MESSAGE_BYTES})")
    body = b""
    while len(body) < length:
        chunk = stream.read(length - len(body))
        if not chunk:
            raise Closed()
        body += chunk
    try:
        msg = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return ProtocolError(PARSE_ERROR, f"message body is not JSON: {type(e).__name__}")
    if not isinstance(msg, dict):
        return ProtocolError(INVALID_REQUEST, "a message is a JSON object")
    return msg


class Writer:
    """Writes framed messages; safe to call from several threads."""

    def __init__(self, stream: IO[bytes]):
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with self._lock:
            self._stream.write(b"Content-Length: %d\r\n\r\n" % len(body))
            self._stream.write(body)
            self._stream.flush()

    def respond(self, id_: Any, result: Any) -> None:
        self.send({"id": id_, "result": result})

    def error(self, id_: Any, code: int, message: str) -> None:
        self.send({"id": id_, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})
