"""Round 16 (issue 25, branch r16-atomicwait): libcu++ atomic waiting as a spin on one word --
the re-load loop `v = a.load(acq); while (v != x) { a.wait(v, acq); v = a.load(acq); }`, the wait
inside it, the values the word's writes store, the grid a launch gives, and the acquire it
carries -- asked of the engines on fixtures of their own shapes."""

from __future__ import annotations

from tkcheck.checks import happens_before, protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.checks.awaited_values import awaited_never, covered_wait, word_poll
from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import ROOT

FIX = ROOT / "fixtures"


def _analysis(path) -> Analysis:
    (m,) = models_of(str(path))
    return Analysis(m)


def _spins(an: Analysis) -> list[ir.Op]:
    return [o for o in an.model.ops if o.kind == ir.SPIN]


def test_the_reload_loop_is_a_spin_on_one_word_and_its_wait_is_covered():
    an = _analysis(FIX / "progress" / "atomic_wait_relay_good.cu")
    outer, wait = _spins(an)
    wp = word_poll(an, outer)
    assert wp is not None and wp.poll.global_access is not None
    # the load before the loop and the load at the body's end: one word, the condition over the
    # body's load
    assert len(wp.loads) == 2 and {o.global_access.base for o in wp.loads} == {"baton"}
    assert {v.name for v in wp.cond.free_vars()} >= {wp.poll.global_access.result}
    assert covered_wait(an, wait) and not covered_wait(an, outer)
    assert word_poll(an, wait) is None


def test_a_value_no_write_stores_is_a_hang_of_a_named_block():
    bad = _analysis(FIX / "progress" / "atomic_wait_relay_bad.cu")
    aw = awaited_never(bad, word_poll(bad, _spins(bad)[0]))
    assert aw.never and aw.block == (("blockIdx.x", 1),)
    (su,) = protocol.spin_waits(bad).unreached
    assert su.by_condition and su.block == (("blockIdx.x", 1),)
    good = _analysis(FIX / "progress" / "atomic_wait_relay_good.cu")
    aw = awaited_never(good, word_poll(good, _spins(good)[0]))
    assert not aw.never and "turns of the later blocks" in aw.why
    facts = protocol.spin_waits(good)
    assert not facts.unreached and len(facts.undecided) == 1


def test_a_block_past_the_launch_proves_nothing(tmp_path):
    # the turnstile's last split stores 0: a split 4 would wait for a 4 nobody stores, but the
    # launch's grid holds splits 0..3 only
    src = (ROOT / "corpus" / "idioms14" / "ordered_splitk_turnstile.cu").read_text()
    an = _analysis(ROOT / "corpus" / "idioms14" / "ordered_splitk_turnstile.cu")
    assert an.model.grid_dims == (32, 4, 1)
    assert not protocol.spin_waits(an).unreached
    # with no launch in the file the extent is not known: open, never a finding
    p = tmp_path / "no_launch.cu"
    p.write_text(src.split("#define CUDA_CHECK")[0])
    an2 = _analysis(p)
    assert an2.model.grid_dims is None
    facts = protocol.spin_waits(an2)
    assert not facts.unreached
    assert any("extent" in why for _sp, why in facts.undecided)


def test_a_condition_over_a_launch_value_stays_open(tmp_path):
    src = (FIX / "progress" / "atomic_wait_relay_bad.cu").read_text()
    changed = src.replace("const float *in) {", "const float *in, int off) {").replace(
        "while (v != 2 * b) {", "while (v != 2 * b + off) {"
    )
    assert changed != src
    p = tmp_path / "relay_off.cu"
    p.write_text(
        changed.replace("relay<<<16, W>>>(nullptr, nullptr, nullptr)", "relay<<<16, W>>>(nullptr, nullptr, nullptr, 0)")
    )
    an = _analysis(p)
    aw = awaited_never(an, word_poll(an, _spins(an)[0]))
    assert not aw.never and "other than the block index" in aw.why


def test_an_index_over_x_alone_is_shared_by_the_blocks_of_a_2d_grid():
    an = _analysis(ROOT / "corpus" / "idioms14" / "ordered_splitk_turnstile.cu")
    # y[blockIdx.x * 128 + tid] is written by the 4 splits of a tile: no thread's own
    assert not happens_before.thread_private(an, "y")


def test_the_reload_loop_acquires_for_its_thread_and_a_barrier_passes_it_on():
    nosync = happens_before.memory(_analysis(FIX / "memory" / "atomic_chain_carry_no_sync_bad.cu"))
    assert [a.how for a in nosync.unpropagated] == ["not-propagated"]
    relaxed = happens_before.memory(_analysis(FIX / "memory" / "atomic_chain_carry_relaxed_bad.cu"))
    assert [p.why for p in relaxed.publications] == ["relaxed"]
    gather = happens_before.memory(_analysis(FIX / "memory" / "atomic_chain_carry_no_gather_bad.cu"))
    assert [p.why for p in gather.publications] == ["unordered"]
    good = happens_before.memory(_analysis(FIX / "memory" / "atomic_chain_carry_good.cu"))
    assert not good.publications and not good.unpropagated
