"""Rule selection: codes, prefixes, names, ALL; specificity; per-file ignores."""

from __future__ import annotations

import pathlib

import pytest

from tkcheck.selection import RuleSelector

NAMES = {
    "TK000": "invalid-input",
    "TK001": "unused-suppression",
    "TK301": "expect-tx-mismatch",
    "TK302": "parity-mismatch",
    "TK310": "arrive-count",
    "TK401": "scope-too-narrow",
    "TK501": "role-deadlock",
}
CODES = set(NAMES)


def resolve(selector: str) -> set[str]:
    """The registry's selection language over a fixed catalog (rules/ is not needed)."""
    s = selector.strip()
    if s.upper() == "ALL":
        return set(CODES)
    hits = {c for c, n in NAMES.items() if c.upper().startswith(s.upper()) or n == s}
    if not hits:
        raise KeyError(s)
    return hits


def sel(**kw) -> RuleSelector:
    kw.setdefault("known_codes", CODES)
    return RuleSelector(resolver=resolve, **kw)


def test_default_selects_all():
    s = sel()
    assert s.selected == CODES
    assert all(s.enabled(c, "k.cu") for c in CODES)
    # known_codes defaults to what ALL resolves to.
    assert RuleSelector(resolver=resolve).selected == CODES


def test_codes_prefixes_names():
    assert sel(select=["TK3"]).selected == {"TK301", "TK302", "TK310"}
    assert sel(select=["expect-tx-mismatch", "TK5"]).selected == {"TK301", "TK501"}
    assert sel(select=["tk30"]).selected == {"TK301", "TK302"}
    assert sel(select=[]).selected == set()
    assert sel(select=["TK3"], extend_select=["TK401"]).selected == {"TK301", "TK302", "TK310", "TK401"}


def test_more_specific_selector_wins():
    s = sel(select=["TK3"], ignore=["TK30"], extend_select=["TK301"])
    assert s.selected == {"TK301", "TK310"}
    s = sel(select=["TK301"], ignore=["TK3"])
    assert s.selected == {"TK301"}
    s = sel(select=["ALL"], ignore=["parity-mismatch"])
    assert "TK302" not in s.selected and "TK301" in s.selected
    # Equal specificity: ignore wins.
    assert sel(select=["TK301"], ignore=["TK301"]).selected == set()
    assert sel(ignore=["ALL"]).selected == set()


def test_tool_rules_are_selectable_like_others():
    assert not sel(ignore=["TK001"]).enabled("TK001")
    assert sel(select=["TK0"]).selected == {"TK000", "TK001"}


def test_per_file_ignores(tmp_path):
    s = sel(per_file_ignores={"tests/*.cu": ["TK301"], "*_legacy.cu": ["TK4", "role-deadlock"]}, root=tmp_path)
    assert not s.enabled("TK301", str(tmp_path / "tests" / "a.cu"))
    assert s.enabled("TK301", str(tmp_path / "kernels" / "a.cu"))
    # Globs match the base name too, and `*` crosses folders (as in ruff).
    assert not s.enabled("TK401", str(tmp_path / "deep" / "x_legacy.cu"))
    assert not s.enabled("TK501", "x_legacy.cu")
    assert s.enabled("TK301", "x_legacy.cu")
    assert s.enabled_codes(str(tmp_path / "deep" / "x_legacy.cu")) == CODES - {"TK401", "TK501"}
    assert s.enabled_codes() == CODES
    # Pairs (as Config stores them) work as well as a mapping.
    pairs = sel(per_file_ignores=(("tests/*.cu", ("TK3",)),), root=tmp_path)
    assert pairs.ignored_for(str(tmp_path / "tests" / "b.cu")) == {"TK301", "TK302", "TK310"}


def test_relative_filenames_resolve_against_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = sel(per_file_ignores={"kernels/*.cu": ["TK5"]}, root=pathlib.Path("."))
    assert not s.enabled("TK501", "kernels/a.cu")
    assert s.enabled("TK501", "other/a.cu")


@pytest.mark.parametrize(
    "kw, where",
    [
        ({"select": ["TK9"]}, "select"),
        ({"ignore": ["nope"]}, "ignore"),
        ({"extend_select": ["TK30X"]}, "extend-select"),
        ({"per_file_ignores": {"a/*.cu": ["TK8"]}}, "per-file-ignores\\['a/\\*.cu'\\]"),
    ],
)
def test_unknown_selectors_are_value_errors(kw, where):
    with pytest.raises(ValueError, match=f"unknown rule selector '.*' in {where}: expected a code"):
        sel(**kw)
