"""tkcheck confirm on anyone's kernel: processes, failure reading, layouts, evidence at the site,
the SASS, the device probe, -j over GPUs, formats and exit codes (fakes; no GPU needed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import confirm_fakes as CF
from tkcheck import evaluate
from tkcheck.confirm import device as D
from tkcheck.confirm import instrument as I
from tkcheck.confirm import outcome as O
from tkcheck.confirm import procs as P
from tkcheck.confirm import runner as R
from tkcheck.confirm import sanitizer as S
from tkcheck.confirm import sassmap as M
from tkcheck.findings import Finding, Location, Related

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
DATA = Path(__file__).parent / "data" / "confirm"
TK_ROOT = Path(os.environ.get("TK_ROOT", ROOT / "third_party" / "ThunderKittens"))


def _f(code, row, related=(), name="k.cu", symptom="hang", contract="completion", msg="x"):
    f = Finding(code, msg, Location(name, row, 5))
    f.related = [Related(Location(name, r, 5), m) for r, m in related]
    f.symptom, f.contract, f.name = symptom, contract, "x"
    return f


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


# ---------------------------------------------------------------- processes (item 6)


@needs_proc
def test_a_background_child_does_not_outlive_its_run(tmp_path):
    p = P.run_clean(["sh", "-c", "sleep 300 & echo child=$!"], timeout=60, cwd=tmp_path)
    assert p.rc == 0 and not p.timed_out
    pid = int(p.log.split("child=")[1].split()[0])
    assert not _alive(pid) and p.left_behind == 1


def _ready_before_timeout(cmd, ready: str, **kw):
    """run_clean with a short timeout that the program outlives; where a loaded machine had not
    even started it (no `ready` line yet) when the time was up, again with a longer one: what
    the test asserts never depends on how fast the machine starts Python."""
    for timeout in (2, 8, 32, 128):
        p = P.run_clean(cmd, timeout=timeout, **kw)
        if ready in p.log:
            break
    return p


@needs_proc
def test_a_timeout_ends_the_whole_session_even_a_child_in_another_group(tmp_path):
    # the grandchild moves to a process group of its own (as a program under a subreaper may):
    # the session scan still finds it
    script = (
        "import os, subprocess, sys, time\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); time.sleep(300)'])\n"
        "print('child', c.pid, flush=True)\ntime.sleep(300)\n"
    )
    p = _ready_before_timeout([sys.executable, "-c", script], "child", cwd=tmp_path)
    assert p.timed_out and p.rc == -signal.SIGKILL
    pid = int(p.log.split("child")[1].split()[0])
    assert not _alive(pid)


@needs_proc
def test_interrupt_first_lets_a_tool_write_its_output(tmp_path):
    script = (
        "import signal, sys, time\n"
        "def stop(*a):\n    open('saved.xml', 'w').write('<x/>'); sys.exit(3)\n"
        "signal.signal(signal.SIGINT, stop)\nprint('up', flush=True)\ntime.sleep(300)\n"
    )
    p = _ready_before_timeout([sys.executable, "-c", script], "up", cwd=tmp_path, interrupt=signal.SIGINT)
    assert p.timed_out and p.rc == 3 and (tmp_path / "saved.xml").read_text() == "<x/>"


def test_a_program_that_does_not_start():
    p = P.run_clean(["/nonexistent/program"], timeout=5)
    assert p.rc is None and p.error


# ---------------------------------------------------------------- failures as a person reads them (item 2)


@pytest.mark.parametrize(
    "rc,log,status,shows",
    [
        (0, "result ok\nPASS\n", O.PASS, ""),
        (1, "SELFCHECK FAIL 97763\n", O.FAIL, "SELFCHECK FAIL 97763"),
        (0, "SELFCHECK FAIL 3\n", O.FAIL, "SELFCHECK FAIL 3"),  # the line says it, whatever the exit
        (1, "done\n", O.FAIL, "exit 1"),  # the exit status alone says it
        (0, "mismatches: 0\nPASS\n", O.PASS, ""),
        (0, "17 mismatches out of 4096\n", O.FAIL, "17 mismatches"),
        (0, "Max error: 0.12\nError count: 0\n", O.PASS, ""),
        (0, "Max error: 97.7\nError count: 3841\n", O.FAIL, "Error count: 3841"),
        (0, "max error = nan\n", O.FAIL, "max error = nan"),
        (2, "CUDA error unspecified launch failure at k.cu:10\n", O.CRASH, "unspecified launch failure"),
        (1, "kernel: an illegal memory access was encountered\n", O.CRASH, "illegal memory access"),
        (1, "launch failed: misaligned address\n", O.CRASH, "misaligned address"),
        (0, "status cudaErrorLaunchFailure\n", O.CRASH, "cudaErrorLaunchFailure"),
        (-6, "cuda call failed: cudaErrorIllegalAddress at k.cu:7\n", O.CRASH, "SIGABRT"),
        (-6, "check: values differ\n", O.CRASH, "killed by SIGABRT"),
        (134, "aborted\n", O.CRASH, "killed by SIGABRT"),  # a shell's 128 + SIGABRT
        (0, "no CUDA error\nPASS\n", O.PASS, ""),
    ],
)
def test_outcomes(rc, log, status, shows):
    o = O.classify(rc, log, shell=rc == 134)
    assert o.status == status, o
    assert shows in o.text()


def test_a_hang_and_a_run_that_never_ran():
    assert O.classify(None, "", timed_out=True).status == O.HANG
    assert O.classify(None, "").status == O.NOT_RUN


def test_fail_and_pass_patterns():
    pats = O.Patterns(fail=(r"numbers differ",), passing=(r"^all \d+ checks ok$",))
    assert O.classify(0, "numbers differ at 3\n", patterns=pats).status == O.FAIL
    assert O.classify(0, "all 12 checks ok\n", patterns=pats).status == O.PASS
    o = O.classify(0, "finished\n", patterns=pats)
    assert o.status == O.FAIL and "pass-pattern" in o.why
    with pytest.raises(O.PatternError):
        O.Patterns(fail=("(unclosed",))


def test_config_takes_fail_and_pass_patterns(tmp_path):
    from tkcheck.config import ConfigError, load_config

    (tmp_path / "pyproject.toml").write_text(
        '[tool.tkcheck.confirm]\nfail-pattern = ["numbers differ", "^BAD"]\npass-pattern = "^ok$"\n'
    )
    cfg = load_config(tmp_path)
    assert cfg.confirm.fail_pattern == ("numbers differ", "^BAD") and cfg.confirm.pass_pattern == ("^ok$",)
    (tmp_path / "pyproject.toml").write_text('[tool.tkcheck.confirm]\nfail-pattern = ["(unclosed"]\n')
    with pytest.raises(ConfigError, match="not a regular expression"):
        load_config(tmp_path)


# ---------------------------------------------------------------- the device (item 8)


def test_probe_through_cuda_python(monkeypatch):
    monkeypatch.setattr(D, "_smi_driver", lambda: "580.159.03")
    monkeypatch.setattr(D, "nvcc_version", lambda nvcc="nvcc": "nvcc 13.0")
    info = D.probe(CF.FakeDriver([("NVIDIA H200", 9, 0), ("NVIDIA B200", 10, 0)], version=13000))
    assert [(g.index, g.name, g.arch) for g in info.gpus] == [(0, "NVIDIA H200", "sm_90"), (1, "NVIDIA B200", "sm_100")]
    assert info.via == "cuda-python" and info.arch == "sm_90"
    assert info.describe(1) == "GPU 1 NVIDIA B200 (sm_100), driver 580.159.03 (CUDA 13.0), nvcc 13.0"


def test_probe_without_a_driver(monkeypatch):
    monkeypatch.setattr(D, "_driver_module", lambda: None)
    monkeypatch.setattr(D.shutil, "which", lambda name: None)
    info = D.probe()
    assert not info.gpus and "no GPU here" in info.error
    info = D.probe(CF.FakeDriver(init_error=100), toolkit=False)
    assert not info.gpus and info.error


def test_a_blackwell_finding_on_a_hopper_gpu_says_so(monkeypatch):
    monkeypatch.setattr(R, "_rule_arch", lambda code: ("sm_100a",))
    ev = R.Evidence(arch="sm_90", device="GPU 0 NVIDIA H200 (sm_90), driver 580.159.03")
    v = R.verdict(_f("TK601", 3), ev)
    assert v["status"] == R.UNCONFIRMABLE and "sm_100a finding on a sm_90 GPU" in v["reason"]
    assert "NVIDIA H200" in v["reason"]


def test_static_mode_needs_no_cuda_python():
    # the static check never imports the device probe (nor cuda-python)
    code = (
        "import sys, tkcheck.engine, tkcheck.cli.cli; "
        "assert 'tkcheck.confirm.device' not in sys.modules and 'cuda' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------- layouts (item 1)


def test_main_found_in_a_header_included_after_the_kernel(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "harness.cuh").write_text('#include "more.cuh"\n')
    (tmp_path / "sub" / "more.cuh").write_text("// int main() in a comment\nint main(int argc, char** argv) {}\n")
    text = '__global__ void k() {}\n#include "sub/harness.cuh"\n'
    assert R.find_main(tmp_path / "k.cu", text) == (tmp_path / "sub" / "more.cuh").resolve()
    assert R.find_main(tmp_path / "k.cu", "__global__ void k() {}\n// int main() {}\n") is None
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.cuh").write_text("int main() { return 0; }\n")
    assert R.find_main(tmp_path / "k.cu", '#include "h.cuh"\n', include_dirs=(str(tmp_path / "inc"),))


def test_the_prelude_comes_first_whatever_the_order_of_includes():
    text = (
        '__global__ void k(int* p) {\n    __shared__ semaphore bar;\n    wait(bar, 0);\n'
        '    warpgroup::store(g.C, acc, {0, 0, 1, 2});\n}\n#include "harness.cuh"\n'
    )
    inst = I.instrument(text, "k.cu")
    first, second = inst.text.split("\n")[:2]
    assert first == f'#include "{I.PRELUDE_NAME}"' and second == '#line 1 "k.cu"'
    # no helper text in the copy itself: declared in the header before any use
    assert "template <class T>" not in inst.text and "tkcheck_nan_regs(const T& t" in inst.prelude
    assert '::tkcheck_nan_regs(acc, ' in inst.text  # the accumulator stored to global memory
    # one budget per kind and a cap per site: consumers cannot crowd out the producer's record
    assert "tkcheck_take(0, site)" in inst.prelude and "tkcheck_take(1, site)" in inst.prelude
    assert "tkcheck_take(2, site)" in inst.prelude and "TKCHECK_PER_SITE" in inst.prelude


HARNESS = r'''#pragma once
#include <cstdio>
#include <cstdlib>
int main() {
    if (launch() != 0) { std::printf("SELFCHECK FAIL 1\n"); return 1; }
    std::printf("SELFCHECK PASS\n");
    return 0;
}
'''


@pytest.mark.skipif(
    not (TK_ROOT / "include").is_dir() or shutil.which("nvcc") is None,
    reason="needs nvcc and a ThunderKittens checkout (TK_ROOT or third_party/ThunderKittens)",
)
def test_an_instrumented_kernel_with_its_main_in_a_later_header_compiles(tmp_path):
    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == "gemm_ring-expect-short")
    text = evaluate.mutated_text(CORPUS, m)
    kernel = text[: text.index("// host harness")]
    kernel += "int launch() { return 0; }\n#include \"harness_selfcheck.cuh\"\n"
    (tmp_path / "harness_selfcheck.cuh").write_text(HARNESS)
    src = tmp_path / "src"
    src.mkdir()
    (src / "gemm_ring.cu").write_text(kernel)
    assert R.find_main(src / "gemm_ring.cu", kernel, include_dirs=(str(tmp_path),))
    d = tmp_path / "instr"
    I.instrument(kernel, "gemm_ring.cu").write(d, "gemm_ring.cu")
    p = subprocess.run(
        [
            "nvcc",
            *R.NVCC_FLAGS,
            "-I",
            str(TK_ROOT / "include"),
            "-I",
            str(TK_ROOT / "prototype"),
            "-I",
            str(tmp_path),
            "-c",
            str(d / "gemm_ring.cu"),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-3000:]


# ---------------------------------------------------------------- evidence tied to the finding (item 3)


def _ev(plain_rc=0, plain_log="PASS\n", instr_log="", killed=False, **kw):
    ev = R.Evidence(
        arch="sm_90",
        plain=R.Run("plain", "bin", plain_rc, plain_log, killed=killed),
        instrumented=R.Run("instrumented", "bin", 0, instr_log),
        records=I.parse_records(instr_log),
        **kw,
    )
    return ev


WD_EMPTY = (
    "TKCHECK_WATCHDOG site=0 k.cu:77 barrier=empty[s] parity=0 stage=0 phase=0 block=3 warp=0 thread=0 waited_ms=2001\n"
)
WD_FULL = (
    "TKCHECK_WATCHDOG site=2 k.cu:95 barrier=full[s] parity=0 stage=0 phase=0 block=3 warp=5 thread=160 "
    "waited_ms=2001\n"
)


def test_a_watchdog_record_confirms_only_the_finding_at_its_site():
    ev = _ev(None, "", WD_FULL + WD_EMPTY, killed=True)
    at_77 = _f(
        "TK303", 77, [(66, "initialised here")], symptom="stripes/hang", msg="wait on 'empty[0]' passes parity 0"
    )
    v = R.verdict(at_77, ev)
    assert v["status"] == R.CONFIRMED and v["evidence"][0].startswith("watchdog: TKCHECK_WATCHDOG site=0 k.cu:77")
    assert v["evidence"][-1] == "plain run: hang (killed at the timeout)"
    assert v["other"][0].startswith("watchdog: TKCHECK_WATCHDOG site=2 k.cu:95")
    # only the consumers' record: another site's, shown, not taken
    ev = _ev(None, "", WD_FULL, killed=True)
    v = R.verdict(at_77, ev)
    assert v["status"] == R.NOT_REPRODUCED and v["other"] and "no run ties the failure" in v["why"]
    # the same record at the finding's barrier (its object), on another line: its own
    expect = _f("TK301", 78, [(80, "loads here")], msg="expect on 'full[s]' counts 24576 bytes")
    assert R.verdict(expect, ev)["status"] == R.CONFIRMED


def test_a_watchdog_record_is_no_evidence_for_a_race():
    ev = _ev(None, "", WD_FULL, killed=True)
    race = _f(
        "TK206",
        95,
        [(96, "the wgmma reading `A_s` is issued here")],
        symptom="wrong",
        contract="accumulator",
        msg="`A_s` refilled while the wgmma may read it; released on 'full'",
    )
    assert R.verdict(race, ev)["status"] == R.NOT_REPRODUCED


def _mem(text, path=None, line=None, pc="0x1b00", kind="Precise"):
    return S.SanitizerRecord("memcheck", kind, "Error", text, func="kernel", pc=pc, file=path, line=line)


def test_a_misaligned_address_does_not_confirm_a_byte_count():
    ev = _ev(2, "CUDA error misaligned address\n")
    rec = _mem("Invalid __shared__ write of size 16 bytes: misaligned address", "tma.cuh", 689)
    rec.user = ("k.cu", 80)
    ev.tools = [S.ToolRun("memcheck", 1, [rec])]
    count = _f("TK301", 78, [(80, "the loads of stage 's' here")], msg="expect on 'full[s]'")
    v = R.verdict(count, ev)
    assert v["status"] == R.NOT_REPRODUCED
    assert "misaligned address at k.cu:80 (in tma.cuh:689)" in v["other"][0]
    layout = _f("TK102", 80, symptom="nan", contract="layout", msg="tile base misaligned")
    v = R.verdict(layout, ev)
    assert v["status"] == R.CONFIRMED
    assert v["evidence"][0] == (
        "compute-sanitizer memcheck: Precise: Invalid __shared__ write of size 16 bytes: "
        "misaligned address at k.cu:80 (in tma.cuh:689) (1 records at this finding's lines)"
    )


def test_sanitizer_records_are_put_on_the_users_line_through_the_sass():
    sass = (DATA / "sass" / "attn_fwd-release-v-in-flight.sass").read_text()
    ev = R.Evidence(arch="sm_90", sass=sass)
    rec = S.SanitizerRecord(
        "racecheck",
        "Racecheck",
        "Error",
        "Race",
        func="arrive",
        pc="0x19a0",
        file="include/ops/thread/util/sync.cuh",
        line=72,
    )
    ev.tools = [S.ToolRun("racecheck", 0, [rec])]
    R.map_records(ev, "attn_fwd.cu")
    assert rec.user == ("attn_fwd.cu", 118) and ("attn_fwd.cu", 118) in rec.places()
    assert "at attn_fwd.cu:118 (in sync.cuh:72)" in rec.short()
    # a pc whose instruction is elsewhere than the record says: no frame claimed
    other = S.SanitizerRecord("racecheck", "Racecheck", "Error", "Race", func="x", pc="0x19a0", file="sync.cuh", line=9)
    ev.tools = [S.ToolRun("racecheck", 0, [other])]
    R.map_records(ev, "attn_fwd.cu")
    assert other.user is None


def test_sanitizer_xml_keeps_kind_message_and_device_frames():
    xml = (
        "<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Precise</kind><level>Error</level>"
        "<who><threadIdx><x>3</x><y>0</y><z>0</z></threadIdx><blockIdx><x>1</x><y>0</y><z>0</z></blockIdx></who>"
        "<what><text>Invalid __global__ read of size 16 bytes</text><error>misaligned address</error></what>"
        "<where><func>load_async</func><path>/x/include/tma.cuh</path><line>689</line><pc>0x1b00</pc></where>"
        "<deviceStack><frame><func>load_async</func><path>/x/include/tma.cuh</path><line>689</line></frame>"
        "<frame><func>kernel</func><path>/y/k.cu</path><line>80</line></frame></deviceStack>"
        "<hostStack><frame><func>main</func><path>/y/harness.cuh</path><line>9</line></frame></hostStack>"
        "</record></ComputeSanitizerOutput>"
    )
    (r,) = S.parse_xml(xml, "memcheck")
    assert r.message() == "Precise: Invalid __global__ read of size 16 bytes: misaligned address"
    assert ("k.cu", 80) in r.places() and ("harness.cuh", 9) not in r.places()


def test_a_widening_that_makes_a_failing_plain_run_pass_is_discarded():
    f = _f(
        "TK206",
        79,
        [(96, "the wgmma reading `A_s` is issued here"), (98, "`empty` is released here")],
        symptom="wrong",
        contract="accumulator",
    )
    k = R.finding_key(f)
    ev = _ev(1, "max_abs_err=27.5\nSELFCHECK FAIL 977\n")
    c = R.Copy(
        "widened copy for TK206 at k.cu:79",
        "widen",
        (k,),
        ["widening: the consumer waits ~4us"],
        [R.Run("w", "bin", 0, "SELFCHECK PASS\n")] * 3,
    )
    ev.copies = [c]
    v = R.verdict(f, ev)
    assert v["status"] == R.NOT_REPRODUCED
    assert any("the widening hid the failure and is discarded" in n for n in v["notes"])
    # the same copy failing where the plain run passes: this finding's evidence
    ev = _ev(0, "SELFCHECK PASS\n")
    ev.copies = [R.Copy(c.name, "widen", (k,), c.edits, [R.Run("w", "bin", 1, "SELFCHECK FAIL 12\n")])]
    v = R.verdict(f, ev)
    assert v["status"] == R.CONFIRMED and v["evidence"][0].startswith("widened copy: the program's own check failed")
    # ... and no other finding's
    g = _f("TK206", 81, [(96, "the wgmma reading `B_s` is issued here")], symptom="wrong", contract="accumulator")
    assert R.verdict(g, ev)["status"] == R.NOT_REPRODUCED


def test_a_repaired_layout_that_passes_confirms_the_view():
    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == "gemm_ring-epilogue-store-sw64")
    text = evaluate.mutated_text(CORPUS, m)
    row = text[: text.index("reinterpret_cast")].count("\n") + 1
    f = _f("TK101", row, name="gemm_ring.cu", symptom="wrong", contract="layout")
    new, what = R.repair_edit(text, f)
    assert "reinterpret_cast" not in new.split("\n")[row - 1] and "warpgroup::store((C_s[c]), acc0);" in new
    assert new.count("\n") == text.count("\n") and "replaced by `C_s[c]`" in what
    assert R.repair_edit(text, _f("TK301", row, name="gemm_ring.cu")) is None  # layouts only
    ev = _ev(1, "gemm_ring max_abs_err=27.5\nFAIL\n")
    ev.copies = [R.Copy("repaired copy", "repair", (R.finding_key(f),), [what], [R.Run("r", "bin", 0, "PASS\n")])]
    v = R.verdict(f, ev)
    assert v["status"] == R.CONFIRMED and v["evidence"][0].startswith("repaired copy passes: the view")
    ev.copies[0].runs = [R.Run("r", "bin", 1, "FAIL\n")]
    assert R.verdict(f, ev)["status"] == R.NOT_REPRODUCED


def test_nan_rows_are_shown_for_the_stored_buffer():
    log = (
        "TKCHECK_POISON site=3 k.cu:95 barrier=full[s] buffer=A_s[s][0] stage=1 block=0 warp=4 poisoned_16B=8 of 512\n"
        "TKCHECK_NAN site=9 k.cu:106 barrier=C_s[c] buffer=C_s[c] block=0 warp=4 nan_rows=16 of 64 first=0 last=15\n"
    )
    ev = _ev(1, "FAIL\n", log)
    f = _f(
        "TK306", 106, [(108, "'C_s' released here without a read wait")], symptom="stripes", msg="store of `C_s[c]` ..."
    )
    v = R.verdict(f, ev)
    assert v["status"] == R.CONFIRMED and v["evidence"][0].startswith("NaN rows: TKCHECK_NAN")
    assert v["other"][0].startswith("stale read: TKCHECK_POISON")


def test_no_run_can_observe_it_is_said():
    ev = _ev(0, "PASS\n")
    ev.sites = [I.Site(0, "wait", "k.cu", 95, "full[s]")]
    v = R.verdict(_f("TK103", 40, symptom="wrong", contract="layout", msg="read-back of `x`"), ev)
    assert v["status"] == R.UNCONFIRMABLE and "no run here can observe it" in v["reason"]


# ---------------------------------------------------------------- what the binary says (item 4)


def _tk206(row, mma, rel, name):
    return _f(
        "TK206",
        row,
        [(mma, "the wgmma reading `A_s` is issued here"), (rel, "`empty` is released here")],
        name=name,
        symptom="wrong",
        contract="accumulator",
    )


def test_ptxas_serialized_only_where_the_sass_shows_the_wait_first():
    build = (
        "ptxas info    : (C7517) warpgroup.wait is injected in around line 1556 by compiler to allow use of registers"
    )
    ring = R.Evidence(
        arch="sm_90",
        plain=R.Run("plain", "b", 0, "PASS\n"),
        build_log=build,
        sass=(DATA / "sass" / "gemm_ring-release-before-mma-wait.sass").read_text(),
    )
    v = R.verdict(_tk206(79, 96, 98, "gemm_ring.cu"), ring)
    assert v["status"] == R.NOT_REPRODUCED and "WARPGROUP.DEPBAR.LE gsb0, 0x0" in v["why"]
    assert "cannot happen in this build" in v["why"]
    attn = R.Evidence(
        arch="sm_90",
        plain=R.Run("plain", "b", 0, "PASS\n"),
        build_log=build,
        sass=(DATA / "sass" / "attn_fwd-release-v-in-flight.sass").read_text(),
    )
    v = R.verdict(_tk206(81, 117, 118, "attn_fwd.cu"), attn)
    # the same ptxas note, but the release arrive comes before the wgmma wait: no "cannot happen"
    assert "cannot happen" not in v["why"] and "the race can happen in this binary" in v["why"]
    assert "SYNCS.ARRIVE.TRANS64.A1T0 at /*19a0*/" in v["why"]


def test_wgmma_order_reads_the_code_order_not_the_line_tags():
    fns = M.functions((DATA / "sass" / "attn_fwd-release-v-in-flight.sass").read_text())
    o = M.wgmma_order(fns, "attn_fwd.cu", {118})
    assert o is not None and not o.serialized and "HGMMA at /*1990*/" in o.text
    assert M.wgmma_order(fns, "attn_fwd.cu", {5}) is None


# ---------------------------------------------------------------- end to end with a fake nvcc

KERNEL = '''__global__ void k() {
    wait(full[s], 0);
    tma::store_async(g.C, C_s[c], {0, 0, 0, 0});
    arrive(empty[s]);
}
#include "harness_main.cuh"
'''
MAIN_HEADER = "int main() { return 0; }\n"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    CF.install(tmp_path / "bin", monkeypatch)
    d = tmp_path / "src"
    d.mkdir()
    (d / "harness_main.cuh").write_text(MAIN_HEADER)
    return d


def test_e2e_main_in_a_header_and_a_watchdog_at_the_site(fake):
    text = KERNEL + (
        "// fake plain: sleep 300 & sleep 300\n"
        '// fake instrumented: echo "TKCHECK_WATCHDOG site=0 k.cu:2 barrier=full[s] parity=0 stage=0 phase=0 block=1 '
        'warp=4 thread=128 waited_ms=2000"; echo "CUDA error unspecified launch failure"; exit 2\n'
    )
    (fake / "k.cu").write_text(text)
    f = _f("TK301", 2, msg="expect on 'full[s]' counts 24576 bytes")
    keep = fake.parent / "kept"
    for timeout in (2, 8, 32, 128):  # the plain run hangs; the probe copy's must have started and ended
        ev = R.confirm_file(str(fake / "k.cu"), text, [f], arch="sm_90", timeout=timeout, tools=(), keep=str(keep))
        if ev.instrumented is None or not ev.instrumented.timed_out:
            break
    assert ev.unconfirmable is None and ev.plain.timed_out
    assert f.verdict["status"] == R.CONFIRMED and f.verdict["evidence"][0].startswith("watchdog:")
    # the copy includes its prelude first; the prelude is beside it; the evidence folder reads back
    assert (keep / "instr" / "k.cu").read_text().startswith(f'#include "{I.PRELUDE_NAME}"')
    assert (keep / "instr" / I.PRELUDE_NAME).is_file()
    again = R.evidence_from_dir(keep)
    assert R.verdict(f, again)["status"] == R.CONFIRMED


def test_e2e_selfcheck_exit_codes_and_a_widened_race(fake):
    text = KERNEL + (
        '// fake plain: echo "SELFCHECK PASS"\n'
        '// fake widened: echo "SELFCHECK FAIL 4096"; exit 1\n'
        '// fake instrumented: echo "SELFCHECK PASS"\n'
    )
    (fake / "k.cu").write_text(text)
    f = _f("TK504", 3, symptom="wrong", contract="deadlock", msg="exit with the store of `C_s[c]` in flight")
    R.confirm_file(str(fake / "k.cu"), text, [f], arch="sm_90", timeout=10, tools=())
    v = f.verdict
    assert v["status"] == R.CONFIRMED, v
    assert (
        v["evidence"][0]
        == "widened copy: the program's own check failed (exit 1): SELFCHECK FAIL 4096 (the plain run passes)"
    )
    assert v["evidence"][1].startswith("under C_s[c] is poisoned after the store issue")


def test_e2e_abort_after_a_cuda_error_is_a_crash_tied_to_nothing(fake):
    text = KERNEL + (
        '// fake any: echo "cuda call failed: cudaErrorIllegalAddress (an illegal memory access was '
        'encountered) at k.cu:9"; kill -ABRT $$\n'
    )
    (fake / "k.cu").write_text(text)
    f = _f("TK302", 4, symptom="wrong", contract="completion", msg="count of 'empty'")
    ev = R.confirm_file(str(fake / "k.cu"), text, [f], arch="sm_90", timeout=10, tools=())
    o = ev.plain.outcome()
    assert o.status == O.CRASH and "cudaErrorIllegalAddress" in o.text() and "SIGABRT" in o.text()
    assert f.verdict["status"] == R.NOT_REPRODUCED and "no run ties the failure" in f.verdict["why"]


def test_e2e_fail_pattern_from_the_config(fake):
    from tkcheck.config import ConfirmConfig

    text = KERNEL + '// fake plain: echo "numbers differ at 7"\n'
    (fake / "k.cu").write_text(text)
    f = _f("TK301", 2, msg="expect on 'full[s]'")
    ev = R.confirm_file(
        str(fake / "k.cu"),
        text,
        [f],
        arch="sm_90",
        timeout=10,
        tools=(),
        confirm_cfg=ConfirmConfig(fail_pattern=("numbers differ",)),
    )
    assert ev.plain.outcome(ev.patterns).status == O.FAIL


def test_e2e_no_main_anywhere(fake):
    text = "__global__ void k() { wait(full[s], 0); }\n// fake link: nomain\n"
    (fake / "k.cu").write_text(text)
    f = _f("TK301", 1)
    ev = R.confirm_file(str(fake / "k.cu"), text, [f], arch="sm_90", timeout=10, tools=())
    assert f.verdict["status"] == R.UNCONFIRMABLE and "no run command" in f.verdict["reason"]
    assert "does not link into a program" in ev.unconfirmable


def test_e2e_a_sanitizer_that_hangs_leaves_nothing(fake):
    text = KERNEL + "// fake plain: sleep 300 & sleep 300\n"
    (fake / "k.cu").write_text(text)
    f = _f("TK301", 2, msg="expect on 'full[s]'")
    ev = R.confirm_file(
        str(fake / "k.cu"), text, [f], arch="sm_90", timeout=1, tools=("racecheck", "memcheck"), sanitizer_timeout=1
    )
    assert [t.tool for t in ev.tools] == ["racecheck"]  # a hang runs under racecheck only
    assert ev.tools[0].timed_out
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout if shutil.which("ps") else ""
    assert str(fake) not in out


# ---------------------------------------------------------------- the command line (items 9, 10)


class _Res:
    def __init__(self, source, findings):
        self.source, self.findings, self.input_error = source, findings, None


def _cli(monkeypatch, files_findings, args, gpus=(("NVIDIA H200", 9, 0),)):
    from tkcheck.cli.cli import main
    from tkcheck.confirm import cli_commands as C

    by_path = {str(p): (t, fs) for p, t, fs in files_findings}
    monkeypatch.setattr(C, "_check", lambda p, tk, sel, cfg: _Res(*by_path[p]))
    monkeypatch.setattr(D, "_driver_module", lambda: CF.FakeDriver(list(gpus)))
    monkeypatch.setattr(D, "_smi_driver", lambda: None)
    return CliRunner().invoke(main, ["confirm", *[str(p) for p, _, _ in files_findings], *args])


def test_cli_no_findings_in_every_format(fake, monkeypatch):
    p = fake / "k.cu"
    p.write_text(KERNEL)
    r = _cli(monkeypatch, [(p, KERNEL, [])], ["--output-format", "json"])
    assert r.exit_code == 0 and json.loads(r.output) == []
    r = _cli(monkeypatch, [(p, KERNEL, [])], ["--output-format", "sarif"])
    assert r.exit_code == 0 and json.loads(r.output)["runs"][0]["results"] == []
    r = _cli(monkeypatch, [(p, KERNEL, [])], [])
    assert r.exit_code == 0 and "no findings to confirm" in r.output


def test_cli_exit_3_when_nothing_could_run(fake, monkeypatch):
    p = fake / "k.cu"
    text = "__global__ void k() { wait(full[s], 0); }\n// fake link: nomain\n"
    p.write_text(text)
    r = _cli(monkeypatch, [(p, text, [_f("TK301", 1, name=str(p))])], ["--output-format", "json"])
    assert r.exit_code == 3, r.output
    (item,) = json.loads(r.output)
    assert item["verdict"]["status"] == R.UNCONFIRMABLE


def test_cli_confirm_writes_every_check_format(fake, monkeypatch):
    """`confirm` offers the formats `check` does (one list, tkcheck/formats.py): json-lines too,
    one verdict-carrying record per line."""
    from tkcheck.formats import OUTPUT_FORMATS
    from tkcheck.confirm import cli_commands

    assert tuple(cli_commands._FORMATS) == OUTPUT_FORMATS
    p = fake / "k.cu"
    text = "__global__ void k() { wait(full[s], 0); }\n// fake link: nomain\n"
    p.write_text(text)
    r = _cli(monkeypatch, [(p, text, [_f("TK301", 1, name=str(p))])], ["--output-format", "json-lines"])
    assert r.exit_code == 3, r.output
    (line,) = r.output.strip().splitlines()
    assert json.loads(line)["verdict"]["status"] == R.UNCONFIRMABLE


def test_cli_jobs_spread_files_over_gpus(fake, monkeypatch):
    files = []
    for k in range(4):
        p = fake / f"k{k}.cu"
        text = KERNEL + (
            '// fake plain: echo "plain on $CUDA_VISIBLE_DEVICES"; echo "SELFCHECK PASS"\n'
            '// fake widened: echo "widened on $CUDA_VISIBLE_DEVICES"; echo "SELFCHECK FAIL 1"; exit 1\n'
        )
        p.write_text(text)
        files.append(
            (
                p,
                text,
                [
                    _f(
                        "TK504",
                        3,
                        name=str(p),
                        symptom="wrong",
                        contract="deadlock",
                        msg="exit with the store of `C_s[c]` in flight",
                    )
                ],
            )
        )
    keep = fake.parent / "kept"
    r = _cli(
        monkeypatch,
        files,
        ["-j", "2", "--no-sanitizer", "--timeout", "10", "--keep", str(keep), "--output-format", "json"],
        gpus=(("NVIDIA H200", 9, 0), ("NVIDIA H200", 9, 0)),
    )
    assert r.exit_code == 1, r.output
    items = json.loads(r.output)
    assert len(items) == 4 and all(i["verdict"]["status"] == R.CONFIRMED for i in items)
    used = set()
    for k, item in enumerate(sorted(items, key=lambda i: i["filename"])):
        dev = item["verdict"]["device"]
        gpu = dev.split()[1]
        # the run saw only the GPU its verdict names
        log = (keep / f"{k:02d}-k{k}" / "plain.log").read_text()
        assert log.startswith(f"plain on {gpu}\n"), (dev, log)
        used.add(gpu)
    assert used == {"0", "1"}


def test_cli_gpus_option_and_bad_values(fake, monkeypatch):
    p = fake / "k.cu"
    p.write_text(KERNEL)
    r = _cli(monkeypatch, [(p, KERNEL, [_f("TK301", 2, name=str(p))])], ["--gpus", "5"])
    assert r.exit_code == 2 and "no GPU 5" in r.output
    r = _cli(monkeypatch, [(p, KERNEL, [_f("TK301", 2, name=str(p))])], ["--gpus", "a,b"])
    assert r.exit_code == 2


def test_visible_ids_follow_the_parents_own_numbering(monkeypatch):
    from tkcheck.confirm.cli_commands import _visible_id

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert _visible_id(0) == "3" and _visible_id(1) == "5"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _visible_id(1) == "1"


def _mutation_findings(mid):
    import tempfile

    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == mid)
    with tempfile.TemporaryDirectory() as td:
        res = evaluate.check_mutation(CORPUS, m, Path(td))
    return evaluate.mutated_text(CORPUS, m), [f for f in res.findings if f.code != "TK000"]


def test_a_count_repair_initialises_the_barrier_for_the_arrivals_that_come():
    text, fs = _mutation_findings("gemm_ring-arrive-whole-warp")
    (f,) = [f for f in fs if f.code == "TK302"]
    new, what = R.count_repair(text, f)
    assert "init_semaphore(empty[s], (256) - (0), 0);" in new and new.count("\n") == text.count("\n")
    assert "256 arrivals per phase" in what and "CONSUMER_WARPS" in what
    assert R.count_repair(text, next(f for f in fs if f.code != "TK302")) is None


def test_an_issuer_repair_restricts_the_duplicated_issue_to_one_thread():
    text, fs = _mutation_findings("gemm_ring-producer-guard-dropped")
    ((group, new, what),) = R.issuer_repairs(text, fs)
    assert sorted(f.code for f in group).count("TK403") == 5 and any(f.code == "TK302" for f in group)
    assert new.count("if ((int)threadIdx.x == 0) tma::") == 5 and "thread 0 only" in what
    # an issuer set such as "lane 0 of warps 8-11": its first thread
    assert R._first_issuer("lane 0 of warps 8-11 (4 threads)") == 256
    assert R._first_issuer("warpgroup 0 (threads 0-127)") == 0
    # a count finding alone (no duplicated issue): no issuer repair
    text, fs = _mutation_findings("gemm_ring-arrive-whole-warp")
    assert R.issuer_repairs(text, fs) == []


def test_a_repair_that_passes_confirms_every_finding_it_repaired_and_no_other():
    f = _f("TK403", 78, symptom="hang", contract="scope")
    g = _f("TK302", 78, symptom="hang")
    h = _f("TK206", 79, symptom="wrong", contract="accumulator")
    ev = _ev(2, "CUDA error unspecified launch failure\n")
    ev.copies = [
        R.Copy(
            "repaired copy",
            "repair",
            (R.finding_key(f), R.finding_key(g)),
            ["the statements at k.cu:78 run by thread 0 only"],
            [R.Run("r", "bin", 0, "SELFCHECK PASS\n")],
        )
    ]
    assert R.verdict(f, ev)["status"] == R.CONFIRMED and R.verdict(g, ev)["status"] == R.CONFIRMED
    assert R.verdict(h, ev)["status"] == R.NOT_REPRODUCED


@needs_proc
def test_a_stopped_confirm_ends_the_programs_it_started(tmp_path):
    import threading

    box = {}
    t = threading.Thread(target=lambda: box.setdefault("p", P.run_clean(["sleep", "300"], timeout=600, cwd=tmp_path)))
    t.start()
    for _ in range(200):
        if P._ACTIVE:
            break
        threading.Event().wait(0.05)
    assert P.end_all() >= 1
    t.join(60)
    assert not t.is_alive() and box["p"].rc == -signal.SIGKILL and not P._ACTIVE


def test_read_wait_and_sync_repairs_put_back_what_the_finding_says_is_missing():
    text, fs = _mutation_findings("gemm_ring-staging-no-read-wait")
    (f,) = [f for f in fs if f.code == "TK306"]
    new, what = R.read_wait_repair(text, f)
    assert (
        "col_blk + 0}); ::kittens::tma::store_async_read_wait();" in new and "after the store at gemm_ring.cu:" in what
    )
    text, fs = _mutation_findings("gemm_ring-no-sync-after-init")
    t307 = [f for f in fs if f.code == "TK307"]
    new, what = R.sync_repair(text, t307[0])
    # after the whole `if (threadIdx.x == 0) { ... }` init block: a point every thread reaches
    init_end = new.index("init_semaphore(empty[s], CONSUMER_WARPS, 0);")
    assert new.index("} __syncthreads();", init_end) < new.index("if (wg == 0)")
    # one repaired copy for the TK307 findings that share the init
    (group,) = [g for g in R._repairs(text, fs) if "__syncthreads" in g[2]]
    assert len(group[0]) == len(t307) == 2


def test_gpu_slots_are_shared_by_threads_and_processes(tmp_path):
    import threading

    inside, most = [0], [0]
    lock = threading.Lock()

    def work():
        with P.gpu_slot(f"test-{tmp_path.name}", 2):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            threading.Event().wait(0.05)
            with lock:
                inside[0] -= 1

    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert most[0] <= 2 and inside[0] == 0


def test_a_widened_copy_that_only_ran_out_of_time_is_no_evidence_for_a_race():
    f = _f("TK206", 82, [(97, "the wgmma reading `B_s` is issued here")], symptom="wrong", contract="accumulator")
    ev = _ev(0, "SELFCHECK PASS\n")
    ev.copies = [
        R.Copy("widened copy", "widen", (R.finding_key(f),), ["widening: x"], [R.Run("w", "bin", -9, "", killed=True)])
    ]
    v = R.verdict(f, ev)
    assert v["status"] == R.NOT_REPRODUCED and any("ran out of time" in n for n in v["notes"])


# ---------------------------------------------------------------- recorded H200 runs in the three harness styles

HARNESS_RUNS = DATA / "harness"


def _harness(vid):
    d = HARNESS_RUNS / vid
    fs = []
    for r in json.loads((d / "confirm.json").read_text()):
        f = Finding(
            r["code"], r["message"], Location(Path(r["filename"]).name, r["location"]["row"], 1), witness=r["witness"]
        )
        f.related = [
            Related(Location(Path(x["filename"]).name, x["location"]["row"], 1), x["message"]) for x in r["related"]
        ]
        f.symptom, f.contract, f.name = r["symptom"], r["contract"], r["name"]
        fs.append((f, r["verdict"]))
    ev = R.evidence_from_dir(d)
    R.map_records(ev, fs[0][0].location.filename)
    return ev, fs


@pytest.mark.parametrize(
    "vid,want",
    [
        (
            "A-gemm_ring-producer-parity-fresh",
            {"TK303:77": "watchdog: TKCHECK_WATCHDOG site=0 gemm_ring.cu:77 barrier=empty[s]"},
        ),
        (
            "B-gemm_ring-arrive-whole-warp",
            {"TK302:99": "compute-sanitizer memcheck: Imprecise at gemm_ring.cu:99 (in sync.cuh:72)"},
        ),
        (
            "C-gemm_ring-staging-no-read-wait",
            {"TK306:110": "repaired copy passes: a `tma::store_async_read_wait()` after the store"},
        ),
        (
            "B-gemm_lcf-producer-guard-per-warp",
            {
                "TK302:71": "compute-sanitizer memcheck: Imprecise at gemm_lcf.cu:71 (in tma.cuh:35)",
                "TK403:72": "repaired copy passes: the statements at gemm_lcf.cu:71, 72, 73, 74 run by thread 256",
            },
        ),
        (
            "TK-edu08-no-sync-after-init",
            {"TK307:81": "use before init: TKCHECK_ORDER site=1 level_08.cu:81 barrier=bar"},
        ),
        ("C-gemm_ring-syncwarp-before-store", {"TK401:114": "widened copy: killed by SIGABRT: wrong value at"}),
    ],
)
def test_recorded_harness_runs_give_the_recorded_verdicts(vid, want):
    ev, fs = _harness(vid)
    assert ev.device and "NVIDIA H200" in ev.device
    for f, recorded in fs:
        v = R.verdict(f, ev)
        assert v["status"] == recorded["status"], (f.code, f.location.row, v)
        key = f"{f.code}:{f.location.row}"
        if key in want:
            assert v["status"] == R.CONFIRMED and any(e.startswith(want[key]) for e in v["evidence"]), v["evidence"]


def test_recorded_harness_runs_confirm_no_other_finding_by_another_sites_evidence():
    ev, fs = _harness("B-gemm_ring-arrive-whole-warp")
    races = [f for f, _ in fs if f.code == "TK206"]
    assert races
    for f in races:
        v = R.verdict(f, ev)
        # the memcheck records and the repaired count are TK302's; the binary waits for the wgmma
        assert v["status"] == R.NOT_REPRODUCED and "waits for the wgmma before the release" in v["why"]
    ev, fs = _harness("TK-edu08-no-sync-after-init")
    assert {f.code: R.verdict(f, ev)["status"] for f, _ in fs} == {
        "TK307": R.CONFIRMED,
        "TK403": R.NOT_REPRODUCED,
        "TK406": R.UNCONFIRMABLE,
    }
