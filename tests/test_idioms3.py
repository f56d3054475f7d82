"""The third set of new-idiom kernels of issue 25 (corpus/idioms3/): their planted bugs, scored
apart from the gating corpus set.

`tkcheck eval corpus/` reads only corpus/mutations*.toml, so this folder's mutations file is not
in its table; `tkcheck eval corpus/idioms3` gives the folder's own. Here every spec must apply,
name known rules and say what the GPU did; each planted bug tkcheck finds must stay found with its
rule, and each `known_miss` is a strict xfail: the day a model change finds it, this test fails
until the spec drops the key (and docs/BENCHMARKS.md's "New-idiom kernels, third set" gains the new
number). The clean kernels are checked with the rest of the corpus (tests/test_corpus.py), and
here once more for a finding of any rule.
"""

from __future__ import annotations

import pytest

from tkcheck import evaluate

from conftest import CORPUS

IDIOMS3 = CORPUS / "idioms3"
MUTATIONS = evaluate.load_mutations(IDIOMS3)
KNOWN = evaluate.all_codes()


def _param(m: evaluate.Mutation):
    marks = []
    if m.known_miss:
        marks.append(pytest.mark.xfail(reason=f"known miss: {m.known_miss}", strict=True))
    return pytest.param(m, id=m.id, marks=marks)


def test_specs_apply_and_name_known_rules():
    assert len(MUTATIONS) >= 25, "the set plants 4-6 bugs in each of five kernels"
    problems = [m.problem for m in MUTATIONS if m.problem]
    for m in MUTATIONS:
        if m.problem:
            continue
        try:
            evaluate.mutated_text(IDIOMS3, m)
        except ValueError as e:
            problems.append(str(e))
        problems += [f"{m.id}: unknown rule {r}" for r in m.rules if r not in KNOWN]
        if "observed on H100:" not in m.description and "observed on H200:" not in m.description:
            problems.append(f"{m.id}: the description must end with what the GPU did")
        if m.symptom not in ("hang", "nan", "stripes", "wrong", "slow"):
            problems.append(f"{m.id}: symptom {m.symptom!r}")
    assert not problems, "\n".join(problems)


def test_every_kernel_has_planted_bugs():
    kernels = {p.name for p in IDIOMS3.glob("*.cu")}
    planted = {m.kernel for m in MUTATIONS}
    assert len(kernels) >= 5 and kernels == planted, (sorted(kernels), sorted(planted))
    per_kernel = {k: sum(m.kernel == k for m in MUTATIONS) for k in kernels}
    assert all(4 <= n <= 6 for n in per_kernel.values()), per_kernel


@pytest.mark.parametrize("mutation", [_param(m) for m in MUTATIONS if not m.problem])
def test_new_idiom_planted_bug(mutation, tmp_path):
    res = evaluate.check_mutation(IDIOMS3, mutation, tmp_path)
    codes = {f.code for f in res.findings}
    missed = [r for r in mutation.rules if r not in codes]
    report = [f"{f.code} line {f.location.row}: {f.message}" for f in res.findings]
    assert not missed, f"{mutation.id}: {', '.join(missed)} did not fire ({mutation.description})\nfindings: " + (
        "\n  ".join(report) or "none"
    )
