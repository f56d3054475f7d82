"""`tkcheck eval`: recall, false findings and cost on the corpus (docs: EVALUATION).

* every clean corpus kernel is checked with all rules: any finding is a false
  finding (a defect of tkcheck, or a real bug worth a note);
* every `[[mutation]]` of `corpus/mutations*.toml` is applied to its kernel
  (written to a temporary folder under the same file name) and checked with
  all rules: `found` when each listed rule fires, `missed` otherwise; other
  findings on the mutant are recorded as extra;
* cost: tkcheck's time per kernel (in this process, no cache) and, where nvcc
  and real ThunderKittens headers are at hand, the time to compile the same
  kernel to a cubin, as a ratio.

The test suite (tests/test_corpus.py) and scripts/bench.py use the same
functions, so the table, the tests and the benchmark page agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import registry
from .engine import CheckOptions, FileResult, check_file
from .frontend.parse import ParseOptions

REQUIRED_KEYS = ("id", "kernel", "rules", "find", "replace")
NVCC_COMMON = ("-std=c++20", "-O3", "--expt-relaxed-constexpr", "--expt-extended-lambda")
NVCC_ARCH = {
    "sm_90a": ("-DKITTENS_HOPPER", "-gencode", "arch=compute_90a,code=sm_90a"),
    "sm_100a": ("-DKITTENS_BLACKWELL", "-gencode", "arch=compute_100a,code=sm_100a"),
}
NVCC_FLAGS = NVCC_COMMON + NVCC_ARCH["sm_90a"]
NVCC_TIMEOUT_S = 900


class SpecError(Exception):
    """A mutations file that cannot be read at all (bad TOML, not a list)."""


# ---------------------------------------------------------------- specs


@dataclass
class Mutation:
    id: str
    kernel: str  # relative to the corpus folder
    rules: tuple[str, ...]
    find: str
    replace: str
    symptom: str = ""
    description: str = ""
    compiles: bool = True
    spec_file: str = ""
    problem: str | None = None  # why the spec cannot be applied (then it is reported, not run)
    known_miss: str = ""  # a planted bug tkcheck does not find yet, and why (still counted as missed)
    # why this planted bug cannot show at run time in this program (still a bug by the rules; the
    # GPU batch reports its NOT REPRODUCED verdict with this reason)
    unobservable: str = ""


def load_mutations(corpus: Path) -> list[Mutation]:
    """Every `[[mutation]]` of corpus/mutations*.toml, in file order; a broken entry carries its problem."""
    out: list[Mutation] = []
    seen: dict[str, str] = {}
    for spec_file in sorted(Path(corpus).glob("mutations*.toml")):
        try:
            data = tomllib.loads(spec_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise SpecError(f"{spec_file}: cannot read the mutation specs: {e}") from None
        entries = data.get("mutation", [])
        if not isinstance(entries, list):
            raise SpecError(f"{spec_file}: `mutation` must be an array of tables ([[mutation]])")
        for i, entry in enumerate(entries):
            out.append(_mutation(entry, i, spec_file, seen))
    return out


def _mutation(entry: object, i: int, spec_file: Path, seen: dict[str, str]) -> Mutation:
    where = f"{spec_file.name}: mutation {i + 1}"
    if not isinstance(entry, dict):
        return Mutation(
            f"{spec_file.stem}#{i + 1}", "", (), "", "", spec_file=spec_file.name, problem=f"{where}: not a table"
        )
    mid = str(entry.get("id") or f"{spec_file.stem}#{i + 1}")
    rules = entry.get("rules", [])
    m = Mutation(
        id=mid,
        kernel=str(entry.get("kernel", "")),
        rules=tuple(rules) if isinstance(rules, list) and all(isinstance(r, str) for r in rules) else (),
        find=entry.get("find", "") if isinstance(entry.get("find"), str) else "",
        replace=entry.get("replace", "") if isinstance(entry.get("replace"), str) else "",
        symptom=str(entry.get("symptom", "")),
        description=str(entry.get("description", "")),
        compiles=entry.get("compiles", True) is not False,
        spec_file=spec_file.name,
        known_miss=str(entry.get("known_miss", "")),
        unobservable=str(entry.get("unobservable", "")),
    )
    missing = [k for k in REQUIRED_KEYS if k not in entry]
    if missing:
        m.problem = f"{where} ({mid}): missing key(s) {', '.join(missing)}"
    elif not m.rules:
        m.problem = f"{where} ({mid}): `rules` must be a non-empty list of rule ids"
    elif not m.find:
        m.problem = f"{where} ({mid}): `find` must be a non-empty string"
    elif mid in seen:
        m.problem = f"{where}: duplicate id '{mid}' (first in {seen[mid]})"
    seen.setdefault(mid, spec_file.name)
    return m


def mutated_text(corpus: Path, m: Mutation) -> str:
    """The kernel with the edit applied; ValueError when `find` does not occur exactly once."""
    if m.problem:
        raise ValueError(m.problem)
    path = Path(corpus) / m.kernel
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"{m.id}: cannot read kernel {m.kernel}: {e.strerror or e}") from None
    n = text.count(m.find)
    if n != 1:
        raise ValueError(f"{m.id}: `find` occurs {n} times in {m.kernel} (must be exactly once)")
    return text.replace(m.find, m.replace, 1)


def kernel_arch(path: Path) -> str:
    """The architecture a corpus kernel targets: its folder says (blackwell/ -> sm_100a)."""
    return "sm_100a" if "blackwell" in Path(path).parts else "sm_90a"


def clean_kernels(corpus: Path) -> list[Path]:
    return sorted(p for p in Path(corpus).rglob("*.cu") if not any(part.startswith(".") for part in p.parts))


# ---------------------------------------------------------------- checking


def all_codes() -> frozenset[str]:
    return frozenset(r.code for r in registry.all_rules())


def options(
    include_dirs: tuple[str, ...] = (), tk_include: str | None = None, debug: bool = False, arch: str = "sm_90a"
) -> CheckOptions:
    # ParseOptions is checked without strict_optional, so its `str | None` fields read as `str`
    return CheckOptions(
        parse=ParseOptions(arch=arch, include_dirs=include_dirs, tk_include=tk_include),  # type: ignore[arg-type]
        enabled=all_codes(),
        debug=debug,
        cache_dir=None,
    )


def check_clean(path: Path, debug: bool = False) -> FileResult:
    return check_file(str(path), options(debug=debug, arch=kernel_arch(path)))


def mutation_input(corpus: Path, m: Mutation, workdir: Path, debug: bool = False) -> tuple[Path, str, CheckOptions]:
    """The mutant as `check_mutation` checks it: its file, written as `workdir/<id>/<kernel's
    name>` (the same bytes when it is there already), its text and the options.

    The kernel's own folder stays on the include path, so headers next to it
    still resolve from the temporary copy.
    """
    text = mutated_text(corpus, m)
    kernel = Path(corpus) / m.kernel
    target = Path(workdir) / m.id / kernel.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        tmp = target.with_name(f".{target.name}.{os.getpid()}")  # whole or not at all, for a reader beside
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    opts = options(include_dirs=(str(kernel.parent.resolve()),), debug=debug, arch=kernel_arch(Path(m.kernel)))
    return target, text, opts


def check_mutation(corpus: Path, m: Mutation, workdir: Path, debug: bool = False) -> FileResult:
    """Check the mutant, written under `workdir` with the kernel's file name (`mutation_input`)."""
    target, text, opts = mutation_input(corpus, m, workdir, debug)
    return check_file(str(target), opts, text=text)


