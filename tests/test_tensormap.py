"""Issue 25, round 9 (r9b-tensormap): the tensor-map proxy. A tensor map patched on the device
(`tensormap.replace`), published (`tensormap.cp_fenceproxy ... release`) and acquired
(`fence.proxy.tensormap::generic.acquire`) is not modelled yet: every such instruction is a
counted sync site, and a raw tensor copy through a map that is not a `__grid_constant__`
parameter is not a modelled site either -- coverage, never a silent "100% modelled". The
`.sync.aligned` publication is a full-warp collective (TK501); a copy through a map this kernel
published with no acquire fence anywhere in the kernel is TK402 (fixtures/tensormap/)."""

import json

from tkcheck.knowledge import ops as K

from conftest import ROOT, cli


def _coverage(path):
    p = cli(["coverage", str(path), "--output-format", "json"], ROOT)
    assert p.returncode == 0, p.stderr
    recs = json.loads(p.stdout)
    assert all(r["analysed"] for r in recs)
    return recs[0] if len(recs) == 1 else recs


def _rows(rec):
    return {int(u["location"].split(":")[1]) for u in rec["unknowns"] if u["why"] == "asm: not modelled"}


def test_tensor_copies_name_their_map():
    (ld,), _ = K.ptx_async_ops(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
    )
    assert ld.tensor_map == "%1"
    (st,), _ = K.ptx_async_ops("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];")
    assert st.tensor_map == "%0" and st.buffer == "%1"
    (red,), _ = K.ptx_async_ops(
        "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group [%0, {%2, %3}], [%1];"
    )
    assert red.tensor_map == "%0"


def test_missing_acquire_is_no_silent_pass():
    rec = _coverage(ROOT / "fixtures" / "tensormap" / "patch_no_acquire.cu")
    assert rec["sync_ops_modelled"] < rec["sync_ops"]
    # the publication (28) and the TMA load through the global map (33); the patch (23) is a
    # modelled site since round 10 (a write of the shared map, a memory event)
    rows = _rows(rec)
    assert {28, 33} <= rows and 23 not in rows


def test_acquired_patch_is_counted_too():
    rec = _coverage(ROOT / "fixtures" / "tensormap" / "patch_acquired.cu")
    # the acquire fence (32) is an event (FENCE tensormap_acquire): a modelled site; the copy
    # through the map stays unmodelled (its ordering after the publication is not proved)
    rows = _rows(rec)
    assert {28, 34} <= rows and 23 not in rows and 32 not in rows


def test_tensormap_orders():
    assert K.ptx_tensormap_orders(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
    ) == [("tensormap_release", "%0")]
    assert K.ptx_tensormap_orders("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;") == [
        ("tensormap_acquire", "%0")
    ]
    # a release fence of the tensormap proxy is no acquire: a release at no one address (round 10)
    assert K.ptx_tensormap_orders("fence.proxy.tensormap::generic.release.gpu;") == [("tensormap_release", None)]
    colls = K.ptx_warp_collectives(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
    )
    assert colls == [("tensormap.cp_fenceproxy", "0xffffffff")]


def test_grid_constant_map_stays_modelled():
    # `reinterpret_cast<uint64_t>(&m)` of a `__grid_constant__ CUtensorMap` parameter
    recs = _coverage(ROOT / "fixtures" / "completion" / "ptx_tensor_map_box_good.cu")
    assert len(recs) > 1
    for rec in recs:
        assert rec["sync_ops_modelled"] == rec["sync_ops"], rec


def test_tensormap_accesses():
    """Round 10: a patch writes the whole map (shared or global), the publication reads the
    shared one (its second operand)."""
    assert K.ptx_tensormap_accesses("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;") == [
        ("write", "shared", "%0")
    ]
    assert K.ptx_tensormap_accesses("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;") == [
        ("write", "global", "%0")
    ]
    assert K.ptx_tensormap_accesses(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
    ) == [("read", "shared", "%1")]
    assert K.ptx_tensormap_accesses("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;") == []


def test_shared_map_accesses_are_memory_events():
    from tkcheck.engine import models_of
    from tkcheck.model import ir

    (good, _, _) = sorted(models_of(str(ROOT / "fixtures" / "tensormap" / "replace_race.cu")), key=lambda m: m.name)
    accesses = [(o.api, o.access.mode) for o in good.ops if o.kind == ir.SMEM_ACCESS and o.buffer.name == "tm_s"]
    assert ("tensormap.replace", "write") in accesses and ("tensormap.cp_fenceproxy", "read") in accesses
