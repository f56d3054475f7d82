"""Tokens of a source range, read from the text itself.

libclang's `get_tokens` returns nothing for a cursor whose extent starts in a
macro expansion (`__shared__ semaphore bar;` starts with a macro), so tokens
are cut from the file text by the cursor's extent and lexed here.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<str>[uUL]?R?"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfFzZ]*)
  | (?P<id>[A-Za-z_$][A-Za-z_0-9$]*)
  | (?P<op><<=|>>=|\.\.\.|->\*|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[-+*/%&|^~!=<>?:;,.(){}\[\]#@\\])
  | (?P<other>.)
""",
    re.S | re.X,
)


def lex(text: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "ws":
            continue
        out.append(m.group())
    # preprocessor lines never reach here (cursor extents exclude them), but a
    # `#pragma unroll` inside a statement range would: drop '#' lines' tokens
    return out


class SourceText:
    """Line-indexed text of one file, for slicing by libclang positions.

    libclang columns are 1-based byte offsets; the text is indexed in bytes."""

    def __init__(self, text: str):
        self.data = text.encode("utf-8", errors="replace")
        self.starts = [0]
        for i, b in enumerate(self.data):
            if b == 10:
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        if line - 1 >= len(self.starts):
            return len(self.data)
        return min(self.starts[line - 1] + col - 1, len(self.data))

    def slice(self, l1: int, c1: int, l2: int, c2: int) -> str:
        a, b = self.offset(l1, c1), self.offset(l2, c2)
        chunk = self.data[a:b].decode("utf-8", errors="replace")
        # drop preprocessor directives (e.g. `#pragma unroll`) inside the range
        return re.sub(r"(?m)^[ \t]*#.*$", " ", chunk)


def blank_comments_and_strings(text: str) -> str:
    """The text with comments and string literals replaced by blanks (positions kept)."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out[i + 1 : j] = " " * (j - i - 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)