# ---------------------------------------------------------------- results


@dataclass
class FindingLine:
    code: str
    row: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "row": self.row, "message": self.message}


def _lines(res: FileResult) -> list[FindingLine]:
    return [FindingLine(f.code, f.location.row, f.message) for f in res.findings]


@dataclass
class CleanOutcome:
    kernel: str
    findings: list[FindingLine]
    ms: float
    notes: list[str] = field(default_factory=list)
    nvcc: "Measurement | None" = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "false_findings": [f.to_json() for f in self.findings],
            "ms": self.ms,
            "nvcc": self.nvcc.to_json() if self.nvcc else None,
            "notes": self.notes,
        }


@dataclass
class MutationOutcome:
    mutation: Mutation
    status: str  # found | missed | not-implemented | invalid
    fired: list[str] = field(default_factory=list)  # listed rules that fired
    not_fired: list[str] = field(default_factory=list)  # listed rules that did not
    extra: list[FindingLine] = field(default_factory=list)
    ms: float | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        m = self.mutation
        return {
            "id": m.id,
            "kernel": m.kernel,
            "rules": list(m.rules),
            "symptom": m.symptom,
            "status": self.status,
            "fired": self.fired,
            "missed_rules": self.not_fired,
            "extra_findings": [f.to_json() for f in self.extra],
            "ms": self.ms,
            "error": self.error,
        }


