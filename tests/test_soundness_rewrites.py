"""Soundness as a test: rewriting a correct kernel in ways that keep it correct never makes a finding.

The clean corpus kernels (and the fixtures that expect no finding) are rewritten by the seeded
generator of `rewrites.py` -- variables renamed, independent statements reordered, parities
written another way, loops split or annotated, code moved into lambdas and helpers, the ring
depth changed -- and checked again: no finding may appear, and nothing may fail inside tkcheck.
Every rewrite is tried alone on every kernel it applies to, then a few random combinations;
the seeds are fixed, so a failure reproduces (the message names the rewrites and the seed).
"""

from __future__ import annotations

import random
import zlib

import pytest

from tkcheck import evaluate
from tkcheck.engine import check_file

import rewrites
from conftest import ROOT

SEED = 20251201
COMBOS_PER_KERNEL = 1
REWRITES_PER_COMBO = 3

CORPUS = sorted(evaluate.clean_kernels(ROOT / "corpus"))
CLEAN_FIXTURES = sorted(
    p
    for p in (ROOT / "fixtures").rglob("*.cu")
    if "// expect:" not in p.read_text() and "expect@" not in p.read_text() and "expect-todo" not in p.read_text()
)
KERNELS = CORPUS + CLEAN_FIXTURES


def _findings(path, text):
    return check_file(str(path), evaluate.options(arch=evaluate.kernel_arch(path)), text=text)


def _original(path, corpus_checks):
    res = corpus_checks.check(path, evaluate.options(arch=evaluate.kernel_arch(path)), path.read_text())
    return {(f.code, f.kernel) for f in res.findings}


def _rng(*parts) -> random.Random:
    return random.Random(zlib.crc32("/".join(map(str, parts)).encode()) ^ SEED)


def _cases():
    # every rewrite alone on every corpus kernel it applies to; random combinations on the
    # corpus kernels and the clean fixtures
    for path in KERNELS:
        text = path.read_text()
        rel = path.relative_to(ROOT).as_posix()
        if path in CORPUS:
            for name in sorted(rewrites.ALL):
                if rewrites.ALL[name](text, _rng(rel, name)) is not None:
                    yield pytest.param(path, (name,), 0, id=f"{rel}:{name}")
        for i in range(COMBOS_PER_KERNEL):
            if rewrites.rewrite(text, _rng(rel, "combo", i), REWRITES_PER_COMBO)[1]:
                yield pytest.param(path, None, i, id=f"{rel}:combo{i}")


def test_there_is_something_to_rewrite():
    assert CORPUS, "no corpus kernels"
    applicable = {n for p in CORPUS for n, f in rewrites.ALL.items() if f(p.read_text(), _rng(p, n)) is not None}
    assert applicable == set(rewrites.ALL), f"rewrites never applicable on the corpus: {set(rewrites.ALL) - applicable}"


@pytest.mark.parametrize("path,names,combo", list(_cases()))
def test_rewrite_keeps_kernel_clean(path, names, combo, corpus_checks):
    text = path.read_text()
    rel = path.relative_to(ROOT).as_posix()
    base = _original(path, corpus_checks)
    if names is not None:
        rng = _rng(rel, names[0])
        new = rewrites.ALL[names[0]](text, rng)
        applied = list(names)
    else:
        rng = _rng(rel, "combo", combo)
        new, applied = rewrites.rewrite(text, rng, REWRITES_PER_COMBO)
    assert new is not None and new != text, f"{applied} did not change {rel}"
    after = _findings(path, new)
    assert not after.internal_errors, f"{rel} after {applied}: {after.internal_errors}"
    extra = [f for f in after.findings if (f.code, f.kernel) not in base]
    assert not extra, (
        f"{rel} rewritten by {applied} (seed {SEED}) gets findings the original does not make:\n"
        + "\n".join(f"{f.code} line {f.location.row}: {f.message}" for f in extra)
    )
