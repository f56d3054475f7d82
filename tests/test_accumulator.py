"""Accumulator rules (TK201, TK202, TK206): planted bugs in the corpus are found with
the two sites named, and the corpus kernels stay clean."""

import tomllib

import pytest

from tkcheck import registry

from conftest import ROOT

ALL = frozenset(r.code for r in registry.all_rules())
MINE = {"TK201", "TK202", "TK206"}
SCOPE = {"TK401", "TK402", "TK404", "TK405", "TK406", "TK407"}


# Planted bugs whose construct the model does not represent yet (reported as known misses).
KNOWN_MISSES: dict[str, str] = {}


def mutations(codes):
    out = []
    for name in ("mutations.toml", "mutations_accumulator_scope.toml"):
        p = ROOT / "corpus" / name
        if not p.exists():
            continue
        for m in tomllib.loads(p.read_text())["mutation"]:
            if set(m["rules"]) & codes and (ROOT / "corpus" / m["kernel"]).exists():
                if m["id"] in KNOWN_MISSES:
                    out.append(pytest.param(m, id=m["id"], marks=pytest.mark.xfail(reason=KNOWN_MISSES[m["id"]])))
                else:
                    out.append(pytest.param(m, id=m["id"]))
    return out


def run_mutation(m, corpus_checks):
    """The planted bug checked as tests/test_corpus.py checks it (`tkcheck eval`'s check of the
    mutant, every rule): one check per session for all the test files that ask."""
    assert (ROOT / "corpus" / m["kernel"]).read_text().count(m["find"]) == 1, m["id"]
    (spec,) = [x for x in corpus_checks.mutations if x.id == m["id"]]
    return corpus_checks.mutation(spec)


@pytest.mark.parametrize("m", mutations(MINE))
def test_planted_accumulator_bug_found(m, corpus_checks):
    res = run_mutation(m, corpus_checks)
    want = set(m["rules"]) & MINE
    got = {f.code for f in res.findings}
    assert want <= got, (m["id"], sorted(got), res.notes)
    for f in res.findings:
        if f.code in ("TK201", "TK206"):
            assert f.related, f"{f.code} must name the MMA site: {f.message}"


CORPUS = sorted(p for p in (ROOT / "corpus").rglob("*.cu") if not p.name.startswith("_"))


def _clean_param(p):
    from test_corpus import KNOWN_FALSE

    rel = p.relative_to(ROOT / "corpus").as_posix()
    # a recorded false finding fails this test only when it is one of the rules it looks at (the
    # idioms7 kernels' false TK301 / TK503 are not)
    known = KNOWN_FALSE.get(rel, "")
    marks = [pytest.mark.xfail(reason=known, strict=True)] if any(c in known for c in MINE | SCOPE) else []
    return pytest.param(p, id=rel, marks=marks)


@pytest.mark.parametrize("path", [_clean_param(p) for p in CORPUS])
def test_corpus_clean_for_accumulator_and_scope_rules(path, corpus_checks):
    # the check tests/test_corpus.py makes of the kernel (its own architecture, every rule): one per session
    res = corpus_checks.clean(path)
    bad = [(f.code, f.location.row, f.message) for f in res.findings if f.code in MINE | SCOPE]
    assert not bad


def _model(tmp_path, src, name):
    from tkcheck.engine import models_of

    p = tmp_path / "k.cu"
    p.write_text(src)
    return next(m for m in models_of(str(p), text=src) if m.name == name)


def test_wait_n_counts_commit_groups(tmp_path):
    from tkcheck.checks import paths
    from tkcheck.checks.analysis import Analysis

    src = (
        '#include "kittens.cuh"\nusing namespace kittens;\n'
        '__global__ __launch_bounds__(128, 1) void k(int n) {\n'
        '    __shared__ st_bf<64, 64> a, b, c;\n    rt_fl<16, 64> x, y;\n'
        '    warpgroup::mm_AB(x, a, b);\n    warpgroup::mma_commit_group();\n'
        '    warpgroup::mma_async_wait<1>();\n    warpgroup::store(c, x);\n}\n'
    )
    an = Analysis(_model(tmp_path, src, "k"))
    mma = next(o for o in an.model.ops if paths.is_wgmma(o))
    hits = paths.in_flight_hits(an, mma, 0, lambda o: o.kind == "reg_access")
    assert hits == []  # an explicit (empty) commit group after the MMA: wait<1> retires it


def test_state_struct_accumulator_is_tracked(tmp_path):
    src = (
        '#include "kittens.cuh"\nusing namespace kittens;\n'
        'struct st_t { rt_fl<16, 64> acc; };\n'
        '__global__ __launch_bounds__(128, 1) void k(int n) {\n'
        '    __shared__ st_bf<64, 64> a, b;\n    st_t s;\n'
        '    warpgroup::mma_AB(s.acc, a, b);\n    warpgroup::mma_async_wait();\n}\n'
    )
    m = _model(tmp_path, src, "k")
    assert "s.acc" in m.reg_tiles
    mma = next(o for o in m.ops if o.kind == "mma")
    assert mma.operands[0].name == "s.acc" and mma.mma.kind_of("acc") == "regtile"
