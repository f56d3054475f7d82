"""Cache files a repository can neither redirect nor forge (results, manifests, PCH, SASS).

The cache (`.tkcheck_cache/`) lives in the checked repository, so a cloned
repository can ship one: folders that are links to elsewhere, entries that are
links to a victim file, a FIFO or `/dev/zero`, or entries written to make a
buggy file pass. Every cache file goes through this module:

* Folders are opened one level at a time with `O_DIRECTORY | O_NOFOLLOW`
  relative to the folder above (`dir_fd`), created when missing: a link at any
  level is refused (that kind of entry is then not cached), never followed.
* Writes go to a new temporary file (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600)
  in the same folder, renamed over the entry: a planted link is replaced, its
  target never touched.
* Reads open with `O_NOFOLLOW | O_NONBLOCK` and check on the descriptor that the
  entry is a regular file of at most the kind's limit.
* Every entry is authenticated: an HMAC-SHA256 with a per-user key kept outside
  the repository (`$XDG_CACHE_HOME/tkcheck/key`, else `~/.cache/tkcheck/key`;
  created 0600 with `O_EXCL | O_NOFOLLOW`, refused when it is not a regular file
  of the user's own that only the user can read). A repository cannot compute
  the MAC, so a forged or edited entry is a miss, never a result. JSON entries
  carry the MAC in the entry; a precompiled header has it in a `.mac` file
  beside it, checked before clang is given the file.

Without a usable key (no writable user cache folder) nothing is cached.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from .safe_io import NotReadable, read_open_regular

KEY_BYTES = 32
KEY_NAME = "key"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class CacheRefused(OSError):
    """A cache folder or entry that is not used (a link, not a regular file, too large)."""


# ---------------------------------------------------------------- the per-user key


def key_dir() -> Path:
    """Where the key lives: `$XDG_CACHE_HOME/tkcheck`, else `~/.cache/tkcheck` (never a repository)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tkcheck"


_KEYS: dict[str, bytes | None] = {}


def secret() -> bytes | None:
    """The per-user key (created on first use); None when it cannot be made or is not safe."""
    folder = key_dir()
    k = str(folder)
    if k not in _KEYS:
        _KEYS[k] = _load_or_create_key(folder)
    return _KEYS[k]


def _load_or_create_key(folder: Path) -> bytes | None:
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return None
        path = folder / KEY_NAME
        if not os.path.lexists(path):
            tmp = folder / f".{KEY_NAME}.{secrets.token_hex(8)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
            try:
                os.write(fd, secrets.token_hex(KEY_BYTES).encode())
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)  # atomic, and never over a key another process made first
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_mode & 0o077
                or (hasattr(os, "getuid") and st.st_uid != os.getuid())
                or st.st_size != 2 * KEY_BYTES
            ):
                return None
            data = os.read(fd, 2 * KEY_BYTES + 1)
        finally:
            os.close(fd)
        return bytes.fromhex(data.decode("ascii"))
    except (OSError, ValueError):
        return None


def mac(data: bytes) -> str | None:
    key = secret()
    if key is None:
        return None
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def mac_ok(data: bytes, tag: object) -> bool:
    want = mac(data)
    return want is not None and isinstance(tag, str) and hmac.compare_digest(want, tag)


# ---------------------------------------------------------------- folders and files


def open_folder(base: str | os.PathLike, parts: tuple[str, ...] = (), *, create: bool = True) -> int:
    """A descriptor of `base/parts...`, each level opened without following a link (created when
    missing and `create`); CacheRefused when a level is a link or not a folder."""
    flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
    base = os.fspath(base)
    if create and not os.path.lexists(base):
        try:
            os.mkdir(base, 0o755)
        except FileExistsError:
            pass
    try:
        fd = os.open(base, flags)
    except OSError as e:
        raise CacheRefused(f"{base}: {e.strerror or e} (a cache folder is never a link)") from None
    for part in parts:
        if not part or "/" in part or part in (".", ".."):
            os.close(fd)
            raise CacheRefused(f"{part!r}: not a cache folder name")
        if create:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            except OSError:
                os.close(fd)
                raise
        try:
            nxt = os.open(part, flags, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            raise CacheRefused(f"{part}: {e.strerror or e} (a cache folder is never a link)") from None
        os.close(fd)
        fd = nxt
    return fd


def write_file(base: str | os.PathLike, parts: tuple[str, ...], name: str, data: bytes) -> bool:
    """Write `data` as `base/parts/name` through a new temporary file and a rename; False when
    the cache cannot be written (a link in the way, a full disk): a cache only saves time."""
    try:
        fd = open_folder(base, parts)
    except OSError:
        return False
    try:
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
            finally:
                os.close(out)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)  # replaces a link or a FIFO, never follows it
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read_file(base: str | os.PathLike, parts: tuple[str, ...], name: str, limit: int) -> bytes | None:
    """The bytes of `base/parts/name` when it is a regular file (not a link) of at most `limit`
    bytes; None otherwise (a miss)."""
    try:
        fd = open_folder(base, parts, create=False)
    except OSError:
        return None
    try:
        try:
            f = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=fd)
        except OSError:
            return None
        try:
            return read_open_regular(f, limit)
        except (OSError, NotReadable):
            return None
        finally:
            os.close(f)
    finally:
        os.close(fd)


def remove_file(base: str | os.PathLike, parts: tuple[str, ...], name: str) -> None:
    try:
        fd = open_folder(base, parts, create=False)
    except OSError:
        return
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- authenticated JSON entries


def _canonical(kind: str, key: str, payload: Any) -> bytes:
    return json.dumps([kind, key, payload], sort_keys=True, separators=(",", ":")).encode("utf-8")


def write_json(base, parts: tuple[str, ...], name: str, kind: str, key: str, payload: Any) -> bool:
    """Store `payload` as an entry of `kind` under `key`, with its MAC; False when not stored."""
    tag = mac(_canonical(kind, key, payload))
    if tag is None:
        return False
    entry = {"kind": kind, "key": key, "mac": tag, "payload": payload}
    return write_file(base, parts, name, json.dumps(entry).encode("utf-8"))


def read_json(base, parts: tuple[str, ...], name: str, kind: str, key: str, limit: int) -> Any | None:
    """The payload of an entry of `kind` under `key` whose MAC checks; None otherwise."""
    raw = read_file(base, parts, name, limit)
    if raw is None:
        return None
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("kind") != kind or entry.get("key") != key:
        return None
    payload = entry.get("payload")
    if not mac_ok(_canonical(kind, key, payload), entry.get("mac")):
        return None
    return payload


__all__ = [
    "CacheRefused",
    "key_dir",
    "secret",
    "mac",
    "mac_ok",
    "open_folder",
    "write_file",
    "read_file",
    "remove_file",
    "write_json",
    "read_json",
]
