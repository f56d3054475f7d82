"""Explicit specializations of the user's class templates (`template <> struct cfg<1> {...}`).

Several may specialize one template; clang names each cursor by the template's name, so a table by
name keeps the last one. The builder keeps the primary template under the name and the
specializations aside; a use `cfg<1>` selects the one whose written arguments equal its own
(`walk_types.type_of_value`), and a use whose arguments cannot be compared selects none of them
(its members are unknowns, never another specialization's values).
"""

from __future__ import annotations

from .walk_env import tokens_of


def is_explicit_specialization(c) -> bool:
    """`template <> struct NAME<ARGS> {...}`: an explicit specialization of a class template."""
    toks = tokens_of(c)
    return toks[:3] == ["template", "<", ">"] and "<" in c.displayname


def explicit_spec_args(c) -> list[list[str]] | None:
    """The written arguments of an explicit specialization, as token lists, or None."""
    toks = tokens_of(c)
    try:
        i = toks.index(c.spelling, 3)
    except ValueError:
        return None
    if i + 1 >= len(toks) or toks[i + 1] != "<":
        return None
    args: list[list[str]] = [[]]
    depth = 0
    for t in toks[i + 2 :]:
        if t in ("<", "(", "[", "{"):
            depth += 1
        elif t in (")", "]", "}") or (t == ">" and depth > 0):
            depth -= 1
        elif t == ">":
            return args
        elif t == ">>" and depth == 1:
            args[-1].append(">")
            return args
        elif t == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    return None
