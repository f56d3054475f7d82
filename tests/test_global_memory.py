"""Global memory as memory events (issue 25): the front end's global accesses through local
pointers and helper functions, the loaded values a spin's condition reads, and the engines'
answers on them (checks/happens_before.py's global queries, checks/protocol.spin_waits)."""

from __future__ import annotations

from tkcheck.checks import happens_before, protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import ROOT

MEMORY = ROOT / "fixtures" / "memory"


def _analysis(name: str) -> Analysis:
    (m,) = models_of(str(MEMORY / name))
    return Analysis(m)


def test_helper_polls_and_local_pointers_are_global_events():
    an = _analysis("serial_fixup_good.cu")
    ops = an.model.ops
    (spin,) = [o for o in ops if o.kind == ir.SPIN]
    (poll,) = [o for o in ops if o.kind == ir.GLOBAL_LOAD and spin.loops[-1] in o.loops]
    ga = poll.global_access
    assert ga is not None and (ga.sem, ga.base, ga.form) == ("acquire", "turn", "ptx")
    # the helper's `"=r"(v)` is the loaded value the loop's condition compares
    assert spin.spin is not None and spin.spin.cond is not None and not spin.spin.breaks
    assert ga.result in {v.name for v in spin.spin.cond.free_vars()}
    # `float *o = &out[...]; *o = ... *o ...`: a load and a store of `out`
    out = [o for o in ops if o.global_access is not None and o.global_access.base == "out"]
    assert {o.kind for o in out} == {ir.GLOBAL_LOAD, ir.GLOBAL_STORE}
    (red,) = [o for o in ops if o.kind == ir.GLOBAL_SIGNAL]
    assert red.global_access is not None and (red.global_access.sem, red.global_access.base) == ("release", "turn")
    assert red.callers, "the release is inside the helper pass_turn"


def test_cumulative_release_and_acquire_scope():
    good = happens_before.memory(_analysis("serial_fixup_good.cu"))
    assert not good.publications and not good.acquisitions and not good.unpropagated
    bad = happens_before.memory(_analysis("serial_fixup_no_barrier_before_release_bad.cu"))
    (p,) = bad.publications
    assert p.why == "unordered" and p.signal_thread == 0 and p.data_thread != 0
    bad = happens_before.memory(_analysis("serial_fixup_no_barrier_after_acquire_bad.cu"))
    (a,) = bad.unpropagated
    assert a.poller == 0 and a.thread != 0 and a.how == "not-propagated"
    bad = happens_before.memory(_analysis("serial_fixup_relaxed_poll_bad.cu"))
    assert [x.how for x in bad.acquisitions] == ["spin"]


def test_spin_nobody_can_leave_first():
    bad = protocol.spin_waits(_analysis("spin_value_nobody_writes_bad.cu"))
    (sw,) = bad.never
    assert (sw.flag, sw.initial) == ("done", 0) and len(sw.raises) == 1
    good = protocol.spin_waits(_analysis("spin_value_turns_good.cu"))
    assert not good.never
    # some block may pass first: the later turns are not followed, so it stays coverage
    assert [why for _, why in good.undecided] == [
        "a block may pass first; the turns of the later blocks are not followed"
    ]


ATOMIC_FACTS = """#include <cuda/atomic>
#include <cuda/std/atomic>
using sys_ref = cuda::atomic_ref<int>;
__global__ void k(int *sem, cuda::atomic<int, cuda::thread_scope_block> *f, cuda::std::atomic<int> *g) {
    cuda::atomic_ref<int, cuda::thread_scope_device> c(sem[blockIdx.x]);
    c.fetch_add(1, cuda::memory_order_release);
    int v = f[0].load(cuda::std::memory_order_acquire);
    g->store(v);
    sys_ref(sem[1]).exchange(2, cuda::memory_order_relaxed);
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_device);
    cuda::atomic_thread_fence(cuda::memory_order_relaxed, cuda::thread_scope_device);
    cuda::atomic_thread_fence(cuda::memory_order_acq_rel);
    cuda::std::atomic_thread_fence(cuda::std::memory_order_acquire);
}
"""


