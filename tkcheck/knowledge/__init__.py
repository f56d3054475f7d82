"""What tkcheck knows about ThunderKittens and CUDA, as data: no parsing, no checks.

Public interface:
  ops         TK / CUDA operations -> model op kinds, argument meanings and who issues the PTX
  layouts     TK's shared-tile layouts as z3 terms (swizzles)
  launchers   host functions that run a function as a kernel
  mk          the MegaKittens / Megakernels interpreter protocol (worker macros and roles)
  protocols   tkcheck's pseudo-CUDA models of TK's prototype templates (lcf, lcsf, lcsc, MK
              worker): the files and the searches that pick one (the front end parses them)
  include/    the declaration-only model of CUDA and TK that the front end parses against
"""

from importlib import import_module as _import_module
from types import ModuleType

_MODULES = ("ops", "layouts", "launchers", "mk", "protocols")

__all__ = list(_MODULES)


def __getattr__(name: str) -> ModuleType:
    if name in _MODULES:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
