"""`tkcheck server`: the language server, driven by a real JSON-RPC client over a pipe (a
subprocess `tkcheck server`, LSP framing on its stdin and stdout). No timing is asserted: the
timeouts only keep a broken server from hanging the suite."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT

TIMEOUT = 120  # seconds: generous, only against a hang

BAD = (ROOT / "fixtures" / "server" / "lane_elect_bad.cu").read_text(encoding="utf-8")
GOOD = (ROOT / "fixtures" / "server" / "lane_elect_good.cu").read_text(encoding="utf-8")


class Client:
    """A minimal LSP client: framed JSON-RPC over the server's pipes."""

    def __init__(self, cwd: Path, *args: str):
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tkcheck", "server", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            self.inbox.put(json.loads(out.read(int(headers["content-length"]))))

    def raw(self, body: bytes):
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, msg: dict):
        self.raw(json.dumps({"jsonrpc": "2.0", **msg}).encode())

    def notify(self, method: str, params: dict):
        self.send({"method": method, "params": params})

    def request(self, method: str, params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)

    def wait(self, pred):
        """The next message `pred` accepts; the others seen before it are kept in `seen`."""
        while True:
            m = self.inbox.get(timeout=TIMEOUT)
            assert m is not None, "the server closed its output: " + self.proc.stderr.read().decode()[-2000:]
            if pred(m):
                return m

    def diagnostics(self, uri: str, version: int | None = None):
        return self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and (version is None or m["params"].get("version") == version)
            )
        )["params"]["diagnostics"]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            s.close()


@pytest.fixture
def client(tmp_path):
    c = Client(tmp_path, "--no-cache", "--debounce", "50")
    yield c
    c.close()


def _init(c: Client, root: Path):
    r = c.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
    caps = r["result"]["capabilities"]
    assert caps["hoverProvider"] and caps["codeActionProvider"] and caps["textDocumentSync"]["change"] == 1
    c.notify("initialized", {})


def test_diagnostics_hover_code_action_and_a_fix_that_clears_them(client, tmp_path):
    _init(client, tmp_path)
    path = tmp_path / "k.cu"
    path.write_text("// nothing here: the server checks the buffer, not the disk\n", encoding="utf-8")
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": BAD}}
    )
    diags = client.diagnostics(uri, 1)
    assert sorted(d["code"] for d in diags) == ["TK302", "TK403", "TK403"], diags
    row = next(i for i, line in enumerate(BAD.splitlines()) if "tma::expect(" in line)
    d = next(d for d in diags if d["code"] == "TK403" and d["range"]["start"]["line"] == row)
    assert d["source"] == "tkcheck" and d["severity"] == 1
    assert d["range"]["start"]["character"] == BAD.splitlines()[row].index("tma::expect(")
    assert "issues the same copy from 32 threads" in d["message"] and "help:" in d["message"]
    tk302 = next(d for d in diags if d["code"] == "TK302")
    related = tk302["relatedInformation"]
    assert related and all(r["location"]["uri"] == uri for r in related)
    init_row = next(i for i, line in enumerate(BAD.splitlines()) if "init_semaphore" in line)
    assert any(r["location"]["range"]["start"]["line"] == init_row for r in related), related
    # hover on the diagnostic: the rule's documentation
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": d["range"]["start"]})
    text = hover["result"]["contents"]["value"]
    assert "TK403" in text and "single-thread-op-wrong-issuer" in text, text
    # nothing to say where there is no diagnostic
    nothing = client.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    )
    assert nothing["result"] is None
    # the mechanical fix as a code action: the issue guarded by one lane
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}},
    )["result"]
    assert actions and all(a["kind"] == "quickfix" for a in actions), actions
    edits = [e for a in actions for e in a["edit"]["changes"][uri]]
    assert any("laneid() == 0" in e["newText"] and e["range"]["start"]["line"] == row for e in edits), edits
    # an edit that fixes the bug (unsaved: the disk never holds it) leaves no diagnostic
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": GOOD}]},
    )
    assert client.diagnostics(uri, 2) == []
    # and undoing it brings the finding back (answered from the server's memo)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": BAD}]},
    )
    assert sorted(x["code"] for x in client.diagnostics(uri, 3)) == ["TK302", "TK403", "TK403"]
    # a save checks at once (the buffer the client sends with it)
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": GOOD})
    assert client.diagnostics(uri, 3) == []
    # a closed document's diagnostics are cleared
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    assert client.request("shutdown", None)["result"] is None
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 0


def test_related_sites_and_the_trace_travel_with_a_diagnostic(client, tmp_path):
    _init(client, tmp_path)
    src = ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu"
    uri = (tmp_path / "flipped.cu").as_uri()
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": src.read_text(encoding="utf-8")}},
    )
    diags = client.diagnostics(uri, 1)
    tk303 = [d for d in diags if d["code"] == "TK303"]
    assert tk303, diags
    assert tk303[0].get("relatedInformation"), tk303[0]
    assert all(r["location"]["uri"] == uri for r in tk303[0]["relatedInformation"])
    client.request("shutdown", None)
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 0


