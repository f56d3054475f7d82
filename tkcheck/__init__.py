"""tkcheck: static verifier for asynchronous ThunderKittens / MegaKittens kernels."""
import os as _os
import sys as _sys
import types as _types

__version__ = "0.1.0"

# In an installed wheel, the rule catalog (rules/) and the command line (cli.py)
# are mapped into this package at build time: tkcheck.rules and tkcheck.cli.cli.
# Run from a source checkout (e.g. `python -m pytest` at the repository root),
# they live beside the package: expose them under the same names.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if (not _os.path.isdir(_os.path.join(_here, "rules"))
        and _os.path.isfile(_os.path.join(_root, "rules", "__init__.py"))
        and _os.path.isfile(_os.path.join(_root, "cli.py"))
        and _os.path.isfile(_os.path.join(_root, "pyproject.toml"))):
    __path__.append(_root)  # noqa: F821 - tkcheck.rules -> <root>/rules
    if "tkcheck.cli" not in _sys.modules:
        _cli = _types.ModuleType("tkcheck.cli")
        _cli.__path__ = [_root]  # tkcheck.cli.cli -> <root>/cli.py, as in the wheel
        _sys.modules["tkcheck.cli"] = _cli
