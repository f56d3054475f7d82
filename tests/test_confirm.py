"""tkcheck confirm: instrumentation, compute-sanitizer XML, verdicts (recorded H200 runs, no GPU)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tkcheck import evaluate
from tkcheck.confirm import instrument as I
from tkcheck.confirm import runner as R
from tkcheck.confirm import sanitizer as S
from tkcheck.findings import Finding, Location, Related

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "confirm"
CORPUS = ROOT / "corpus"


def _finding(code="TK301", symptom="hang/stripes", contract="completion", row=78, msg="expect on 'full[s]'"):
    f = Finding(code, msg, Location("gemm_ring.cu", row, 17))
    f.symptom, f.contract, f.name = symptom, contract, "x"
    return f


# ---------------------------------------------------------------- instrumentation

RING = (CORPUS / "hopper" / "gemm_ring.cu").read_text()


def test_instrument_wraps_every_wait_and_keeps_lines():
    out = I.instrument(RING, "gemm_ring.cu")
    waits = [s for s in out.sites if s.kind == "wait"]
    assert [(s.line, s.barrier) for s in waits] == [(77, "empty[s]"), (95, "full[s]")]
    assert out.text.count("::tkcheck_wd_wait(") == 2
    # the helpers come from a generated header included on the copy's first line, before any code
    # or #include of the file; #line keeps the user's line numbers
    assert out.text.startswith(f'#include "{I.PRELUDE_NAME}"\n#line 1 "gemm_ring.cu"\n')
    body = out.text.split('#line 1 "gemm_ring.cu"\n', 1)[1]
    assert "&(full[s])" in body.split("\n")[94] and "#line" not in body
    assert "tkcheck_nan_rows(const T& t" in out.prelude and "tkcheck_site_desc[]" in out.prelude
    assert "tkcheck_check(A_s[s][0]" in out.text  # consumer scans the stage after its wait
    assert out.text.count("::tkcheck_poison(") == 4  # one per TMA load
    assert out.poisoned == {"full": ["A_s[s][0]", "A_s[s][1]", "B_s[s][0]", "B_s[s][1]"]}
    assert any(s.kind == "sync" and s.line == 69 for s in out.sites)
    assert any(s.kind == "store" for s in out.sites)


def test_instrument_skips_comments_and_strings():
    text = (
        '// wait(full[0], 0) in a comment\nconst char* s = "arrive(x)";\n'
        '__global__ void k() { /* wait(a, 1) */ kittens::wait(bar, 0); }\n'
    )
    calls = I.find_calls(text)
    assert [(c.callee, c.row) for c in calls] == [("kittens::wait", 3)]


def test_instrument_never_writes_the_user_file(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(RING)
    before = src.read_bytes()
    out = I.instrument(src.read_text(), str(src))
    assert src.read_bytes() == before and out.text != RING


def test_template_waits_are_renumbered_after_user_sites():
    text, sites = I.template_wait_sites("void f() { wait(inputs_arrived[r], p); }\n", "lcf/lcf.cuh", 200)
    assert sites[0].id == 200 and "::tkcheck_wd_wait(&(inputs_arrived[r]), (int)(p), 200, (int)(r))" in text
    with pytest.raises(ValueError):
        I.instrument(RING, "gemm_ring.cu", template_sites=[I.Site(1, "twait", "lcf.cuh", 1, "x")])


def test_uses_template():
    assert I.uses_template((CORPUS / "hopper" / "gemm_lcf.cu").read_text())
    assert not I.uses_template(RING)


def test_parse_records_from_a_hung_run():
    recs = I.parse_records((DATA / "gemm_ring-expect-short" / "instr.log").read_text())
    wd = [r for r in recs if r.kind == "WATCHDOG"]
    assert wd and wd[0].file == "gemm_ring.cu" and wd[0].line in (77, 95)
    assert wd[0].fields["barrier"] in ("full[s]", "empty[s]") and wd[0].get_int("parity") in (0, 1)
    assert any(r.kind == "PHASE" for r in recs)
    assert any(r.kind == "POISON" for r in recs)  # the early phase let consumers read a poisoned stage


# ---------------------------------------------------------------- compute-sanitizer XML


def test_parse_racecheck_deadlock_xml():
    recs = S.parse_file(DATA / "gemm_ring-expect-short" / "racecheck.xml")
    dead = [r for r in recs if r.deadlock]
    assert dead and dead[0].tool == "racecheck" and dead[0].block is not None
    assert "barrier" in dead[0].extra


def test_parse_race_hazard_and_empty():
    recs = S.parse_file(DATA / "rowsum-syncwarp-before-colpart-read" / "racecheck.xml")
    assert any(r.is_error and not r.deadlock for r in recs)
    assert S.parse_file(DATA / "clean-gemm_ring" / "memcheck.xml") == []


def test_synccheck_false_alarms_are_known():
    recs = S.parse_file(DATA / "clean-gemm_lcf" / "synccheck.xml")
    assert recs and all(S.known_false_alarm(r) for r in recs if r.is_error)


def test_truncated_and_garbage_xml():
    full = (DATA / "gemm_ring-expect-short" / "racecheck.xml").read_text()
    cut = full[: full.find("</record>", full.find("</record>") + 1) + 20]
    assert len(S.parse_xml(cut)) >= 2
    with pytest.raises(S.SanitizerXMLError):
        S.parse_xml("hello, not xml")
    with pytest.raises(S.SanitizerXMLError):
        S.parse_xml("<?xml version='1.0'?><other/>")


def test_sanitizer_command():
    argv = S.command("racecheck", ["./k"], "out.xml")
    assert argv[:3] == ["compute-sanitizer", "--tool", "racecheck"]
    assert "--racecheck-deadlock-timeout" in argv and argv[-4:] == ["--xml", "--save", "out.xml", "./k"]
    assert "--check-bulk-copy" in S.command("memcheck", ["./k"], "m.xml")
    with pytest.raises(ValueError):
        S.command("nope", ["./k"], "x.xml")


# ---------------------------------------------------------------- verdicts


def test_hang_confirmed_by_watchdog():
    f = _finding()
    f.verdict = R.verdict(f, R.evidence_from_dir(DATA / "gemm_ring-expect-short"))
    assert f.verdict["status"] == R.CONFIRMED
    assert any("TKCHECK_WATCHDOG" in e for e in f.verdict["evidence"])


def test_sanitizer_alone_only_times_out_or_deadlocks_on_the_byte_count_hang():
    ev = R.evidence_from_dir(DATA / "gemm_ring-expect-short")
    assert ev.plain.timed_out
    rc = next(t for t in ev.tools if t.tool == "racecheck")
    assert all(r.deadlock or not r.is_error for r in rc.records)  # no record names the expect


def test_stale_read_confirmed_by_poison():
    f = _finding("TK303", "stripes/hang", row=97, msg="wait on 'q_full' with parity 1")
    f.verdict = R.verdict(f, R.evidence_from_dir(DATA / "attn_fwd-q-wait-wrong-parity"))
    assert f.verdict["status"] == R.CONFIRMED
    assert any("TKCHECK_POISON" in e for e in f.verdict["evidence"])


def test_clean_kernel_gives_no_confirmation():
    for name in ("clean-gemm_ring", "clean-gemm_lcf"):
        ev = R.evidence_from_dir(DATA / name)
        assert ev.records == [] and ev.plain.rc == 0
        for f in (_finding(), _finding("TK401", "wrong", "scope"), _finding("TK101", "wrong/nan", "layout")):
            assert R.verdict(f, ev)["status"] == R.NOT_REPRODUCED, name


def test_unconfirmable():
    f = _finding()
    ev = R.Evidence(arch="sm_90", unconfirmable="no GPU here")
    assert R.verdict(f, ev) == {"status": R.UNCONFIRMABLE, "reason": "no GPU here"}
    tool = _finding("TK000", "", "tool")
    assert R.verdict(tool, R.Evidence())["status"] == R.UNCONFIRMABLE
    slow = _finding("TK406", "slow", "dispatch")
    assert R.verdict(slow, R.evidence_from_dir(DATA / "clean-gemm_ring"))["status"] == R.UNCONFIRMABLE


def test_blackwell_finding_on_hopper(monkeypatch):
    monkeypatch.setattr(R, "_rule_arch", lambda code: ("sm_100a",))
    v = R.verdict(_finding(), R.Evidence(arch="sm_90"))
    assert v["status"] == R.UNCONFIRMABLE and "sm_100a" in v["reason"]


def test_confirm_file_without_gpu(tmp_path):
    f = _finding()
    R.confirm_file(str(tmp_path / "k.cu"), RING, [f], arch=None)
    assert f.verdict["status"] == R.UNCONFIRMABLE and "no GPU" in f.verdict["reason"]
    g = _finding()
    R.confirm_file(
        str(tmp_path / "k.cu"),
        "__global__ void k() {}",
        [g],
        arch="sm_90",
        confirm_cfg=__import__("tkcheck.config", fromlist=["x"]).ConfirmConfig(build="true"),
    )
    assert "set both" in g.verdict["reason"]


def test_blackwell_kernel_on_hopper_gpu_is_not_built(tmp_path):
    # a file analysed for sm_100a (tcgen05, TMEM, CLC) on an sm_90 GPU: nothing is built or run,
    # every finding stays UNCONFIRMABLE HERE
    f = _finding()
    ev = R.confirm_file(str(tmp_path / "k.cu"), RING, [f], arch="sm_90", source_arch="sm_100a")
    assert f.verdict["status"] == R.UNCONFIRMABLE and "sm_100a" in f.verdict["reason"]
    assert ev.plain is None and ev.instrumented is None and not ev.tools


@pytest.mark.parametrize(
    "mid",
    [
        "gemm_ring-expect-short",
        "gemm_ring-parity-iter-mod2",
        "attn_fwd-expect-k-only",
        "attn_fwd-q-wait-wrong-parity",
        "gemm_lcf-expect-one-a-tile",
        "attn_fwd-syncthreads-in-producer",
    ],
)
def test_planted_bug_confirmed_from_recorded_run(mid, corpus_checks):
    m = next(m for m in corpus_checks.mutations if m.id == mid)
    # the session memo's check of the mutant (`tkcheck eval`'s); verdicts are set on a copy
    res = copy.deepcopy(corpus_checks.mutation(m))
    planted = [f for f in res.findings if f.code in m.rules]
    if not planted:
        pytest.skip(f"{mid}: rule {m.rules} does not fire in this build")
    R.apply_verdicts(planted, R.evidence_from_dir(DATA / mid))
    assert any(f.verdict["status"] == R.CONFIRMED for f in planted), [f.verdict for f in planted]


@pytest.mark.parametrize(
    "mid,what",
    [
        # recorded with one shared budget of 16 watchdog records, all spent on the consumers' wait on
        # full[s] (line 95): the finding is the producer's wait on empty (line 77), which the log never
        # shows, so the consumers' records are another site's evidence
        ("gemm_ring-producer-parity-fresh", "watchdog: TKCHECK_WATCHDOG site=2 gemm_ring.cu:95"),
        # a layout bug: the plain run fails, but that recorded run had no repaired copy, and a
        # wrong result alone names no site
        ("attn_fwd-store-reinterpret-unswizzled", None),
    ],
)
def test_recorded_failure_at_another_site_confirms_nothing(mid, what, corpus_checks):
    m = next(m for m in corpus_checks.mutations if m.id == mid)
    # the session memo's check of the mutant (`tkcheck eval`'s); verdicts are set on a copy
    res = copy.deepcopy(corpus_checks.mutation(m))
    planted = [f for f in res.findings if f.code in m.rules]
    assert planted
    R.apply_verdicts(planted, R.evidence_from_dir(DATA / mid))
    for f in planted:
        assert f.verdict["status"] == R.NOT_REPRODUCED, f.verdict
        assert "no run ties the failure to this finding's site" in f.verdict["why"]
        if what:
            assert any(o.startswith(what) for o in f.verdict["other"]), f.verdict


# ---------------------------------------------------------------- rendering and CLI


def test_verdict_shown_in_every_format():
    from tkcheck import registry
    from tkcheck.render import render

    f = _finding()
    f.verdict = R.verdict(f, R.evidence_from_dir(DATA / "gemm_ring-expect-short"))
    for fmt in ("full", "concise", "json", "sarif", "github", "junit"):
        out = render([f], fmt, rules=registry.by_code(), sources={}, files_checked=1)
        assert "CONFIRMED" in out, fmt


def test_cli_confirm_and_bad_input(tmp_path):
    from tkcheck.cli.cli import main

    r = CliRunner().invoke(main, ["confirm", str(tmp_path / "missing.cu")])
    assert r.exit_code == 2 and "no such file" in r.output
    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == "gemm_ring-expect-short")
    k = tmp_path / "gemm_ring.cu"
    k.write_text(evaluate.mutated_text(CORPUS, m))
    r = CliRunner().invoke(main, ["confirm", str(k), "--output-format", "json", "--select", "TK301"])
    if R.gpu_arch() is None:
        assert r.exit_code == 3, r.output  # could not run at all
        data = json.loads(r.output)
        items = data if isinstance(data, list) else data.get("findings", [])
        assert items and all(i["verdict"]["status"] == R.UNCONFIRMABLE for i in items)
    r = CliRunner().invoke(main, ["confirm", str(k), "--select", "TK999"])
    assert r.exit_code == 2


# ---------------------------------------------------------------- race widening (widen.py)

from tkcheck.confirm import widen as WD  # noqa: E402

WIDEN = DATA / "widen"


def _wf(code, row, related=(), name="gemm_ring.cu", symptom="wrong", contract="scope"):
    f = Finding(code, "x", Location(name, row, 9))
    f.related = [Related(Location(name, r, 9), m) for r, m in related]
    f.symptom, f.contract, f.name = symptom, contract, "x"
    return f


def _mutant(mid):
    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == mid)
    return evaluate.mutated_text(CORPUS, m)


def test_widen_tk401_delays_the_other_writers_at_the_write():
    text = _mutant("gemm_ring-syncwarp-before-store")
    f = _wf("TK401", 113, [(110, "warps 5-7 (threads 160-255) write `C_s` here"), (111, "`__syncwarp` orders ...")])
    w = WD.widening([f], text, "gemm_ring.cu")
    assert [d.line for d in w.delays] == [110] and not w.poisons
    assert not WD.plan_for(w).nan_rows  # a NaN scan at the store would close the window again
    out = I.instrument(text, "gemm_ring.cu", WD.plan_for(w)).text
    line = next(ln for ln in out.split("\n") if "warpgroup::store(C_s[c], acc1)" in ln)
    assert line.strip().startswith("((((threadIdx.x / 32) % 4) != 0) ? ::tkcheck_delay(")
    assert "tkcheck_delay(long long cycles)" in I.instrument(text, "gemm_ring.cu", I.Plan(widening=w)).prelude
    # the steps are far longer than the instrumented store issue's own work
    assert f"* {WD.STAGGER_CYCLES}" in line and WD.STAGGER_CYCLES >= 40000
    # nothing else moves: the plain text minus the insertions is the mutant
    assert out.count("::tkcheck_delay((long long)") == 1


def test_widen_tk305_delays_the_misrouted_load_after_its_poison():
    text = _mutant("gemm_ring-load-wrong-barrier")
    w = WD.widening([_wf("TK305", 82, contract="completion", symptom="stripes")], text, "gemm_ring.cu")
    out = I.instrument(text, "gemm_ring.cu", I.Plan(widening=w)).text
    line = next(ln for ln in out.split("\n") if "full[(s + 1) % STAGES]" in ln and "load_async" in ln)
    assert line.index("tkcheck_poison(B_s[s][1])") < line.index("tkcheck_delay(") < line.index("tma::load_async")


def test_widen_tk206_one_delay_before_the_first_wgmma():
    text = _mutant("gemm_ring-release-before-mma-wait")
    fs = [
        _wf("TK206", 79, [(96, "the wgmma reading `A_s` is issued here"), (98, "`empty` is released here")]),
        _wf("TK206", 82, [(97, "the wgmma reading `B_s` is issued here"), (98, "`empty` is released here")]),
    ]
    w = WD.widening(fs, text, "gemm_ring.cu")
    assert [d.line for d in w.delays] == [96]


def test_widen_release_poisons_tk504_tk403_tk306():
    text = _mutant("gemm_ring-final-store-not-waited")
    w = WD.widening([_wf("TK504", 113, contract="deadlock")], text, "gemm_ring.cu")
    out = I.instrument(text, "gemm_ring.cu", I.Plan(widening=w)).text
    assert "{0, 0, row_blk + c, col_blk + 1}), ::tkcheck_poison(C_s[c]), ::tkcheck_poison_fence())" in out
    text = _mutant("gemm_ring-store-per-warp")
    w = WD.widening([_wf("TK403", 106)], text, "gemm_ring.cu")
    out = I.instrument(text, "gemm_ring.cu", I.Plan(widening=w)).text
    assert "(tma::store_async_read_wait(), ::tkcheck_poison(C_s[c]), ::tkcheck_poison_fence());" in out
    text = _mutant("accpipe-staging-no-read-wait")
    f = _wf(
        "TK306",
        129,
        [
            (101, "tma::store_async reads 'out_s[(k6 % 2)][0]' asynchronously here"),
            (103, "'out_empty[(k6 % 2)]' released here without a read wait"),
        ],
        name="gemm_accpipe.cu",
    )
    w = WD.widening([f], text, "gemm_accpipe.cu")
    out = I.instrument(text, "gemm_accpipe.cu", I.Plan(widening=w)).text
    # both tiles stored without a read wait are poisoned at the release, the last issued first
    assert (
        "((arrive(out_empty[epi]), ::tkcheck_poison(out_s[epi][1]), ::tkcheck_poison_fence()), "
        "::tkcheck_poison(out_s[epi][0]), ::tkcheck_poison_fence())"
    ) in out
    # back to front: the end of the tile, read last by the TMA store, is poisoned first
    assert "for (int i = (int)(sizeof(T) / 16) - 1; i >= 0; i--) p[i] = v;" in I.PRELUDE


def test_widen_tk307_holds_the_first_init_and_probes_waits():
    text = _mutant("gemm_ring-no-sync-after-init")
    fs = [
        _wf("TK307", 94, [(65, "'full' is initialised here")], contract="completion", symptom="hang"),
        _wf("TK307", 98, [(66, "'empty' is initialised here")], contract="completion", symptom="hang"),
    ]
    w = WD.widening(fs, text, "gemm_ring.cu")
    assert [d.line for d in w.delays] == [65] and w.init_probe
    plan = WD.plan_for(w)
    assert plan.init_probe and plan.watchdog and not plan.nan_rows
    inst = I.instrument(text, "gemm_ring.cu", plan)
    out = inst.text
    assert "#define TKCHECK_INIT_PROBE 1\n" in inst.prelude
    # only the waits at the findings' use sites are probed (line 94: the consumers' wait on full)
    marks = inst.prelude.split("tkcheck_probe_site[] = { ")[1].split(" }")[0].split(", ")
    probed = {inst.site(i).line for i, v in enumerate(marks) if v == "1"}
    assert probed == {94}
    line = next(ln for ln in out.split("\n") if "init_semaphore(full[s], 0, 1)" in ln and "//" not in ln)
    # marked 1 before the hold, 2 right after the init statement
    assert line.index("tkcheck_init_first()") < line.index("tkcheck_delay(") < line.index("init_semaphore(")
    assert line.rstrip().endswith("init_semaphore(full[s], 0, 1), ::tkcheck_init_mark(2));")
    # the probe's bookkeeping edit is not shown as widening
    assert any(p.probe for p in w.poisons)
    assert not any("marks the block initialised" in d for d in w.describe())


def test_plan_for_wgmma_race_keeps_calls_out_of_the_pipeline():
    text = _mutant("attn_fwd-release-v-in-flight")
    f = _wf("TK206", 81, [(117, "the wgmma reading `v_s` is issued here")], name="attn_fwd.cu")
    w = WD.widening([f], text, "attn_fwd.cu")
    plan = WD.plan_for(w)
    assert w.wgmma_race and not plan.watchdog and not plan.phase_log and not plan.nan_rows and plan.poison
    inst = I.instrument(text, "attn_fwd.cu", plan)
    out, body = inst.prelude, inst.text
    # no call into the instrumentation from the kernel: waits and arrives are the program's own
    assert "tkcheck_wd_wait(" not in body and "tkcheck_event(" not in body and "tkcheck_check(" not in body
    assert "::tkcheck_poison(v_s[" in body and "::tkcheck_delay((long long)" in body
    # the delay and the poison are inlined (no call between a wgmma and its wait)
    assert "__forceinline__ void tkcheck_delay" in out
    assert "__forceinline__ void tkcheck_poison" in out
    # the producer overwrites the refilled tile right after its wait on the release barrier
    assert (
        "(wait(kv_empty[s], ((kv / KV_STAGES) % 2) ^ 1), ::tkcheck_poison(v_s[s]), ::tkcheck_poison_fence());" in body
    )
    # no widening: the default plan
    assert WD.plan_for(WD.widening([], RING, "gemm_ring.cu")) == I.Plan()


def test_order_record_confirms_tk307():
    log = (
        "TKCHECK_ORDER site=2 gemm_ring.cu:94 barrier=full[s] kind=use-before-init block=7 warp=4 thread=128\n"
        "gemm_ring M=N=K=2048 max_abs_err=0.06135 (max |ref| 19.071)\nPASS\n"
    )
    recs = I.parse_records(log)
    assert [(r.kind, r.line, r.fields["kind"]) for r in recs] == [("ORDER", 94, "use-before-init")]
    ev = R.Evidence(
        arch="sm_90",
        plain=R.Run("plain", "bin", 0, "PASS\n"),
        instrumented=R.Run("instrumented", "bin", 0, log),
        records=recs,
        widening=["widening: the initialising thread waits ~10us before the first init at gemm_ring.cu:65"],
    )
    f = _wf("TK307", 94, [(65, "'full' is initialised here")], contract="completion", symptom="hang")
    v = R.verdict(f, ev)
    assert v["status"] == R.CONFIRMED and v["evidence"][0].startswith("use before init: TKCHECK_ORDER")
    # the record is about initialisation order: it does not confirm another rule
    g = _wf("TK401", 113, [(110, "warps 5-7 write `C_s` here")])
    assert R.verdict(g, ev)["status"] == R.NOT_REPRODUCED
    # nor another use site's TK307 finding (the empty barrier's arrive at line 98)
    h = _wf("TK307", 98, [(66, "'empty' is initialised here")], contract="completion", symptom="hang")
    assert R.verdict(h, ev)["status"] == R.NOT_REPRODUCED


def test_widen_nothing_for_clean_or_unrelated_findings():
    assert not WD.widening([], RING, "gemm_ring.cu")
    assert not WD.widening([_wf("TK301", 78, contract="completion", symptom="hang")], RING, "gemm_ring.cu")


TK_ROOT = ROOT / "third_party" / "ThunderKittens"


@pytest.mark.skipif(
    not (TK_ROOT / "include").is_dir() or __import__("shutil").which("nvcc") is None,
    reason="needs nvcc and third_party/ThunderKittens",
)
def test_widened_copy_compiles(tmp_path):
    import subprocess

    text = _mutant("gemm_ring-load-wrong-barrier")
    fs = [
        _wf("TK305", 82, contract="completion", symptom="stripes"),
        _wf("TK504", 113, contract="deadlock"),
        _wf("TK401", 113, [(110, "warps 5-7 write `C_s` here")]),
    ]
    w = WD.widening(fs, text, "gemm_ring.cu")
    assert len(w.delays) == 2 and len(w.poisons) == 1
    src = I.instrument(text, "gemm_ring.cu", I.Plan(widening=w)).write(tmp_path, "gemm_ring.cu")
    p = subprocess.run(
        [
            "nvcc",
            *R.NVCC_FLAGS,
            "-I",
            str(TK_ROOT / "include"),
            "-I",
            str(TK_ROOT / "prototype"),
            "-c",
            str(src),
            "-o",
            str(tmp_path / "k.o"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]


# ---------------------------------------------------------------- recorded H200 run of `tkcheck confirm`


def _recorded(mid):
    d = WIDEN / mid
    rec = json.loads((d / "confirm.json").read_text())
    fs = []
    for r in rec:
        f = Finding(r["code"], r["message"], Location(f"{mid}.cu", r["location"]["row"], 1))
        f.related = [
            Related(Location(Path(x["filename"]).name, x["location"]["row"], 1), x["message"]) for x in r["related"]
        ]
        f.location = Location(mid.split("-")[0] + ".cu", r["location"]["row"], 1)
        f.symptom, f.contract, f.name = r["symptom"], r["contract"], "x"
        fs.append((f, r["verdict"]))
    return R.evidence_from_dir(d), fs


@pytest.mark.parametrize(
    "mid,status",
    [
        ("attn_fwd-exit-with-store-in-flight", R.CONFIRMED),
        ("gemm_ring-final-store-not-waited", R.CONFIRMED),
        ("gemm_ring-store-per-warp", R.CONFIRMED),
        ("gemm_ring-expect-short", R.CONFIRMED),
        ("gemm_ring-release-before-mma-wait", R.NOT_REPRODUCED),
        ("gemm_ring-syncwarp-before-store", R.NOT_REPRODUCED),
    ],
)
def test_recorded_confirm_run(mid, status):
    ev, fs = _recorded(mid)
    for f, recorded in fs:
        v = R.verdict(f, ev)
        assert v["status"] == status == recorded["status"], (f.code, v)
        if status == R.CONFIRMED and ev.widening:
            assert any(e.startswith("under ") for e in v["evidence"])
        if f.code == "TK201":
            assert "ptxas C7517" in v.get("why", "")
        if f.code == "TK206":
            # ptxas's note alone does not say where its wait went: without the SASS, no claim
            assert "C7517" in v["why"] and "not claimed" in v["why"]


# ---------------------------------------------------------------- second H200 batch (gpu_batch, with widening)

BATCH2 = DATA / "batch2"


@pytest.fixture(scope="module")
def batch2_rows():
    return {r["id"]: r for r in R.collect_batch(BATCH2, CORPUS)}


def _planted(row):
    return [f for f in row["findings"] if f["code"] in row["rules"]]


@pytest.mark.parametrize(
    "mid,code,evidence",
    [
        ("gemm_ring-syncwarp-before-store", "TK401", "widened copy: the program's own check failed"),
        ("attn_fwd-shared-named-barrier-id", "TK404", "widened copy: the program's own check failed"),
        ("accpipe-staging-no-read-wait", "TK306", "widened copy: the program's own check failed"),
        ("gemm_lcf-finish-no-read-wait", "TK306", "widened copy: the program's own check failed"),
        ("gemm_ring-no-sync-after-init", "TK307", "use before init: TKCHECK_ORDER"),
        ("interp-page-not-prearrived", "TK503", "watchdog: TKCHECK_WATCHDOG"),
    ],
)
def test_batch2_races_and_mk_hangs_confirmed(batch2_rows, mid, code, evidence):
    row = batch2_rows[mid]
    assert row["plain"] in ("PASS", "hang (killed at the timeout)")
    f = next(f for f in _planted(row) if f["code"] == code)
    v = f["verdict"]
    assert v["status"] == R.CONFIRMED, v
    assert v["evidence"][0].startswith(evidence), v["evidence"]
    if row["plain"] == "PASS":
        # a race: the plain run passed, the widened copy showed it; the verdict says how it was widened
        assert any(e.startswith("under ") for e in v["evidence"]), v["evidence"]


def test_batch2_clean_baseline_and_what_does_not_reproduce(batch2_rows):
    clean = batch2_rows["clean-mk-interpreter"]
    assert clean["plain"] == "PASS" and clean["findings"] == [] and not any(clean["records"].values())
    # racecheck reports race records on the correct interpreter itself: they confirm nothing
    assert "Race condition" in batch2_rows["clean-mk-interpreter"]["sanitizer"]
    relaxed = _planted(batch2_rows["interp-counter-relaxed"])
    assert relaxed and all(f["verdict"]["status"] == R.NOT_REPRODUCED for f in relaxed)
    ring = _planted(batch2_rows["gemm_ring-wait1-releases-in-flight"])
    assert ring and all(f["verdict"]["status"] == R.NOT_REPRODUCED and "C7517" in f["verdict"]["why"] for f in ring)


def test_sanitizer_tools_fit_the_findings():
    assert R.tools_for([_wf("TK401", 113)]) == ["racecheck", "synccheck"]
    assert R.tools_for([_wf("TK101", 10, contract="layout")]) == ["memcheck"]
    assert R.tools_for([_wf("TK301", 78, contract="completion", symptom="hang")]) == ["memcheck", "racecheck"]
    assert R.tools_for([]) == ["racecheck", "synccheck", "memcheck"]
    # a memory-ordering finding has no fitting tool: nothing to run for it
    assert R.tools_for([_wf("TK407", 74)]) == []


def test_confirm_with_relative_keep_and_tk_paths(tmp_path, monkeypatch):
    """nvcc runs in the copy's folder: --keep and --tk-include given relative must still resolve."""
    import os
    import stat

    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nvcc"
    # a stand-in nvcc: every -I folder and the source must exist from its working directory
    fake.write_text(
        "#!/bin/sh\nout=''\nwhile [ $# -gt 0 ]; do\n  case $1 in\n"
        "    -I) [ -d \"$2\" ] || { echo \"missing include $2\" >&2; exit 3; }; shift 2;;\n"
        "    -o) out=$2; shift 2;;\n    *.cu) [ -f \"$1\" ] || { echo \"missing $1\" >&2; exit 4; }; shift;;\n"
        "    *) shift;;\n  esac\ndone\nprintf '#!/bin/sh\\necho PASS\\n' > \"$out\"; chmod +x \"$out\"\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "tk" / "include").mkdir(parents=True)
    (tmp_path / "tk" / "prototype").mkdir()
    src = tmp_path / "k.cu"
    text = "__global__ void k() {}\nint main() { return 0; }\n"
    src.write_text(text)
    monkeypatch.chdir(tmp_path)
    f = _wf("TK401", 1, name="k.cu")
    ev = R.confirm_file("k.cu", text, [f], tk_root="tk", keep="kept", tools=(), arch="sm_90")
    assert ev.unconfirmable is None, ev.unconfirmable
    assert ev.plain is not None and ev.plain.rc == 0 and "PASS" in ev.plain.log
    assert (tmp_path / "kept" / "plain" / "k.cu").read_text() == text
    # nothing at line 1 is probed, widened or checked by a tool: said, not "not reproduced"
    assert f.verdict["status"] == R.UNCONFIRMABLE and "no run here can observe it" in f.verdict["reason"]


# ---------------------------------------------------------------- `tkcheck confirm` itself on the H200

CLI_RUNS = DATA / "cli"


def _cli_recorded(mid):
    d = CLI_RUNS / mid
    fs = []
    for r in json.loads((d / "confirm.json").read_text()):
        name = Path(r["filename"]).name
        f = Finding(r["code"], r["message"], Location(name, r["location"]["row"], 1))
        f.related = [
            Related(Location(Path(x["filename"]).name, x["location"]["row"], 1), x["message"]) for x in r["related"]
        ]
        f.symptom, f.contract, f.name = r["symptom"], r["contract"], "x"
        fs.append((f, r["verdict"]))
    return R.evidence_from_dir(d), fs


@pytest.mark.parametrize(
    "mid,status,evidence",
    [
        ("interp-page-not-prearrived", R.CONFIRMED, "watchdog: TKCHECK_WATCHDOG"),
        # TK307 at line 94 (the consumers' wait on full): seen; at line 98 (their arrive on empty, which
        # comes only after that wait completed, i.e. after the init) not - per finding, by its use site
        ("gemm_ring-no-sync-after-init", {94: R.CONFIRMED, 98: R.NOT_REPRODUCED}, "use before init: TKCHECK_ORDER"),
        ("accpipe-staging-no-read-wait", R.CONFIRMED, "widened copy: the program's own check failed"),
        ("gemm_ring-syncwarp-before-store", R.CONFIRMED, "widened copy: the program's own check failed"),
        ("attn_fwd-release-v-in-flight", R.NOT_REPRODUCED, None),
        # racecheck reports "Race condition" records here, but on shared-memory accesses the clean
        # interpreter has too; TK407 is about global-memory ordering, which racecheck does not check
        ("interp-counter-relaxed", R.NOT_REPRODUCED, None),
    ],
)
def test_recorded_cli_confirm_run(mid, status, evidence):
    ev, fs = _cli_recorded(mid)
    assert fs
    for f, _recorded_verdict in fs:
        v = R.verdict(f, ev)
        want = status[f.location.row] if isinstance(status, dict) else status
        assert v["status"] == want, (f.code, f.location.row, v)
        if evidence and want == R.CONFIRMED:
            assert v["evidence"][0].startswith(evidence), v["evidence"]


def test_racecheck_hazards_carry_their_places():
    recs = __import__("tkcheck.confirm.sanitizer", fromlist=["x"]).parse_file(
        CLI_RUNS / "interp-counter-relaxed" / "racecheck.xml", "racecheck"
    )
    assert recs and all(r.kind == "Analysis" and r.text == "Race condition" for r in recs)
    places = set().union(*(r.places() for r in recs))
    assert ("interpreter.cu", 189) in places and ("sync.cuh", 121) in places
    # a hazard counts for a finding only where one of its accesses is on the finding's lines
    ev = R.Evidence(arch="sm_90")
    assert R._attributable(recs[0], {("interpreter.cu", 189)}, ev) == bool(recs[0].places() & {("interpreter.cu", 189)})
    assert not any(R._attributable(r, {("interpreter.cu", 999)}, ev) for r in recs)


def test_unobservable_planted_bugs_say_why(batch2_rows):
    muts = {m.id: m for m in evaluate.load_mutations(CORPUS)}
    assert {mid for mid, m in muts.items() if m.unobservable} == {
        "gemm_ring-load-wrong-barrier",
        "attn_fwd-v-load-next-stage-barrier",
        "gemm_ring-epilogue-readback-wrong-mask",
    }


def test_unobservable_reason_reaches_the_batch_table(tmp_path):
    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == "gemm_ring-epilogue-readback-wrong-mask")
    d = tmp_path / m.id
    d.mkdir()
    for name, body in (
        ("build_plain.rc", "0\n"),
        ("plain.rc", "0\n"),
        ("plain.log", "max_abs_err=0.06\nPASS\n"),
        ("instr.rc", "0\n"),
        ("instr.log", "max_abs_err=0.06\nPASS\n"),
    ):
        (d / name).write_text(body)
    (row,) = R.collect_batch(tmp_path, CORPUS)
    f = next(f for f in row["findings"] if f["code"] == "TK103")
    assert f["verdict"]["status"] == R.NOT_REPRODUCED and f["verdict"]["why"] == m.unobservable
    assert "never used" in R.batch_table([row])


def test_confirm_analyses_blackwell_files_for_sm_100a(tmp_path):
    # `tkcheck confirm` analyses like `tkcheck check`: with no arch configured a file using
    # Blackwell-only names is parsed for sm_100a (its findings are found, then left unconfirmed
    # on a Hopper GPU)
    from tkcheck.confirm import cli_commands as C

    src = (Path(__file__).resolve().parent.parent / "fixtures" / "blackwell" / "pair_commit_local_bad.cu").read_text()
    p = tmp_path / "k.cu"
    p.write_text(src)
    res = C._check(str(p), None, ("TK302",), None)
    assert any(f.code == "TK302" for f in res.findings)
    assert C._source_arch(res, None) == "sm_100a"
