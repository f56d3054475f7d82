"""Round 9 (issue 25, branch r9-spinlock): global spin locks as primitives (checks/locks.py).

The take (a spin on the old value of a CAS / exchange on one word), its releases and the held
region are read from the events whatever the loop's shape; progress (never freed), lanes of one
warp and the data outside the held region are the engines' answers; a shape not read stays
coverage, never a silent pass."""

from tkcheck.checks import happens_before, locks
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

LOCKS = ROOT / "fixtures" / "locks"


def _facts(name: str, kernel: str | None = None):
    ms = models_of(str(LOCKS / name))
    m = next(m for m in ms if kernel is None or m.name == kernel)
    an = Analysis(m)
    return an, locks.locks(an)


def test_cas_take_release_and_held_region():
    an, lf = _facts("cas_lock_good.cu")
    (lk,) = lf.locks
    assert (lk.base, lk.where, str(lk.free), str(lk.taken)) == ("lock", "", "0", "1")
    assert lk.take.global_access.atomic == "cas" and lk.take.global_access.operands
    assert [r.global_access.atomic for r in lk.releases] == ["exch"]
    held = {o.global_access.text for o in lk.held if o.global_access is not None}
    assert {"s->count", "s->total"} <= held
    assert lf.freed == [lk] and not lf.never_freed and not lf.lanes and not lf.undecided
    mem = happens_before.memory(an)
    assert not mem.unprotected and ("lock", "sum", "->total") in mem.examined


def test_every_loop_shape_is_a_take():
    for name, kernel in (
        ("do_while_lock_good.cu", "do_while_lock"),
        ("do_while_lock_good.cu", "tas_lock"),
        ("trylock_backoff_good.cu", None),
    ):
        _an, lf = _facts(name, kernel)
        assert len(lf.locks) == 1 and lf.freed and not lf.undecided, (name, kernel, lf.undecided)


def test_never_freed_lanes_and_outside():
    _an, lf = _facts("cas_lock_never_freed_bad.cu")
    (nf,) = lf.never_freed
    assert [str(v) for _w, v in nf.values] == ["1"] and "second block" in nf.second
    _an, lf = _facts("cas_lock_warp_lanes_bad.cu")
    (lc,) = lf.lanes
    assert (lc.warp, lc.lanes) == (0, 32)
    an, _lf = _facts("cas_lock_outside_bad.cu")
    words = sorted(u.word for u in happens_before.memory(an).unprotected)
    assert words == ["sum->count", "sum->total"]


def test_a_spin_on_an_rmw_not_read_as_a_lock_is_undecided():
    """A CAS spin whose released word is also written elsewhere: coverage, no finding."""
    src = """
__global__ __launch_bounds__(64) void k(int *lock, int *data) {
    if (threadIdx.x == 0) {
        lock[0] = 0;
        while (atomicCAS(lock, 0, 1) != 0) {}
        __threadfence();
        *data = *data + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}
"""
    (m,) = models_of("inline_lock.cu", text=src)
    an = Analysis(m)
    lf = locks.locks(an)
    assert not lf.locks and lf.undecided and "written elsewhere" in lf.undecided[0][1]


def test_atomic_ref_and_ptx_locks_are_coverage():
    """A compare_exchange loop (its result a bool, no old value) and a PTX atom.cas through a
    helper's address: each spin one undecided lock question, no lock read, no finding."""
    for kernel in ("ref_lock", "ptx_lock"):
        _an, lf = _facts("atomic_ref_and_ptx_lock.cu", kernel)
        assert not lf.locks and len(lf.undecided) == 1, (kernel, lf.undecided)


def test_second_block_from_the_launch():
    """The idioms7 kernel's launch reads 1056 blocks; a file that launches its lock kernel with one
    block leaves never-freed and outside-the-lock undecided (coverage), no finding."""
    (m,) = models_of(str(ROOT / "corpus" / "idioms7" / "spinlock_accum.cu"))
    assert [g.blocks for g in m.grid.launches] == [1056]
    assert "1056 blocks" in locks.second_block(Analysis(m))
    an, lf = _facts("one_block_launch.cu")
    assert locks.second_block(an) is None
    assert not lf.never_freed and any("one block" in why for _o, why in lf.undecided)
    assert not happens_before.memory(an).unprotected


def test_a_plain_store_releases_with_its_value():
    _an, lf = _facts("store_release_lock.cu", "store_release_good")
    assert lf.freed and lf.locks[0].releases[0].kind == "global_store"
    _an, lf = _facts("store_release_lock.cu", "store_release_bad")
    assert [str(v) for _w, v in lf.never_freed[0].values] == ["1"]


# ---- round 11 (branch r11-latch): libcu++ binary semaphores are such locks ----------------------

LIBCU = ROOT / "fixtures" / "libcu"


def _libcu(name: str, kernel: str):
    m = next(m for m in models_of(str(LIBCU / name)) if m.name == kernel)
    an = Analysis(m)
    return an, locks.locks(an)


def test_semaphore_per_bucket_is_a_lock_holding_the_block_through_barriers():
    """`sems[bucket].acquire()` by thread 0, block barriers around every thread's update, then
    `release()`: a lock word per block (index over blockIdx only), freed by its release store of
    1, and every thread's access held (`holds`: barriers order the holder's take before it and it
    before the release); the per-element data is asked with z3 and found ordered."""
    an, lf = _libcu("semaphore_bucket_good.cu", "buckets")
    (lk,) = lf.locks
    assert (lk.base, str(lk.free), str(lk.taken)) == ("sems", "1", "0")
    assert lk.index is not None and "blockIdx.x" in str(lk.index)
    assert lf.freed == [lk] and not lf.undecided
    acc = [o for o in an.model.ops if o.global_access is not None and o.global_access.base == "acc"]
    assert acc and all(locks.holds(an, lk, o) is True for o in acc)
    mem = happens_before.memory(an)
    assert not mem.unprotected and ("lock", "acc", None) in mem.examined


def test_missing_barrier_leaves_the_access_outside_and_races_between_two_blocks():
    an, lf = _libcu("semaphore_no_sync_after_acquire_bad.cu", "buckets")
    (lk,) = lf.locks
    acc = [o for o in an.model.ops if o.global_access is not None and o.global_access.base == "acc"]
    assert all(locks.holds(an, lk, o) is False for o in acc)
    (u,) = happens_before.memory(an).unprotected
    assert "block 0" in u.grid and "block 4" in u.grid and "64 blocks" in u.grid


def test_discarded_try_acquire_is_an_untested_take_and_a_tested_one_is_not():
    an, lf = _libcu("semaphore_try_acquire_ignored_bad.cu", "buckets")
    assert not lf.locks and len(lf.untested) == 1
    (u,) = happens_before.memory(an).unprotected
    assert u.lock is None and u.untested is lf.untested[0]
    for kernel in ("own_path", "broadcast"):
        an, lf = _libcu("semaphore_try_acquire_good.cu", kernel)
        assert not lf.untested and not happens_before.memory(an).unprotected, kernel
