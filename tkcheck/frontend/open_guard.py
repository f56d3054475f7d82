"""Bounding the parse itself: every file libclang opens is checked while the parse runs.

libclang reads `#include "/dev/zero"` until memory runs out and blocks on a
FIFO until a writer comes. A scan of the text before the parse
(tkcheck/frontend/includes.py) gives an early, precise message for the plain
spellings, but no text scan can follow every spelling of an include (digraphs,
raw strings, macros built by `#`, a macro defined in both branches of an `#if`):
only the preprocessor knows which file it opens. So the parse runs under a guard:

* a watchdog thread (libclang's calls release the GIL) looks every few
  milliseconds at the process's open descriptors (`/proc/self/fd`): a
  descriptor the parse opened on something that is not a regular file (a
  device, a FIFO, a socket) and still open a poll later, or on a regular file
  over the limit, is recorded as a violation, and `/dev/null` is put in its
  place (`dup2`): libclang reads the end of the file there and the parse
  finishes instead of reading without end;
* when the parsing thread is blocked in `open`/`openat` (a FIFO with no
  writer), the watchdog reads the path it is opening (the thread's
  `/proc/self/task/<tid>/syscall` argument, in this process's own memory),
  and when that is not a regular file, opens it for writing without blocking
  and closes it again: the parse's open returns and reads the end of the file;
* the total size of the distinct files opened is bounded too.

After the parse, a violation is an InputError naming the file (exit 2), never
a result. The checking process's address-space limit (`--file-memory`) and
time limit (`--file-timeout`) stay behind it: what the guard misses between two
polls can cost at most those.

Linux only (`/proc`); elsewhere the guard does nothing and the limits remain.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
import threading

from ..safe_io import kind_of

POLL_S = 0.005
# open/openat/openat2 by machine: the path is argument `_PATH_ARG[nr]`, the folder fd argument 0 of openat
_OPEN_SYSCALLS = {
    "x86_64": {2: 0, 257: 1, 437: 1},
    "aarch64": {56: 1, 437: 1},
}
_AT_FDCWD = -100


def supported() -> bool:
    return os.path.isdir("/proc/self/fd") and os.path.isdir("/proc/self/task")


class ParseGuard:
    """`with ParseGuard(limit, total) as g: parse()`; then `g.violation` (None, or why)."""

    def __init__(self, limit: int, total: int, *, exempt: tuple[str, ...] = (), exempt_dirs: tuple[str, ...] = ()):
        self.limit, self.total_limit = limit, total
        self.exempt = {os.path.realpath(p) for p in exempt}
        self.exempt_dirs = tuple(os.path.realpath(d).rstrip(os.sep) + os.sep for d in exempt_dirs)
        self.violation: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._baseline: dict[str, str] = {}
        self._special_seen: set[tuple[str, int, int]] = set()
        self._sizes: dict[tuple[int, int], int] = {}
        self._blocked: dict[str, str] = {}
        self._devnull = -1
        self._machine = platform.machine()

    # ------------------------------------------------------------ running

    def __enter__(self) -> "ParseGuard":
        if not supported():
            return self
        self._baseline = self._fds()
        self._devnull = os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self._thread = threading.Thread(target=self._watch, name="tkcheck-parse-guard", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self._devnull >= 0:
            os.close(self._devnull)
            self._devnull = -1

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self._poll()
            except Exception:  # noqa: BLE001 - a failed look is retried at the next poll
                pass

    # ------------------------------------------------------------ one look

    @staticmethod
    def _fds() -> dict[str, str]:
        out = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                out[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
        return out

    def _violate(self, why: str) -> None:
        if self.violation is None:
            self.violation = why

    def _poll(self) -> None:
        fds = self._fds()
        special_now = set()
        for fd, target in fds.items():
            if self._baseline.get(fd) == target or not target.startswith("/") or int(fd) == self._devnull:
                continue  # ours from before the parse; pipes, sockets and anonymous files are not opened by name
            try:
                st = os.stat(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            if stat.S_ISREG(st.st_mode):
                real = os.path.realpath(target)
                if real in self.exempt or real.startswith(self.exempt_dirs):
                    continue
                if st.st_size > self.limit:
                    self._violate(
                        f"the parse opened {target}, of {st.st_size} bytes; tkcheck reads included files "
                        f"up to {self.limit} bytes"
                    )
                    self._neutralise(int(fd), target)
                    continue
                self._sizes[(st.st_dev, st.st_ino)] = st.st_size
                if sum(self._sizes.values()) > self.total_limit:
                    self._violate(f"the files the parse opened pass {self.total_limit} bytes in all (at {target})")
                continue
            key = (target, st.st_dev, st.st_ino)
            special_now.add(key)
            # open at two looks in a row: not a short read of the process's own (a random seed)
            if key in self._special_seen:
                self._violate(
                    f"the parse opened {target}, which is {kind_of(st.st_mode)}, not a regular file; "
                    "tkcheck reads only regular files"
                )
                self._neutralise(int(fd), target)
        self._special_seen = special_now
        self._check_blocked_open()

    def _neutralise(self, fd: int, target: str) -> None:
        """/dev/null in place of the descriptor: libclang reads the end of the file."""
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                os.dup2(self._devnull, fd, inheritable=False)
        except OSError:
            pass

    def _check_blocked_open(self) -> None:
        """A thread of the parse (libclang parses on a thread of its own) blocked in open() on a
        FIFO: name it, and let the open return."""
        table = _OPEN_SYSCALLS.get(self._machine)
        if not table:
            return
        mine = threading.get_native_id()
        blocked = {}
        for tid in os.listdir("/proc/self/task"):
            if tid == str(mine):
                continue
            line = self._syscall(tid)
            if line is None:
                continue
            fields = line.split()
            try:
                nr = int(fields[0])
            except (ValueError, IndexError):
                continue
            if nr not in table or len(fields) < 7:
                continue
            blocked[tid] = line
            if self._blocked.get(tid) == line:  # the same open at two looks in a row: blocked in it
                self._blocked_open(tid, line, table[nr])
        self._blocked = blocked

    @staticmethod
    def _syscall(tid: str) -> str | None:
        try:
            with open(f"/proc/self/task/{tid}/syscall", encoding="ascii") as fh:
                return fh.read().strip()
        except OSError:
            return None

    def _blocked_open(self, tid: str, line: str, path_arg: int) -> None:
        args = [int(a, 16) for a in line.split()[1:7]]
        try:
            raw = ctypes.string_at(args[path_arg])  # the thread is blocked in the call: its argument is live
        except (OSError, ValueError):
            return
        if self._syscall(tid) != line:
            return  # it moved on meanwhile: the path read may be stale
        path = os.fsdecode(raw)
        if not os.path.isabs(path):
            dirfd = ctypes.c_int(args[0] & 0xFFFFFFFF).value if path_arg == 1 else _AT_FDCWD
            base = os.getcwd() if dirfd == _AT_FDCWD else os.readlink(f"/proc/self/fd/{dirfd}")
            path = os.path.join(base, path)
        try:
            st = os.stat(path)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            return
        self._violate(
            f"the parse opened {path}, which is {kind_of(st.st_mode)}, not a regular file; tkcheck reads only regular files"
        )
        if stat.S_ISFIFO(st.st_mode):
            try:  # a writer that comes and goes: the parse's open returns and reads the end of the file
                w = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
                os.close(w)
            except OSError:
                pass


__all__ = ["ParseGuard", "supported", "POLL_S"]
