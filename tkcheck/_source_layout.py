"""Running from a source checkout: the wheel's package mapping, applied at import time.

The rule catalog (`rules/`) and the command line (`cli.py`) sit at the top of the repository
(the design card's layout). A wheel maps them into the one import name `tkcheck` at build time,
through pyproject.toml's `[tool.setuptools.package-dir]` (`tkcheck.rules`, `tkcheck.cli.cli`).
A source checkout used without installing (pytest at the repository root, `PYTHONPATH=repo`)
has no build step, so `install(root)` adds an import finder that resolves exactly the packages
of that same table to the folders it names: both layouts import the same modules under the same
names, and nothing else of the repository root becomes importable as `tkcheck.*`.

`tkcheck/__init__.py` calls it only when the package has no `rules/` inside (not a wheel) and a
pyproject.toml sits beside it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import tomllib
from pathlib import Path


def package_dirs(root: Path) -> dict[str, Path]:
    """The `tkcheck.*` packages that root/pyproject.toml maps to folders of its own, each to
    its folder; {} when the file has no such table or a folder is missing."""
    try:
        table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    mapping = table.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    dirs = {name: (root / folder).resolve() for name, folder in mapping.items() if name.startswith("tkcheck.")}
    return dirs if all(d.is_dir() for d in dirs.values()) else {}


class SourceLayoutFinder(importlib.abc.MetaPathFinder):
    """Finds the mapped packages; their submodules are then found the usual way, through the
    package's `__path__`."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs

    def find_spec(self, fullname, path=None, target=None):
        folder = self.dirs.get(fullname)
        if folder is None:
            return None
        init = folder / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(folder)])
        # a folder without __init__.py (the repository root, for cli.py): a namespace package,
        # as the wheel's tkcheck/cli/ is
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        return spec


def install(root: Path) -> None:
    """Add the finder for root's mapping (once per process)."""
    if any(isinstance(f, SourceLayoutFinder) for f in sys.meta_path):
        return
    dirs = package_dirs(root)
    if dirs:
        # first: an editable install of another checkout maps the same names to its folders,
        # and this checkout's package must import this checkout's rules
        sys.meta_path.insert(0, SourceLayoutFinder(dirs))
