"""Discovers the rule catalog (`rules/`, installed as `tkcheck.rules`).

Every module in the package that defines `RULE` contributes one rule. Lookups by
code, name and prefix, and the selection language (`TK3`, `ALL`, names), all
come from here so the CLI, SARIF and docs agree.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .rule import Rule


@lru_cache(maxsize=1)
def _load() -> tuple[Rule, ...]:
    from . import rules as pkg  # type: ignore[attr-defined]  # rules/, mapped in at build time

    found: list[Rule] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        rule = getattr(mod, "RULE", None)
        if isinstance(rule, Rule):
            found.append(rule)
    found.sort(key=lambda r: r.code)
    return tuple(found)


def all_rules() -> tuple[Rule, ...]:
    return _load()


def by_code() -> dict[str, Rule]:
    return {r.code: r for r in _load()}


def get(code_or_name: str) -> Rule | None:
    key = code_or_name.strip()
    for r in _load():
        if r.code.lower() == key.lower() or r.name == key:
            return r
    return None


def expand(selector: str) -> set[str]:
    """Codes matched by one selector: a code, a prefix (`TK3`), a name, or `ALL`."""
    s = selector.strip()
    if not s:
        return set()
    if s.upper() == "ALL":
        return {r.code for r in _load()}
    hits = {r.code for r in _load() if r.code.upper().startswith(s.upper()) or r.name == s}
    if not hits:
        raise KeyError(f"unknown rule selector '{s}'")
    return hits
