"""Values the launch's input decides (issue 25, round 16): data a kernel loads from global memory
that no thread of the launch writes, used where a checker asks "for SOME input".

A race contract holds for every input: a pair of accesses that name the same element for one
input the host may pass is a race. An index computed from input data (`cnt[(key >> 4) & 15]`
with `key = in[i]`) is an unknown to the element question (`paths.keys_may_alias`), but it is
no unconstrained unknown: it is a function of the input, which the host chooses. This module
says which unknowns of a kernel are such values, and instantiates them for one input.

An unknown `v` is an *input value* of the kernel pointer `P` when

* it is the value of exactly one plain (weak, non-atomic) load `P[i]` / `*P` (the load's
  `GlobalAccessFacts.value`), or it is read from a local array of scalars (`key[j]`,
  `KernelModel.local_array_reads`) that the walk saw used only through `key[j] = ...` and
  `... key[j] ...`, every store of which stores an input value of `P`;
* no op of the kernel writes `P` (a store, an atomic, a signal to `P`, or a write whose memory
  is not known: a store of unknown base, an access through a pointer the walk does not follow,
  an unmodelled call), so no thread of the launch constrains what `P` holds;
* `v` appears in no guard and no loop of the kernel: no path condition constrains it (a test
  `if (v < 16)` before the access would make the element depend on which path runs).

The input chosen is *uniform*: every element of `P` holds one value `c` (any array can be
filled so, whatever the loads' addresses, and two loads of one address read one value, as they
must). `c` is taken in [0, 127], a value every integer type of at least 8 bits (signed or not)
and every floating type holds exactly. Uniform inputs are one family among all inputs: a race
under one is a race; none found under them proves nothing (the pair stays as it was).
"""

from __future__ import annotations

import dataclasses

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

INPUT_MAX = 127  # the largest value of a uniform input (held exactly by every integer type >= 8 bits)

_WRITES = (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL)


@dataclasses.dataclass(frozen=True)
class InputValue:
    var: str  # the unknown's name
    base: str  # the kernel pointer whose data it is
    load: ir.Op  # a load of that pointer it comes from (the witness's site)


def _constrained_names(m: ir.KernelModel) -> set[str]:
    """Names of the unknowns some guard or loop of the kernel mentions (a path condition)."""
    names: set[str] = set()

    def add(e) -> None:
        if isinstance(e, E.Expr):
            names.update(v.name for v in e.free_vars())
        elif isinstance(e, (tuple, list)):
            for x in e:
                add(x)

    for o in m.ops:
        g = o.guard
        add(g.thread)
        add(g.uniform)
        add(g.opaque)
    for lp in m.loops.values():
        for f in dataclasses.fields(lp):
            add(getattr(lp, f.name))
    return names


def _written_bases(m: ir.KernelModel) -> set[str] | None:
    """The kernel pointers some op of the kernel writes; None when a write's memory is not known
    (any pointer may be written)."""
    out: set[str] = set()
    for o in m.ops:
        if o.kind in (ir.UNKNOWN_ACCESS, ir.CALL):
            return None
        if o.kind in _WRITES or (o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.atomic):
            ga = o.global_access
            if ga is None or ga.base is None:
                return None
            out.add(ga.base)
    return out


def _facts(an: Analysis) -> dict:
    def build(_an: Analysis) -> dict:
        m = _an.model
        loads: dict[str, list[ir.Op]] = {}
        for o in m.ops:
            if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.value:
                loads.setdefault(o.global_access.value, []).append(o)
        return {"loads": loads, "constrained": _constrained_names(m), "written": _written_bases(m)}

    return an.fact("inputs.facts", build)


def _load_value(an: Analysis, name: str) -> InputValue | None:
    f = _facts(an)
    loads = f["loads"].get(name, [])
    if len(loads) != 1:
        return None
    ld = loads[0]
    ga = ld.global_access
    assert ga is not None
    if ga.base is None or ga.sem != "weak" or ga.form != "plain" or ga.atomic:
        return None
    written = f["written"]
    if written is None or ga.base in written:
        return None
    return InputValue(name, ga.base, ld)


def input_value(an: Analysis, v: E.Var) -> InputValue | None:
    """The input `v` is (see the module's text), or None."""
    if v.kind != E.OPAQUE or v.name in _facts(an)["constrained"]:
        return None
    got = _load_value(an, v.name)
    if got is not None:
        return got
    m = an.model
    arr = m.local_array_reads.get(v.name)
    if arr is None or arr in m.local_array_escapes:
        return None
    stores = m.local_array_stores.get(arr, [])
    vals = [_load_value(an, s) if s is not None else None for s in stores]
    if not vals or any(x is None for x in vals):
        return None
    bases = {x.base for x in vals if x is not None}
    if len(bases) != 1:
        return None
    first = vals[0]
    assert first is not None
    return InputValue(v.name, first.base, first.load)


def inputs_of(an: Analysis, exprs) -> dict[str, InputValue] | None:
    """Every unknown of `exprs` as the input it is (its name -> InputValue); None when one is no
    input value (or none of them mentions one: nothing to choose)."""
    out: dict[str, InputValue] = {}
    for e in exprs:
        for v in e.free_vars():
            if v.kind != E.OPAQUE:
                continue
            iv = input_value(an, v)
            if iv is None:
                return None
            out[v.name] = iv
    return out or None


def base_var(base: str) -> E.Var:
    """The value every element of kernel pointer `base` holds under a uniform input."""
    return E.Var(f"input:{base}", E.PARAM)


def uniform(ins: dict[str, InputValue]) -> dict[str, E.Expr]:
    """The substitution that makes each input value its pointer's uniform value."""
    return {name: base_var(iv.base) for name, iv in ins.items()}
