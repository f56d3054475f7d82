"""Shared wording for the SASS rules (the facts come from tkcheck.checks.sass_cross)."""

from __future__ import annotations

from typing import Any

from tkcheck.checks import sass_cross
from tkcheck.checks.sass_cross import instructions_at, kernel_label
from tkcheck.findings import Related
from tkcheck.model import ir


def api(op: ir.Op) -> str:
    """The op as the messages name it; inline PTX by its instruction."""
    if sass_cross.raw_asm(op):
        return f"inline PTX {op.asm.instruction}" if op.asm.instruction else "inline PTX"
    return op.api


def first_site(op: ir.Op) -> str:
    """The first site of a kind, as 'first: ...' names it: inline PTX by its instruction, else
    the op's own description."""
    return api(op) if sass_cross.raw_asm(op) else op.describe()


def call_site(op: ir.Op) -> list[Related]:
    """The kernel-body line that (through device functions) reaches `op`."""
    return [Related(op.callers[0], "called from here")] if op.callers else []


def text(ins) -> str:
    return " ".join(ins.text().split("(*")[0].split())


def addr(ins) -> str:
    return f"0x{ins.address:04x}"


def _span(ins_list) -> str:
    if not ins_list:
        return ""
    lo, hi = min(i.address for i in ins_list), max(i.address for i in ins_list)
    return f"0x{lo:04x}" if lo == hi else f"0x{lo:04x}-0x{hi:04x}"


def where_compiled(kernel, path: str, op: ir.Op) -> str:
    """' (line N compiled to SASS 0x..-0x.., M instructions)' for the op's line, or ''."""
    ins = instructions_at(kernel, path, op.location.row)
    return f" (line {op.location.row} compiled to SASS {_span(ins)}, {len(ins)} instructions)" if ins else ""


def witness(kernel, **kw) -> dict[str, Any]:
    w = {"sass_kernel": kernel_label(kernel), "arch": kernel.arch}
    w.update(kw)
    return w