@dataclass
class RuleRow:
    code: str
    implemented: bool
    planted: int = 0
    found: int = 0
    missed: int = 0
    false_findings: int = 0
    ms: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.ms) if self.ms else None

    @property
    def ratio(self) -> float | None:
        return statistics.median(self.ratios) if self.ratios else None

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.code,
            "implemented": self.implemented,
            "planted": self.planted,
            "found": self.found,
            "missed": self.missed,
            "false_findings_on_clean": self.false_findings,
            "median_ms_per_kernel": _round(self.median_ms),
            "ratio_to_nvcc": _round(self.ratio, 4),
        }


@dataclass
class EvalReport:
    corpus: str
    clean: list[CleanOutcome]
    mutations: list[MutationOutcome]
    rows: list[RuleRow]
    total: RuleRow
    nvcc_status: str  # "used" or why not

    @property
    def ok(self) -> bool:
        """No false finding, no miss of an implemented rule, no broken spec."""
        return not any(c.findings for c in self.clean) and not any(
            o.status in ("missed", "invalid") for o in self.mutations
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "ok": self.ok,
            "nvcc": self.nvcc_status,
            "rules": [r.to_json() for r in self.rows],
            "total": self.total.to_json(),
            "clean_kernels": [c.to_json() for c in self.clean],
            "mutations": [o.to_json() for o in self.mutations],
        }


def _round(v: float | None, nd: int = 2) -> float | None:
    return None if v is None else round(v, nd)


# ---------------------------------------------------------------- nvcc baseline


@dataclass
class Measurement:
    """One child process: wall seconds, peak resident memory (KiB), exit status."""

    seconds: float
    peak_kb: int
    returncode: int
    stderr: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 4),
            "peak_mb": round(self.peak_kb / 1024, 1),
            "ok": self.ok,
            "cached": self.cached,
        }


def measure(
    argv: list[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = NVCC_TIMEOUT_S,
    stdin_data: bytes | None = None,
) -> Measurement:
    """Run `argv`; its wall time and peak RSS (the child's and its reaped children's, from wait4)."""
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            )
        except OSError as e:
            return Measurement(0.0, 0, 127, f"cannot run {argv[0]}: {e}")
        if stdin_data is not None:
            assert proc.stdin is not None  # opened as a pipe above
            try:
                proc.stdin.write(stdin_data)
                proc.stdin.close()
            except OSError:
                pass
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", errors="replace")
        return Measurement(seconds, int(usage.ru_maxrss), proc.returncode, text[-4000:])


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cand = Path(os.environ[var]) / "bin" / "nvcc"
            if cand.is_file():
                return str(cand)
    return None


def find_tk_root(given: str | None, repo: Path | None) -> Path | None:
    """A ThunderKittens checkout (the folder holding include/kittens.cuh)."""
    cands = []
    if given:
        p = Path(given)
        cands += [p.parent if (p / "kittens.cuh").is_file() else p]
    if os.environ.get("TK_ROOT"):
        cands.append(Path(os.environ["TK_ROOT"]))
    if repo is not None:
        cands.append(repo / "third_party" / "ThunderKittens")
    for c in cands:
        if (c / "include" / "kittens.cuh").is_file():
            return c
    return None


def nvcc_command(nvcc: str, tk_root: Path, kernel: Path, out: Path, arch: str | None = None) -> list[str]:
    flags = NVCC_COMMON + NVCC_ARCH[arch or kernel_arch(kernel)]
    return [
        nvcc,
        *flags,
        "-I",
        str(tk_root / "include"),
        "-I",
        str(tk_root / "prototype"),
        "-cubin",
        str(kernel),
        "-o",
        str(out),
    ]


