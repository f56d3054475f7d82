"""Running one program for `tkcheck confirm`: its own session, a timeout, nothing left behind.

`run_clean(argv, timeout, cwd)` starts the program as the leader of a new session (and process
group), writes its output to a file (a pipe would keep the parent waiting for as long as any
descendant holds it open), and when the program exits or its time is up ends every process of
that session:

* at the timeout, `interrupt` (compute-sanitizer: it writes its XML and stops its target on
  SIGINT) goes to the group first, then after `grace` seconds SIGKILL to the group;
* then, and also after a normal exit, every process that still belongs to the session (found in
  /proc by session id: a program that compute-sanitizer's subreaper keeps after its parent died,
  a background child of a shell command) gets SIGKILL, and the call waits until none is left.

A descendant that leaves the session on purpose (setsid, a daemon) is out of reach; the returned
`Proc.left_behind` counts the processes that had to be killed after the leader was gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

GRACE_S = 5.0  # after SIGINT, before SIGKILL
REAP_S = 10.0  # how long to wait for killed processes to go

_ACTIVE: set[int] = set()  # sessions started and not yet ended (ended by end_all on SIGTERM)
_LOCK = threading.Lock()


@contextlib.contextmanager
def gpu_slot(key: str, slots: int) -> Iterator[None]:
    """Hold one of `slots` slots of GPU `key` (file locks in the temporary folder, so that separate
    confirm processes on one machine share them) while a program runs on that GPU: programs that
    share a GPU by time slices run slower the more there are (seen on an H200: a 1024^3 GEMM of
    0.3 s took up to 8 s with 20 programs at once), which would turn timeouts into false hangs.
    slots <= 0: no limit."""
    if slots <= 0:
        yield
        return
    import fcntl

    d = Path(tempfile.gettempdir()) / "tkcheck-gpu-slots"
    d.mkdir(exist_ok=True)
    safe = "".join(c if c.isalnum() else "_" for c in key)
    while True:
        for i in range(slots):
            fh = open(d / f"{safe}-{i}.lock", "w")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        time.sleep(0.05)


def end_all() -> int:
    """End every session run_clean has started and not yet ended (a confirm stopped by a signal)."""
    with _LOCK:
        sids = list(_ACTIVE)
    return sum(end_session(s, wait_s=2.0) for s in sids)


def install_signal_handlers() -> None:
    """On SIGTERM / SIGHUP the programs confirm started go with it (the main thread only)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        end_all()
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread, or not supported here
            pass


@dataclass
class Proc:
    rc: int | None  # the leader's exit status (negative: killed by that signal); None: not started
    log: str
    seconds: float
    timed_out: bool = False
    left_behind: int = 0  # processes of the session still alive after the leader ended (killed)
    error: str = ""  # why it did not start


def _session_members(sid: int) -> list[int]:
    """Pids whose session id is `sid` (Linux /proc; an empty list elsewhere)."""
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[-1].split()
        # state ppid pgrp session ...
        if len(rest) >= 4 and rest[0] != "Z" and rest[3].lstrip("-").isdigit() and int(rest[3]) == sid:
            out.append(int(e))
    return out


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def end_session(sid: int, wait_s: float = REAP_S) -> int:
    """SIGKILL every process of session `sid` and wait until none is left; returns how many were
    found alive."""
    found: set[int] = {p for p in _session_members(sid) if p != os.getpid()}
    _kill_group(sid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while True:
        alive = [p for p in _session_members(sid) if p != os.getpid()]
        if not alive:
            return len(found)
        found.update(alive)
        for p in alive:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass
        if time.monotonic() > deadline:
            return len(found)
        time.sleep(0.05)


def run_clean(
    argv: list[str] | str,
    timeout: float,
    cwd: str | Path | None = None,
    env: dict | None = None,
    interrupt: int | None = None,
    grace: float = GRACE_S,
) -> Proc:
    """Run `argv` (a list, or a str for the shell) in a session of its own; see the module doc."""
    shell = isinstance(argv, str)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        try:
            p = subprocess.Popen(
                argv,
                shell=shell,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as e:
            return Proc(None, "", 0.0, error=str(e))
        with _LOCK:
            _ACTIVE.add(p.pid)
        timed_out = False
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            if interrupt is not None:
                _kill_group(p.pid, interrupt)
                try:
                    p.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    pass
            _kill_group(p.pid, signal.SIGKILL)
            rc = p.wait()
        # the leader is gone; whatever is left of its session goes too (the group's pgid = sid = pid)
        left = end_session(p.pid)
        with _LOCK:
            _ACTIVE.discard(p.pid)
        out.seek(0)
        log = out.read().decode("utf-8", errors="replace")
    return Proc(rc, log, time.perf_counter() - t0, timed_out=timed_out, left_behind=left)
