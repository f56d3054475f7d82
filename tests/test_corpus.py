"""The corpus: clean kernels give no finding; each planted bug is found by its rule(s).

Mutations whose rules are not all in the registry yet are skipped with the
missing rule ids, so the suite grows by itself as rules land. The same
functions compute `tkcheck eval`'s table (tkcheck/evaluate.py).
"""

from __future__ import annotations

import pytest

from tkcheck import evaluate

from conftest import CORPUS

CLEAN = evaluate.clean_kernels(CORPUS)
MUTATIONS = evaluate.load_mutations(CORPUS)
KNOWN = evaluate.all_codes()


def _param(m: evaluate.Mutation):
    missing = [r for r in m.rules if r not in KNOWN]
    marks = [pytest.mark.skip(reason=f"rule(s) not in the registry yet: {', '.join(missing)}")] if missing else []
    if m.known_miss:
        # recorded in the spec (and counted as missed by `tkcheck eval`); strict, so
        # the spec must be updated the day the bug is found
        marks.append(pytest.mark.xfail(reason=f"known miss: {m.known_miss}", strict=True))
    return pytest.param(m, id=m.id, marks=marks)


def test_corpus_is_there():
    assert CLEAN, "no corpus kernels"
    assert MUTATIONS, "no mutation specs"


def test_specs_are_well_formed():
    problems = [m.problem for m in MUTATIONS if m.problem]
    for m in MUTATIONS:
        if not m.problem:
            try:
                evaluate.mutated_text(CORPUS, m)
            except ValueError as e:
                problems.append(str(e))
    assert not problems, "\n".join(problems)


# Clean kernels on which tkcheck still makes a false finding, recorded (not hidden) with its cause;
# a strict xfail, so the entry must go the day the engine is fixed.
KNOWN_FALSE: dict[str, str] = {}


def _clean_param(p):
    rel = p.relative_to(CORPUS).as_posix()
    marks = (
        [pytest.mark.xfail(reason=f"known false finding: {KNOWN_FALSE[rel]}", strict=True)]
        if rel in KNOWN_FALSE
        else []
    )
    return pytest.param(p, id=rel, marks=marks)


@pytest.mark.parametrize("kernel", [_clean_param(p) for p in CLEAN])
def test_clean_kernel_has_no_findings(kernel, corpus_checks):
    res = corpus_checks.clean(kernel)
    found = [f"{f.code} line {f.location.row}: {f.message}" for f in res.findings]
    assert not found, "false findings on a correct kernel:\n" + "\n".join(found)
    assert not res.internal_errors, res.internal_errors


@pytest.mark.parametrize("mutation", [_param(m) for m in MUTATIONS if not m.problem])
def test_planted_bug_is_found(mutation, corpus_checks):
    try:
        res = corpus_checks.mutation(mutation)
    except ValueError as e:
        pytest.fail(str(e))
    codes = {f.code for f in res.findings}
    missed = [r for r in mutation.rules if r not in codes]
    report = [f"{f.code} line {f.location.row}: {f.message}" for f in res.findings]
    assert not missed, (
        f"{mutation.id}: {', '.join(missed)} did not fire ({mutation.description})\n"
        "findings: " + ("\n  ".join(report) or "none") + "\n" + "\n".join(res.notes[-3:])
    )
