"""The grid level of a translation unit (frontend/launch_chain.py): the launch sequence its host
code makes, with each launch's PDL attribute, buffers and predecessor on the stream."""

from __future__ import annotations

from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import CORPUS, ROOT


def _grid(path) -> ir.GridModel:
    ms = models_of(str(path))
    assert ms and all(m.grid is ms[0].grid for m in ms)
    assert ms[0].grid is not None
    return ms[0].grid


def test_ping_pong_chain_through_a_launch_wrapper():
    """idioms6 pdl_stats_chain: `launch_pdl(kernel, stream, args...)` (a variadic template) in a
    3-round loop that swaps src and dst through a temporary, inside a repeat loop of unknown trip
    count that synchronises first: S0 N0 S1 N1 S2 N2, each predecessor the launch before it."""
    g = _grid(CORPUS / "idioms6" / "pdl_stats_chain.cu")
    seq = [(x.kernel, x.buffer("in"), x.buffer("out"), x.predecessor) for x in g.launches]
    assert len(seq) == 6, seq
    assert [s[0] for s in seq] == ["row_stats", "normalize"] * 3
    assert [s[3] for s in seq] == [ir.PRED_NONE, 0, 1, 2, 3, 4]
    assert all(x.pdl is True for x in g.launches)
    a, b = seq[0][1], seq[1][2]
    assert a and b and a != b
    assert [s[1] for s in seq] == [a, a, b, b, a, a]  # the input of each round is the last output
    assert [s[2] for s in seq[1::2]] == [b, a, b]
    assert len({x.buffer("stats") for x in g.launches}) == 1


def test_plain_launch_unknown_stream_and_sync(tmp_path):
    """`<<<...>>>` carries no PDL attribute; a synchronisation leaves nothing running; a launch
    on a stream the walk does not know has no known predecessor."""
    (tmp_path / "k.cu").write_text(
        """
__global__ void a(float *x) { x[threadIdx.x] = 1.0f; }
__global__ void b(float *x) { x[threadIdx.x] += 1.0f; }
cudaStream_t pick();
int main() {
    float *x;
    cudaMalloc(&x, 128);
    cudaStream_t s;
    cudaStreamCreate(&s);
    a<<<1, 32, 0, s>>>(x);
    b<<<1, 32, 0, s>>>(x);
    cudaDeviceSynchronize();
    a<<<1, 32, 0, s>>>(x);
    cudaStream_t t = pick();
    b<<<1, 32, 0, t>>>(x);
}
"""
    )
    g = _grid(tmp_path / "k.cu")
    seq = [(x.kernel, x.pdl, x.predecessor) for x in g.launches]
    assert seq == [
        ("a", False, ir.PRED_NONE),
        ("b", False, 0),
        ("a", False, ir.PRED_NONE),
        ("b", False, ir.PRED_UNKNOWN),
    ]


def test_config_helper_object_and_template_instances():
    """A launch-config helper object (`pdl_config<true> lc(grid, block, s)`, converted to
    `cudaLaunchConfig_t *` at the launch): its constructor's assignments read with `if constexpr
    (PDL)` decided by the class's template argument; the stream it stores; the instance of the
    template kernel each launch names (`stage<1>`)."""
    g = _grid(ROOT / "fixtures" / "pdl" / "config_helper_template_good.cu")
    seq = [(x.kernel, x.instance, x.pdl, x.predecessor) for x in g.launches]
    assert seq == [
        ("stage", "stage<0>", True, ir.PRED_NONE),
        ("stage", "stage<1>", False, 0),
        ("stage", "stage<0>", True, 1),
    ]


def test_config_object_changed_after_construction_is_not_known(tmp_path):
    """A config object used other than as a launch's config (a member written after its
    constructor ran) is not read: its attribute is not known."""
    src = (ROOT / "fixtures" / "pdl" / "config_helper_template_bad.cu").read_text()
    src = src.replace(
        "    cudaLaunchKernelEx(lc, stage<0>,", "    lc.cfg.numAttrs = 0;\n    cudaLaunchKernelEx(lc, stage<0>,"
    )
    (tmp_path / "k.cu").write_text(src)
    g = _grid(tmp_path / "k.cu")
    assert [x.pdl for x in g.launches] == [None, None]


