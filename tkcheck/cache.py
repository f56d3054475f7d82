"""The result cache (`.tkcheck_cache/`): a re-run on unchanged input is near-free, and never stale.

A file's result is keyed on everything that decides it:

* the *manifest key*: tkcheck's version and the digest of its own code and
  declaration model, the options (parse options: arch, include folders,
  defines, clang arguments, TK headers and version; the rules that run,
  `--show-unknown`, the SASS pass and its arch, the solver budget and safety
  net), the file's path and text;
* the *result key*: the manifest key plus the content hash of every file the
  parse read (libclang's inclusion list), recorded in the manifest together
  with the modification times of the folders an include lookup reads (a header
  added where it would shadow another, or created where one was missing,
  changes them).

A lookup hashes the recorded headers again; any change is a miss. Results in
which a proof was inconclusive (solver budget spent), an include was missing,
or tkcheck failed are never stored. Every entry is read and written through
tkcheck/cache_io.py: folders and entries are never followed through a link,
entries are written through a temporary file and a rename, read only when a
regular file of at most MAX_ENTRY_BYTES, and authenticated with an HMAC keyed
by a per-user secret kept outside the repository (a forged or edited entry is
a miss); each is then validated field by field, and a bad one is replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from . import __version__, cache_io
from .findings import Edit, Finding, Fix, Location, Related, TraceStep
from .safe_io import NotReadable, read_regular

if TYPE_CHECKING:
    from .engine import CheckOptions, FileResult

SCHEMA = 5
MAX_ENTRY_BYTES = 64 * 1024 * 1024
MAX_DEP_BYTES = 64 * 1024 * 1024
RESULTS, MANIFESTS = "results", "manifests"


class BadEntry(ValueError):
    """A cache entry that fails validation (ignored and replaced)."""


# ---------------------------------------------------------------- keys


@lru_cache(maxsize=1)
def code_digest() -> str:
    """tkcheck's own files (code, rules, declaration model, protocols), hashed once per process:
    a new tkcheck build, or an edited model header, invalidates the cache."""
    h = hashlib.sha256()
    from . import rules as catalog  # type: ignore[attr-defined]  # rules/, mapped in at build time

    roots = [Path(__file__).resolve().parent] + [Path(p).resolve() for p in catalog.__path__]
    seen: set[Path] = set()
    for root in roots:
        for p in sorted(root.rglob("*")):
            if "__pycache__" in p.parts or p.suffix in (".pyc", ".pyo") or not p.is_file():
                continue
            rp = p.resolve()
            if rp in seen:
                continue
            seen.add(rp)
            try:
                h.update(str(p.relative_to(root)).encode())
                h.update(p.read_bytes())
            except OSError:
                pass
    return h.hexdigest()


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8", errors="replace") if isinstance(data, str) else data).hexdigest()


def manifest_key(path: str, text: str, opts: CheckOptions) -> str:
    material = {
        "schema": SCHEMA,
        "version": __version__,
        "code": code_digest(),
        "path": os.path.abspath(path),
        "text": _sha(text),
        "parse": repr(opts.parse),
        "enabled": sorted(opts.enabled),
        "show_unknown": opts.show_unknown,
        "sass": opts.sass,
        "sass_arch": opts.sass_arch,
        "toolchain": _toolchain_id() if opts.sass else None,
        "budget": getattr(opts, "solver_budget", None),
        "safety_net": getattr(opts, "solver_timeout_ms", None),
    }
    return _sha(json.dumps(material, sort_keys=True))


def _toolchain_id() -> str | None:
    try:
        from .sass.toolchain import find_toolchain

        return find_toolchain().version_id
    except Exception:  # noqa: BLE001 - no toolchain: the SASS pass is skipped, which the key says
        return None


def file_digest(path: str) -> str:
    try:
        return _sha(read_regular(path, MAX_DEP_BYTES))
    except NotReadable as e:
        return f"unreadable: {e}"


def dir_stamps(roots: list[str], deps: list[str]) -> list[list[str | int]]:
    """Modification times of the folders an include lookup reads: every search root, every
    header's folder, and, for a header found under one root, the same subfolder under every
    other root (where a new header of that name would shadow it; -1 while it does not exist)."""
    roots = [os.path.normpath(r) for r in roots]
    dirs = set(roots) | {os.path.dirname(d) for d in deps}
    for d in deps:
        for r in roots:
            rel = os.path.relpath(os.path.dirname(d), r)
            if rel == "." or rel.startswith(".."):
                continue
            dirs |= {os.path.join(other, rel) for other in roots}
    out: list[list[str | int]] = []
    for d in sorted(dirs):
        try:
            out.append([d, os.stat(d).st_mtime_ns])
        except OSError:
            out.append([d, -1])
    return out


def result_key(mkey: str, deps: list[list[str]]) -> str:
    return _sha(json.dumps({"manifest": mkey, "deps": deps}, sort_keys=True))


# ---------------------------------------------------------------- entries on disk


def _read_entry(cache_dir: str, sub: str, key: str) -> Any | None:
    """The payload of an authenticated entry (tkcheck/cache_io.py), or None."""
    payload = cache_io.read_json(cache_dir, (sub,), f"{key}.json", f"{SCHEMA}:{sub}", key, MAX_ENTRY_BYTES)
    return payload


def _write_entry(cache_dir: str, sub: str, key: str, payload: Any) -> None:
    cache_io.write_json(cache_dir, (sub,), f"{key}.json", f"{SCHEMA}:{sub}", key, payload)


# ---------------------------------------------------------------- lookup / store


def lookup(cache_dir: str, path: str, text: str, opts: CheckOptions) -> FileResult | None:
    """The cached FileResult of this exact input, or None."""
    mkey = manifest_key(path, text, opts)
    man = _read_entry(cache_dir, MANIFESTS, mkey)
    try:
        deps, roots, stamps = _manifest_fields(man)
    except BadEntry:
        return None
    if dir_stamps(roots, [d for d, _ in deps]) != stamps:
        return None
    current = [[d, file_digest(d)] for d, _ in deps]
    if current != deps:
        return None
    payload = _read_entry(cache_dir, RESULTS, result_key(mkey, current))
    if payload is None:
        return None
    try:
        return result_from_json(payload)
    except (BadEntry, KeyError, TypeError, ValueError, AttributeError):
        return None


def store(
    cache_dir: str, path: str, text: str, opts: CheckOptions, res: FileResult, dependencies: list[str], roots: list[str]
) -> None:
    mkey = manifest_key(path, text, opts)
    deps = [[d, file_digest(d)] for d in sorted(set(dependencies))]
    manifest = {"deps": deps, "roots": sorted(set(roots)), "dirs": dir_stamps(sorted(set(roots)), [d for d, _ in deps])}
    _write_entry(cache_dir, RESULTS, result_key(mkey, deps), result_to_json(res))
    _write_entry(cache_dir, MANIFESTS, mkey, manifest)


def _manifest_fields(man: Any) -> tuple[list[list[str]], list[str], list[list[str | int]]]:
    if not isinstance(man, dict):
        raise BadEntry("no manifest")
    deps, roots, dirs = man.get("deps"), man.get("roots"), man.get("dirs")
    if not (isinstance(deps, list) and all(_is_pair(x, str, str) for x in deps)):
        raise BadEntry("deps")
    if not (isinstance(roots, list) and all(isinstance(r, str) for r in roots)):
        raise BadEntry("roots")
    if not (isinstance(dirs, list) and all(_is_pair(x, str, int) for x in dirs)):
        raise BadEntry("dirs")
    return deps, roots, dirs


def _is_pair(x: object, a: type, b: type) -> bool:
    return (
        isinstance(x, list)
        and len(x) == 2
        and isinstance(x[0], a)
        and isinstance(x[1], b)
        and not isinstance(x[1], bool)
    )


# ---------------------------------------------------------------- (de)serialising a FileResult


def result_to_json(res: FileResult) -> dict[str, Any]:
    return {
        "path": res.path,
        "notes": list(res.notes),
        "kernels": list(res.kernels),
        "timing": dict(res.timing),
        "findings": [asdict(f) for f in res.findings],
        "coverage": [c.to_json() for c in getattr(res, "coverage", [])],
    }


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise BadEntry(what)


@overload
def _str(v: object, what: str, optional: Literal[False] = False) -> str: ...
@overload
def _str(v: object, what: str, optional: bool) -> str | None: ...
def _str(v: object, what: str, optional: bool = False) -> str | None:
    if not (isinstance(v, str) or (optional and v is None)):
        raise BadEntry(what)
    return v


@overload
def _int(v: object, what: str, optional: Literal[False] = False) -> int: ...
@overload
def _int(v: object, what: str, optional: bool) -> int | None: ...
def _int(v: object, what: str, optional: bool = False) -> int | None:
    if not ((isinstance(v, int) and not isinstance(v, bool)) or (optional and v is None)):
        raise BadEntry(what)
    return v


def _bool(v: object, what: str) -> bool:
    if not isinstance(v, bool):
        raise BadEntry(what)
    return v


def _location(d: Any) -> Location:
    _need(isinstance(d, dict) and set(d) == {"filename", "row", "column", "end_row", "end_column"}, "location")
    return Location(
        _str(d["filename"], "filename"),
        _int(d["row"], "row"),
        _int(d["column"], "column"),
        _int(d["end_row"], "end_row", True),
        _int(d["end_column"], "end_column", True),
    )


_FINDING_KEYS = {
    "code",
    "message",
    "location",
    "related",
    "witness",
    "trace",
    "help",
    "kernel",
    "instances",
    "name",
    "contract",
    "severity",
    "symptom",
    "verdict",
    "fixes",
    "fingerprint",
}


def _fix(x: Any) -> Fix:
    _need(
        isinstance(x, dict)
        and set(x) == {"description", "edits", "safe"}
        and isinstance(x["safe"], bool)
        and isinstance(x["edits"], list),
        "fix fields",
    )
    edits: list[Edit] = []
    for e in x["edits"]:
        _need(isinstance(e, dict) and set(e) == {"location", "text"}, "edit fields")
        edits.append(Edit(_location(e["location"]), _str(e["text"], "edit text")))
    return Fix(_str(x["description"], "fix description"), tuple(edits), x["safe"])


def _finding(f: Any) -> Finding:
    _need(isinstance(f, dict) and set(f) == _FINDING_KEYS, "finding fields")
    related = f["related"]
    _need(isinstance(related, list), "related")
    rel: list[Related] = []
    for r in related:
        _need(isinstance(r, dict) and set(r) == {"location", "message"}, "related fields")
        rel.append(Related(_location(r["location"]), _str(r["message"], "related message")))
    trace = f["trace"]
    _need(isinstance(trace, list), "trace")
    steps: list[TraceStep] = []
    for s in trace:
        fields = {"role", "text", "location", "barrier", "phase", "blocked"}
        _need(isinstance(s, dict) and set(s) in (fields, fields | {"fault"}), "trace fields")
        steps.append(
            TraceStep(
                _str(s["role"], "role"),
                _str(s["text"], "text"),
                _location(s["location"]) if s["location"] is not None else None,
                _str(s["barrier"], "barrier", True),
                _int(s["phase"], "phase", True),
                _bool(s["blocked"], "blocked"),
                _bool(s.get("fault", False), "fault"),
            )
        )
    _need(f["witness"] is None or isinstance(f["witness"], dict), "witness")
    _need(f["verdict"] is None or isinstance(f["verdict"], dict), "verdict")
    return Finding(
        code=_str(f["code"], "code"),
        message=_str(f["message"], "message"),
        location=_location(f["location"]),
        related=rel,
        witness=f["witness"],
        trace=steps,
        help=_str(f["help"], "help", True),
        kernel=_str(f["kernel"], "kernel", True),
        instances=[_str(k, "instance") for k in _list(f["instances"], "instances")],
        name=_str(f["name"], "name"),
        contract=_str(f["contract"], "contract"),
        severity=_str(f["severity"], "severity"),
        symptom=_str(f["symptom"], "symptom"),
        verdict=f["verdict"],
        fixes=[_fix(x) for x in _list(f["fixes"], "fixes")],
        fingerprint=_str(f["fingerprint"], "fingerprint", True),
    )


def _list(v: object, what: str) -> list[Any]:
    if not isinstance(v, list):
        raise BadEntry(what)
    return v


def result_from_json(d: Any) -> FileResult:
    from .engine import FileResult

    _need(
        isinstance(d, dict) and set(d) == {"path", "notes", "kernels", "timing", "findings", "coverage"},
        "result fields",
    )
    notes, kernels, timing, findings = d["notes"], d["kernels"], d["timing"], d["findings"]
    _need(isinstance(notes, list) and all(isinstance(n, str) for n in notes), "notes")
    _need(isinstance(kernels, list) and all(isinstance(k, str) for k in kernels), "kernels")
    _need(
        isinstance(timing, dict)
        and all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in timing.items()
        ),
        "timing",
    )
    _need(isinstance(findings, list), "findings")
    _need(isinstance(d["coverage"], list) and all(isinstance(c, dict) for c in d["coverage"]), "coverage")
    from .coverage import KernelCoverage

    try:
        coverage = [KernelCoverage.from_json(c) for c in d["coverage"]]
    except (TypeError, KeyError, ValueError) as e:
        raise BadEntry(f"coverage: {e}") from None
    return FileResult(
        path=_str(d["path"], "path"),
        findings=[_finding(f) for f in findings],
        notes=notes,
        kernels=kernels,
        timing={k: float(v) for k, v in timing.items()},
        coverage=coverage,
    )


__all__ = ["lookup", "store", "code_digest", "manifest_key", "SCHEMA"]
