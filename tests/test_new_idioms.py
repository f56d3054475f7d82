"""The new-idiom kernels of issue 25 (corpus/idioms2/ .. idioms15/): their planted bugs,
scored apart from the gating corpus set.

Each set is kernels in shapes none of our other files had, with bugs planted and run on a GPU
before tkcheck was scored on them. `tkcheck eval corpus/<set>` gives a set's table. Here every spec
must apply, name known rules and say what the GPU did; each planted bug tkcheck finds must stay
found with its rule, and each `known_miss` is a strict xfail: the day a model change finds it, this
test fails until the spec drops the key (and docs/BENCHMARKS.md's section on the set gains the new
number). The clean kernels are checked with the rest of the corpus (tests/test_corpus.py).
"""

from __future__ import annotations

import pytest

from tkcheck import evaluate

from conftest import CORPUS

# set -> (the GPUs its outcomes were observed on, the fewest and most bugs planted in one kernel)
SETS = {
    "idioms2": (("H200",), (4, 7)),
    "idioms3": (("H100", "H200"), (4, 6)),
    "idioms4": (("H100", "H200"), (4, 6)),
    "idioms5": (("H100",), (5, 6)),
    "idioms6": (("H100",), (5, 6)),
    "idioms7": (("H100",), (6, 6)),
    "idioms8": (("H100",), (6, 6)),
    "idioms9": (("H100",), (5, 6)),
    "idioms10": (("H100",), (5, 6)),
    "idioms11": (("H100",), (6, 6)),
    "idioms12": (("H100",), (4, 6)),
    "idioms13": (("H100", "H200"), (5, 6)),
    "idioms14": (("H100", "H200"), (5, 6)),
    "idioms15": (("H100", "H200"), (6, 6)),
}
MUTATIONS = {name: evaluate.load_mutations(CORPUS / name) for name in SETS}
KNOWN = evaluate.all_codes()
SYMPTOMS = ("hang", "nan", "stripes", "wrong", "slow")


def _param(name: str, m: evaluate.Mutation):
    marks = []
    if m.known_miss:
        marks.append(pytest.mark.xfail(reason=f"known miss: {m.known_miss}", strict=True))
    return pytest.param(name, m, id=f"{name}:{m.id}", marks=marks)


@pytest.mark.parametrize("name", sorted(SETS))
def test_specs_apply_and_name_known_rules(name):
    folder, muts = CORPUS / name, MUTATIONS[name]
    gpus, _ = SETS[name]
    assert len(muts) >= 20, "a set plants 4-7 bugs in each of five kernels"
    problems = [m.problem for m in muts if m.problem]
    for m in muts:
        if m.problem:
            continue
        try:
            evaluate.mutated_text(folder, m)
        except ValueError as e:
            problems.append(str(e))
        problems += [f"{m.id}: unknown rule {r}" for r in m.rules if r not in KNOWN]
        if gpus and not any(f"observed on {g}:" in m.description for g in gpus):
            problems.append(f"{m.id}: the description must end with what the GPU did")
        if not gpus and "not yet run on a GPU" not in m.description:
            problems.append(f"{m.id}: the description must say that the set has not run on a GPU yet")
        if m.symptom not in SYMPTOMS:
            problems.append(f"{m.id}: symptom {m.symptom!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_kernel_has_planted_bugs(name):
    _, (least, most) = SETS[name]
    kernels = {p.name for p in (CORPUS / name).glob("*.cu")}
    planted = {m.kernel for m in MUTATIONS[name]}
    assert len(kernels) >= 5 and kernels == planted, (sorted(kernels), sorted(planted))
    per_kernel = {k: sum(m.kernel == k for m in MUTATIONS[name]) for k in kernels}
    assert all(least <= n <= most for n in per_kernel.values()), per_kernel


@pytest.mark.parametrize(
    "name,mutation", [_param(name, m) for name in sorted(SETS) for m in MUTATIONS[name] if not m.problem]
)
def test_new_idiom_planted_bug(name, mutation, tmp_path):
    res = evaluate.check_mutation(CORPUS / name, mutation, tmp_path)
    codes = {f.code for f in res.findings}
    missed = [r for r in mutation.rules if r not in codes]
    report = [f"{f.code} line {f.location.row}: {f.message}" for f in res.findings]
    assert not missed, f"{mutation.id}: {', '.join(missed)} did not fire ({mutation.description})\nfindings: " + (
        "\n  ".join(report) or "none"
    )
