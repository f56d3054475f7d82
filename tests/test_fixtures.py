"""Every fixture's inline expectations hold: no unexpected finding, no miss."""
from pathlib import Path

import pytest

from tkcheck.fixtures import run_fixture

from conftest import FIXTURE_RESULTS, ROOT

FIXTURES = sorted((ROOT / "fixtures").rglob("*.cu"))


def test_fixtures_exist():
    assert len(FIXTURES) >= 10, "the fixture suite went missing"


@pytest.mark.parametrize("path", FIXTURES, ids=[str(p.relative_to(ROOT / "fixtures")) for p in FIXTURES])
def test_fixture(path: Path):
    res = run_fixture(path)
    FIXTURE_RESULTS.append(res)
    problems = []
    for e in res.missing:
        problems.append(f"missing {e.code} at line {e.row}" + (f" with {e.texts}" if e.texts else ""))
    for f in res.unexpected:
        problems.append(f"unexpected {f.code} at line {f.location.row}: {f.message}")
    for f in res.forbidden:
        problems.append(f"forbidden {f.code} at line {f.location.row}: {f.message}")
    assert not problems, "\n".join(problems + [f"note: {n}" for n in res.notes[-3:]])
