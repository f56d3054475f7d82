import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The cache's per-user key (tkcheck/cache_io.py) goes under $XDG_CACHE_HOME: never the real home
# folder in tests (subprocesses inherit it).
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="tkcheck-test-cache-home-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FIXTURE_RESULTS = []


class CorpusChecks:
    """The corpus checked once per test run: each clean kernel, fixture file and mutation on
    first use.

    tests/test_corpus.py and tests/test_triage.py ask for the same planted bugs, and
    test_corpus, test_adoption and test_trace_svg for the same files; the results
    (engine FileResults) are shared, so tests read them and never change them (a test that sets
    verdicts checks its own copy). A mutation that cannot be applied raises its ValueError on
    every ask.
    """

    def __init__(self, workdir: Path):
        from tkcheck import evaluate

        self._evaluate = evaluate
        self.workdir = workdir
        self.mutations = evaluate.load_mutations(CORPUS)
        self._clean: dict[Path, object] = {}
        self._mutants: dict[str, object] = {}

    def clean(self, kernel: Path):
        """A corpus kernel or fixture file as is, checked with the evaluation's options."""
        kernel = Path(kernel).resolve()
        if kernel not in self._clean:
            self._clean[kernel] = self._evaluate.check_clean(kernel)
        return self._clean[kernel]

    def mutation(self, m):
        if m.id not in self._mutants:
            try:
                self._mutants[m.id] = self._evaluate.check_mutation(CORPUS, m, self.workdir)
            except ValueError as e:
                self._mutants[m.id] = e
        got = self._mutants[m.id]
        if isinstance(got, ValueError):
            raise got
        return got


@pytest.fixture(scope="session")
def corpus_checks(tmp_path_factory) -> CorpusChecks:
    return CorpusChecks(tmp_path_factory.mktemp("mutants"))


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
