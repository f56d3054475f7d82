"""Bad input never becomes a traceback or a hang: random and hostile files through the CLI.

Every case runs `python -m tkcheck` in a subprocess with a limit and checks that the exit status
is 0, 1 or 2 (2 where the input is an error), that no Python traceback is printed and that it
answers in time. The random mutations are seeded, so a failure reproduces; the other kinds
(garbage, non-UTF-8, huge lines, macro bombs, deep nesting, special files, hostile configuration
and standard input) come from scripts/fuzz.py, which also prints the table in docs/BENCHMARKS.md.
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
# tkcheck's own limit per file, and the hang guard from outside well above it (two busy cores
# shared with other work must not turn a slow run into a "hang")
FILE_TIMEOUT_S = 60
TIMEOUT_S = 240
# the cases whose answer is tkcheck's own time limit, and that limit for them (scripts/fuzz.py keeps
# 45 s for every other case). macros24.cu expands to 16 M tokens that clang parses and the walk
# never finishes: with 45 s it was 45 s of a core per run (idle machine) for the answer 15 s gives
# (exit 2, "stopped after N s", no traceback). macros30 and macros200 keep 45 s: they end at the
# memory limit (libclang's bad_alloc, exit 2) and under load that takes more than 15 s.
TIME_LIMITED = {"macros24.cu"}
BOMB_FILE_TIMEOUT_S = 15
N_RANDOM = 24  # random mutants, checked in batches
BATCH = 6

SOURCES = sorted((ROOT / "corpus").rglob("*.cu")) + sorted((ROOT / "fixtures").rglob("*.cu"))
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|::|->|<<|>>|[{}()\[\]<>;,.=+\-*/%&|^!~?:#\"']")


def tkcheck(args, cwd: Path, stdin: bytes | None = None, timeout: float = TIMEOUT_S):
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    try:
        p = subprocess.run(
            [sys.executable, "-m", "tkcheck", "--no-cache", "--file-timeout", str(FILE_TIMEOUT_S), *args],
            cwd=cwd,
            env=env,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout,
        )
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
        del lines[i : i + rng.randint(1, 15)]
        return "".join(lines)
    if op == "duplicate" and lines:
        i = rng.randrange(len(lines))
        span = lines[i : i + rng.randint(1, 20)]
        j = rng.randrange(len(lines))
        return "".join(lines[:j] + span + lines[j:])
    if op == "truncate":
        return text[: rng.randrange(max(len(text), 1))]
    toks = list(TOKEN.finditer(text))
    if op == "swap" and len(toks) > 2:
        a, b = sorted(rng.sample(range(len(toks)), 2))
        ta, tb = toks[a], toks[b]
        return text[: ta.start()] + tb.group() + text[ta.end() : tb.start()] + ta.group() + text[tb.end() :]
    if op == "drop_chars" and text:
        chars = list(text)
        for _ in range(rng.randint(1, 12)):
            if chars:
                del chars[rng.randrange(len(chars))]
        return "".join(chars)
    # insert_tokens (and the fallback of every op that could not apply)
    pool = [
        "{",
        "}",
        "(",
        ")",
        ";",
        "template<",
        ">",
        "__syncthreads();",
        "if (",
        "#define X",
        "wait(",
        "arrive(",
        "tma::load_async(",
        "::",
        "return;",
        "while (1)",
        "#endif",
        "\"",
        "'",
    ]
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
BATCHES = [MUTANTS[i : i + BATCH] for i in range(0, len(MUTANTS), BATCH)]


@pytest.mark.skipif(not SOURCES, reason="no corpus or fixture kernels to mutate")
@pytest.mark.parametrize("batch", range(len(BATCHES)), ids=[f"batch{i}" for i in range(len(BATCHES))])
def test_random_mutants(tmp_path, batch):
    names = []
    for name, text in BATCHES[batch]:
        (tmp_path / name).write_text(text, encoding="utf-8", errors="replace")
        names.append(name)
    rc, out = tkcheck(["-j", "2", "--output-format", "concise", *names], tmp_path)
    assert_survives(rc, out, f"seed {SEED}, mutants {names}")


# ---------------------------------------------------------------- every other kind (scripts/fuzz.py)


def _fuzz_module():
    import importlib.util as iu

    spec = iu.spec_from_file_location("tkcheck_fuzz", ROOT / "scripts" / "fuzz.py")
    mod = iu.module_from_spec(spec)
    sys.modules["tkcheck_fuzz"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


FUZZ = _fuzz_module()
KINDS = [c for c in FUZZ.cases(SEED, n_mutants=0)]


def test_the_time_limited_cases_are_fuzz_cases():
    """TIME_LIMITED names cases scripts/fuzz.py makes (a renamed case would get 45 s again)."""
    assert TIME_LIMITED <= {c.name for c in KINDS}


@pytest.mark.parametrize("case", range(len(KINDS)), ids=[f"{c.kind}: {c.name}" for c in KINDS])
def test_fuzz_case(tmp_path, case):
    """Garbage, non-UTF-8, huge lines, macro bombs, deep nesting, special files, hostile configs
    and standard input: exit 0/1/2 only (2 where the input is an error), no traceback, no hang."""
    c = KINDS[case]
    limit = BOMB_FILE_TIMEOUT_S if c.name in TIME_LIMITED else FUZZ.FILE_TIMEOUT_S
    o = FUZZ.run_case(c, tmp_path, limit_s=TIMEOUT_S, file_timeout_s=limit)
    assert not o.hung, f"{c.name}: no answer in {TIMEOUT_S} s (tkcheck's own limit is {limit} s)"
    assert not o.traceback, f"{c.name}: traceback\n{o.output[-3000:]}"
    assert not o.misused, f"{c.name}: exit status {o.rc}{' (expected 2)' if c.must_fail else ''}\n{o.output[-3000:]}"


HOSTILE_STDIN = {
    "garbage.cu": bytes(random.Random(SEED + 1).randrange(256) for _ in range(50_000)),
    "latin1.cu": (SOURCES[0].read_bytes() if SOURCES else b"__global__ void k() {}\n") + "// é \xff".encode("latin-1"),
    "huge.cu": b"// padding\n" * (10 * 1024 * 1024 // 11),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_STDIN))
def test_hostile_stdin(tmp_path, name):
    rc, out = tkcheck(["--stdin-filename", name, "-"], tmp_path, stdin=HOSTILE_STDIN[name])
    assert_survives(rc, out, f"stdin {name}")
    if name != "latin1.cu":
        assert rc == 2


def test_hostile_config(tmp_path):
    (tmp_path / "k.cu").write_bytes(b"__global__ void k() {}\n")
    (tmp_path / "tkcheck.toml").write_bytes(b"select = [\xff\n")
    rc, out = tkcheck(["k.cu"], tmp_path)
    assert_survives(rc, out, "bad config")
    assert rc == 2
