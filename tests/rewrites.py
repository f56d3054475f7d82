"""Rewrites of a kernel's source that keep it correct (a seeded generator for the soundness test).

Each rewrite takes the source text and a `random.Random`, and returns the rewritten text, or
None when it does not apply. They change how a correct kernel is written, never what it does:

* rename   -- a local scalar variable gets another name (never a name used as a member)
* reorder  -- two adjacent independent statements swap places (TMA loads of one stage, barrier
              inits, accumulator zeroing)
* parity   -- a wait's parity written another way: `x % 2` as `x & 1`, `(e) ^ 1` as `1 - (e)`
* split    -- a loop that initialises two barriers per slot becomes two loops
* unroll   -- `#pragma unroll 1` / `#pragma unroll` before a loop
* lambda   -- a synchronising statement moved into an immediately invoked lambda
* helper   -- `__syncthreads()` / `__syncwarp()` moved into a `__device__` helper function
* stages   -- `constexpr int STAGES = N` changed to another depth (2 <= N)
"""

from __future__ import annotations

import random
import re

Rewrite = "callable(text, rng) -> str | None"

_DECL = re.compile(r"\b(?:const\s+)?(?:int|uint32_t|unsigned)\s+([a-z_][a-z0-9_]*)\s*=")
_KEYWORDS = {"int", "for", "if", "while", "return", "const", "auto", "true", "false", "wait", "arrive"}


def rename(text: str, rng: random.Random) -> str | None:
    names = sorted({m.group(1) for m in _DECL.finditer(text)} - _KEYWORDS)
    # a name that also appears as a member (`regs.stage`), a type, a function or a macro is left alone
    names = [
        n
        for n in names
        if not re.search(r"(\.|->|::)\s*" + n + r"\b", text)
        and not re.search(r"\b" + n + r"\s*\(", text)
        and not re.search(r"#\s*define\s+" + n + r"\b", text)
        and not re.search(r"\b" + n + r"\s*::", text)
    ]
    if not names:
        return None
    name = rng.choice(names)
    new = f"{name}_rw{rng.randrange(100)}"
    if re.search(r"\b" + new + r"\b", text):
        return None
    # outside string literals: an asm constraint "r" or "n" is no use of a variable named r or n
    pat = re.compile(r"(?<![\w.>:])" + re.escape(name) + r"\b")
    parts = re.split(r'("(?:\\.|[^"\\\n])*")', text)
    return "".join(p if i % 2 else pat.sub(new, p) for i, p in enumerate(parts))


_SWAPPABLE = re.compile(r"^\s*(tma::load_async\(|init_semaphore\(|warp::zero\()")


