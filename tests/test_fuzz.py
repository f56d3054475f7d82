"""Bad input never becomes a traceback or a hang: random and hostile files through the CLI.

Every case runs `python -m tkcheck` in a subprocess with a timeout and checks
that the exit status is 0, 1 or 2 and that no Python traceback is printed.
The random mutations are seeded, so a failure reproduces; the whole module
stays well under two minutes on two cores.
"""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SEED = 20251129
TIMEOUT_S = 90
N_RANDOM = 24          # random mutants, checked in batches
BATCH = 6

SOURCES = sorted((ROOT / "corpus").rglob("*.cu")) + sorted((ROOT / "fixtures").rglob("*.cu"))
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|::|->|<<|>>|[{}()\[\]<>;,.=+\-*/%&|^!~?:#\"']")


def tkcheck(args, cwd: Path, stdin: bytes | None = None, timeout: float = TIMEOUT_S):
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    try:
        p = subprocess.run([sys.executable, "-m", "tkcheck", "--no-cache", *args], cwd=cwd, env=env,
                           input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tkcheck {' '.join(map(str, args))} did not finish in {timeout} s (a hang)")
    out = (p.stdout + p.stderr).decode("utf-8", errors="replace")
    return p.returncode, out


def assert_survives(rc: int, out: str, what: str):
    assert "Traceback" not in out, f"{what}: traceback\n{out[-3000:]}"
    assert rc in (0, 1, 2), f"{what}: exit status {rc}\n{out[-3000:]}"


# ---------------------------------------------------------------- random mutants

def _mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    op = rng.choice(["delete", "duplicate", "truncate", "swap", "drop_chars", "insert_tokens"])
    if op == "delete" and len(lines) > 2:
        i = rng.randrange(len(lines))
        del lines[i:i + rng.randint(1, 15)]
        return "".join(lines)
    if op == "duplicate" and lines:
        i = rng.randrange(len(lines))
        span = lines[i:i + rng.randint(1, 20)]
        j = rng.randrange(len(lines))
        return "".join(lines[:j] + span + lines[j:])
    if op == "truncate":
        return text[: rng.randrange(max(len(text), 1))]
    toks = list(TOKEN.finditer(text))
    if op == "swap" and len(toks) > 2:
        a, b = sorted(rng.sample(range(len(toks)), 2))
        ta, tb = toks[a], toks[b]
        return text[: ta.start()] + tb.group() + text[ta.end(): tb.start()] + ta.group() + text[tb.end():]
    if op == "drop_chars" and text:
        chars = list(text)
        for _ in range(rng.randint(1, 12)):
            if chars:
                del chars[rng.randrange(len(chars))]
        return "".join(chars)
    # insert_tokens (and the fallback of every op that could not apply)
    pool = ["{", "}", "(", ")", ";", "template<", ">", "__syncthreads();", "if (", "#define X",
            "wait(", "arrive(", "tma::load_async(", "::", "return;", "while (1)", "#endif", "\"", "'"]
    pos = rng.randrange(len(text) + 1)
    return text[:pos] + " ".join(rng.choice(pool) for _ in range(rng.randint(1, 8))) + text[pos:]


def _mutants() -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    texts = [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in SOURCES]
    out = []
    for i in range(N_RANDOM if texts else 0):
        name, text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        out.append((f"m{i:02d}_{name}", text))
    return out


MUTANTS = _mutants()
BATCHES = [MUTANTS[i:i + BATCH] for i in range(0, len(MUTANTS), BATCH)]


@pytest.mark.skipif(not SOURCES, reason="no corpus or fixture kernels to mutate")
@pytest.mark.parametrize("batch", range(len(BATCHES)), ids=[f"batch{i}" for i in range(len(BATCHES))])
def test_random_mutants(tmp_path, batch):
    names = []
    for name, text in BATCHES[batch]:
        (tmp_path / name).write_text(text, encoding="utf-8", errors="replace")
        names.append(name)
    rc, out = tkcheck(["-j", "2", "--output-format", "concise", *names], tmp_path)
    assert_survives(rc, out, f"seed {SEED}, mutants {names}")


# ---------------------------------------------------------------- hostile files

def _macro_soup() -> str:
    lines = ["#define M0 1"]
    lines += [f"#define M{i} (M{i - 1} + {i})" for i in range(1, 200)]
    lines += ["#define D0 x"] + [f"#define D{i} D{i - 1} D{i - 1}" for i in range(1, 12)]
    lines += ["#define CALL(f, ...) f(__VA_ARGS__)", "#define WAIT(b, p) CALL(wait, b, p)"]
    lines += ['#include "kittens.cuh"', "using namespace kittens;",
              "__global__ __launch_bounds__(M3, 1) void k() {",
              "    __shared__ semaphore bar;",
              "    if (threadIdx.x == M0 - 1) init_semaphore(bar, 0, M199 % 3);",
              "    __syncthreads();",
              "    WAIT(bar, M199 % 2);",
              "    int D11;",
              "}"]
    return "\n".join(lines) + "\n"


def _hostile() -> dict[str, bytes]:
    rng = random.Random(SEED + 1)
    base = SOURCES[0].read_bytes() if SOURCES else b'#include "kittens.cuh"\n__global__ void k() {}\n'
    return {
        "garbage.cu": bytes(rng.randrange(256) for _ in range(50_000)),
        "latin1.cu": base.replace(b"//", "// é ü \xff\xfe".encode("latin-1") + b"//", 20) + b"\xc3\x28\xa0\xa1",
        "huge.cu": b"// padding\n" * (10 * 1024 * 1024 // 11),
        "braces.cu": b'#include "kittens.cuh"\n__global__ void k() {\n' + b"{ if (threadIdx.x) { {" * 300 + b"\n",
        "closers.cu": b"}}}}))))]]]]" * 100 + b"\n__global__ void k() {}\n",
        "macro_soup.cu": _macro_soup().encode(),
        "nested_parens.cu": b"__global__ void k() { int x = " + b"(" * 3000 + b"1" + b")" * 3000 + b"; }\n",
        "empty.cu": b"",
        "bom_crlf.cu": b"\xef\xbb\xbf" + base.replace(b"\n", b"\r\n"),
        "long_line.cu": b"__global__ void k() { int x = 0" + b" + 1" * 200_000 + b"; }\n",
        "self_include.cu": b'#include "self_include.cu"\n__global__ void k() {}\n',
        "missing_include.cu": b'#include "no/such/header.cuh"\n' + base,
        "template_bomb.cu": (b"template<int N> struct F { static const int v = F<N-1>::v + 1; };\n"
                             b"template<> struct F<0> { static const int v = 0; };\n"
                             b"__global__ void k() { int x = F<5000>::v; }\n"),
    }


HOSTILE = _hostile()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file(tmp_path, name):
    (tmp_path / name).write_bytes(HOSTILE[name])
    rc, out = tkcheck(["--output-format", "full", name], tmp_path)
    assert_survives(rc, out, name)
    if name in ("garbage.cu", "huge.cu"):
        assert rc == 2 and "TK000" in out


@pytest.mark.parametrize("name", ["garbage.cu", "latin1.cu", "huge.cu"])
def test_hostile_stdin(tmp_path, name):
    rc, out = tkcheck(["--stdin-filename", name, "-"], tmp_path, stdin=HOSTILE[name])
    assert_survives(rc, out, f"stdin {name}")
    if name != "latin1.cu":
        assert rc == 2


def test_hostile_config(tmp_path):
    (tmp_path / "k.cu").write_bytes(b"__global__ void k() {}\n")
    (tmp_path / "tkcheck.toml").write_bytes(b"select = [\xff\n")
    rc, out = tkcheck(["k.cu"], tmp_path)
    assert_survives(rc, out, "bad config")
    assert rc == 2
