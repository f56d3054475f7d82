"""Try-waits written as a bool-returning helper and polled by the caller.

A kernel without TK often writes its mbarrier wait as two functions: a probe whose body is one
inline-PTX `mbarrier.try_wait.parity` (or `test_wait.parity`) into a predicate, `selp` of that
predicate into an output, and a `return` of the output; and a loop that calls the probe until it
answers "completed" (`while (!probe(bar, ph)) {}`, `do {} while (!probe(...))`). Each probe is
one test, never a wait; the loop around it is the wait, on the barrier and with the parity the
probe's parameters are bound to at the call -- what a try_wait that branches back on itself
(`@!p bra RETRY`) is. This module recognises that shape for any helper, whatever its name: the
loop's exit test and the probe's answer are checked to agree (the loop leaves exactly when the
phase completed), so a loop that stops while the phase is still pending is no wait."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..knowledge import ops as K
from . import cexpr
from .walk_env import CK, tokens_of

_CALLABLE = (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD)


def polled_probe(loop: Any, kids: list[Any]) -> tuple[Any, Any] | None:
    """(the loop's condition, the asm statement of the probe it polls until the phase completed),
    or None.

    The loop is `while (C) B`, `do B while (C)` or `for (; C;) B` whose body B is empty (or only
    `__nanosleep` back-offs), whose condition C holds one call of a user function and otherwise
    only operators and constants, and whose callee is a probe (`_probe_answer`); C must be false
    exactly when the probe says the phase completed."""
    cond, body = _parts(loop, kids)
    if cond is None or body is None or not _idle_body(body):
        return None
    call = _top_call(cond)
    if call is None:
        return None
    fn = call.referenced
    if fn is None or fn.kind not in _CALLABLE:
        return None
    fn = fn.get_definition() or fn
    probe = _probe_answer(fn)
    if probe is None:
        return None
    asm, done_value = probe
    node = cexpr.parse_expression(tokens_of(cond))
    calls = [n for n in _nodes(node) if isinstance(n, cexpr.Call)]
    if not calls or not _is_callee(calls[0], call.spelling) or not all(_nested_in(c, calls[0]) for c in calls[1:]):
        return None
    top = calls[0]

    def with_answer(v: int) -> Callable[[cexpr.Node], int | None]:
        return lambda n: v if n is top else None

    # the loop goes on while C holds: it must stop when the phase completed and go on otherwise
    stop = _value(node, with_answer(done_value))
    go_on = _value(node, with_answer(1 - done_value))
    if stop is None or go_on is None or stop != 0 or go_on == 0:
        return None
    return cond, asm


def _parts(loop: Any, kids: list[Any]) -> tuple[Any, Any]:
    """(condition, body) of a while / do / condition-only for loop; (None, None) otherwise."""
    if loop.kind == CK.WHILE_STMT and len(kids) == 2:
        return kids[0], kids[1]
    if loop.kind == CK.DO_STMT and len(kids) == 2:
        return kids[1], kids[0]
    if loop.kind == CK.FOR_STMT and len(kids) == 2:
        toks = tokens_of(loop)
        # `for ( ; C ; )`: the first and the last header parts are empty
        if toks[1:3] == ["(", ";"] and toks[toks.index(";", 3) + 1] == ")":
            return kids[0], kids[1]
    return None, None


def _idle_body(body: Any) -> bool:
    """The body does nothing a wait must model: empty, null statements, `__nanosleep(..)`."""
    if body.kind == CK.NULL_STMT:
        return True
    if body.kind == CK.COMPOUND_STMT:
        return all(_idle_body(ch) for ch in body.get_children())
    toks = tokens_of(body)
    return bool(toks) and toks[0] == "__nanosleep"


def _top_call(c: Any) -> Any:
    """The one call expression of a condition outside every other call's arguments, or None."""
    found: list[Any] = []

    def walk(x: Any) -> None:
        for ch in x.get_children():
            if ch.kind == CK.CALL_EXPR:
                found.append(ch)
            else:
                walk(ch)

    if c.kind == CK.CALL_EXPR:
        found.append(c)
    else:
        walk(c)
    return found[0] if len(found) == 1 else None


def _probe_answer(fn: Any) -> tuple[Any, int] | None:
    """(the asm statement, the value the function returns when the phase completed) of a probe:
    a body of declarations, one asm statement whose PTX is a one-shot parity probe writing its
    answer to a local variable (`K.ptx_probe_outputs`), and one `return` of an expression over
    that variable alone; None for any other function."""
    body = next((ch for ch in fn.get_children() if ch.kind == CK.COMPOUND_STMT), None)
    if body is None:
        return None
    stmts = [ch for ch in body.get_children() if ch.kind != CK.NULL_STMT]
    if not stmts or stmts[-1].kind != CK.RETURN_STMT:
        return None
    asms = [s for s in stmts if s.kind in (CK.ASM_STMT, CK.MS_ASM_STMT)]
    if len(asms) != 1 or any(s.kind not in (CK.DECL_STMT, CK.ASM_STMT, CK.MS_ASM_STMT) for s in stmts[:-1]):
        return None
    asm = asms[0]
    toks = tokens_of(asm)
    ptx = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', " ".join(t for t in toks if t.startswith('"'))))
    answers = K.ptx_probe_outputs(ptx)
    outs = _output_names(toks)
    named = {outs[k]: done for k, done in answers.items() if k < len(outs) and outs[k] is not None}
    if len(named) != 1:
        return None
    ((var, done),) = named.items()
    ret = tokens_of(stmts[-1])[1:]
    if ret and ret[-1] == ";":
        ret = ret[:-1]
    expr = cexpr.parse_expression(ret)

    def leaf(v: int) -> Callable[[cexpr.Node], int | None]:
        return lambda n: v if isinstance(n, cexpr.Name) and n.ident() == var else None

    # the output is 1 / 0 by the selp (its literals are only told apart by being nonzero)
    when_done = _value(expr, leaf(1 if done else 0))
    when_pending = _value(expr, leaf(0 if done else 1))
    if when_done is None or when_pending is None or (when_done != 0) == (when_pending != 0):
        return None
    return asm, 1 if when_done != 0 else 0


def _output_names(toks: list[str]) -> list[str | None]:
    """The operands of an asm statement in `%N` order: the plain variable each output writes
    (`"=r"(ok)` -> ok), None for an input or any other output expression."""
    colon = next((k for k, t in enumerate(toks) if t in (":", "::")), None)
    out: list[str | None] = []
    if colon is None:
        return out
    for k in range(colon, len(toks) - 1):
        t = toks[k]
        if not (t.startswith('"') and toks[k + 1] == "("):
            continue
        inner = toks[k + 2] if k + 3 < len(toks) and toks[k + 3] == ")" else None
        is_out = t.strip('"').startswith("=")
        out.append(inner if is_out and inner is not None and re.fullmatch(r"[A-Za-z_]\w*", inner) else None)
    return out


def _nodes(n: cexpr.Node) -> list[cexpr.Node]:
    """The nodes of an expression, preorder."""
    out = [n]
    for v in getattr(n, "__dataclass_fields__", {}):
        x = getattr(n, v)
        if isinstance(x, tuple):
            for y in x:
                if hasattr(y, "__dataclass_fields__"):
                    out += _nodes(y)
        elif hasattr(x, "__dataclass_fields__"):
            out += _nodes(x)
    return out


def _nested_in(inner: cexpr.Node, outer: cexpr.Call) -> bool:
    return any(inner is n for a in outer.args for n in _nodes(a))


def _is_callee(call: cexpr.Call, name: str) -> bool:
    callee = call.callee
    return isinstance(callee, cexpr.Name) and callee.segments[-1].name.split("::")[-1] == name


def _value(n: cexpr.Node, leaf: Callable[[cexpr.Node], int | None]) -> int | None:
    """An integer condition's value with `leaf` giving the unknowns' values; None when it reads
    anything else."""
    v = leaf(n)
    if v is not None:
        return v
    match n:
        case cexpr.Num(value):
            return value
        case cexpr.Bool(value):
            return int(value)
        case cexpr.Cast(t, a):
            x = _value(a, leaf)
            words = t.words if isinstance(t, cexpr.TypeWords) else ()
            return int(x != 0) if x is not None and words == ("bool",) else x
        case cexpr.Call(cexpr.Name(segs), (a,)) if segs[-1].name.replace(" ", "") in ("static_cast<bool>", "bool"):
            x = _value(a, leaf)
            return None if x is None else int(x != 0)
        case cexpr.Un("!", a):
            x = _value(a, leaf)
            return None if x is None else int(x == 0)
        case cexpr.Bin(op, a, b) if op in _COMPARE:
            x, y = _value(a, leaf), _value(b, leaf)
            return None if x is None or y is None else int(_COMPARE[op](x, y))
    return None


_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "&&": lambda x, y: x != 0 and y != 0,
    "||": lambda x, y: x != 0 or y != 0,
}
