"""Which rules run on which file: --select / --ignore / --extend-select / --per-file-ignores.

Selectors are codes, prefixes (TK3), rule names (expect-tx-mismatch) or ALL,
as in ruff. When a selected and an ignored selector both match a code, the more
specific one wins (a code or name beats a longer prefix beats a shorter prefix
beats ALL), so `select = ["TK3"]`, `ignore = ["TK30"]` and an `extend-select`
of one code that starts with TK30 run that code and the TK31 codes but no other
TK30 code. On a tie, ignore wins. Per-file ignores then remove codes for the files they match.
The tool's own rules (parse-error for bad input, unused-suppression) are
selected and ignored like any other: a user who ignores unused-suppression has
said so.
"""

from __future__ import annotations

import fnmatch
import os
import pathlib
from typing import Callable, Iterable, Mapping

from .rules import EXAMPLE_CODE

Resolver = Callable[[str], set[str]]

_EXACT = 1000  # a code or a name: more specific than any prefix


def _default_resolver(selector: str) -> set[str]:
    from .registry import expand  # late: importing the catalog is not free

    return expand(selector)


class RuleSelector:
    def __init__(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] = (),
        extend_select: Iterable[str] = (),
        per_file_ignores: Mapping[str, Iterable[str]] | Iterable[tuple[str, Iterable[str]]] = (),
        known_codes: Iterable[str] | None = None,
        *,
        resolver: Resolver | None = None,
        root: pathlib.Path | None = None,
    ):
        """`root` is the folder per-file-ignores globs are relative to (the config's folder)."""
        self._resolve_fn = resolver or _default_resolver
        self.known_codes = (
            frozenset(known_codes) if known_codes is not None else frozenset(self._resolve("ALL", "select"))
        )
        self.root = root
        # Per code: the most specific (specificity, enabled?) verdict over all selectors.
        verdicts: dict[str, tuple[int, bool]] = {}
        select = ("ALL",) if select is None else tuple(select)
        for where, selectors, on in (
            ("select", select, True),
            ("extend-select", tuple(extend_select), True),
            ("ignore", tuple(ignore), False),
        ):
            for selector in selectors:
                codes = self._resolve(selector, where)
                rank = self._specificity(selector, codes)
                for code in codes:
                    old = verdicts.get(code)
                    # Higher rank wins; on an equal rank an ignore (on=False) wins.
                    if old is None or rank > old[0] or (rank == old[0] and not on):
                        verdicts[code] = (rank, on)
        self.selected = frozenset(code for code, (_, on) in verdicts.items() if on)
        pairs = per_file_ignores.items() if isinstance(per_file_ignores, Mapping) else per_file_ignores
        self.per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = tuple(
            (glob, frozenset().union(*(self._resolve(s, f"per-file-ignores[{glob!r}]") for s in codes)))
            for glob, codes in pairs
        )

    def _resolve(self, selector: str, where: str) -> set[str]:
        text = selector.strip()
        try:
            codes = set(self._resolve_fn(text))
        except (KeyError, LookupError, ValueError):
            codes = set()
        if not codes and text.upper() != "ALL":
            raise ValueError(
                f"unknown rule selector '{selector}' in {where}: expected a code ({EXAMPLE_CODE}), "
                "a prefix (TK3), a rule name, or ALL"
            )
        known = getattr(self, "known_codes", None)
        return codes & known if known is not None else codes

    @staticmethod
    def _specificity(selector: str, codes: set[str]) -> int:
        text = selector.strip()
        if text.upper() == "ALL":
            return 0
        if any(c.upper() == text.upper() for c in codes) or not any(c.upper().startswith(text.upper()) for c in codes):
            return _EXACT  # a full code, or a name (which is no code's prefix)
        return len(text)

    def _matches(self, glob: str, filename: str) -> bool:
        """A glob matches the path relative to root, the path as given, or the base name."""
        path = pathlib.Path(filename)
        candidates = {path.as_posix(), path.name}
        if self.root is not None:
            absolute = path if path.is_absolute() else pathlib.Path.cwd() / path
            try:
                rel = pathlib.Path(os.path.normpath(absolute)).relative_to(
                    os.path.normpath(pathlib.Path(self.root).absolute())
                )
                candidates.add(rel.as_posix())
            except ValueError:
                pass
        return any(fnmatch.fnmatchcase(c, glob) for c in candidates)

    def ignored_for(self, filename: str) -> frozenset[str]:
        out: set[str] = set()
        for glob, codes in self.per_file_ignores:
            if self._matches(glob, filename):
                out |= codes
        return frozenset(out)

    def enabled_codes(self, filename: str | None = None) -> frozenset[str]:
        """The codes to run (on `filename`, when given, after its per-file ignores)."""
        if filename is None:
            return self.selected
        return self.selected - self.ignored_for(filename)

    def enabled(self, code: str, filename: str | None = None) -> bool:
        return code in self.enabled_codes(filename)