class NvccBaseline:
    """Times `nvcc -cubin` on a kernel once; results cached on disk by kernel bytes and compiler."""

    def __init__(self, nvcc: str, tk_root: Path, cache_dir: Path | None) -> None:
        self.nvcc = nvcc
        self.tk_root = tk_root
        self.cache_file = cache_dir / "nvcc_baseline.json" if cache_dir else None
        self._memo: dict[str, Measurement] = {}
        self.version: list[str]
        try:
            self.version = (
                subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
                .stdout.strip()
                .splitlines()[-1:]
            )
        except (OSError, subprocess.SubprocessError):
            self.version = []

    def _key(self, kernel: Path) -> str:
        h = hashlib.sha256()
        h.update(kernel.read_bytes())
        h.update(repr((NVCC_COMMON, NVCC_ARCH[kernel_arch(kernel)], self.version)).encode())
        return h.hexdigest()

    def _load(self) -> dict[str, Any]:
        if self.cache_file is None:
            return {}
        try:
            data: dict[str, Any] = json.loads(self.cache_file.read_text())
            return data
        except (OSError, ValueError):
            return {}

    def time(self, kernel: Path, *, use_cache: bool = True) -> Measurement:
        key = self._key(kernel)
        if key in self._memo:
            return self._memo[key]
        disk = self._load() if use_cache else {}
        if key in disk:
            d = disk[key]
            m = Measurement(d["seconds"], d["peak_kb"], 0, cached=True)
        else:
            with tempfile.TemporaryDirectory(prefix="tkcheck-nvcc-") as tmp:
                m = measure(nvcc_command(self.nvcc, self.tk_root, kernel, Path(tmp) / "k.cubin"))
            if m.ok and self.cache_file is not None:
                disk = self._load()
                disk[key] = {"seconds": m.seconds, "peak_kb": m.peak_kb, "kernel": kernel.name}
                try:
                    self.cache_file.parent.mkdir(parents=True, exist_ok=True)
                    self.cache_file.write_text(json.dumps(disk, indent=1, sort_keys=True))
                except OSError:
                    pass
        self._memo[key] = m
        return m


def nvcc_baseline(corpus: Path, tk_root: str | None, want: bool) -> tuple[NvccBaseline | None, str]:
    if not want:
        return None, "n/a (--no-nvcc)"
    nvcc = find_nvcc()
    if nvcc is None:
        return None, "n/a (no nvcc on PATH)"
    repo = Path(corpus).resolve().parent
    root = find_tk_root(tk_root, repo)
    if root is None:
        return None, "n/a (no ThunderKittens headers: --tk-include, $TK_ROOT or third_party/ThunderKittens)"
    return NvccBaseline(nvcc, root, repo / ".tkcheck_cache"), "used"


# ---------------------------------------------------------------- the run


def _matches(mid: str, only: Collection[str]) -> bool:
    return not only or any(mid == o or mid.startswith(o) for o in only)


def run_eval(
    corpus: Path,
    *,
    tk_root: str | None = None,
    nvcc: bool = True,
    only: Collection[str] = (),
    debug: bool = False,
    progress: bool = False,
) -> EvalReport:
    corpus = Path(corpus)
    mutations = [m for m in load_mutations(corpus) if _matches(m.id, only)]
    known = all_codes()
    baseline, nvcc_status = nvcc_baseline(corpus, tk_root, nvcc)

    def say(text: str) -> None:
        if progress:
            print(f"\r\033[K{text}", end="", file=sys.stderr, flush=True)

    clean: list[CleanOutcome] = []
    nvcc_s: dict[str, float] = {}
    for path in clean_kernels(corpus):
        rel = path.relative_to(corpus).as_posix()
        say(f"clean {rel}")
        res = check_clean(path, debug=debug)
        out = CleanOutcome(
            rel,
            _lines(res),
            res.timing.get("total", 0.0) * 1000,
            notes=[n for n in res.notes if "internal error" in n or "failed on" in n],
        )
        if baseline is not None:
            say(f"nvcc {rel}")
            out.nvcc = baseline.time(path)
            if out.nvcc.ok:
                nvcc_s[rel] = out.nvcc.seconds
        clean.append(out)

    outcomes: list[MutationOutcome] = []
    with tempfile.TemporaryDirectory(prefix="tkcheck-eval-") as tmp:
        for m in mutations:
            say(f"mutation {m.id}")
            outcomes.append(_run_mutation(corpus, m, Path(tmp), known, debug))
    say("")
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return _tabulate(str(corpus), clean, outcomes, known, nvcc_s, nvcc_status)


def _run_mutation(corpus: Path, m: Mutation, workdir: Path, known: frozenset[str], debug: bool) -> MutationOutcome:
    try:
        res = check_mutation(corpus, m, workdir, debug=debug)
    except ValueError as e:
        return MutationOutcome(m, "invalid", error=str(e))
    codes = {f.code for f in res.findings}
    fired = [r for r in m.rules if r in codes]
    not_fired = [r for r in m.rules if r not in codes]
    extra = [FindingLine(f.code, f.location.row, f.message) for f in res.findings if f.code not in m.rules]
    if not not_fired:
        status = "found"
    elif all(r in known for r in m.rules):
        status = "missed"
    else:
        status = "not-implemented"
    return MutationOutcome(m, status, fired, not_fired, extra, res.timing.get("total", 0.0) * 1000)


