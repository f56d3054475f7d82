"""Sync-scope rules (TK401, TK402, TK404-TK407): planted bugs found, idioms clean,
and the group-scope issuer model (one elected lane per group instance)."""

import pytest

from tkcheck.checks.analysis import Analysis

from test_accumulator import SCOPE, _model, mutations, run_mutation


@pytest.mark.parametrize("m", mutations(SCOPE))
def test_planted_scope_bug_found(m, corpus_checks):
    res = run_mutation(m, corpus_checks)
    want = set(m["rules"]) & SCOPE
    got = {f.code for f in res.findings}
    assert want <= got, (m["id"], sorted(got), res.notes)
    for f in res.findings:
        if f.code in ("TK401", "TK402", "TK407"):
            assert f.related, f"{f.code} must name the unsynchronised writer: {f.message}"


def test_group_scope_arrive_elects_lane_zero_of_the_group(tmp_path):
    # Settled against the real headers: inside `struct group<N>` the unqualified laneid()
    # is group<N>::laneid() = threadIdx.x % (32*N); nvcc -ptx of warpgroup::arrive(sem)
    # guards the mbarrier.arrive with `and.b32 %r2, %r1, 127; setp.ne.s32 %p1, %r2, 0`.
    src = (
        '#include "kittens.cuh"\nusing namespace kittens;\n'
        '__global__ __launch_bounds__(256, 1) void k(int n) {\n'
        '    __shared__ semaphore s;\n'
        '    warpgroup::arrive(s);\n    warp::arrive(s);\n    arrive(s);\n}\n'
    )
    an = Analysis(_model(tmp_path, src, "k"))
    wg, w, t = [o for o in an.model.ops if o.kind == "mbar_arrive"]
    assert an.threads.issuers(wg) == frozenset({0, 128})
    assert an.threads.issuers(w) == frozenset(range(0, 256, 32))
    assert len(an.threads.issuers(t)) == 256


def test_lcf_barrier_15_from_both_branches_is_legal(tmp_path):
    src = (
        '#include "kittens.cuh"\nusing namespace kittens;\n'
        '__global__ __launch_bounds__(384, 1) void k(int n) {\n'
        '    if (warpgroup::groupid() == 2) { everyone::sync(15); }\n'
        '    else { everyone::sync(15); group<8>::sync(14); }\n}\n'
    )
    from tkcheck.checks import syncscope as S

    an = Analysis(_model(tmp_path, src, "k"))
    uses = S.named_barrier_uses(an)
    by = {}
    for u in uses:
        by.setdefault(u.bar_id, set()).update(u.threads)
    assert len(by[15]) == 384 and len(by[14]) == 256
    from tkcheck.rules import tk404_named_barrier_count_mismatch as r404

    assert r404.check(an) == []
