"""Discovers the rule catalog (`rules/`, installed as `tkcheck.rules`).

Every module in the package that defines `RULE` contributes one rule. Lookups by
code, name and prefix, and the selection language (`TK3`, `ALL`, names), all
come from here so the CLI, SARIF and docs agree.

Rules are imported on first use. `catalog()` reads each rule's metadata (code, name,
contract, severity, tags, its module) from `rules/catalog.json`, written by
`scripts/gen_rule_docs.py` from the rules themselves, without importing a rule: selecting
rules, a cached result, a file without kernels import none, and `rule(code)` imports one
module when its rule runs. A catalog that does not list exactly the modules in rules/
(a rule added, renamed or removed since it was written) is not used: the rules are
imported, as before; tests/test_rules_meta.py fails until it is written again.
`all_rules()` / `by_code()` import every rule (their docs and examples: SARIF's rule
table, `tkcheck rule`).
"""

from __future__ import annotations

import json
import os
import pkgutil
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .rule import Rule

CATALOG_FILE = "catalog.json"


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata, as the catalog records it (no import of the rule's module)."""

    code: str
    name: str
    contract: str
    severity: str
    precision: str
    symptoms: tuple[str, ...]
    summary: str
    engine_only: bool
    arch: tuple[str, ...]
    tags: tuple[str, ...]
    module: str  # the rule's module in the package (`tkNNN_rule_name`)

    @property
    def symptom(self) -> str:
        return "/".join(s for s in self.symptoms if s)


def info_of(rule: Rule, module: str) -> RuleInfo:
    return RuleInfo(
        code=rule.code,
        name=rule.name,
        contract=rule.contract,
        severity=rule.severity,
        precision=rule.precision,
        symptoms=tuple(rule.symptoms),
        summary=rule.summary,
        engine_only=rule.engine_only,
        arch=tuple(rule.arch),
        tags=tuple(rule.tags),
        module=module,
    )


def catalog_json() -> list[dict[str, Any]]:
    """What rules/catalog.json holds: the metadata of every rule, by importing them."""
    return [
        {
            "code": i.code,
            "name": i.name,
            "contract": i.contract,
            "severity": i.severity,
            "precision": i.precision,
            "symptoms": list(i.symptoms),
            "summary": i.summary,
            "engine_only": i.engine_only,
            "arch": list(i.arch),
            "tags": list(i.tags),
            "module": i.module,
        }
        for i in sorted(_imported().values(), key=lambda i: i.code)
    ]


def _import(name: str) -> Any:
    """Import a module by name through the `import` statement's machinery (`__import__`), which
    Python's import profiler (`-X importtime`) sees; `importlib.import_module` bypasses it."""
    __import__(name)
    return sys.modules[name]


def _package() -> Any:
    from . import rules as pkg  # type: ignore[attr-defined]  # rules/, mapped in at build time

    return pkg


def _rule_modules() -> list[str]:
    pkg = _package()
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))


@lru_cache(maxsize=1)
def _imported() -> dict[str, RuleInfo]:
    """code -> RuleInfo, importing every rule module."""
    pkg = _package()
    out = {}
    for name in _rule_modules():
        rule = getattr(_import(f"{pkg.__name__}.{name}"), "RULE", None)
        if isinstance(rule, Rule):
            out[rule.code] = info_of(rule, name)
    return out


def _read_catalog() -> dict[str, RuleInfo] | None:
    """The catalog file, when it lists exactly the rule modules there are; else None."""
    pkg = _package()
    modules = set(_rule_modules())
    for folder in pkg.__path__:
        try:
            with open(os.path.join(folder, CATALOG_FILE), encoding="utf-8") as fh:
                entries = json.load(fh)
            infos = {e["code"]: _info_from_json(e) for e in entries}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue
        if len(infos) == len(entries) and {i.module for i in infos.values()} == modules:
            return infos
    return None


def _info_from_json(e: dict[str, Any]) -> RuleInfo:
    """One catalog entry, checked (a wrong type raises TypeError: the file is not used)."""

    def text(key: str) -> str:
        v = e[key]
        if not isinstance(v, str):
            raise TypeError(key)
        return v

    def texts(key: str) -> tuple[str, ...]:
        v = e[key]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise TypeError(key)
        return tuple(v)

    if not isinstance(e.get("engine_only"), bool):
        raise TypeError("engine_only")
    return RuleInfo(
        code=text("code"),
        name=text("name"),
        contract=text("contract"),
        severity=text("severity"),
        precision=text("precision"),
        symptoms=texts("symptoms"),
        summary=text("summary"),
        engine_only=e["engine_only"],
        arch=texts("arch"),
        tags=texts("tags"),
        module=text("module"),
    )


@lru_cache(maxsize=1)
def catalog() -> dict[str, RuleInfo]:
    """code -> RuleInfo of every rule, read without importing the rules when the catalog file
    is current."""
    return _read_catalog() or _imported()


def rule(code: str) -> Rule | None:
    """The rule of one code, importing its module (once)."""
    info = catalog().get(code)
    if info is None:
        return None
    pkg = _package()
    found = getattr(_import(f"{pkg.__name__}.{info.module}"), "RULE", None)
    return found if isinstance(found, Rule) and found.code == code else by_code().get(code)


@lru_cache(maxsize=1)
def _load() -> tuple[Rule, ...]:
    pkg = _package()
    found: list[Rule] = []
    for name in _rule_modules():
        mod = _import(f"{pkg.__name__}.{name}")
        r = getattr(mod, "RULE", None)
        if isinstance(r, Rule):
            found.append(r)
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
    infos = catalog().values()
    if s.upper() == "ALL":
        return {r.code for r in infos}
    hits = {r.code for r in infos if r.code.upper().startswith(s.upper()) or r.name == s}
    if not hits:
        raise KeyError(f"unknown rule selector '{s}'")
    return hits
