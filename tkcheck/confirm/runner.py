"""Build and run an instrumented copy, then label each finding (the `verdict` of a Finding).

Verdicts (`Finding.verdict`, a dict):
  {"status": "CONFIRMED", "evidence": [...], "ran": [...]}
  {"status": "NOT REPRODUCED", "ran": [...]}
  {"status": "UNCONFIRMABLE HERE", "reason": "..."}

Single-file kernels with their own `main` are built with nvcc directly; other kernels use
`[tool.tkcheck.confirm]` build/run commands (tkcheck.config.ConfirmConfig), run in the temporary
tree with `{src}` (the instrumented copy), `{bin}` and `{dir}` substituted. Every build and run
has a timeout; the user's files are never written.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import sanitizer as S
from .instrument import (TEMPLATE_FIRST_ID, Record, instrument, instrument_template_dir, parse_records,
                         uses_template)

CONFIRMED = "CONFIRMED"
NOT_REPRODUCED = "NOT REPRODUCED"
UNCONFIRMABLE = "UNCONFIRMABLE HERE"

NVCC_FLAGS = ["-std=c++20", "-O3", "--use_fast_math", "--expt-relaxed-constexpr", "--expt-extended-lambda",
              "-lineinfo", "-DKITTENS_HOPPER", "-gencode", "arch=compute_90a,code=sm_90a"]
BUILD_TIMEOUT_S = 600
RUN_TIMEOUT_S = 20.0
SANITIZER_TIMEOUT_S = 60.0
WIDENED_TRIES = 3
_FAIL_RE = re.compile(r"^\s*FAIL\b|max_abs_err=(?:nan|inf|1e\+?30|1\.0+e\+?30)", re.I | re.M)


class ConfirmError(Exception):
    """A problem with the input or the setup (reported with exit 2)."""


@dataclass
class Run:
    what: str                       # "plain", "instrumented", "racecheck", ...
    argv: str
    rc: int | None
    log: str = ""
    seconds: float | None = None

    @property
    def timed_out(self) -> bool:
        return self.rc in (124, 137, -9, -15)

    def describe(self) -> str:
        if self.rc is None:
            return f"{self.what}: not run"
        if self.timed_out:
            return f"{self.what}: timed out"
        if _FAIL_RE.search(self.log):
            return f"{self.what}: exit {self.rc}, the program's check failed"
        tail = [ln for ln in self.log.splitlines() if ln.strip() and not ln.startswith("TKCHECK_")]
        last = tail[-1].strip() if tail else ""
        return f"{self.what}: exit {self.rc}" + (f" ({last[:80]})" if last and self.rc else "")


@dataclass
class Evidence:
    plain: Run | None = None
    instrumented: Run | None = None
    records: list[Record] = field(default_factory=list)
    tools: list[S.ToolRun] = field(default_factory=list)
    arch: str | None = None              # the GPU's, e.g. "sm_90"
    unconfirmable: str | None = None     # why nothing could be run
    widening: list[str] = field(default_factory=list)   # race-widening edits in the instrumented copy
    build_log: str = ""                  # the plain copy's build output (ptxas notes)
    # compute-sanitizer records (tool, kind, text) that the clean kernel's own run shows too: not
    # evidence (racecheck reports 5 race records on the correct MK interpreter). None: no clean run
    # to compare with (`tkcheck confirm`); then a record that names no place (racecheck's summary
    # "Race condition") is shown but not taken as evidence.
    baseline: set | None = None


# ------------------------------------------------------------------ verdicts

def _finding_lines(f) -> set[tuple[str, int]]:
    locs = [f.location] + [r.location for r in getattr(f, "related", [])] + \
           [s.location for s in getattr(f, "trace", []) if s.location is not None]
    return {(Path(loc.filename).name, loc.row) for loc in locs}


def _finding_barriers(f) -> set[str]:
    text = f.message + " " + " ".join(r.message for r in getattr(f, "related", []))
    return set(re.findall(r"([A-Za-z_][\w.]*)\s*\[", text)) | set(re.findall(r"\b([a-z_]*(?:full|empty|arrived|finished)\w*)", text))


def _rank(rec: Record, lines, bars) -> int:
    if rec.file and rec.line and (Path(rec.file).name, rec.line) in lines:
        return 0
    b = rec.fields.get("barrier", "")
    base = re.split(r"[\[(]", b)[0]
    if base and any(base == x or base.endswith("." + x) or x.endswith("." + base) for x in bars):
        return 1
    return 2


def _symptoms(f) -> set[str]:
    return {s for s in (f.symptom or "").split("/") if s}


def verdict(f, ev: Evidence) -> dict:
    """The verdict for one finding from what was run."""
    arch_rule = _rule_arch(f.code)
    if f.contract == "tool" or f.code.startswith("TK0"):
        return {"status": UNCONFIRMABLE, "reason": "a tool diagnostic, not a run-time contract"}
    if arch_rule and ev.arch and not any(a.startswith(ev.arch) for a in arch_rule):
        return {"status": UNCONFIRMABLE, "reason": f"a {'/'.join(arch_rule)} finding on a {ev.arch} GPU"}
    if ev.unconfirmable:
        return {"status": UNCONFIRMABLE, "reason": ev.unconfirmable}
    syms = _symptoms(f)
    if syms <= {"slow"} and syms:
        return {"status": UNCONFIRMABLE, "reason": "a performance finding: nothing to observe as a failure"}
    ran = [r.describe() for r in (ev.plain, ev.instrumented) if r is not None] + [t.summary() for t in ev.tools]
    widened = _widening_for(f, ev)
    ran += widened
    lines, bars = _finding_lines(f), _finding_barriers(f)
    evidence: list[str] = []
    wd = sorted((r for r in ev.records if r.kind == "WATCHDOG"), key=lambda r: _rank(r, lines, bars))
    stale = sorted((r for r in ev.records if r.kind in ("POISON", "NAN")), key=lambda r: _rank(r, lines, bars))
    phase = [r for r in ev.records if r.kind == "PHASE"]
    # at this finding's own use site: the probe saw a wait there start while the initialising
    # thread was still held before the init
    order = [r for r in ev.records if r.kind == "ORDER" and _rank(r, lines, bars) == 0]
    if f.code == "TK307" and order:
        evidence += [f"use before init: {r.raw}" for r in _distinct(order)[:3]]
    if "hang" in syms and wd:
        evidence += [f"watchdog: {r.raw}" for r in _distinct(wd)[:3]]
        evidence += [f"phase log: {r.raw}" for r in phase[-4:]]
    if syms & {"stripes", "nan", "wrong"} and stale:
        evidence += [f"stale read: {r.raw}" for r in _distinct(stale)[:3]]
    if "hang" in syms and not wd:
        dead = [r for t in ev.tools for r in t.records if r.deadlock]
        if dead:
            evidence.append(f"compute-sanitizer: {dead[0].short()} ({len(dead)} deadlock records)")
    if syms & {"stripes", "nan", "wrong"} and not stale:
        fit = _sanitizer_fit(f)
        errs = [r for t in ev.tools if t.tool in fit for r in t.records
                if r.is_error and not r.deadlock and not S.known_false_alarm(r)
                and (t.tool, r.kind, r.text) not in (ev.baseline or ()) and _attributable(r, lines, ev)]
        if errs:
            evidence.append(f"compute-sanitizer: {errs[0].short()} ({len(errs)} records)")
        crash = next((ln for ln in (ev.plain.log if ev.plain else "").splitlines() if "CUDA error" in ln), "")
        if ev.plain is not None and ev.plain.rc not in (0, None) and not ev.plain.timed_out and crash:
            evidence.append(f"plain run crashed: {re.sub(r' at .*', '', crash.strip())[:120]} (the clean kernel passes)")
        for run in (ev.plain, ev.instrumented):
            if run is not None and not run.timed_out and _FAIL_RE.search(run.log):
                line = next((ln for ln in run.log.splitlines() if "max_abs_err" in ln or "FAIL" in ln), "FAIL")
                evidence.append(f"{run.what} run: the program's own check failed: {line.strip()[:120]}")
                break
    if evidence:
        if widened and not any(e.startswith(("compute-sanitizer", "plain run")) for e in evidence):
            evidence.append("under " + "; ".join(w.removeprefix("widening: ") for w in widened))
        return {"status": CONFIRMED, "evidence": evidence, "ran": ran}
    out = {"status": NOT_REPRODUCED, "ran": ran}
    why = _why_not(f, ev)
    if why:
        out["why"] = why
    return out


_PTXAS_SERIAL = re.compile(r"\((C75(?:14|15|17|18))\)\s*([^\n]*?)(?: in (?:the )?function|$)", re.M)


def _attributable(r, lines, ev: Evidence) -> bool:
    """Whether a compute-sanitizer error record can stand as evidence for a finding on `lines`.

    A racecheck hazard names its two accesses: it counts when one of them is on a line of the
    finding (racecheck also flags accesses it does not model, e.g. an mbarrier init against a
    wait, on correct kernels). A record that names no place counts only against a clean run's
    baseline. Other records (an invalid access, a barrier overflow) do not occur on the clean
    kernels and count as they are."""
    if r.tool == "racecheck" or r.kind == "Analysis":
        places = r.places()
        if places:
            return bool(places & lines)
        return ev.baseline is not None
    return bool(r.func or r.pc or r.file) or ev.baseline is not None


def _why_not(f, ev: Evidence) -> str | None:
    """What makes a race finding unobservable in this binary (ptxas's own wgmma serialization)."""
    if f.code not in ("TK201", "TK206"):
        return None
    m = _PTXAS_SERIAL.search(ev.build_log or "")
    if not m:
        return None
    return (f"ptxas {m.group(1)}: {m.group(2).strip()[:140]} - the compiled code waits for the wgmma "
            f"itself, so this race cannot happen in this build (it can with another compiler or code shape)")


def _widening_for(f, ev: Evidence) -> list[str]:
    lines = _finding_lines(f)
    out = []
    for w in ev.widening:
        sites = set(re.findall(r"([\w.-]+\.(?:cu|cuh)):(\d+)", w))
        # the edit's site, or a statement just after one of the finding's (a read wait after its store)
        if any((n, int(r) - k) in lines for n, r in sites for k in range(4)):
            out.append(w)
    return out


def _distinct(recs: list[Record]) -> list[Record]:
    seen, out = set(), []
    for r in recs:
        key = (r.kind, r.fields.get("site"), r.fields.get("barrier"), r.fields.get("buffer"))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def tools_for(findings) -> list[str]:
    """The compute-sanitizer tools that fit the findings' contracts (all three for no findings:
    a clean kernel's baseline; none when no finding has a fitting tool)."""
    if not findings:
        return ["racecheck", "synccheck", "memcheck"]
    return sorted({t for f in findings for t in _sanitizer_fit(f)})


# rules no compute-sanitizer tool observes: TK407 is about the ordering of global-memory writes
# and counters across SMs; racecheck checks shared memory only (its hazards on the MK
# interpreter's instruction words share a line with the bulk store TK407 names, by coincidence)
_NO_SANITIZER = {"TK407"}


def _sanitizer_fit(f) -> set[str]:
    if f.code in _NO_SANITIZER:
        return set()
    return {"layout": {"memcheck"}, "scope": {"racecheck", "synccheck"}, "accumulator": {"racecheck"},
            "completion": {"racecheck", "memcheck"}, "deadlock": {"racecheck", "synccheck"}}.get(f.contract, set())


def _rule_arch(code: str) -> tuple[str, ...]:
    try:
        from .. import registry
        r = registry.by_code().get(code)
        return tuple(r.arch) if r is not None and tuple(r.arch) != ("sm_90a", "sm_100a") else ()
    except Exception:  # noqa: BLE001
        return ()


def apply_verdicts(findings, ev: Evidence) -> None:
    for f in findings:
        f.verdict = verdict(f, ev)


# ------------------------------------------------------------------ running

def gpu_arch() -> str | None:
    """sm_XY of GPU 0, or None when no GPU/driver is visible."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", out.stdout or "")
    return f"sm_{m.group(1)}{m.group(2)}" if out.returncode == 0 and m else None


def _run(what: str, argv: list[str] | str, timeout: float, cwd: Path, env=None) -> Run:
    import time
    shell = isinstance(argv, str)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, shell=shell, cwd=cwd, capture_output=True, timeout=timeout, env=env,
                           start_new_session=True)
        rc, log = p.returncode, (p.stdout + p.stderr).decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired as e:
        rc = 124
        log = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", errors="replace")
    except OSError as e:
        rc, log = 127, str(e)
    return Run(what, argv if shell else shlex.join(argv), rc, log, time.perf_counter() - t0)


def has_main(text: str) -> bool:
    return re.search(r"\bint\s+main\s*\(", text) is not None


def confirm_file(path: str, text: str, findings, *, confirm_cfg=None, tk_root: str | None = None,
                 include_dirs: tuple[str, ...] = (), timeout: float | None = None,
                 tools: tuple[str, ...] = ("racecheck", "memcheck"), keep: str | None = None,
                 arch: str | None = "auto") -> Evidence:
    """Instrument a copy of `path`, build, run, and set `verdict` on each finding."""
    ev = Evidence()
    ev.arch = gpu_arch() if arch == "auto" else arch
    tk_root = str(Path(tk_root).resolve()) if tk_root else None   # nvcc runs in the copy's folder
    timeout = timeout or (confirm_cfg.timeout if confirm_cfg is not None and confirm_cfg.timeout else RUN_TIMEOUT_S)
    build_cmd = confirm_cfg.build if confirm_cfg is not None else None
    run_cmd = confirm_cfg.run if confirm_cfg is not None else None
    single = has_main(text)
    if ev.arch is None:
        ev.unconfirmable = "no GPU here (nvidia-smi found no device)"
    elif not single and not (build_cmd and run_cmd):
        ev.unconfirmable = ("no run command: the file has no main(); set build and run in "
                            "[tool.tkcheck.confirm]")
    elif single and not build_cmd and not shutil.which("nvcc"):
        ev.unconfirmable = "nvcc not found"
    if ev.unconfirmable:
        apply_verdicts(findings, ev)
        return ev
    # absolute: builds and runs happen with the copy's folder as the working directory
    work = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="tkcheck-confirm-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        _build_and_run(path, text, ev, work, build_cmd, run_cmd, tk_root, include_dirs, timeout, tools, confirm_cfg,
                       findings)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    apply_verdicts(findings, ev)
    return ev


def _argv(cmd) -> list[str] | str:
    return list(cmd) if isinstance(cmd, (list, tuple)) else str(cmd)


def _subst(cmd, mapping: dict[str, str]):
    if isinstance(cmd, (list, tuple)):
        return [c.format(**mapping) for c in cmd]
    return str(cmd).format(**{k: shlex.quote(v) for k, v in mapping.items()})


def _build_and_run(path, text, ev: Evidence, work: Path, build_cmd, run_cmd, tk_root, include_dirs, timeout,
                   tools, cfg, findings=()):
    name = Path(path).name
    plain_dir, inst_dir = work / "plain", work / "instr"
    plain_dir.mkdir(exist_ok=True)
    inst_dir.mkdir(exist_ok=True)
    (plain_dir / name).write_text(text, encoding="utf-8")
    from .widen import plan_for, widening
    wid = widening(findings, text, name)
    ev.widening = wid.describe()
    plan = plan_for(wid)
    proto = None
    tsites = []
    if tk_root and uses_template(text) and (Path(tk_root) / "prototype").is_dir() and plan.watchdog:
        proto = inst_dir / "proto"
        tsites = instrument_template_dir(Path(tk_root) / "prototype", proto, TEMPLATE_FIRST_ID)
    inst = instrument(text, name, plan, template_sites=tsites)
    (inst_dir / name).write_text(inst.text, encoding="utf-8")
    for d, which in ((plain_dir, "plain"), (inst_dir, "instrumented")):
        binary = d / "kernel.bin"
        if build_cmd:
            cmd = _subst(build_cmd, {"src": str(d / name), "bin": str(binary), "dir": str(d)})
        else:
            inc = []
            if tk_root:
                inc += ["-I", str(Path(tk_root) / "include"), "-I", str(proto if proto and d == inst_dir
                                                                         else Path(tk_root) / "prototype")]
            for i in include_dirs:
                inc += ["-I", str(Path(i).resolve())]
            inc += ["-I", str(Path(path).resolve().parent)]
            cmd = ["nvcc", *NVCC_FLAGS, *inc, str(d / name), "-o", str(binary), "-lcuda"]
        b = _run(f"build ({which})", cmd, BUILD_TIMEOUT_S, d)
        if which == "plain":
            ev.build_log = b.log
        if b.rc != 0:
            ev.unconfirmable = f"the {which} copy did not build: " + _last(b.log)
            return
    def run_argv(d: Path):
        if run_cmd:
            return _subst(run_cmd, {"bin": str(d / "kernel.bin"), "dir": str(d), "src": str(d / name)})
        return [str(d / "kernel.bin")]
    ev.plain = _run("plain", run_argv(plain_dir), timeout, plain_dir)
    # a widened race is run up to WIDENED_TRIES times, until a record shows or the program's check fails
    for attempt in range(WIDENED_TRIES if wid else 1):
        ev.instrumented = _run("instrumented" if attempt == 0 else f"instrumented (try {attempt + 1})",
                               run_argv(inst_dir), timeout, inst_dir)
        ev.records = parse_records(ev.instrumented.log)
        if any(r.kind != "PHASE" for r in ev.records) or _FAIL_RE.search(ev.instrumented.log):
            break
    # the run's record, in evidence_from_dir's layout (kept with --keep)
    for fname, body in (("plain.log", ev.plain.log), ("plain.rc", f"{ev.plain.rc}\n"),
                        ("instr.log", ev.instrumented.log), ("instr.rc", f"{ev.instrumented.rc}\n"),
                        ("build_plain.log", ev.build_log), ("build_plain.rc", "0\n"),
                        ("widening.txt", "".join(w + "\n" for w in ev.widening))):
        (work / fname).write_text(body, encoding="utf-8")
    extra = tuple(cfg.sanitizer_args) if cfg is not None else ()
    for tool in tools:
        xml = work / f"{tool}.xml"
        base = run_argv(plain_dir)
        if isinstance(base, str):
            argv = " ".join(shlex.quote(a) for a in S.command(tool, [], str(xml), extra)) + " " + base
        else:
            argv = S.command(tool, base, str(xml), extra)
        r = _run(tool, argv, max(SANITIZER_TIMEOUT_S, 3 * timeout), plain_dir)
        try:
            recs = S.parse_file(xml, tool) if xml.exists() else []
        except S.SanitizerXMLError:
            recs = []
        ev.tools.append(S.ToolRun(tool, r.rc, recs))
        (work / f"{tool}.rc").write_text(f"{r.rc}\n", encoding="utf-8")


def _last(log: str) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()] or log.splitlines() or [""]
    return lines[0].strip()[:200]


# ------------------------------------------------------------------ recorded batches (docs/BENCHMARKS.md)

def evidence_from_dir(d: Path, arch: str = "sm_90") -> Evidence:
    """Evidence from a folder of a recorded run: plain.{rc,log}, instr.{rc,log}, <tool>.{rc,xml}."""
    def rd(name):
        p = d / name
        return p.read_text(encoding="utf-8", errors="replace") if p.exists() else None
    ev = Evidence(arch=arch)
    ev.build_log = rd("build_plain.log") or ""
    if rd("widening.txt"):
        ev.widening = [ln for ln in rd("widening.txt").splitlines() if ln.strip()]
    if rd("build_plain.rc") not in (None,) and rd("build_plain.rc").strip() != "0":
        ev.unconfirmable = "does not build (nvcc rejects it)"
        return ev
    def rc(name):
        v = rd(name)
        return int(v.strip()) if v and v.strip().lstrip("-").isdigit() else None
    if rd("plain.rc") is not None:
        ev.plain = Run("plain", "bin", rc("plain.rc"), rd("plain.log") or "")
    if rd("instr.rc") is not None:
        ev.instrumented = Run("instrumented", "bin", rc("instr.rc"), rd("instr.log") or "")
        ev.records = parse_records(ev.instrumented.log)
    for tool in S.TOOLS:
        if rd(f"{tool}.rc") is None:
            continue
        recs = []
        if (d / f"{tool}.xml").exists():
            try:
                recs = S.parse_file(d / f"{tool}.xml", tool)
            except S.SanitizerXMLError:
                recs = []
        ev.tools.append(S.ToolRun(tool, rc(f"{tool}.rc"), recs))
    return ev


def collect_batch(results: Path, corpus: Path) -> list[dict]:
    from ..evaluate import check_clean, check_mutation, load_mutations
    from .gpu_batch import RUNNABLE, _clean_id
    muts = {m.id: m for m in load_mutations(corpus)}
    rows = []

    def baseline(kernel: str) -> set | None:
        d = Path(results) / _clean_id(kernel)
        if not d.is_dir():
            return None
        return {(t.tool, r.kind, r.text) for t in evidence_from_dir(d).tools for r in t.records if r.is_error}
    with tempfile.TemporaryDirectory() as td:
        for d in sorted(p for p in Path(results).iterdir() if p.is_dir()):
            vid = d.name
            if vid.startswith("clean-"):
                k = next((p for folder in RUNNABLE for p in sorted((Path(corpus) / folder).glob("*.cu"))
                          if _clean_id(f"{folder}/{p.name}") == vid), None)
                if k is None:
                    continue
                res = check_clean(k)
                m = None
            elif vid in muts:
                m = muts[vid]
                res = check_mutation(corpus, m, Path(td))
            else:
                continue
            ev = evidence_from_dir(d)
            if m is not None:
                ev.baseline = baseline(m.kernel)
            findings = [f for f in res.findings if f.code != "TK000"]
            apply_verdicts(findings, ev)
            for f in findings:
                if m is not None and m.unobservable and f.code in m.rules and f.verdict["status"] == NOT_REPRODUCED:
                    f.verdict.setdefault("why", m.unobservable)
            rows.append({
                "id": vid, "symptom": m.symptom if m else "", "rules": list(m.rules) if m else [],
                "plain": _plain_result(ev), "sanitizer": _sanitizer_result(ev),
                "findings": [{"code": f.code, "line": f.location.row, "symptom": f.symptom, "verdict": f.verdict}
                             for f in findings],
                "records": {k: sum(1 for r in ev.records if r.kind == k) for k in ("WATCHDOG", "POISON", "NAN")},
                "unconfirmable": ev.unconfirmable,
            })
    return rows


def _plain_result(ev: Evidence) -> str:
    if ev.unconfirmable:
        return ev.unconfirmable
    if ev.plain is None:
        return "not run"
    if ev.plain.timed_out:
        return "hang (killed at the timeout)"
    if "PASS" in ev.plain.log and ev.plain.rc == 0:
        return "PASS"
    if _FAIL_RE.search(ev.plain.log):
        return "FAIL (wrong output)"
    err = next((ln for ln in ev.plain.log.splitlines() if "CUDA error" in ln), "")
    m = re.search(r"CUDA error (.*?) at ", err)
    return f"exit {ev.plain.rc}" + (f": {m.group(1)}" if m else "")


def _sanitizer_result(ev: Evidence) -> str:
    return "; ".join(t.summary() for t in ev.tools) or "not run"


def batch_table(rows: list[dict]) -> str:
    out = ["| planted bug | symptom | plain run | compute-sanitizer alone | tkcheck finding: verdict (evidence) |",
           "|---|---|---|---|---|"]
    for r in rows:
        cells = []
        order = {CONFIRMED: 0, UNCONFIRMABLE: 1, NOT_REPRODUCED: 2}
        for f in sorted(r["findings"], key=lambda f: (f["code"] not in r["rules"],
                                                     order.get((f["verdict"] or {}).get("status"), 3))):
            v = f["verdict"] or {}
            st = v.get("status", "")
            ev = (v.get("evidence") or [v.get("reason", "")])[0] if st != NOT_REPRODUCED else v.get("why", "")
            ev = re.sub(r"\s+", " ", ev)[:130].replace("|", "/")
            cells.append(f"{f['code']}:{f['line']} **{st}**" + (f" ({ev})" if ev else ""))
        if len(cells) > 2:
            rest = len(cells) - 2
            cells = cells[:2] + [f"(+{rest} more)"]
        if not cells:
            cells = ["no finding" + (f" (rules {', '.join(r['rules'])} not implemented or missed)" if r["rules"] else "")]
        out.append(f"| `{r['id']}` | {r['symptom'] or '-'} | {r['plain']} | {r['sanitizer'].replace('|', '/')} | "
                   + "<br>".join(cells) + " |")
    return "\n".join(out) + "\n"


def summary(rows: list[dict]) -> dict:
    s = {"variants": len(rows)}
    for key in (CONFIRMED, NOT_REPRODUCED, UNCONFIRMABLE):
        s[key] = sum(1 for r in rows for f in r["findings"] if (f["verdict"] or {}).get("status") == key)
    return s


def dump(rows, path):
    Path(path).write_text(json.dumps(rows, indent=1), encoding="utf-8")
