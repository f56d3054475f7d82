"""Reading files that a user (or an attacker) named: regular files only, never past a size limit.

`tkcheck /dev/zero`, a `zero.cu -> /dev/zero` link, a FIFO named `x.cu`, a
cache entry linked to a device: each would block or grow without end if read
with `open().read()`. `read_regular` opens without blocking (a FIFO does not
wait for a writer), checks on the open descriptor that it is a regular file
(so a link swapped after the check changes nothing), and reads at most
`limit` bytes.
"""

from __future__ import annotations

import os
import stat


class NotReadable(OSError):
    """A path tkcheck will not read: not a regular file, too large, or unreadable."""


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def regular_file_problem(path: str | os.PathLike, limit: int | None = None) -> str | None:
    """Why `path` (links followed) is not a regular file of at most `limit` bytes, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        return e.strerror or str(e)
    if not stat.S_ISREG(st.st_mode):
        return f"{kind_of(st.st_mode)}, not a regular file"
    if limit is not None and st.st_size > limit:
        return f"{st.st_size} bytes, over the limit of {limit}"
    return None


def read_regular(path: str | os.PathLike, limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; NotReadable (with the reason) otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise NotReadable(e.strerror or str(e)) from None
    try:
        return read_open_regular(fd, limit)
    except BlockingIOError:
        raise NotReadable("not readable without blocking") from None
    finally:
        os.close(fd)


def read_open_regular(fd: int, limit: int) -> bytes:
    """The bytes behind an open descriptor when it is a regular file of at most `limit` bytes
    (also while it grows as it is read); NotReadable otherwise. The caller closes fd."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise NotReadable(f"{kind_of(st.st_mode)}, not a regular file")
    if st.st_size > limit:
        raise NotReadable(f"{st.st_size} bytes, over the limit of {limit}")
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:  # grew while being read
            raise NotReadable(f"more than {limit} bytes")
    return b"".join(chunks)


__all__ = ["NotReadable", "read_open_regular", "read_regular", "regular_file_problem", "kind_of"]
