"""The user's macros on token lists: where the walk reads a statement's tokens rather than its
syntax tree (the names a loop body assigns, an asm statement a macro wrote), a function-like
macro's invocation is its body with the arguments put in. The tables are the builder's
(`ModelBuilder.macros` / `fn_macros`, the user's files' definitions)."""

from __future__ import annotations

from .walk_arith import _is_ident


def expand_fn_macros(toks: list[str], macros: dict, depth: int = 0, unparen: bool = True) -> list[str]:
    """toks with the user's function-like macros expanded (`ADVANCE(s, ph)` -> its body with
    the arguments in place of the parameters), a few levels deep; `#`/`##` are left as they
    are. Used where the walk reads a statement's tokens, not its AST (assigned names)."""
    if not macros or depth > 4 or not any(t in macros for t in toks):
        return toks
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in macros and i + 1 < len(toks) and toks[i + 1] == "(":
            params, body = macros[t]
            args: list[list[str]] = [[]]
            level, j = 0, i + 2
            while j < len(toks):
                x = toks[j]
                if x in ("(", "[", "{"):
                    level += 1
                elif x in (")", "]", "}"):
                    if level == 0:
                        break
                    level -= 1
                elif x == "," and level == 0:
                    args.append([])
                    j += 1
                    continue
                args[-1].append(x)
                j += 1
            sub = dict(zip(params, args))
            exp: list[str] = []
            for b in body:
                exp.extend(sub.get(b, [b]))
            # `(s)` -> `s` (a macro's parenthesised parameter), not a call's `f(s)`; `unparen`
            # False keeps them (a cast `(uint32_t)` is no parenthesised parameter)
            k = 0
            while k < len(exp):
                if (
                    unparen
                    and exp[k] == "("
                    and k + 2 < len(exp)
                    and exp[k + 2] == ")"
                    and _is_ident(exp[k + 1])
                    and not (k > 0 and (_is_ident(exp[k - 1]) or exp[k - 1] in (")", "]", ">")))
                ):
                    out.append(exp[k + 1])
                    k += 3
                    continue
                out.append(exp[k])
                k += 1
            i = j + 1
            continue
        out.append(t)
        i += 1
    return expand_fn_macros(out, macros, depth + 1, unparen)


def asm_of_macro(toks: list[str], macros: dict[str, list[str]], fn_macros: dict) -> list[str] | None:
    """The asm statement an invocation of the user's macro writes (`TMA_LOAD(d, m, b)` ->
    `asm volatile ("cp.async.bulk..." :: ...)`): the expansion's only asm statement, up to its
    closing parenthesis. None where the expansion is not exact here (`#`, `##`, variadic
    arguments, a macro of a header that is not the user's) or holds no or several asm statements."""
    if toks and toks[0] in macros and toks[0] not in fn_macros:
        toks = macros[toks[0]] + toks[1:]  # an object-like macro that is the statement
    body = expand_fn_macros(toks, fn_macros, unparen=False)
    if any(t in ("#", "##", "__VA_ARGS__") for t in body):
        return None
    starts = [i for i, t in enumerate(body) if t in ASM_WORDS]
    if len(starts) != 1:
        return None
    depth = 0
    for i, t in enumerate(body[starts[0] :], starts[0]):
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                return body[starts[0] : i + 1]
    return None


ASM_WORDS = frozenset({"asm", "__asm__", "__asm"})
