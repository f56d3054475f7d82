"""Indices over the launch's input data (issue 25, round 16): which unknowns are input values
(`checks/inputs.py`), the local arrays that carry them (`KernelModel.local_array_*`), and the race
the memory engine proves for one uniform input (fixtures/memory/data_index_histogram_*.cu)."""

from __future__ import annotations

from tkcheck.checks import happens_before, inputs
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

MEMORY = ROOT / "fixtures" / "memory"


def _models(name: str) -> dict:
    return {m.name: m for m in models_of(str(MEMORY / name))}


def _indexed_unknowns(m) -> set:
    return {
        v for o in m.ops if o.buffer is not None for ix in o.buffer.index for v in ix.free_vars() if v.kind == "opaque"
    }


def test_a_local_array_filled_from_input_carries_input_values():
    m = _models("data_index_histogram_bad.cu")["bucket_offsets"]
    (arr,) = m.local_array_stores
    assert arr.startswith("?uninit key")
    assert all(s is not None and s.startswith("?keys[") for s in m.local_array_stores[arr])
    assert arr not in m.local_array_escapes
    an = Analysis(m)
    reads = {v for v, a in m.local_array_reads.items() if a == arr}
    indexed = {v for o in m.ops if o.buffer is not None for ix in o.buffer.index for v in ix.free_vars()}
    used = [v for v in indexed if v.name in reads]
    assert used, "`offs[key[i] % 8]` is indexed by a read of the array"
    for v in used:
        iv = inputs.input_value(an, v)
        assert iv is not None and iv.base == "keys"


def test_race_names_the_input_that_makes_it():
    m = _models("data_index_histogram_bad.cu")["warp_hist"]
    an = Analysis(m)
    races = happens_before.memory(an).races
    assert races, "the atomic on bins[v & 31] and the read of bins[tid] race for an input of zeros"
    r = races[0]
    assert "every element of `in` holds 0" in r.input
    assert r.element == "bins[0]"


def test_no_input_value_where_the_kernel_writes_the_data_or_the_array_escapes():
    ms = _models("data_index_histogram_good.cu")
    own = ms["own_slots"]
    an = Analysis(own)
    opaque = _indexed_unknowns(own)
    assert opaque and all(inputs.input_value(an, v) is None for v in opaque)  # `slot` is written by the kernel
    esc = ms["escaped_keys"]
    assert any(a.startswith("?uninit key") for a in esc.local_array_escapes)  # handed to `own_keys`
    an = Analysis(esc)
    opaque = _indexed_unknowns(esc)
    assert opaque and all(inputs.input_value(an, v) is None for v in opaque)
    for name in ("warp_hist", "bucket_offsets", "own_slots", "guarded_bin", "escaped_keys"):
        assert not happens_before.memory(Analysis(ms[name])).races, name