def _tabulate(
    corpus: str,
    clean: list[CleanOutcome],
    outcomes: list[MutationOutcome],
    known: frozenset[str],
    nvcc_s: dict[str, float],
    nvcc_status: str,
) -> EvalReport:
    rows: dict[str, RuleRow] = {}

    def row(code: str) -> RuleRow:
        if code not in rows:
            rows[code] = RuleRow(code, code in known)
        return rows[code]

    total = RuleRow("all", True)
    for o in outcomes:
        if o.status == "invalid":
            continue
        kernel_nvcc = nvcc_s.get(o.mutation.kernel)
        for code in o.mutation.rules:
            r = row(code)
            r.planted += 1
            if code in o.fired:
                r.found += 1
            else:
                r.missed += 1
            if o.ms is not None:
                r.ms.append(o.ms)
                if kernel_nvcc:
                    r.ratios.append(o.ms / 1000 / kernel_nvcc)
        total.planted += 1
        total.found += o.status == "found"
        total.missed += o.status != "found"
    for c in clean:
        for f in c.findings:
            row(f.code).false_findings += 1
            total.false_findings += 1
        total.ms.append(c.ms)
        if c.kernel in nvcc_s:
            total.ratios.append(c.ms / 1000 / nvcc_s[c.kernel])
    ordered = [rows[k] for k in sorted(rows)]
    return EvalReport(corpus, clean, outcomes, ordered, total, nvcc_status)


# ---------------------------------------------------------------- the table


def _fmt(v: float | None, spec: str, na: str = "n/a") -> str:
    return na if v is None else format(v, spec)


def quality_table(report: EvalReport) -> str:
    """The per-rule table as markdown (also the eval section of docs/BENCHMARKS.md)."""
    head = (
        "| rule | planted | found | missed | false findings on clean kernels | median ms per kernel | ratio to nvcc |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    for r in report.rows + [report.total]:
        name = r.code if r.implemented else f"{r.code} (not implemented)"
        if r is report.total:
            name = "**all** (ms, ratio: clean kernels)"
        lines.append(
            f"| {name} | {r.planted} | {r.found} | {r.missed} | {r.false_findings} "
            f"| {_fmt(r.median_ms, '.1f')} | {_fmt(r.ratio, '.3f')} |"
        )
    return "\n".join(lines) + "\n"


def format_report(report: EvalReport) -> str:
    out = [
        f"tkcheck eval {report.corpus}: {len(report.clean)} clean kernels, {len(report.mutations)} mutations; "
        f"nvcc baseline: {report.nvcc_status}",
        "",
    ]
    out.append(quality_table(report))
    out.append("clean kernels:")
    for c in report.clean:
        nv = f", nvcc {c.nvcc.seconds:.2f} s" if c.nvcc and c.nvcc.ok else (", nvcc failed" if c.nvcc else "")
        verdict = "clean" if not c.findings else f"{len(c.findings)} FALSE FINDING(S)"
        out.append(f"  {c.kernel}: {verdict} ({c.ms:.1f} ms{nv})")
        for f in c.findings:
            out.append(f"      line {f.row}: {f.code} {f.message}")
        for n in c.notes:
            out.append(f"      note: {n}")
    out.append("")
    out.append("mutations:")
    width = max((len(o.mutation.id) for o in report.mutations), default=10)
    for o in report.mutations:
        rules = ",".join(o.mutation.rules)
        line = f"  {o.status:<15} {o.mutation.id:<{width}}  {rules}"
        if o.status == "not-implemented":
            line += "  (not in the registry: " + ", ".join(r for r in o.not_fired if r not in all_codes()) + ")"
        if o.status == "invalid":
            line += f"  {o.error}"
        out.append(line)
        for f in o.extra:
            out.append(f"      extra: line {f.row}: {f.code} {f.message}")
    t = report.total
    out.append("")
    out.append(
        f"found {t.found} of {t.planted} planted bugs; {t.false_findings} false findings on "
        f"{len(report.clean)} clean kernels; "
        f"{sum(o.status == 'not-implemented' for o in report.mutations)} mutations wait for rules "
        f"not yet in the registry; {sum(o.status == 'invalid' for o in report.mutations)} invalid specs."
    )
    return "\n".join(out) + "\n"
