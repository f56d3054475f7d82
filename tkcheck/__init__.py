"""tkcheck: static verifier for asynchronous ThunderKittens / MegaKittens kernels.

The public interface (imported lazily: `import tkcheck` loads neither libclang nor z3):
  check_file(path, CheckOptions(...)) -> FileResult   everything tkcheck reports on one file
  models_of(path, ParseOptions(...)) -> [KernelModel]  the models its checks query
  CheckOptions, FileResult, ParseOptions, InputError   their options, results and input errors
The packages, each with its own interface: `frontend` (source -> KernelModel), `model` (the
KernelModel and its expressions), `knowledge` (TK's API as data), `checks` (rule-agnostic
facts), `render` (one renderer per output format), `sass` (the SASS pass), `confirm` (GPU
confirmation and triage); the rule catalog is `tkcheck.rules`, the command line
`tkcheck.cli.cli`.
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

__all__ = ["__version__", "check_file", "models_of", "CheckOptions", "FileResult", "ParseOptions", "InputError"]

_ENGINE = {"check_file", "models_of", "CheckOptions", "FileResult", "ParseOptions", "InputError"}


def __getattr__(name):
    if name in _ENGINE:
        from . import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'tkcheck' has no attribute '{name}'")


# A wheel holds the rule catalog and the command line inside this package (mapped at build
# time); a source checkout has them at the repository root: map them the same way at import.
_here = _Path(__file__).absolute().parent  # not resolved: a linked package maps the rules/ beside the link
if not (_here / "rules").is_dir() and (_here.parent / "pyproject.toml").is_file():
    from ._source_layout import install as _install

    _install(_here.parent)
