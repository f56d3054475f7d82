"""Round 15 (issue 25, branch r15-spins): spins inside loops -- a persistent ticket loop whose
cell comes from a pure helper of the broadcast ticket, and a `do { poll } while` spin inside a
loop over predecessors -- asked of the engines on fixtures of their own shapes."""

from __future__ import annotations

from tkcheck.checks import happens_before, protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import expr as E
from tkcheck.model import ir

from conftest import ROOT

FIX = ROOT / "fixtures"


def _analysis(path) -> Analysis:
    (m,) = models_of(str(path))
    return Analysis(m)


def _signal(an: Analysis) -> ir.Op:
    (sig,) = [o for o in an.model.ops if o.kind == ir.GLOBAL_SIGNAL and o.api == "atomicExch"]
    return sig


def test_a_pure_helper_of_a_broadcast_ticket_is_block_uniform():
    an = _analysis(FIX / "memory" / "pure_helper_snake_good.cu")
    sig = _signal(an)
    # `threadIdx.x == 0 && row + 1 < ROWS`, row from `cell_of(k)`: who signals is known, the row
    # test is a condition every thread of the block answers alike
    assert sig.guard.exact
    names = {v.name for c in sig.guard.uniform for v in c.free_vars()}
    assert any(n.startswith(E.UNIFORM_UNKNOWN + "cell_of") for n in names)
    assert an.threads.executing(sig) == frozenset([0])


def test_a_helper_that_reads_the_thread_index_stays_unknown(tmp_path):
    src = (FIX / "memory" / "pure_helper_snake_good.cu").read_text()
    impure = src.replace("int r0 = 0;", "int r0 = threadIdx.x & 0;")
    assert impure != src
    p = tmp_path / "impure_helper.cu"
    p.write_text(impure)
    sig = _signal(_analysis(p))
    assert not sig.guard.exact  # a value of the thread index: not one the block holds alike


def test_the_publication_and_acquire_queries_see_through_the_helper():
    bad = happens_before.memory(_analysis(FIX / "memory" / "pure_helper_snake_no_fence_bad.cu"))
    assert [p.why for p in bad.publications] == ["relaxed"]
    nosync = happens_before.memory(_analysis(FIX / "memory" / "pure_helper_snake_no_sync_bad.cu"))
    assert [a.how for a in nosync.unpropagated] == ["not-propagated"]
    good = happens_before.memory(_analysis(FIX / "memory" / "pure_helper_snake_good.cu"))
    assert not good.publications and not good.unpropagated
    assert any(k[0] == "global" for k in good.examined)


def test_a_do_while_poll_in_a_loop_of_predecessors_names_its_first_element():
    bad = protocol.spin_waits(_analysis(FIX / "progress" / "spin_do_while_children_bad.cu"))
    (sw,) = bad.never
    assert sw.flag == "word" and sw.element == 1
    good = protocol.spin_waits(_analysis(FIX / "progress" / "spin_do_while_children_good.cu"))
    assert not good.never and len(good.undecided) == 1
