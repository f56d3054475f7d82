"""The model the checks query: one `KernelModel` per kernel (ir.py), its values as symbolic
expressions (expr.py), and who runs what (threads.py).

Public interface:
  ir:      KernelModel (ops in program order, loops, buffers, barriers, TMEM), Op and its
           kinds (ir.MBAR_WAIT, ir.TMA_LOAD, ...), Ref, Guard, Loop, TileType
  expr:    Expr (eval, substitute, free_vars, to_z3), Const, Var, and the builders
           (binop, conj, negate, ite, opaque)
  threads: threads_satisfying(pred, n), the threads of a block a predicate over tid holds for
The model imports neither the front end nor the checks.
"""

from importlib import import_module as _import_module

_PUBLIC = {
    "KernelModel": "ir",
    "Op": "ir",
    "Ref": "ir",
    "Guard": "ir",
    "Loop": "ir",
    "TileType": "ir",
    "Expr": "expr",
    "Const": "expr",
    "Var": "expr",
    "threads_satisfying": "threads",
}
_MODULES = ("ir", "expr", "threads")

__all__ = [
    "Const",
    "Expr",
    "Guard",
    "KernelModel",
    "Loop",
    "Op",
    "Ref",
    "TileType",
    "Var",
    "threads_satisfying",
    "ir",
    "expr",
    "threads",
]


def __getattr__(name):
    if name in _MODULES:
        return _import_module(f"{__name__}.{name}")
    if name in _PUBLIC:
        return getattr(_import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
