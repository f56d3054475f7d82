"""A seeded, bounded fuzz run of the command line: every input must end with exit 0, 1 or 2, no
Python traceback, and within its limit.

    python scripts/fuzz.py                 # the table for docs/BENCHMARKS.md
    python scripts/fuzz.py --seed 7 --mutants 60

Inputs, by kind (all generated here, from the repository's own corpus and
fixtures): mutated kernels (lines deleted, duplicated, swapped, truncated,
tokens dropped or inserted), garbage bytes, non-UTF-8 text, huge lines and
files, macro and template bombs, deep nesting, special files (FIFOs, links to
devices, folders named like sources, includes of devices), hostile
configurations (unsafe compiler options, wrong types, broken TOML,
compile_commands with shell text) and hostile standard input.

tests/test_fuzz.py runs the same generator (a smaller seeded sample) in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 20251129
LIMIT_S = 90  # per input, from outside (a hang past it is a failure)
FILE_TIMEOUT_S = 45  # tkcheck's own --file-timeout and --file-memory during the run
FILE_MEMORY_MB = 3072
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|::|->|<<|>>|[{}()\[\]<>;,.=+\-*/%&|^!~?:#\"']")
HEADER = b'#include "kittens.cuh"\nusing namespace kittens;\n'


@dataclass
class Case:
    kind: str
    name: str
    files: dict[str, bytes] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # after the files are written (cwd = the case folder)
    stdin: bytes | None = None
    special: str | None = None  # "fifo:NAME", "link:NAME->TARGET", "dir:NAME"
    must_fail: bool = False  # exit 2 expected (an input error)


def sources() -> list[Path]:
    return sorted((ROOT / "corpus").rglob("*.cu")) + sorted((ROOT / "fixtures").rglob("*.cu"))


def mutate(text: str, rng: random.Random) -> str:
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
        "/* tkcheck: ignore[",
        "// tkcheck: disable[TK3]",
        "__launch_bounds__(1<<30, 1)",
        "#include \"x.h\"",
    ]
    pos = rng.randrange(len(text) + 1)
    return text[:pos] + " ".join(rng.choice(pool) for _ in range(rng.randint(1, 8))) + text[pos:]


def _macro_bomb(depth: int) -> bytes:
    lines = ["#define M0 1"] + [f"#define M{i} (M{i - 1} + M{i - 1})" for i in range(1, depth)]
    lines += ["#define D0 x"] + [f"#define D{i} D{i - 1} D{i - 1}" for i in range(1, 12)]
    return (
        HEADER
        + (
            "\n".join(lines) + f"\n__global__ __launch_bounds__(128, 1) void k() {{ int v = M{depth - 1}; "
            "__syncthreads(); }\n"
        ).encode()
    )


def _nest(n: int, opener: str, closer: str) -> bytes:
    return (
        HEADER
        + (
            f"__global__ __launch_bounds__(128, 1) void k(int n) {{\n{opener * n}\n"
            f"if (threadIdx.x < 32) __syncthreads();\n{closer * n}\n}}\n"
        ).encode()
    )


def cases(seed: int = SEED, n_mutants: int = 40) -> list[Case]:
    rng = random.Random(seed)
    srcs = sources()
    texts = [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in srcs]
    base = srcs[0].read_bytes() if srcs else HEADER + b"__global__ void k() {}\n"
    out: list[Case] = []
    for i in range(n_mutants if texts else 0):
        name, text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng)
        out.append(Case("mutated kernel", f"m{i:03d}_{name}", {f"m{i:03d}_{name}": text.encode("utf-8", "replace")}))
    for i in range(6):
        n = rng.choice([0, 1, 100, 5000, 50_000, 400_000])
        out.append(
            Case("garbage bytes", f"garbage{i}.cu", {f"garbage{i}.cu": bytes(rng.randrange(256) for _ in range(n))})
        )
    for i, enc in enumerate(["latin-1", "utf-16", "cp1252"]):
        text = base.decode("utf-8", "replace") + "\n// é ü ß ✓\n"
        out.append(Case("non-UTF-8 text", f"enc{i}.cu", {f"enc{i}.cu": text.encode(enc, "replace") + b"\xc3\x28\xff"}))
    out.append(Case("non-UTF-8 text", "bom_crlf.cu", {"bom_crlf.cu": b"\xef\xbb\xbf" + base.replace(b"\n", b"\r\n")}))
    out.append(Case("non-UTF-8 text", "cr_only.cu", {"cr_only.cu": base.replace(b"\n", b"\r")}))
    out.append(
        Case(
            "huge lines and files",
            "long_line.cu",
            {"long_line.cu": b"__global__ void k() { int x = 0" + b" + 1" * 200_000 + b"; }\n"},
        )
    )
    out.append(
        Case("huge lines and files", "huge.cu", {"huge.cu": b"// padding\n" * (10 * 1024 * 1024 // 11)}, must_fail=True)
    )
    out.append(
        Case(
            "huge lines and files",
            "many_kernels.cu",
            {
                "many_kernels.cu": HEADER
                + b"".join(
                    f"__global__ __launch_bounds__(128, 1) void k{i}() {{ __syncthreads(); }}\n".encode()
                    for i in range(3000)
                )
            },
        )
    )
    out.append(
        Case(
            "huge lines and files",
            "nested_parens.cu",
            {"nested_parens.cu": b"__global__ void k() { int x = " + b"(" * 3000 + b"1" + b")" * 3000 + b"; }\n"},
        )
    )
    for depth in (24, 30, 200):
        out.append(Case("macro and template bombs", f"macros{depth}.cu", {f"macros{depth}.cu": _macro_bomb(depth)}))
    out.append(
        Case(
            "macro and template bombs",
            "template_bomb.cu",
            {
                "template_bomb.cu": (
                    b"template<int N> struct F { static const int v = F<N-1>::v + 1; };\n"
                    b"template<> struct F<0> { static const int v = 0; };\n__global__ void k() { int x = F<5000>::v; }\n"
                )
            },
        )
    )
    out.append(
        Case(
            "macro and template bombs",
            "launch_bounds_bomb.cu",
            {
                "launch_bounds_bomb.cu": HEADER
                + (
                    b"#define N (1 << 30)\n__global__ __launch_bounds__(N, 1) void k() { __shared__ semaphore b; "
                    b"if (threadIdx.x == 0) init_semaphore(b, 1, 0); __syncthreads(); wait(b, 0); }\n"
                )
            },
        )
    )
    for n in (300, 3000):
        out.append(
            Case("deep nesting", f"loops{n}.cu", {f"loops{n}.cu": _nest(n, "for (int i = 0; i < n; i++) {\n", "}\n")})
        )
        out.append(Case("deep nesting", f"braces{n}.cu", {f"braces{n}.cu": _nest(n, "{ if (threadIdx.x) {", "}}")}))
    out.append(
        Case("deep nesting", "closers.cu", {"closers.cu": b"}}}}))))]]]]" * 100 + b"\n__global__ void k() {}\n"})
    )
    if hasattr(os, "mkfifo"):
        out.append(Case("special files", "fifo.cu", special="fifo:fifo.cu", args=["fifo.cu"], must_fail=True))
        out.append(
            Case(
                "special files",
                "fifo.cu (--debug)",
                special="fifo:fifo.cu",
                args=["--debug", "fifo.cu"],
                must_fail=True,
            )
        )
        out.append(
            Case(
                "special files",
                "include of a FIFO",
                {"inc_fifo.cu": b'#include "pipe.h"\n' + base},
                special="fifo:pipe.h",
                args=["inc_fifo.cu"],
                must_fail=True,
            )
        )
    if os.path.exists("/dev/zero"):
        out.append(Case("special files", "/dev/zero", args=["/dev/zero"], must_fail=True))
        out.append(
            Case(
                "special files",
                "link to /dev/zero in a folder",
                {"src/ok.cu": base},
                special="link:src/zero.cu->/dev/zero",
                args=["src"],
                must_fail=True,
            )
        )
        for target in ("/dev/zero", "/dev/stdin", "/dev/urandom"):
            out.append(
                Case(
                    "special files",
                    f"#include \"{target}\"",
                    {"inc.cu": f'#include "{target}"\n'.encode() + base},
                    args=["inc.cu"],
                    must_fail=True,
                )
            )
        out.append(
            Case(
                "special files",
                "-include /dev/zero",
                {"k.cu": base},
                args=["--config", 'clang-args=["-include", "/dev/zero"]', "k.cu"],
                must_fail=True,
            )
        )
    out.append(Case("special files", "folder named x.cu", {"x.cu/inner.txt": b"x"}, args=["x.cu"]))
    out.append(Case("special files", "self include", {"self.cu": b'#include "self.cu"\n__global__ void k() {}\n'}))
    out.append(Case("special files", "missing include", {"missing.cu": b'#include "no/such.cuh"\n' + base}))
    for i, (key, value) in enumerate(
        [
            ("clang-args", '["-MD", "-MF", ".git/hooks/pre-commit"]'),
            ("clang-args", '["-fplugin=./x.so"]'),
            ("clang-args", '["@resp.txt"]'),
            ("defines", '["X=1\\n#include </dev/zero>"]'),
            ("select", "3"),
            ("arch", '"sm_75"'),
            ("per-file-ignores", '["x"]'),
            ("confirm", '{build = 3}'),
        ]
    ):
        out.append(
            Case(
                "hostile configuration",
                f"config{i}:{key}",
                {"k.cu": base, "tkcheck.toml": f"{key} = {value}\n".encode()},
                args=["k.cu"],
                must_fail=True,
            )
        )
    out.append(
        Case(
            "hostile configuration",
            "broken TOML",
            {"k.cu": base, "tkcheck.toml": b"select = [\xff\n"},
            args=["k.cu"],
            must_fail=True,
        )
    )
    out.append(
        Case(
            "hostile configuration",
            "compile_commands with shell text",
            {
                "k.cu": base,
                "compile_commands.json": json.dumps(
                    [
                        {
                            "directory": ".",
                            "file": "k.cu",
                            "command": "nvcc -I'$(touch MARKER)' -DX='`touch MARKER`' k.cu",
                        }
                    ]
                ).encode(),
            },
            args=["-p", ".", "k.cu"],
        )
    )
    out.append(
        Case(
            "hostile configuration",
            "compile_commands not JSON",
            {"k.cu": base, "compile_commands.json": b"{"},
            args=["-p", ".", "k.cu"],
            must_fail=True,
        )
    )
    for i, data in enumerate([bytes(rng.randrange(256) for _ in range(20_000)), b"", base, b"\x00" * 100]):
        out.append(Case("hostile standard input", f"stdin{i}", args=["--stdin-filename", "s.cu", "-"], stdin=data))
    return out


def _setup(case: Case, d: Path):
    for name, data in case.files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    if case.special:
        kind, _, spec = case.special.partition(":")
        if kind == "fifo":
            os.mkfifo(d / spec)
        elif kind == "link":
            name, _, target = spec.partition("->")
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, d / name)


@dataclass
class Outcome:
    case: Case
    rc: int | None
    output: str
    hung: bool

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.output or "Exception ignored" in self.output

    @property
    def misused(self) -> bool:
        """An exit status other than 0/1/2, or a success for an input that must fail."""
        return self.rc not in (0, 1, 2) or (self.case.must_fail and self.rc != 2)


def run_case(case: Case, workdir: Path, limit_s: float = LIMIT_S, file_timeout_s: float = FILE_TIMEOUT_S) -> Outcome:
    """`file_timeout_s`: tkcheck's own `--file-timeout` for the run (the test suite gives a shorter
    one to the bomb that only this limit ends: the answer is the same, the CPU spent is not)."""
    d = Path(tempfile.mkdtemp(prefix="case-", dir=workdir))
    _setup(case, d)
    args = case.args or list(case.files)[:1]
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    # tkcheck's own limits, below this run's: a bomb ends as an exit 2, not as a kill from outside
    cmd = [
        sys.executable,
        "-m",
        "tkcheck",
        "--no-cache",
        "--output-format",
        "full",
        "--file-timeout",
        str(file_timeout_s),
        "--file-memory",
        str(FILE_MEMORY_MB),
        *args,
    ]
    try:
        p = subprocess.run(
            cmd,
            cwd=d,
            env=env,
            input=case.stdin if case.stdin is not None else b"",
            capture_output=True,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired as e:
        return Outcome(case, None, ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace"), True)
    out = (p.stdout + p.stderr).decode("utf-8", errors="replace")
    if (d / "MARKER").exists():  # a command from the input ran
        out += "\nFUZZ: a command from the input ran (MARKER written)"
        return Outcome(case, 99, out, False)
    return Outcome(case, p.returncode, out, False)


def table(outcomes: list[Outcome]) -> str:
    kinds: dict[str, list[Outcome]] = {}
    for o in outcomes:
        kinds.setdefault(o.case.kind, []).append(o)
    rows = [
        "| kind | inputs | exit 0 | exit 1 | exit 2 | tracebacks | hangs | exit-code misuse |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, os_ in kinds.items():
        rows.append(
            f"| {kind} | {len(os_)} | {sum(o.rc == 0 for o in os_)} | {sum(o.rc == 1 for o in os_)} | "
            f"{sum(o.rc == 2 for o in os_)} | {sum(o.traceback for o in os_)} | {sum(o.hung for o in os_)} | "
            f"{sum(o.misused for o in os_ if not o.hung)} |"
        )
    rows.append(
        f"| **all** | {len(outcomes)} | {sum(o.rc == 0 for o in outcomes)} | {sum(o.rc == 1 for o in outcomes)} | "
        f"{sum(o.rc == 2 for o in outcomes)} | {sum(o.traceback for o in outcomes)} | "
        f"{sum(o.hung for o in outcomes)} | {sum(o.misused for o in outcomes if not o.hung)} |"
    )
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--mutants", type=int, default=40)
    ap.add_argument("--limit", type=float, default=LIMIT_S, help="seconds per input")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tkcheck-fuzz-") as wd:
        outcomes = [run_case(c, Path(wd), a.limit) for c in cases(a.seed, a.mutants)]
    print(f"seed {a.seed}, {a.mutants} mutated kernels, limit {a.limit:g} s per input\n")
    print(table(outcomes))
    bad = [o for o in outcomes if o.hung or o.traceback or o.misused]
    for o in bad:
        print(f"FAILED {o.case.kind}: {o.case.name}: rc={o.rc} hung={o.hung}\n{o.output[-1500:]}\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
