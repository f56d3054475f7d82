"""Output is deterministic: the same file gives the same findings whatever the
process checked before it (CI diffs and caches rely on this)."""

import json

from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file

from conftest import ROOT

ALL = frozenset(r.code for r in registry.all_rules())


def _json(path):
    res = check_file(str(path), CheckOptions(enabled=ALL))
    return json.dumps([f.to_json() for f in res.findings], sort_keys=True), res.notes


def test_same_findings_regardless_of_earlier_files():
    a = ROOT / "fixtures" / "core" / "expect_tx.cu"
    b = ROOT / "corpus" / "hopper" / "gemm_lcf.cu"
    first, notes1 = _json(a)
    _json(b)
    _json(b)
    again, notes2 = _json(a)
    assert first == again
    assert notes1 == notes2
    assert json.loads(first), "the fixture has findings to compare"
