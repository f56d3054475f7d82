"""Every check the suite's sweeps make, dumped whole as JSON, to hold a speed-up to identical answers.

    python scripts/dump_checks.py -o /tmp/before.json            # on the tree before the change
    python scripts/dump_checks.py -o /tmp/after.json             # on the tree after it
    python scripts/dump_checks.py --compare /tmp/before.json /tmp/after.json

What is checked: every corpus kernel with `tkcheck eval`'s options (`evaluate.check_clean`), every
fixture with its own settings (`expectations.options_for`, as test_fixtures checks it) and every
planted bug of corpus/mutations*.toml (`evaluate.mutation_input`, written under `--workdir`, which
must be the same folder for the two runs since the paths are in the results) and of the new-idiom
sets (corpus/idiomsN/mutations*.toml, as tests/test_new_idioms.py checks them: `idiom-mutation:idiomsN:ID`). What is written per
check: the whole `FileResult` (findings with their witnesses, traces, related notes and fixes;
notes; kernels; coverage with its obligations; inconclusive counts; internal errors; dependencies),
less its `timing`, its `source` and any field named `seconds` / `*_s` / `*_ms` measured by the
clock. Each check runs in a child forked from this (warm) process, one at a time or `-j N` at
once: z3's answers drift with what a process checked before (docs/DEVELOPING.md, "One process,
many checks"), so a check of its own is the comparable unit. `--only SUBSTR` keeps the targets
whose name contains it; `--cpu` adds each check's CPU seconds (child user + sys) to a separate
table printed at the end (never compared). `--budget N` checks everything at solver budget N (the
budget sweep's tiny budgets, where a change to how unknowns are handled shows).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the corpus and fixtures checked are this clone's

# the tkcheck checked is the one imported (PYTHONPATH): a scratch copy of the tree before a change
# checks this clone's files, so the paths in the two dumps agree
from tkcheck import evaluate  # noqa: E402
from tkcheck.engine import check_file  # noqa: E402
from tkcheck.expectations import options_for, parse_fixture  # noqa: E402

_CLOCK_KEYS = ("timing", "source", "seconds", "solver_seconds")


def plain(obj: object) -> object:
    """A JSON-able copy of a result: dataclasses field by field, sets sorted, clock fields dropped."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: plain(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.name not in _CLOCK_KEYS and not f.name.endswith(("_s", "_ms"))
        }
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items() if str(k) not in _CLOCK_KEYS}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((plain(v) for v in obj), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


def targets(workdir: Path) -> list[tuple[str, str, object, str]]:
    """(name, path, options, text) of every check."""
    corpus = ROOT / "corpus"
    out: list[tuple[str, str, object, str]] = []
    for p in evaluate.clean_kernels(corpus):
        out.append(
            (f"corpus:{p.relative_to(ROOT)}", str(p), evaluate.options(arch=evaluate.kernel_arch(p)), p.read_text())
        )
    for p in sorted((ROOT / "fixtures").rglob("*.cu")):
        text = p.read_text(errors="replace")
        settings, _ = parse_fixture(text)
        out.append((f"fixture:{p.relative_to(ROOT)}", str(p), options_for(settings), text))
    for m in evaluate.load_mutations(corpus):
        if m.problem:
            continue
        try:
            target, text, opts = evaluate.mutation_input(corpus, m, workdir)
        except ValueError:
            continue
        out.append((f"mutation:{m.id}", str(target), opts, text))
    for folder in sorted(d for d in corpus.iterdir() if d.is_dir() and any(d.glob("mutations*.toml"))):
        # the new-idiom sets' planted bugs (tests/test_new_idioms.py checks each once)
        for m in evaluate.load_mutations(folder):
            if m.problem:
                continue
            try:
                target, text, opts = evaluate.mutation_input(folder, m, workdir / folder.name)
            except ValueError:
                continue
            out.append((f"idiom-mutation:{folder.name}:{m.id}", str(target), opts, text))
    return out


def _one(job: tuple[str, str, object, str]) -> tuple[str, object, float]:
    name, path, opts, text = job
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    res = check_file(path, opts, text=text)  # type: ignore[arg-type]
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return name, plain(res), cpu


def _load(path: Path) -> dict:
    """A dump's checks, with the path of the tkcheck package that made it written `<tkcheck>` (a
    finding's related note may name a file of the package's own, such as a protocol's template)."""
    text = path.read_text()
    package = json.loads(text).get("package")
    if package:
        text = text.replace(json.dumps(package + "/")[1:-1], "<tkcheck>/")
    return json.loads(text)["checks"]


def compare(a_path: Path, b_path: Path) -> int:
    a = _load(a_path)
    b = _load(b_path)
    bad = 0
    only = sorted(set(a) ^ set(b))
    for name in only:
        print(f"only in {'the first' if name in a else 'the second'}: {name}")
    for name in sorted(set(a) & set(b)):
        if a.get(name) != b.get(name):
            bad += 1
            print(f"DIFFERS: {name}")
            if name in a and name in b:
                for k in sorted(set(a[name]) | set(b[name])):
                    if a[name].get(k) != b[name].get(k):
                        print(f"  field {k}")
    print(f"{len(set(a) & set(b))} checks in both, {bad} differ, {len(only)} in one only")
    return 1 if bad or only else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tkcheck_dump_checks")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--compare", nargs=2, type=Path)
    ap.add_argument("--budget", type=int, help="Every check at this solver budget (the budget sweep's 1 or 3000).")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare)
    if not a.output:
        ap.error("-o is needed (or --compare A B)")
    jobs = [j for j in targets(a.workdir) if not a.only or any(s in j[0] for s in a.only)]
    if a.budget is not None:
        jobs = [(n, p, dataclasses.replace(o, solver_budget=a.budget), t) for n, p, o, t in jobs]  # type: ignore[type-var]
    print(f"tkcheck from {Path(evaluate.__file__).parent}, {len(jobs)} checks", flush=True)
    t0 = time.time()
    checks: dict[str, object] = {}
    cpu: dict[str, float] = {}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(a.jobs, maxtasksperchild=1) as pool:
        for name, res, c in pool.imap_unordered(_one, jobs):
            checks[name] = res
            cpu[name] = round(c, 2)
    package = str(Path(evaluate.__file__).resolve().parent)
    a.output.write_text(json.dumps({"checks": checks, "cpu": cpu, "package": package}, sort_keys=True, indent=0))
    top = sorted(cpu.items(), key=lambda kv: -kv[1])[:15]
    for name, c in top:
        print(f"{c:8.2f} s  {name}")
    print(f"{len(checks)} checks, {sum(cpu.values()):.1f} s CPU in the checks, {time.time() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
