"""Raw-PTX wgmma and tensor copies as events (round 5, wgptx): the op table's entries for
`wgmma.mma_async` and `cp.async.bulk.tensor`, and the model the front end builds from them."""

from pathlib import Path

from tkcheck.engine import models_of
from tkcheck.knowledge import ops as K
from tkcheck.model import ir

ROOT = Path(__file__).resolve().parent.parent


def test_wgmma_mma_async_is_an_mma_that_commits_no_group():
    ops, understood = K.ptx_async_ops(
        "{ .reg .pred p; setp.ne.b32 p, 1, 0; "
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1}, %2, %3, p, 1, 1, 0, 0; }"
    )
    assert understood and [o.kind for o in ops] == [ir.MMA]
    assert ops[0].mma is not None and ops[0].mma.family == "wgmma" and ops[0].mma.self_commit is False
    assert ops[0].warpgroup


def test_tensor_copy_names_its_map_operand():
    ops, _ = K.ptx_async_ops(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
    )
    assert [o.kind for o in ops] == [ir.TMA_LOAD] and ops[0].tensor_map == "%1" and ops[0].bytes is None


def _model(path: str, name: str) -> ir.KernelModel:
    return next(m for m in models_of(str(ROOT / path)) if m.name.startswith(name))


def test_accumulator_is_the_array_of_the_plus_f_operands():
    m = _model("fixtures/accumulator/wgmma_ptx_acc_bad.cu", "rows_of_one_array")
    mmas = [o for o in m.ops if o.kind == ir.MMA]
    assert [str(o.operands[0]) for o in mmas] == ["d[0]", "d[1]"]
    # element reads of the accumulator are register accesses; none of another local array
    reads = {o.buffer.name for o in m.ops if o.kind == ir.REG_ACCESS}
    assert reads == {"d"}
    good = _model("fixtures/accumulator/wgmma_ptx_acc_good.cu", "drain_each_step")
    assert {o.buffer.name for o in good.ops if o.kind == ir.REG_ACCESS} == {"d"}  # `sum` is no accumulator


def test_tensor_copy_bytes_are_the_host_box():
    m = _model("corpus/idioms3/wgmma_dual_acc.cu", "gemm_dual_kernel")
    loads = [o for o in m.ops if o.kind == ir.TMA_LOAD]
    assert [o.bytes.eval({}) for o in loads] == [8192, 8192]  # box {64, 64} of bf16
    assert [o.buffer.name for o in loads] == ["dyn+0/8192", "dyn+32768/8192"]
    # a map encoded with two boxes on two host branches: unknown, not a guess
    two = _model("fixtures/completion/ptx_tensor_map_box_good.cu", "two_encodings")
    (load,) = [o for o in two.ops if o.kind == ir.TMA_LOAD]
    assert load.bytes.is_opaque()


def test_tensor_store_source_is_named_as_its_writers_name_it():
    """A PTX tensor store reads the shared memory its source address names (round 7): a named
    array's base is the array; a tile carved from dynamic shared memory by hand is dyn[offset],
    the prefix of the element the kernel's own writes through its float pointer name."""
    named = _model("fixtures/proxy/tensor_store_named_good.cu", "scale_tile")
    (store,) = [o for o in named.ops if o.kind == ir.TMA_STORE]
    assert store.buffer == ir.Ref("y_s")
    carved = _model("fixtures/proxy/tensor_store_dynamic_good.cu", "epilogue")
    (store,) = [o for o in carved.ops if o.kind == ir.TMA_STORE]
    writes = [o for o in carved.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "write"]
    assert store.buffer is not None and writes
    assert all(w.buffer.name == store.buffer.name == "dyn" for w in writes)
    assert all(w.buffer.index[: len(store.buffer.index)] == store.buffer.index for w in writes)
