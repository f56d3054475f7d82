"""Round 5 (dsmem): the inline-PTX forms of cluster barriers and peer shared memory, and the
z3 encoding of a low-bit mask."""

import z3

from tkcheck.knowledge import ops as K
from tkcheck.model import expr as E


def test_cluster_arrive_relaxed_is_not_a_release():
    (rel,), ok = K.ptx_async_ops("barrier.cluster.arrive.release.aligned;")
    (lax,), ok2 = K.ptx_async_ops("barrier.cluster.arrive.relaxed.aligned;")
    (wait,), _ = K.ptx_async_ops("barrier.cluster.wait.acquire.aligned;")
    assert ok and ok2
    assert rel.sync.kind == lax.sync.kind == "cluster_arrive"
    assert not rel.sync.relaxed and lax.sync.relaxed
    assert wait.sync.kind == "cluster_wait" and not wait.sync.relaxed


def test_dsmem_accesses_modes_and_offsets():
    (ld,) = K.ptx_dsmem_accesses("ld.shared::cluster.f32 %0, [%1];")
    assert (ld.mode, ld.sync, ld.addr_operand, ld.offset) == ("read", None, 1, 0)
    (st,) = K.ptx_dsmem_accesses("st.shared::cluster.f32 [%0+4], %1;")
    assert (st.mode, st.sync, st.addr_operand, st.offset) == ("write", None, 0, 4)
    (acq,) = K.ptx_dsmem_accesses("ld.acquire.cluster.shared::cluster.u32 %0, [%1];")
    assert acq.sync == "acquire"
    (red,) = K.ptx_dsmem_accesses("red.release.cluster.shared::cluster.add.u32 [%0], %1;")
    assert (red.mode, red.sync) == ("write", "red")
    # a cluster red on shared memory is not a global signal
    assert not any(
        p.kind == "global_signal" for p in K.ptx_ops("red.release.cluster.shared::cluster.add.u32 [%0], %1;").ops
    )
    # mapa and a bulk copy into shared::cluster are not accesses of this kind
    assert K.ptx_dsmem_accesses("mapa.shared::cluster.u32 %0, %1, %2;") == ()


def test_low_mask_is_mod_for_every_integer():
    x = E.Var("x", E.PARAM)
    zv = E.Z3Vars()
    enc = E.binop("&", x, E.Const(3)).to_z3(zv)
    s = z3.Solver()
    xv = dict(zv.items())["x"]
    for v in (-7, -1, 0, 5, 12):
        s.push()
        s.add(xv == v)
        assert s.check() == z3.sat
        assert s.model().eval(enc).as_long() == v & 3
        s.pop()


def test_parity_of_next_iteration_is_decided():
    from tkcheck import solver

    k = E.Var("k1", E.LOOP)
    same = E.binop("==", E.binop("&", E.binop("+", k, E.Const(1)), E.Const(1)), E.binop("&", k, E.Const(1)))
    with solver.session():
        mark = solver.inconclusive_count()
        assert solver.witness(same) is None
        assert solver.inconclusive_count() == mark  # unsatisfiable, not unknown
