"""How a run ended, read the way a person reads it: pass, its own check failed, a crash, a hang.

`classify(rc, log, timed_out, patterns)` looks, in this order, at

1. the timeout (a hang: killed at the timeout);
2. CUDA errors in any spelling: `cudaError*` / `CUDA_ERROR_*` names and the runtime's messages
   ("unspecified launch failure", "an illegal memory access was encountered", "misaligned
   address", "illegal instruction", "device-side assert", ...): a crash;
3. death by a signal (`abort()` is SIGABRT; a shell reports 128+n): a crash;
4. the fail patterns: the defaults cover common self-checks - a line starting `FAIL` or
   `FAILED`, `SELFCHECK FAIL`, `TEST FAILED`, `mismatch` (not "0 mismatches"), a non-zero
   error count (`Error count: 12`, `errors = 3`), a max error that is NaN or infinite - plus
   `[tool.tkcheck.confirm] fail-pattern`;
5. a non-zero exit status;
6. `pass-pattern` (when configured, a run passes only if one of them matches).

Everything else passes. Patterns are Python regular expressions, matched per line, case-insensitive.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import ConfirmConfig

PASS, FAIL, CRASH, HANG, NOT_RUN = "pass", "fail", "crash", "hang", "not run"

# messages of cudaGetErrorString / cuGetErrorString for errors a kernel causes, and the names
_CUDA_ERROR = re.compile(
    r"\bcudaError(?!_t\b)[A-Z]\w*|\bCUDA_ERROR_[A-Z_]+|unspecified launch failure|illegal memory access"
    r"|misaligned address|illegal instruction|device-side assert|invalid program counter"
    r"|warp (?:out-of-range|misaligned) address|invalid address space|hardware stack error"
    r"|uncorrectable ECC|launch timed out|operation not supported on global/shared address space"
    r"|\bcuda(?:\s+runtime)?\s+(?:error|failure)\b|\bcuda call failed\b",
    re.I,
)
_NO_ERROR = re.compile(r"\bno (?:cuda )?errors?\b|cudaSuccess|CUDA_SUCCESS|\b0 (?:cuda )?errors?\b", re.I)

DEFAULT_FAIL = (
    r"^\s*FAIL(?:ED|URE)?\b",
    r"\bSELFCHECK\s+FAIL",
    r"\b(?:TEST|CHECK|VERIFICATION|VALIDATION|RESULT)S?\s*[:=]?\s*FAIL(?:ED)?\b",
    r"\bmismatch",
    r"\berror[ _]?count\s*[:=]\s*[1-9]|\b[1-9]\d*\s+(?:errors|mismatches|wrong (?:values|elements))\b",
    r"\bmax(?:imum)?[ _]?(?:abs(?:olute)?[ _]?)?(?:err(?:or)?|diff(?:erence)?)\b\s*[:=]?\s*[-+]?(?:nan|inf)",
    r"\bmax_abs_err=1(?:\.0*)?e\+?30\b",
)
# a match of these on the same line cancels a default failure ("0 mismatches", "mismatch: 0")
_ZERO = re.compile(r"\b0\s+mismatch|mismatch(?:es|ed)?\s*(?:count)?\s*[:=]?\s*0\b|\bno\s+mismatch", re.I)


class PatternError(ValueError):
    pass


def _compile(pats: Iterable[str], where: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for p in pats:
        try:
            out.append(re.compile(p, re.I | re.M))
        except re.error as e:
            raise PatternError(f"{where}: {p!r} is not a regular expression ({e})") from None
    return tuple(out)


@dataclass(frozen=True)
class Patterns:
    fail: tuple[str, ...] = ()  # the user's, on top of DEFAULT_FAIL
    passing: tuple[str, ...] = ()  # when given, a run passes only if one matches
    _cf: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)
    _cp: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cf", _compile(DEFAULT_FAIL, "default") + _compile(self.fail, "fail-pattern"))
        object.__setattr__(self, "_cp", _compile(self.passing, "pass-pattern"))

    @classmethod
    def from_config(cls, cfg: ConfirmConfig | None) -> "Patterns":
        if cfg is None:
            return cls()
        return cls(tuple(getattr(cfg, "fail_pattern", ()) or ()), tuple(getattr(cfg, "pass_pattern", ()) or ()))

    def fail_line(self, log: str) -> str | None:
        prev = ""
        for ln in log.splitlines():
            if ln.startswith("TKCHECK_"):
                continue
            for k, rx in enumerate(self._cf):
                if rx.search(ln) and (k >= len(DEFAULT_FAIL) or not _ZERO.search(ln)):
                    # a bare verdict line ("FAIL") says more with the line before it (the error)
                    return f"{prev} / {ln.strip()}" if len(ln.strip()) < 24 and prev else ln.strip()
            if ln.strip():
                prev = ln.strip()[:100]
        return None

    def pass_line(self, log: str) -> str | None:
        for ln in log.splitlines():
            if any(rx.search(ln) for rx in self._cp):
                return ln.strip()
        return None


DEFAULT = Patterns()


@dataclass(frozen=True)
class Outcome:
    status: str  # pass | fail | crash | hang | not run
    why: str  # "exit 1", "killed by SIGABRT", "CUDA error: unspecified launch failure", ...
    line: str = ""  # the output line that shows it

    @property
    def failed(self) -> bool:
        return self.status in (FAIL, CRASH, HANG)

    def text(self) -> str:
        if self.status == PASS:
            return "passed" + (f" ({self.line[:100]})" if self.line else "")
        if self.status == NOT_RUN:
            return "not run"
        if self.status == HANG:
            return "hang (killed at the timeout)"
        if self.line and self.status == CRASH and self.why.startswith("CUDA error"):
            return "crash: " + self.line[:120] + (f" ({self.why.split('(', 1)[1]}" if "(then" in self.why else "")
        return self.why + (f": {self.line[:120]}" if self.line and self.line not in self.why else "")


def cuda_error_line(log: str) -> str | None:
    for ln in log.splitlines():
        if ln.startswith("TKCHECK_"):
            continue
        if _CUDA_ERROR.search(ln) and not _NO_ERROR.search(ln):
            return ln.strip()
    return None


def signal_of(rc: int | None, shell: bool = False) -> int | None:
    if rc is None:
        return None
    if rc < 0:
        return -rc
    if shell and 128 < rc < 128 + 65:
        return rc - 128
    return None


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def classify(
    rc: int | None, log: str, timed_out: bool = False, patterns: Patterns | None = None, shell: bool = False
) -> Outcome:
    patterns = patterns or DEFAULT
    if rc is None and not timed_out:
        return Outcome(NOT_RUN, "not run")
    if timed_out:
        return Outcome(HANG, "timed out")
    err = cuda_error_line(log)
    sig = signal_of(rc, shell)
    if err:
        return Outcome(CRASH, "CUDA error" + (f" (then {_signame(sig)})" if sig else ""), err)
    if sig:
        return Outcome(CRASH, f"killed by {_signame(sig)}", _last_line(log))
    bad = patterns.fail_line(log)
    if bad:
        return Outcome(FAIL, "the program's own check failed" + (f" (exit {rc})" if rc else ""), bad)
    if rc != 0:
        return Outcome(FAIL, f"exit {rc}", _last_line(log))
    if patterns._cp and patterns.pass_line(log) is None:
        return Outcome(FAIL, "no line matches pass-pattern", _last_line(log))
    return Outcome(PASS, "exit 0", patterns.pass_line(log) or _pass_line(log))


def _last_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip() and not ln.startswith("TKCHECK_")]
    return lines[-1] if lines else ""


def _pass_line(log: str) -> str:
    return next((ln.strip() for ln in log.splitlines() if re.search(r"\bPASS(?:ED)?\b", ln)), "")