def test_libcu_atomics_are_global_events_with_order_and_scope(tmp_path):
    """libcu++ / C++ atomic objects (frontend/walk_atomics.py): each call is the event its PTX
    spelling is, the order from the call (or the default, seq_cst), the scope from the type's
    template argument (an alias, the declared default system scope, `cuda::std::` = system), the
    address from the atomic_ref's constructor argument or the kernel pointer reached."""
    (tmp_path / "a.cu").write_text(ATOMIC_FACTS)
    (m,) = models_of(str(tmp_path / "a.cu"))
    got = [
        (o.kind, o.api, o.global_access.sem, o.global_access.scope, o.global_access.base, o.global_access.atomic)
        for o in m.ops
        if o.global_access is not None
    ]
    assert got == [
        (ir.GLOBAL_SIGNAL, "cuda::atomic_ref::fetch_add", "release", "gpu", "sem", "add"),
        (ir.GLOBAL_LOAD, "cuda::atomic::load", "acquire", "cta", "f", None),
        (ir.GLOBAL_SIGNAL, "cuda::atomic::store", "release", "sys", "g", "st"),
        (ir.GLOBAL_SIGNAL, "cuda::atomic_ref::exchange", "relaxed", "sys", "sem", "exch"),
    ]
    fences = [o.fence_kind for o in m.ops if o.kind == ir.FENCE]
    # the relaxed fence orders nothing (no event); the default scope is system
    assert fences == ["membar_gl", "membar_sys", "membar_sys"]
    assert all(o.kind != ir.GLOBAL_LOAD or o.global_access.form != "plain" for o in m.ops)  # no load of sem[t]


def test_spin_left_by_a_break_on_data_is_an_open_obligation():
    # round 11: a loop left only by a `break` on a loaded value was skipped by every engine, so
    # the kernel read "100% decided"; it is the progress engine's question, open with its reason
    # round 12 (checks/versions.spin_exit): the exit is read against the values the kernel's
    # stores of the word write; here no thread of the kernel writes it, so it stays open
    facts = protocol.spin_waits(_analysis("spin_break_on_data_undecided.cu"))
    assert not facts.never and not facts.proved and not facts.unreached
    assert [why for _, why in facts.undecided] == [
        "no thread of this kernel writes the flag (the host or another kernel may)"
    ]


def test_device_variable_ticket_is_a_counter_and_writes_after_it_are_unpublished():
    """`atomicInc(&done_blocks, ...)` on a `__device__` variable is a global atomic on one word; the
    last block's test goes through a `__shared__` flag inside `&&`; a write every block makes after
    its ticket is published by nothing (round 11, r11-global)."""
    an = _analysis("device_ticket_write_after_bad.cu")
    (tk,) = [o for o in an.model.ops if o.kind == ir.GLOBAL_SIGNAL and o.api == "atomicInc"]
    ga = tk.global_access
    assert ga is not None and (ga.base, ga.where, ga.sem) == ("done_blocks", "", "relaxed") and ga.result
    mf = happens_before.memory(an)
    (p,) = mf.publications
    assert p.why == "after-counter" and p.signal is tk and p.data.api == "atomicMax"
    good = happens_before.memory(_analysis("device_ticket_good.cu"))
    assert good.publications == [] and good.acquisitions == [] and good.undecided == []


def test_ring_fields_are_bases_and_each_engine_answers_its_slot_question():
    """A sequence-number ring in a struct in global memory: `q->seq[slot]` and
    `q->payload[slot][lane]` are accesses of the fields; the correct ring has no fact, each bad
    variant exactly its own."""
    an = _analysis("seq_ring_good.cu")
    bases = {o.global_access.base for o in an.model.ops if o.global_access is not None}
    assert {"q->seq", "q->payload"} <= bases
    good = happens_before.memory(an)
    assert not (good.publications or good.acquisitions or good.unpropagated or good.handbacks)
    nw = happens_before.memory(_analysis("seq_ring_no_wait_bad.cu"))
    assert [a.how for a in nw.acquisitions] == ["none"] and not nw.handbacks
    hb = happens_before.memory(_analysis("seq_ring_hand_back_before_read_bad.cu"))
    (h,) = hb.handbacks
    assert h.read.global_access.base == "q->payload" and h.write.global_access.base == "q->payload"
    assert not hb.acquisitions and not hb.publications
    lanes = happens_before.memory(_analysis("seq_ring_lanes_before_acquire_bad.cu"))
    assert [a.thread // 32 for a in lanes.unpropagated] == [0] and lanes.unpropagated[0].thread != 0
