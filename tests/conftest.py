import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_RESULTS = []


def tk_root() -> Path | None:
    """A ThunderKittens checkout for tests that need the real headers (never committed)."""
    cand = os.environ.get("TK_ROOT")
    for p in ([Path(cand)] if cand else []) + [ROOT / "third_party" / "ThunderKittens"]:
        if (p / "include" / "kittens.cuh").exists():
            return p
    return None


@pytest.fixture
def tk_include():
    r = tk_root()
    if r is None:
        pytest.skip("no ThunderKittens checkout (set TK_ROOT or put one in third_party/ThunderKittens)")
    return str(r / "include")


def pytest_terminal_summary(terminalreporter):
    if FIXTURE_RESULTS:
        from tkcheck.expectations import table
        terminalreporter.write_sep("-", "fixtures: per-rule TP / FP / FN")
        terminalreporter.write_line(table(FIXTURE_RESULTS))
