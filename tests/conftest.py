import atexit
import hashlib
import json
import os
import pickle
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

# The cache's per-user key (tkcheck/cache_io.py) goes under $XDG_CACHE_HOME: never the real home
# folder in tests (subprocesses inherit it).
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="tkcheck-test-cache-home-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FIXTURE_RESULTS = []
MEMO_STATS = {"asked": 0, "made": 0}  # checks asked of the memo, and made (summed over the workers)
CPU_BY_FILE: dict[str, list[float]] = {}  # --cpu-by-file: test file -> [tests, own CPU s, subprocesses' CPU s]

try:
    import fcntl
except ImportError:  # no flock (Windows): each worker keeps its own memo
    fcntl = None


def pytest_addoption(parser):
    parser.addoption(
        "--check-memo",
        choices=("shared", "worker"),
        default=os.environ.get("TKCHECK_TEST_MEMO", "shared"),
        help="with pytest-xdist: one memo of checks for all workers (files under the session's "
        "temporary folder, a lock per check) or one per worker (default: shared; env TKCHECK_TEST_MEMO)",
    )
    parser.addoption(
        "--cpu-by-file",
        action="store_true",
        help="print the CPU time (user + sys) each test file took, its subprocesses apart, summed over "
        "the xdist workers (issue 29: on a shared machine CPU time, not wall time, says where the time goes)",
    )
    parser.addoption(
        "--cpu-by-test",
        metavar="FILE",
        default=None,
        help="append one line per test to FILE as it ends: own CPU s, subprocesses' CPU s, node id "
        "(tab-separated; every xdist worker appends, so a run stopped early still says where its CPU went)",
    )


def _cpu() -> tuple[float, float]:
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """--cpu-by-file: a test's setup, call and teardown (a session fixture's first build counts
    to the test that asks first; a subprocess counts once it has been waited for)."""
    by_test = item.config.getoption("cpu_by_test")
    if not item.config.getoption("cpu_by_file") and not by_test:
        yield
        return
    own0, kids0 = _cpu()
    yield
    own1, kids1 = _cpu()
    row = CPU_BY_FILE.setdefault(item.nodeid.split("::", 1)[0], [0, 0.0, 0.0])
    row[0] += 1
    row[1] += own1 - own0
    row[2] += kids1 - kids0
    if by_test:
        with open(by_test, "a", encoding="utf-8") as out:  # one short line per write: appends do not interleave
            out.write(f"{own1 - own0:.3f}\t{kids1 - kids0:.3f}\t{item.nodeid}\n")


