"""Round 16 (issue 25, branch r16-loopspin): a release inside a ticket loop, and the data the block
stores after it -- published by a release of a later iteration only if that iteration comes."""

from __future__ import annotations

from tkcheck.checks import happens_before
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

MEM = ROOT / "fixtures" / "memory"


def _memory(path) -> happens_before.MemoryFacts:
    (m,) = models_of(str(path))
    return happens_before.memory(Analysis(m))


def test_a_store_after_the_release_of_a_ticket_loop_is_published_by_nothing():
    bad = _memory(MEM / "segment_chain_release_first_bad.cu")
    (p,) = [p for p in bad.publications if p.why == "after-loop"]
    assert p.signal_thread == 0 and len(p.writers) == 128  # thread 0 raises, the whole block stores
    assert p.signal.api == "asm red/atom" and p.data.location.row == 37
    fenced = _memory(MEM / "segment_chain_fence_strided_bad.cu")  # fence, then a relaxed atomic
    assert [p.why for p in fenced.publications] == ["after-loop"]


def test_a_later_release_of_the_iteration_or_no_store_after_it_is_no_finding():
    for name in ("segment_chain_good.cu", "segment_chain_second_raise_good.cu"):
        facts = _memory(MEM / name)
        assert not facts.publications, name
        assert any(k[0] == "global" for k in facts.examined), name


def test_a_loop_that_draws_no_ticket_is_not_asked(tmp_path):
    # the segment comes from the loop's own counter, not from a ticket drawn in the loop: the
    # next iteration's release is not one a ticket may skip, so the question is not asked here
    src = (MEM / "segment_chain_release_first_bad.cu").read_text()
    counted = src.replace("if (i == 0) seg_s = atomicAdd(next, 1);", "if (i == 0) seg_s = blockIdx.x;")
    assert counted != src
    p = tmp_path / "counted.cu"
    p.write_text(counted)
    assert not [p for p in _memory(p).publications if p.why == "after-loop"]


def test_the_last_iteration_of_a_grid_stride_loop_is_followed_by_no_release():
    bad = _memory(MEM / "strided_rows_release_first_bad.cu")
    assert [p.why for p in bad.publications] == ["after-loop"]
    assert not _memory(MEM / "strided_rows_good.cu").publications


def test_a_release_after_the_loop_publishes_the_last_iteration(tmp_path):
    src = (MEM / "strided_rows_release_first_bad.cu").read_text()
    tail = "    }\n}\n"
    assert src.endswith(tail)
    closed = (
        src[: -len(tail)] + "    }\n    __syncthreads();\n    if (threadIdx.x == 0) raise_release(&ready[ROWS]);\n}\n"
    )
    p = tmp_path / "closed.cu"
    p.write_text(closed)
    assert not [p for p in _memory(p).publications if p.why == "after-loop"]


def test_a_release_in_an_inner_loop_is_not_asked(tmp_path):
    # the raise and the store inside a loop nested in the persistent one: the inner loop's next
    # iteration raises again after the store, which the outer loop's last iteration does not end
    src = (MEM / "strided_rows_release_first_bad.cu").read_text()
    nested = src.replace(
        "        if (threadIdx.x == 0 && row + 1 < ROWS) raise_release(&ready[row + 1]);\n",
        "        for (int rep = 0; rep < 2; rep++) {\n"
        "        if (threadIdx.x == 0 && row + 1 < ROWS) raise_release(&ready[row + 1]);\n",
    ).replace("y[row * COLS + c] = v[j];  // expect: TK407\n", "y[row * COLS + c] = v[j];\n        }\n")
    assert nested.count("for (int rep") == 1
    p = tmp_path / "nested.cu"
    p.write_text(nested)
    assert not [p for p in _memory(p).publications if p.why == "after-loop"]


def test_data_each_thread_keeps_to_itself_is_not_asked():
    # idioms11 atomic_wait_notify (clean): every thread updates its own words of its block's slice
    # after the round's release; the read after the spin is the same thread's, in its next round
    facts = _memory(ROOT / "corpus" / "idioms11" / "atomic_wait_notify.cu")
    assert not [p for p in facts.publications if p.why == "after-loop"]


def test_data_each_block_keeps_to_itself_is_not_asked(tmp_path):
    # atomic_wait_notify with each thread updating from its neighbour's word of the block's slice:
    # no longer one thread's data, still one block's -- no other block reads it after its spin
    src = (ROOT / "corpus" / "idioms11" / "atomic_wait_notify.cu").read_text()
    old = "mine[i * T + tid] = 3u * mine[i * T + tid] + tot;"
    assert old in src
    p = tmp_path / "neighbour.cu"
    p.write_text(src.replace(old, "mine[i * T + tid] = 3u * mine[i * T + (tid + 1) % T] + tot;"))
    (m,) = models_of(str(p))
    an = Analysis(m)
    assert not happens_before.thread_private(an, "v") and happens_before.block_private(an, "v")
    assert not [p for p in happens_before.memory(an).publications if p.why == "after-loop"]


def test_a_loop_over_a_carried_value_asks_its_first_iteration():
    """Round 17 (r17-silent): `while (pos < hi) { ...; pos = stop; }` has a condition over a carried
    value with no closed form, not over the loop's counter; the last-iteration question was
    `cond(k) and not cond(k + 1)` with both the same, never satisfiable, and the pair passed in
    silence. Now the first iteration is asked with the value at its start: proved (the carrier's
    whole range inside one segment); the other arm's reset of the flag is no later release."""
    bad = _memory(MEM / "segment_carry_release_first_bad.cu")
    (p,) = [p for p in bad.publications if p.why == "after-loop"]
    assert p.signal_thread == 0 and len(p.writers) == 128 and p.data.location.row == 30
    good = _memory(MEM / "segment_carry_good.cu")
    assert not good.publications and not good.undecided


def test_a_first_iteration_that_is_never_last_leaves_the_pair_undecided(tmp_path):
    """Ranges longer than a segment: the carrier's first piece is never its last, and whether a
    later iteration may end the loop after a carry is not known: undecided, not silence."""
    src = (MEM / "segment_carry_release_first_bad.cu").read_text()
    assert "R = 48, G = 64" in src
    p = tmp_path / "long.cu"
    p.write_text(src.replace("R = 48, G = 64", "R = 96, G = 32"))
    mem = _memory(p)
    assert not mem.publications
    assert [why for _, _, why in mem.undecided] == ["whether the iteration may be the loop's last is not known"]
