"""tkcheck: static verifier for asynchronous ThunderKittens / MegaKittens kernels."""
import os as _os

__version__ = "0.1.0"

# In an installed wheel, the rule catalog (rules/) and the command line (cli.py)
# are mapped into this package at build time. Run from a source checkout (e.g.
# `python -m pytest` at the repository root), they live beside the package:
# make them importable as tkcheck.rules / tkcheck.cli the same way.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if (not _os.path.isdir(_os.path.join(_here, "rules"))
        and _os.path.isfile(_os.path.join(_root, "rules", "__init__.py"))
        and _os.path.isfile(_os.path.join(_root, "pyproject.toml"))):
    __path__.append(_root)  # noqa: F821 - the package's own __path__