def _cli_findings(path: Path) -> list[tuple]:
    """`tkcheck check` of a file on disk, as (code, row, column, message, related rows), sorted."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-m", "tkcheck", "check", "--no-cache", "--output-format", "json", str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
        env=env,
        timeout=TIMEOUT,
    )
    assert out.returncode in (0, 1), out.stderr[-2000:]
    return sorted(
        (
            f["code"],
            f["location"]["row"] - 1,
            f["location"]["column"] - 1,
            f["message"],
            tuple(sorted(r["location"]["row"] - 1 for r in f["related"])),
        )
        for f in json.loads(out.stdout)
    )


def _server_findings(diags: list[dict]) -> list[tuple]:
    """The same shape from LSP diagnostics (ASCII fixtures: UTF-16 columns are byte columns)."""
    return sorted(
        (
            d["code"],
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["message"].split("\n")[0],
            tuple(sorted(r["location"]["range"]["start"]["line"] for r in d.get("relatedInformation", []))),
        )
        for d in diags
    )


@pytest.mark.parametrize(
    "fixture", ["fixtures/server/lane_elect_bad.cu", "fixtures/completion/bad_consumer_parity_flipped.cu"]
)
def test_a_re_check_after_an_edit_equals_a_cold_cli_check_of_the_same_text(client, tmp_path, fixture):
    """Whatever the server keeps warm between edits (the process, its imports, a parse), the result
    of a didChange is the result of `tkcheck check` of the same text, read cold from disk."""
    _init(client, tmp_path)
    text = (ROOT / fixture).read_text(encoding="utf-8")
    path = tmp_path / "edited.cu"
    path.write_text("// on disk: not what the server checks\n", encoding="utf-8")
    uri = path.as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}
    )
    client.diagnostics(uri, 1)
    # an edit never seen before (no memo answers it): two lines more at the top move every site
    edited = "// an edit\n// and another\n" + text
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]},
    )
    served = _server_findings(client.diagnostics(uri, 2))
    client.request("shutdown", None)
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 0
    path.write_text(edited, encoding="utf-8")
    cold = _cli_findings(path)
    assert served, "the fixture has findings: an empty result would prove nothing"
    assert [f[:3] + f[4:] for f in served] == [f[:3] + f[4:] for f in cold]
    for s, c in zip(served, cold):
        assert s[3].startswith(c[3]) or c[3] in s[3], (s, c)


def test_bad_input_is_an_error_response_never_a_crash(client, tmp_path):
    # a request before initialize
    r = client.request("textDocument/hover", {})
    assert r["error"]["code"] == -32002
    _init(client, tmp_path)
    client.raw(b"{not json")
    assert client.wait(lambda m: "error" in m and m.get("id") is None)["error"]["code"] == -32700
    client.raw(b"[1, 2]")
    assert client.wait(lambda m: "error" in m and m.get("id") is None)["error"]["code"] == -32600
    assert client.request("no/such/method", {})["error"]["code"] == -32601
    assert client.request("textDocument/hover", {"textDocument": 3})["error"]["code"] == -32602
    assert (
        client.request(
            "textDocument/hover",
            {"textDocument": {"uri": "file:///not/open.cu"}, "position": {"line": 0, "character": 0}},
        )["error"]["code"]
        == -32602
    )
    # a notification with bad params: a message to the user, the server goes on
    client.notify("textDocument/didOpen", {"textDocument": {"uri": 5}})
    assert client.wait(lambda m: m.get("method") == "window/showMessage")
    # a buffer that includes standard input does not read the protocol's messages
    uri = (tmp_path / "stdin.cu").as_uri()
    text = '#include "/dev/stdin"\n__global__ void k() {}\n'
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}
    )
    client.diagnostics(uri, 1)
    # still answering
    assert client.request("shutdown", None)["result"] is None
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 0


def test_exit_without_shutdown_is_status_1(client, tmp_path):
    _init(client, tmp_path)
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 1


def test_a_broken_config_is_told_and_the_server_goes_on(client, tmp_path):
    _init(client, tmp_path)
    (tmp_path / "tkcheck.toml").write_text("select = [\n", encoding="utf-8")  # not TOML
    uri = (tmp_path / "k.cu").as_uri()
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": BAD}}
    )
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")
    assert "tkcheck.toml" in shown["params"]["message"]
    diags = client.diagnostics(uri, 1)
    assert len(diags) == 1 and diags[0]["message"].startswith("not checked:") and "code" not in diags[0]
    # the config is fixed and saved: the open buffers are checked again
    (tmp_path / "tkcheck.toml").write_text('select = ["ALL"]\n', encoding="utf-8")
    client.notify("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "tkcheck.toml").as_uri()}})
    assert sorted(d["code"] for d in client.diagnostics(uri, 1)) == ["TK302", "TK403", "TK403"]
    assert client.request("shutdown", None)["result"] is None
    client.notify("exit", None)
    assert client.proc.wait(timeout=TIMEOUT) == 0
