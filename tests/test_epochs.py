"""Epoch flags (checks/epochs.py): raises and waits recognised, the minimal epoch each wait
synchronises with, the instance run (hangs with their chain, races across iterations)."""

from __future__ import annotations

from tkcheck.checks import epochs
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import expr as E

from conftest import ROOT

EPOCHS = ROOT / "fixtures" / "epochs"


def _facts(name: str):
    (m,) = models_of(str(EPOCHS / name))
    an = Analysis(m)
    return an, epochs.epochs(an)


def test_raise_and_waits_through_helpers_name_their_elements():
    _an, ef = _facts("stage_chain_good.cu")
    (r,) = ef.raises
    assert r.flag == "done" and str(r.index) == "blockIdx.x"
    # the stored operand of `st.release.gpu.global.b32 [%0], %1` behind the helper
    assert E.Var("base", E.PARAM) in r.value.free_vars()
    polled = sorted(str(w.poll.global_access.index) for w in ef.waits)
    assert len(polled) == 2 and all("blockIdx.x" in p for p in polled)
    assert not ef.hangs and not ef.races and len(ef.explored) == 2
    assert all("6 blocks x 12 iterations" in why for _sp, why in ef.explored)


def test_cyclic_wait_has_a_chain_back_to_the_first_block():
    _an, ef = _facts("token_ring_wait_ahead_bad.cu")
    (h,) = ef.hangs
    assert (h.block, h.iteration, h.owner, h.needed) == (0, 1, 7, 0)
    blocks = [s.block for s in h.chain]
    assert blocks[:3] == [0, 7, 6] and sorted(blocks) == list(range(8))


def test_single_slot_is_a_write_after_read_and_parity_slots_are_not():
    _an, bad = _facts("stage_chain_single_slot_bad.cu")
    (r,) = bad.races
    assert r.war and r.first.kind == "global_load" and r.second.kind == "global_store"
    assert r.first_at == (1, 0) and r.second_at == (0, 1)
    _an, good = _facts("stage_chain_good.cu")
    assert not good.races


def test_a_relaxed_raise_is_a_signal_store():
    an, _ef = _facts("token_ring_relaxed_raise_bad.cu")
    stores = epochs.signal_stores(an)
    raised = [o for o in an.model.ops if id(o) in stores]
    assert len(raised) == 1 and raised[0].global_access.base == "done"


def test_raises_in_a_loop_of_rounds_are_matched_round_by_round():
    _an, ef = _facts("butterfly_allreduce_good.cu")
    (r,) = ef.raises
    # the epoch loop is the iteration loop; the round loop inside it names the element only
    assert r.inner and "r" in str(r.index) and "r" not in {v.label for v in r.value.free_vars()}
    assert len(ef.waits) == 1 and not ef.hangs and not ef.races
    assert all("16 blocks x 8 iterations x 4 rounds" in why for _sp, why in ef.explored)


def test_a_wait_on_the_mirrored_round_is_a_cyclic_wait_on_the_flag_element_polled():
    _an, ef = _facts("butterfly_allreduce_mirrored_round_bad.cu")
    (h,) = ef.hangs
    # block 0 in round 0 polls flag[(LOG - 1) * G + 1], raised by block 1 in its round 3 only
    assert (h.block, h.iteration, h.owner, h.element, h.needed) == (0, 0, 1, 49, 0)
    assert [s.block for s in h.chain][:2] == [0, 1]


def test_a_single_slot_per_round_is_overwritten_before_the_peer_reads_it():
    _an, ef = _facts("butterfly_allreduce_single_slot_bad.cu")
    assert ef.races and all(r.war for r in ef.races)
    r = ef.races[0]
    assert r.first.kind == "global_load" and r.second.kind == "global_store"
    assert r.second_at[1] == r.first_at[1] + 1