def test_host_template_instance_names_the_kernel_instance(tmp_path):
    """`kernel<C>` launched inside `run<C>` called as `run<cfg<2>>()`: the launch runs the
    instance `kernel<cfg<2>>` (the host template's parameter bound to the call's argument)."""
    (tmp_path / "k.cu").write_text(
        """
template <int N> struct cfg { static constexpr int n = N; };
template <typename C> __global__ void kernel(float *x) { x[threadIdx.x] = C::n; }
template <typename C> void run(float *x) { kernel<C><<<1, 32>>>(x); }
int main() {
    float *x;
    cudaMalloc(&x, 128);
    run<cfg<2>>(x);
    run<cfg<3>>(x);
    cudaDeviceSynchronize();
}
"""
    )
    g = _grid(tmp_path / "k.cu")
    assert [x.instance for x in g.launches] == ["kernel<cfg<2>>", "kernel<cfg<3>>"]
    assert sorted(m.name for m in g.models["kernel"]) == ["kernel<cfg<2>>", "kernel<cfg<3>>"]


def test_struct_passed_by_value_binds_its_pointer_members(tmp_path):
    """A struct of pointers passed by value: each pointer member is the host buffer it was
    assigned from (aggregate initialiser, member assignment, a copy of another struct); a struct
    whose address is taken is not followed; `k<<<g, b>>>` runs on the default stream."""
    (tmp_path / "k.cu").write_text(
        """
struct Args { const float *in; float *out; };
__global__ void k(Args a) { a.out[threadIdx.x] = a.in[threadIdx.x]; }
void touch(Args *a);
int main() {
    float *x, *y;
    cudaMalloc(&x, 128);
    cudaMalloc(&y, 128);
    Args a{x, y};
    k<<<1, 32>>>(a);
    Args b;
    b.in = y;
    b.out = x;
    k<<<1, 32>>>(b);
    Args c = b;
    k<<<1, 32>>>(c);
    Args d{x, y};
    touch(&d);
    k<<<1, 32>>>(d);
    cudaDeviceSynchronize();
}
"""
    )
    g = _grid(tmp_path / "k.cu")
    x, y = g.launches[0].buffer("a.in"), g.launches[0].buffer("a.out")
    assert x and y and x != y
    assert [(la.buffer("a.in"), la.buffer("a.out")) for la in g.launches] == [(x, y), (y, x), (y, x), (None, None)]
    assert [la.predecessor for la in g.launches[:3]] == [ir.PRED_NONE, 0, 1]


def test_config_object_attribute_set_by_a_helper_call_is_not_known(tmp_path):
    """The constructor names the attribute outside an assignment the walk reads (a helper's
    argument): the attribute is not known, never read as off."""
    src = (ROOT / "fixtures" / "pdl" / "config_helper_template_bad.cu").read_text()
    src = src.replace(
        """            attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attrs[0].val.programmaticStreamSerializationAllowed = 1;
""",
        "            put(attrs[0], cudaLaunchAttributeProgrammaticStreamSerialization);\n",
    ).replace("template <bool PDL>", "void put(cudaLaunchAttribute &a, cudaLaunchAttributeID id);\ntemplate <bool PDL>")
    assert "put(attrs[0]" in src
    (tmp_path / "k.cu").write_text(src)
    g = _grid(tmp_path / "k.cu")
    assert [x.pdl for x in g.launches] == [None, None]


def test_the_memo_of_host_constants_keeps_every_answer(monkeypatch):
    """`LaunchChain._const` answers each cursor once per read (issue 29, round 15: the host
    loops are followed several times, and each time their bounds were evaluated again, with
    every `const` local of the function). Checked with and without the memo, kernels whose host
    code loops give the same result, everything in it (the names of unknowns included: a hit
    advances their counter as the evaluation did), and the memo served some question."""
    import json
    from dataclasses import replace

    from tkcheck import evaluate
    from tkcheck.engine import check_file
    from tkcheck.frontend.launch_chain import LaunchChain
    from tkcheck.model import expr as E

    memo_const = LaunchChain._const
    hits = []

    def counted(self, c):
        hits.append(c in self._consts)
        return memo_const(self, c)

    def everything(path):
        opts = replace(evaluate.options(arch=evaluate.kernel_arch(path)), solver_budget=1)
        res = check_file(str(path), opts)
        return json.dumps(
            {
                "unknowns named": E._opaque_counter[0],  # the counter where the check left it
                "findings": [f.to_json() for f in res.findings],
                "notes": res.notes,
                "inconclusive": res.inconclusive,
                "coverage": [c.to_json() for c in res.coverage],
            },
            sort_keys=True,
            default=str,
        )

    for rel in ("idioms6/pdl_stats_chain.cu", "hopper/gemm_ring.cu", "hopper/rotary_lcsf.cu"):
        with monkeypatch.context() as mp:
            mp.setattr(LaunchChain, "_const", counted)
            got = everything(CORPUS / rel)
        with monkeypatch.context() as mp:
            mp.setattr(LaunchChain, "_const", LaunchChain._const_of)
            ref = everything(CORPUS / rel)
        assert got == ref, rel
    assert any(hits), "no host constant was asked twice: the test compares nothing"
