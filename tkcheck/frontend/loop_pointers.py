"""Pointer variables carried round a loop (issue 25).

A local pointer a loop body assigns (`float *t = src; src = dst; dst = t;`, a rotation
`a -> b -> c`, `p = p + stride` of a `__shared__` pointer, a swap under a condition) holds, at the
head of iteration k, a value the body's previous iterations chose. The walk follows scalars
round a loop (`StatementWalker._carried_variables`); a pointer to shared memory is an `Obj`
and a pointer into global memory a `Var` of the kernel's parameter, and a value the loop
changes that is not solved is, here, an `UnknownPtr`: in the loop and after it, every access
through it is an UNKNOWN_ACCESS event at the user's line (coverage), never a silent gap and
never an access of the value the pointer had before the loop.

The dry pass of `_carried_variables` binds each such variable to a `PtrStart` marker and
reads what the body leaves in it: its own marker is a pointer the body left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import expr as E
from .value_types import ChoicePtr, Obj, UnknownPtr
from .walk_arith import _ArrVal


@dataclass(frozen=True)
class PtrStart:
    """The value of pointer variable `name` at the head of an iteration (the dry pass's start)."""

    name: str


def pointer_space(v: Any, exprs: Any) -> str | None:
    """shared | global when v is a pointer value whose target the walk follows (or an
    UnknownPtr's space); None for anything else."""
    if isinstance(v, UnknownPtr):
        return v.space
    if isinstance(v, PtrStart):
        return "unknown"  # a pointer an enclosing loop's dry pass follows: whatever it holds
    if isinstance(v, ChoicePtr):
        spaces = {pointer_space(x, exprs) for _, x in v.options}
        return spaces.pop() if len(spaces) == 1 else None
    if isinstance(v, _ArrVal):
        # a `__shared__` array (a pointer to its first element)
        return "shared" if isinstance(v.obj, Obj) and v.obj.kind in ("shared", "smem_data") else None
    if isinstance(v, Obj) and v.kind in ("shared", "smem_data") and (v.elem_ptr or v.ref.index):
        # a pointer to an element (`&x[i]`, `x + i`); a `__shared__` scalar itself (no index)
        # is memory a name stands for, not a pointer variable
        return "shared"
    if isinstance(v, E.Expr) and exprs.pointer_value(v):
        return "global"
    return None


def _target(v: Any, exprs: Any) -> tuple[str, ...]:
    if isinstance(v, UnknownPtr):
        return v.candidates
    if isinstance(v, ChoicePtr):
        ts = [_target(x, exprs) for _, x in v.options]
        return () if not all(ts) else tuple(sorted({t for tt in ts for t in tt}))
    if isinstance(v, _ArrVal):
        v = v.obj
    if isinstance(v, Obj):
        return (v.ref.name,)
    b = exprs.global_base(v) if isinstance(v, E.Expr) else None
    return (b,) if b is not None else ()


def _how(ends: dict[str, Any], name: str) -> str:
    e = ends.get(name)
    if isinstance(e, PtrStart) and e.name != name:
        # a permutation of the loop's pointers (a swap, a rotation): its cycle
        cyc, n = [name], e.name
        while n != name and n not in cyc and isinstance(ends.get(n), PtrStart):
            cyc.append(n)
            n = ends[n].name  # type: ignore[union-attr]
        if n == name and len(cyc) == 2:
            return f"swapped with `{cyc[1]}` in every iteration"
        if n == name:
            return "rotated with " + ", ".join(f"`{c}`" for c in cyc[1:]) + " in every iteration"
        return f"given the value of `{e.name}` in every iteration"
    return "assigned in the body"


def unknown_heads(pointers: dict[str, tuple[Any, Any]], exprs: Any, where: str) -> dict[str, UnknownPtr]:
    """The pointer variables the loop changes, each as an UnknownPtr: `pointers` maps a name to
    (its value before the loop, what the dry pass left in it). A variable the body left alone
    (its own PtrStart at the end) is not changed."""
    ends = {n: e for n, (_, e) in pointers.items()}
    out: dict[str, UnknownPtr] = {}
    for n, (v0, e) in pointers.items():
        if e == PtrStart(n):
            continue
        space = pointer_space(v0, exprs)
        if space is None:
            continue
        # the values it may take: a pointer given another's value in every iteration (a swap, a
        # rotation) holds one of the values the chain of such pointers held before the loop;
        # any other assignment may point anywhere (no candidates told)
        cands: set[str] = set()
        if isinstance(e, PtrStart):
            chain, m = [n], e.name
            while m not in chain and m in pointers:
                chain.append(m)
                nxt = ends.get(m)
                if not isinstance(nxt, PtrStart):
                    chain = []
                    break
                m = nxt.name
            if m not in pointers:
                chain = []
            for c in chain:
                t = _target(pointers[c][0], exprs)
                if not t:
                    chain = []
                    break
                cands |= set(t)
            if not chain:
                cands = set()
        why = (
            f"`{n}` is {_how(ends, n)} of the loop at {where}: which object it points to per iteration is not followed"
        )
        out[n] = UnknownPtr(n, space, tuple(sorted(cands)), why)
    return out


def merged(name: str, a: Any, b: Any, exprs: Any) -> UnknownPtr | None:
    """The value after an `if` of a pointer variable one branch set to `a` and the other to `b`
    (a different value): an UnknownPtr, never one branch's value. None when neither is a pointer
    (or both are the same, or the condition's `ite` of two global addresses is itself one)."""
    if a == b:
        return None
    spaces = {pointer_space(v, exprs) for v in (a, b)} - {None}
    marks = [v for v in (a, b) if isinstance(v, PtrStart)]
    if not spaces and not marks:
        return None
    space = spaces.pop() if len(spaces) == 1 else "unknown"
    if marks and not spaces:
        space = "unknown"  # the dry pass of a loop: the start value's space is the loop's to tell
    cands: tuple[str, ...] = ()
    if not marks and all(pointer_space(v, exprs) is not None for v in (a, b)):
        cands = tuple(sorted(set(_target(a, exprs)) | set(_target(b, exprs))))
        if not all(_target(v, exprs) for v in (a, b)):
            cands = ()
    why = f"`{name}` is set differently by the branches of an `if`: which object it points to is not followed"
    return UnknownPtr(name, space, cands, why)


# the longest cycle of pointers a loop may rotate for the walk to follow it per iteration (the
# body is walked once per residue of the counter modulo the cycle's length)
MAX_PERIOD = 4


def permutation(pointers: dict[str, tuple[Any, Any]], exprs: Any) -> dict[str, str] | None:
    """sigma when every pointer the body changes is given the value another had at the head of
    the iteration (`t = src; src = dst; dst = t;`, a rotation): `end[n] = start[sigma(n)]`, a
    bijection of the changed pointers, each with a target the walk follows before the loop. Then
    at the head of iteration k, n holds what sigma^k(n) held before the loop. None otherwise."""
    changed = {n: e for n, (_, e) in pointers.items() if e != PtrStart(n)}
    if not changed:
        return None
    sigma = {}
    for n, e in changed.items():
        if not isinstance(e, PtrStart) or e.name not in changed:
            return None
        v0 = pointers[n][0]
        if pointer_space(v0, exprs) is None or isinstance(v0, (UnknownPtr, ChoicePtr, PtrStart)):
            return None
        sigma[n] = e.name
    if len(set(sigma.values())) != len(sigma):
        return None
    return sigma


def period(sigma: dict[str, str]) -> int:
    """The order of the permutation (the least p > 0 with sigma^p the identity)."""
    p, cur = 1, dict(sigma)
    while any(cur[n] != n for n in cur):
        cur = {n: sigma[cur[n]] for n in cur}
        p += 1
    return p


def values_at(sigma: dict[str, str], v0: dict[str, Any], j: int) -> dict[str, Any]:
    """What each pointer holds at the head of an iteration k with k = j (mod period)."""
    out = {}
    for n in sigma:
        m = n
        for _ in range(j):
            m = sigma[m]
        out[n] = v0[m]
    return out


def choices(sigma: dict[str, str], v0s: dict[str, Any], k: Any) -> dict[str, ChoicePtr]:
    """Each rotated pointer as a ChoicePtr over the residues of `k` (the loop's counter, or its
    trip count after it) modulo the rotation's period."""
    p = period(sigma)
    per = [values_at(sigma, v0s, j) for j in range(p)]
    return {
        n: ChoicePtr(n, tuple((E.binop("==", E.binop("%", k, E.Const(p)), E.Const(j)), per[j][n]) for j in range(p)))
        for n in sigma
    }