def _options_key(opts) -> str:
    """CheckOptions as canonical JSON: sets sorted (a frozenset's order changes between
    processes), and a field of a type not known here is an error, not a silent repr."""

    def default(o):
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        raise TypeError(f"check memo: cannot key an option of type {type(o).__name__}")

    return json.dumps(asdict(opts), sort_keys=True, default=default)


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class CorpusChecks:
    """The session-wide memo of checks: every sweep over the corpus, the fixtures and the planted
    bugs asks it, so each (file, options) pair is checked once per test run.

    Keyed by the file's absolute path (findings carry it), its bytes and the whole CheckOptions
    (the rules enabled, the parse options, the solver budget, ...). A hit is kept only while the
    files the parse read besides the main one (FileResult.dependencies) have the stamps they had
    when it was checked. The results (engine FileResults) are shared: tests read them and never
    change them (a test that sets verdicts checks its own copy).

    Under pytest-xdist the memo is shared by the workers (`--check-memo shared`, the default): a
    check is a pickle under the session's temporary folder, made by the first worker that asks
    while the others wait on its lock (flock: released if that worker dies), and mutants are
    written to one folder so that their paths, and so their keys, agree between workers. With
    `--check-memo worker` each worker checks what its own tests ask for.
    """

    def __init__(self, workdir: Path, shared: Path | None = None):
        from tkcheck import evaluate

        self._evaluate = evaluate
        self.workdir = workdir
        self.shared = shared
        self.mutations = evaluate.load_mutations(CORPUS)
        self._memo: dict[str, tuple[object, list]] = {}

    # ------------------------------------------------------------ the memo

    def check(self, path, opts, text: str | None = None, parsed=None):
        """`check_file(path, opts, text)`, once per session for each (path, bytes, options).

        `parsed`: the caller's `engine.parse_for_check(path, text, opts)`, used when the check
        must be made here (the engine holds a check on a handed parse to a fresh one's answer,
        tests/test_solver_budget.py holds it to that), so the file is not parsed twice."""
        from tkcheck.engine import check_file

        path = str(Path(path).resolve())
        if text is None:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        h = hashlib.sha256()
        for part in (path, text, _options_key(opts)):
            h.update(part.encode("utf-8", errors="surrogateescape") + b"\0")
        key = h.hexdigest()
        MEMO_STATS["asked"] += 1
        got = self._memo.get(key)
        if got is not None and all(_stamp(d) == s for d, s in got[1]):
            return got[0]
        with self._lock(key) as entry:
            res = None
            if entry is not None and entry.is_file():
                res, stamps = pickle.loads(entry.read_bytes())
                if not all(_stamp(d) == s for d, s in stamps):
                    res = None
            if res is None:
                res = check_file(path, opts, text=text, parsed=parsed)
                MEMO_STATS["made"] += 1
                stamps = [(d, _stamp(d)) for d in res.dependencies]
                if entry is not None:
                    tmp = entry.with_name(f"{entry.name}.{os.getpid()}")
                    tmp.write_bytes(pickle.dumps((res, stamps)))
                    os.replace(tmp, entry)
        self._memo[key] = (res, stamps)
        return res

    @contextmanager
    def _lock(self, key: str):
        if self.shared is None or fcntl is None:
            yield None
            return
        self.shared.mkdir(parents=True, exist_ok=True)
        with open(self.shared / f"{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released on close, or when this process dies
            try:
                yield self.shared / f"{key}.pickle"
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # ------------------------------------------------------------ what the sweeps ask for

    def clean(self, kernel: Path):
        """A corpus kernel (or any file) as is, checked with the evaluation's options."""
        kernel = Path(kernel).resolve()
        return self.check(kernel, self._evaluate.options(arch=self._evaluate.kernel_arch(kernel)))

    def file_options(self, path: Path):
        """The options a file is swept with: a corpus kernel with the evaluation's options (every
        rule), a fixture with its own settings (arch, TK version and its `select=`, every rule
        when it selects none), the options `fixture(path)` checks it with.

        Issue 29, round 13: a fixture that selects its rules was checked twice, with its
        selection (test_fixtures) and with every rule (the budget, trace and finding-text
        sweeps); the second check was ~20% of the suite's CPU, nearly all of it the few costly
        fixtures, whose costly rule is the one they select. Each rule keeps every sweep on the
        fixtures written for it; the corpus kernels and planted bugs keep every rule."""
        from tkcheck.expectations import options_for, parse_fixture

        path = Path(path).resolve()
        if (ROOT / "fixtures") in path.parents:
            text = path.read_text(encoding="utf-8", errors="replace")
            return options_for(parse_fixture(text)[0])
        return self._evaluate.options(arch=self._evaluate.kernel_arch(path))

    def swept(self, path: Path):
        """The file checked with `file_options` (what the sweeps over every finding read): for a
        fixture the check `fixture(path)` reads, for a corpus kernel `clean(path)`'s."""
        return self.check(path, self.file_options(path))

    def fixture(self, path: Path):
        """The fixture held to its `// expect:` comments (its own selection), checked once: the
        check `swept(path)` reads too."""
        from tkcheck.expectations import run_fixture

        return run_fixture(path, check=self.check)

    def mutation_input(self, m):
        """(path, text, options) of a planted bug as `tkcheck eval` checks it."""
        return self._evaluate.mutation_input(CORPUS, m, self.workdir)

    def mutation(self, m):
        """A planted bug checked; a mutation that cannot be applied raises its ValueError on every ask."""
        path, text, opts = self.mutation_input(m)
        return self.check(path, opts, text)


@pytest.fixture(scope="session")
def corpus_checks(tmp_path_factory, request) -> CorpusChecks:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and request.config.getoption("check_memo") == "shared" and fcntl is not None:
        # the workers' temporary folders sit in the session's: the memo and the mutants go there
        root = tmp_path_factory.getbasetemp().parent
        return CorpusChecks(root / "mutants", shared=root / "checks")
    return CorpusChecks(tmp_path_factory.mktemp("mutants"))


@dataclass
class CliRun:
    """What a `tkcheck` run answered, as `subprocess.run` names it."""

    returncode: int
    stdout: str
    stderr: str


def cli(args, cwd: Path, input: str | None = None) -> CliRun:
    """`tkcheck ARGS` run in this process from `cwd` (click's CliRunner; the CLI still checks each
    file in a forked child, as a subprocess would): the same answer as `python -m tkcheck ARGS`
    without a Python start and the imports per run (issue 29). Tests of the process itself (the
    entry point, PYTHONSAFEPATH, limits, signals, hostile environments) run the subprocess."""
    from click.testing import CliRunner

    from tkcheck.cli.cli import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(main, [str(a) for a in args], input=input, env={"NO_COLOR": "1"}, catch_exceptions=False)
    finally:
        os.chdir(old)
    return CliRun(r.exit_code, r.stdout, r.stderr)


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


# ---------------------------------------------------------------- the order the checks are made in

# The budget sweep's cases run first: a case parses its file once for its tiny budgets and hands
# that parse to the memo when it is the first to ask for the default check (`CorpusChecks.check`'s
# `parsed`). Run after test_corpus.py / test_fixtures.py had made that check, as the file order
# had it, the sweep parsed every file a second time (issue 29, round 15).
FIRST = ("test_solver_budget.py", "test_a_spent_budget_never_adds_a_finding")


def pytest_collection_modifyitems(session, config, items):
    """The sweep's cases ahead of every other test, each group in its collected order (a stable
    sort: every xdist worker computes the same order from the same collection)."""
    items.sort(key=lambda item: (item.path.name, getattr(item, "originalname", None)) != FIRST)


# ---------------------------------------------------------------- the fixture table, with xdist too


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its fixtures' results go to the controller
        workeroutput["tkcheck_fixture_results"] = pickle.dumps(FIXTURE_RESULTS)
        workeroutput["tkcheck_memo_stats"] = dict(MEMO_STATS)
        workeroutput["tkcheck_cpu_by_file"] = dict(CPU_BY_FILE)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a worker is done
def pytest_testnodedown(node, error):
    out = getattr(node, "workeroutput", {})
    if out.get("tkcheck_fixture_results"):
        FIXTURE_RESULTS.extend(pickle.loads(out["tkcheck_fixture_results"]))
    for k, v in out.get("tkcheck_memo_stats", {}).items():
        MEMO_STATS[k] += v
    for f, row in out.get("tkcheck_cpu_by_file", {}).items():
        mine = CPU_BY_FILE.setdefault(f, [0, 0.0, 0.0])
        for i, v in enumerate(row):
            mine[i] += v


def pytest_terminal_summary(terminalreporter):
    if MEMO_STATS["asked"]:
        terminalreporter.write_line(
            f"check memo: {MEMO_STATS['asked']} checks asked, {MEMO_STATS['made']} made "
            f"(tests/conftest.py; with xdist: summed over the workers)"
        )
    if CPU_BY_FILE:
        terminalreporter.write_sep("-", "CPU time per test file (user + sys, s; --cpu-by-file)")
        rows = sorted(CPU_BY_FILE.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))
        terminalreporter.write_line(f"{'file':48} {'tests':>6} {'own':>8} {'subproc':>8} {'total':>8}")
        for f, (n, own, kids) in rows:
            terminalreporter.write_line(f"{f:48} {int(n):6d} {own:8.1f} {kids:8.1f} {own + kids:8.1f}")
        n, own, kids = (sum(r[i] for _, r in rows) for i in range(3))
        terminalreporter.write_line(f"{'all':48} {int(n):6d} {own:8.1f} {kids:8.1f} {own + kids:8.1f}")
    if FIXTURE_RESULTS:
        from tkcheck.expectations import table

        terminalreporter.write_sep("-", "fixtures: per-rule TP / FP / FN")
        terminalreporter.write_line(table(sorted(FIXTURE_RESULTS, key=lambda r: r.path)))
