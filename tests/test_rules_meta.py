"""One metadata test over the whole catalog: ids, names, docs, and examples.

Every rule's bad example must fire exactly that rule, and its good example
must be clean (the documentation's examples are tests)."""

import re
import tempfile
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file
from tkcheck.rule import CONTRACTS, PRECISIONS, REQUIRED_DOC_SECTIONS, SEVERITIES, SYMPTOMS

RULES = registry.all_rules()
ALL = frozenset(r.code for r in RULES)


def test_catalog_not_empty_and_unique():
    assert len(RULES) >= 6
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_metadata(rule):
    assert re.fullmatch(r"TK\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.contract in CONTRACTS
    assert rule.severity in SEVERITIES
    assert rule.precision in PRECISIONS
    assert all(s in SYMPTOMS for s in rule.symptoms)
    for section in REQUIRED_DOC_SECTIONS:
        assert section in rule.doc, f"{rule.code} doc lacks {section!r}"
    if not rule.engine_only:
        assert rule.check is not None
        assert rule.bad_example and rule.good_example, f"{rule.code} needs a bad and a good example"


def _run(src: str, name: str):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"{name}.cu"
        p.write_text(src)
        return check_file(str(p), CheckOptions(enabled=ALL))


EXAMPLES = [r for r in RULES if r.bad_example]


@pytest.mark.parametrize("rule", EXAMPLES, ids=[r.code for r in EXAMPLES])
def test_bad_example_fires_exactly_this_rule(rule):
    res = _run(rule.bad_example, "bad")
    codes = sorted({f.code for f in res.findings})
    assert codes == [rule.code], [(f.code, f.location.row, f.message) for f in res.findings] + res.notes


@pytest.mark.parametrize("rule", EXAMPLES, ids=[r.code for r in EXAMPLES])
def test_good_example_is_clean(rule):
    res = _run(rule.good_example, "good")
    assert res.findings == [], [(f.code, f.location.row, f.message) for f in res.findings] + res.notes


def test_rule_docs_page_lists_every_rule():
    """docs/rules.md is generated from the catalog (scripts/gen_rule_docs.py)."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text()
    missing = [r.code for r in RULES if f"## {r.code}" not in page]
    assert not missing, f"docs/rules.md is stale: run scripts/gen_rule_docs.py (missing {missing})"
