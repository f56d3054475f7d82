"""tkcheck triage: ranking by symptom, evidence from recorded runs, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tkcheck import evaluate
from tkcheck.confirm import triage as T

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus"
DATA = Path(__file__).parent / "data" / "confirm"


@pytest.fixture(scope="module")
def checked(corpus_checks):
    """The Hopper and MK planted bugs with a symptom, as tests/test_corpus.py checked them."""
    return {
        m.id: (m, corpus_checks.mutation(m))
        for m in corpus_checks.mutations
        if m.kernel.split("/")[0] in ("hopper", "mk") and m.symptom in T.SYMPTOMS and not m.problem
    }


def test_planted_bug_ranks_first_for_its_symptom(checked):
    misses, ranked_n = [], 0
    for mid, (m, res) in checked.items():
        if not any(f.code in m.rules for f in res.findings):
            continue
        ranked = T.rank(res.findings, m.symptom)
        ranked_n += 1
        if not ranked or ranked[0].finding.code not in m.rules:
            misses.append((mid, [r.finding.code for r in ranked][:3]))
    assert ranked_n >= 20
    assert not misses, misses


def test_ranked_entry_names_contract_and_confirm_run(checked):
    m, res = checked["gemm_ring-expect-short"]
    top = T.rank(res.findings, "hang", path="k.cu")[0]
    assert top.finding.code == "TK301" and top.contract == "completion"
    assert "tkcheck confirm k.cu --select TK301" in top.confirm
    text = T.format_ranked([top], "hang")
    assert "completion contract broken" in text


def test_symptom_changes_the_order(checked):
    _, res = checked["gemm_lcf-mma-swizzle-view"]
    assert T.rank(res.findings, "nan")[0].finding.code == "TK101"
    assert all(r.finding.code != "TK101" for r in T.rank(res.findings, "hang"))


def test_evidence_from_a_hung_run_log(checked):
    m, res = checked["gemm_ring-expect-short"]
    obs = T.load_evidence(str(DATA / "gemm_ring-expect-short" / "instr.log"))
    ranked = T.rank(res.findings, "hang", obs)
    assert ranked[0].finding.code == "TK301" and ranked[0].evidence


def test_evidence_from_sanitizer_xml(checked):
    m, res = checked["gemm_ring-producer-parity-fresh"]
    obs = T.load_evidence(str(DATA / "gemm_ring-producer-parity-fresh" / "racecheck.xml"))
    assert obs.sanitizer and any(s.deadlock for s in obs.sanitizer)
    ranked = T.rank(res.findings, "hang", obs)
    assert ranked[0].finding.code in m.rules and any("deadlock" in e for e in ranked[0].evidence)


def test_bad_evidence(tmp_path):
    p = tmp_path / "x.log"
    p.write_text("nothing useful here\n")
    with pytest.raises(T.EvidenceError):
        T.load_evidence(str(p))
    with pytest.raises(T.EvidenceError):
        T.load_evidence(str(tmp_path / "missing.xml"))
    with pytest.raises(ValueError):
        T.rank([], "boom")


def test_cli_triage(tmp_path):
    from tkcheck.cli.cli import main

    m = next(m for m in evaluate.load_mutations(CORPUS) if m.id == "gemm_ring-expect-short")
    k = tmp_path / "gemm_ring.cu"
    k.write_text(evaluate.mutated_text(CORPUS, m))
    r = CliRunner().invoke(
        main, ["triage", "--symptom", "hang", str(k), "--evidence", str(DATA / "gemm_ring-expect-short" / "instr.log")]
    )
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1].split(": ")[-1].startswith("TK301") or "TK301" in r.output.splitlines()[1]
    bad = tmp_path / "bad.log"
    bad.write_text("x")
    r = CliRunner().invoke(main, ["triage", "--symptom", "hang", str(k), "--evidence", str(bad)])
    assert r.exit_code == 2 and "TKCHECK_WATCHDOG" in r.output
    r = CliRunner().invoke(main, ["triage", "--symptom", "smoke", str(k)])
    assert r.exit_code == 2