def reorder(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    cands = []
    for i in range(len(lines) - 1):
        a, b = lines[i], lines[i + 1]
        ma, mb = _SWAPPABLE.match(a), _SWAPPABLE.match(b)
        if (
            ma
            and mb
            and ma.group(1) == mb.group(1)
            and a.rstrip().endswith(";")
            and b.rstrip().endswith(";")
            and _indent(a) == _indent(b)
            and not _prev_is_loop_header(lines, i)
        ):
            cands.append(i)
    if not cands:
        return None
    i = rng.choice(cands)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _prev_is_loop_header(lines, i) -> bool:
    """A brace-less loop or if owns only the next statement: do not move it out."""
    prev = lines[i - 1].rstrip() if i > 0 else ""
    return bool(re.match(r"^\s*(for|if|else|while)\b", prev)) and not prev.endswith((";", "{", "}"))


def parity(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    cands = [
        i
        for i, ln in enumerate(lines)
        if re.search(r"(?<![\w:])wait\(", ln) and ("% 2" in ln or re.search(r"\) \^ 1\)", ln))
    ]
    if not cands:
        return None
    i = rng.choice(cands)
    ln = lines[i]
    opts = []
    if "% 2" in ln:
        opts.append(ln.replace("% 2", "& 1"))
    m = re.search(r", (\(.*\)) \^ 1\);", ln)
    if m:
        opts.append(ln[: m.start()] + f", 1 - {m.group(1)});" + ln[m.end() :])
    lines[i] = rng.choice(opts)
    return "\n".join(lines)


_INIT_LOOP = re.compile(
    r"^(?P<ind>[ \t]*)for \((?P<head>int (?P<v>\w+) = 0; (?P=v) < \w+; (?P=v)\+\+)\) \{\n"
    r"(?P<a>[ \t]*init_semaphore\([^\n]*\);)\n(?P<b>[ \t]*init_semaphore\([^\n]*\);)\n(?P=ind)\}",
    re.M,
)
_INIT_LOOP_1 = re.compile(
    r"for \((?P<head>int (?P<v>\w+) = 0; (?P=v) < \w+; (?P=v)\+\+)\) \{ (?P<a>init_semaphore\([^;\n]*\);) "
    r"(?P<b>init_semaphore\([^;\n]*\);) \}"
)


def split(text: str, rng: random.Random) -> str | None:
    m = _INIT_LOOP.search(text)
    if m:
        ind, head = m.group("ind"), m.group("head")
        new = f"{ind}for ({head}) {{\n{m.group('a')}\n{ind}}}\n{ind}for ({head}) {{\n{m.group('b')}\n{ind}}}"
        return text[: m.start()] + new + text[m.end() :]
    m = _INIT_LOOP_1.search(text)
    if m:
        head = m.group("head")
        new = f"for ({head}) {{ {m.group('a')} }} for ({head}) {{ {m.group('b')} }}"
        before = text[: m.start()].rstrip().rsplit("\n", 1)[-1].lstrip()
        if not before.startswith("#pragma"):
            # braces keep the two loops one statement (the body of an unbraced `if`); after an
            # `unroll` rewrite's `#pragma unroll` a brace would leave the pragma without its loop
            # (`unroll` adds a pragma only where the loop is no unbraced body)
            new = f"{{ {new} }}"
        return text[: m.start()] + new + text[m.end() :]
    return None


def unroll(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    cands = [
        i
        for i, ln in enumerate(lines)
        if re.match(r"^\s*for \(", ln)
        and not (i > 0 and "#pragma" in lines[i - 1])
        and not (
            i > 0
            and re.match(r"^\s*(for|if|else)\b", lines[i - 1])
            and not lines[i - 1].rstrip().endswith(("{", ";", "}"))
        )
    ]
    if not cands:
        return None
    i = rng.choice(cands)
    lines.insert(i, " " * _indent(lines[i]) + rng.choice(["#pragma unroll 1", "#pragma unroll"]))
    return "\n".join(lines)


_SYNC_STMT = re.compile(
    r"^(?P<ind>\s*)(?P<s>(?:if \(laneid\(\) == 0\) )?(?:tma::load_async|tma::expect_bytes|tma::expect|arrive|warp::arrive|"
    r"warpgroup::arrive|warpgroup::mma_AB|warpgroup::mma_async_wait|warpgroup::sync|warp::zero|__syncwarp|"
    r"__syncthreads|group<\w+>::sync)\(.*\);)\s*$"
)


def lam(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    cands = [i for i, ln in enumerate(lines) if _SYNC_STMT.match(ln) and ln.count("(") == ln.count(")")]
    if not cands:
        return None
    i = rng.choice(cands)
    m = _SYNC_STMT.match(lines[i])
    lines[i] = f"{m.group('ind')}[&] {{ {m.group('s')} }}();"
    return "\n".join(lines)


def helper(text: str, rng: random.Random) -> str | None:
    which = [f for f in ("__syncthreads", "__syncwarp") if re.search(r"\b" + f + r"\(\);", text)]
    ns = re.search(r"^using namespace kittens;\s*$", text, re.M)
    if not which or not ns:
        return None
    f = rng.choice(which)
    name = f"rw_helper_{f.strip('_')}"
    body = f"\n__device__ inline void {name}() {{ {f}(); }}\n"
    out = text[: ns.end()] + (body if name not in text else "") + text[ns.end() :]
    if name in text:
        body = ""
    occ = [m.start() for m in re.finditer(r"\b" + f + r"\(\);", out)]
    d = re.search(r"__device__ inline void " + name + r"\(\) \{[^}]*\}", out)
    occ = [o for o in occ if not (d and d.start() <= o < d.end())]
    if not occ:
        return None
    pos = rng.choice(occ)
    return out[:pos] + f"{name}();" + out[pos + len(f) + 3 :]


def stages(text: str, rng: random.Random) -> str | None:
    m = re.search(r"constexpr int STAGES\s*=\s*(\d+);", text)
    if not m:
        return None
    n = int(m.group(1))
    new = n - 1 if n > 2 else n + 1
    return text[: m.start(1)] + str(new) + text[m.end(1) :]


ALL = {
    "rename": rename,
    "reorder": reorder,
    "parity": parity,
    "split": split,
    "unroll": unroll,
    "lambda": lam,
    "helper": helper,
    "stages": stages,
}


def rewrite(text: str, rng: random.Random, n: int) -> tuple[str, list[str]]:
    """Apply up to n applicable rewrites chosen by rng; the text and the names applied."""
    applied = []
    names = sorted(ALL)
    for _ in range(n):
        order = names[:]
        rng.shuffle(order)
        for name in order:
            new = ALL[name](text, rng)
            if new is not None and new != text:
                text = new
                applied.append(name)
                break
    return text, applied
