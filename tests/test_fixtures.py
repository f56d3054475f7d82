"""Every fixture's inline expectations hold: no unexpected finding, no miss; and the syntax itself."""

from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file
from tkcheck.expectations import Expectation, parse_fixture, run_fixture, update_expectations

from conftest import FIXTURE_RESULTS, ROOT

FIXTURES = sorted((ROOT / "fixtures").rglob("*.cu"))


def test_fixtures_exist():
    assert len(FIXTURES) >= 10, "the fixture suite went missing"


@pytest.mark.parametrize("path", FIXTURES, ids=[str(p.relative_to(ROOT / "fixtures")) for p in FIXTURES])
def test_fixture(path: Path, corpus_checks):
    res = corpus_checks.fixture(path)
    FIXTURE_RESULTS.append(res)
    problems = []
    for e in res.missing:
        problems.append(f"missing {e.describe()}")
        problems += [f"  (there: {f.message})" for f in res.near_misses(e)]
    for f in res.unexpected:
        problems.append(f"unexpected {f.code} at line {f.location.row}: {f.message}")
    for f in res.forbidden:
        problems.append(f"forbidden {f.code} at line {f.location.row}: {f.message}")
    assert not problems, "\n".join(problems + [f"note: {n}" for n in res.notes[-3:]])


# ---------------------------------------------------------------- the `// expect:` syntax


def test_parse_codes_lines_and_fragments():
    text = "\n".join(
        [
            "// tkcheck-test: select=TK3 arch=sm_100a",
            'a();  // expect: TK301 "expects 40960 bytes"',
            "b();  // expect: TK302, TK303 {{per phase}} \"on 'bar'\"",
            r'c();  // expect: TK301 "say \"hi\" \\ there" // expect-not: TK303',
            "// expect@+2: TK501",
            "d();  // expect-todo: TK404   (a known miss: \"not a fragment\" after prose)",
            "e();",
        ]
    )
    settings, exps = parse_fixture(text)
    assert settings == {"select": "TK3", "arch": "sm_100a"}
    assert exps == [
        Expectation("expect", "TK301", 2, ("expects 40960 bytes",)),
        Expectation("expect", "TK302", 3, ("per phase", "on 'bar'")),
        Expectation("expect", "TK303", 3, ("per phase", "on 'bar'")),
        Expectation("expect", "TK301", 4, ('say "hi" \\ there',)),
        Expectation("expect-not", "TK303", 4),
        Expectation("expect", "TK501", 7),
        Expectation("expect-todo", "TK404", 6),
    ]
    assert exps[3].spelled() == r'TK301 "say \"hi\" \\ there"'
    assert parse_fixture(f"x();  // expect: {exps[3].spelled()}")[1][0].texts == exps[3].texts


def _bad_example(tmp_path: Path):
    """TK301's documented bad example as a fixture, with its one finding."""
    text = "// tkcheck-test: select=TK301\n" + registry.get("TK301").bad_example
    path = tmp_path / "k.cu"
    path.write_text(text)
    (f,) = check_file(str(path), CheckOptions(enabled=frozenset({"TK301"}))).findings
    return path, text.splitlines(), f


def _with_comment(path: Path, lines: list[str], row: int, comment: str) -> Path:
    out = list(lines)
    out[row - 1] += "  " + comment
    path.write_text("\n".join(out) + "\n")
    return path


def test_fragment_pins_the_message(tmp_path):
    path, lines, f = _bad_example(tmp_path)
    words = f.message.split()
    fragment = " ".join(words[1:4])
    res = run_fixture(_with_comment(path, lines, f.location.row, f'// expect: TK301 "{fragment}"'))
    assert res.ok and len(res.matched) == 1
    res = run_fixture(_with_comment(path, lines, f.location.row, '// expect: TK301 "bytes that no message says"'))
    assert not res.ok and res.missing and res.unexpected == [res.near_misses(res.missing[0])[0]]
    res = run_fixture(_with_comment(path, lines, f.location.row - 1, f'// expect: TK301 "{fragment}"'))
    assert not res.ok and res.missing and res.near_misses(res.missing[0]) == []


def test_update_expectations_keeps_fragments_that_still_match(tmp_path):
    path, lines, f = _bad_example(tmp_path)
    fragment = " ".join(f.message.split()[1:4])
    _with_comment(path, lines, f.location.row, f'// expect: TK301 "{fragment}"')
    assert update_expectations(path) is False  # already what tkcheck says
    _with_comment(path, lines, f.location.row, '// expect: TK301 "not said any more"')
    assert update_expectations(path) is True
    assert path.read_text().splitlines()[f.location.row - 1].endswith("// expect: TK301")
