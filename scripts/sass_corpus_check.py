#!/usr/bin/env python3
"""Run the SASS pass on every corpus kernel against the real ThunderKittens headers and
print, per kernel, what the SASS shows next to what the source model says, the SASS
findings, cold/warm compile times and the cache hit rate (recorded in docs/BENCHMARKS.md).

    python scripts/sass_corpus_check.py [--tk third_party/ThunderKittens] [--arch sm_90a]

Needs nvcc + nvdisasm (or cuobjdump) and a ThunderKittens checkout; exits 0 with a
message when either is missing. Exit status 1 when a clean corpus kernel has a SASS
finding or the model and the SASS disagree on a whole-kernel fact.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tkcheck import registry  # noqa: E402
from tkcheck.checks import sass_cross  # noqa: E402
from tkcheck.sass import build as sass_build  # noqa: E402
from tkcheck.sass.model import Skipped  # noqa: E402
from tkcheck.checks.analysis import Analysis  # noqa: E402
from tkcheck.engine import CheckOptions, InputError, ParseOptions, check_file, models_of  # noqa: E402
from tkcheck.frontend import read_source  # noqa: E402
from tkcheck.sass import find_toolchain  # noqa: E402
from tkcheck.sass.toolchain import ToolchainNotFound  # noqa: E402

SASS_CODES = {r.code for r in registry.all_rules() if "sass" in r.tags}


def _lines(xs) -> str:
    return "{" + ",".join(str(x) for x in xs) + "}" if xs else "{}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tk", default=str(REPO / "third_party" / "ThunderKittens"))
    ap.add_argument("--arch", default="sm_90a", help="Hopper arch (files under blackwell/ use sm_100a)")
    ap.add_argument("--corpus", default=str(REPO / "corpus"))
    args = ap.parse_args(argv)
    try:
        tc = find_toolchain()
    except ToolchainNotFound as exc:
        print(f"skipped: {exc}")
        return 0
    tk_include = Path(args.tk) / "include"
    if not (tk_include / "kittens.cuh").is_file():
        print(f"skipped: no ThunderKittens headers at {tk_include}")
        return 0
    print(f"toolchain: {tc.nvcc_version}; disassembler: {tc.disassembler_version}")
    files = sorted(p for p in Path(args.corpus).rglob("*.cu") if "ThunderKittens" not in p.parts)
    enabled = frozenset(r.code for r in registry.all_rules())
    bad = 0
    unchecked = 0
    hits = lookups = 0
    cold_total = warm_total = 0.0
    with tempfile.TemporaryDirectory(prefix="tkcheck-sass-bench-") as cache:
        for path in files:
            rel = os.path.relpath(path, REPO)
            arch = "sm_100a" if "blackwell" in path.parts else args.arch
            popts = ParseOptions(arch=arch, tk_include=str(tk_include))
            text = read_source(str(path))
            t0 = time.perf_counter()
            cold = sass_build.run_sass(str(path), text, popts, cache_dir=cache)
            t_cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            warm = sass_build.run_sass(str(path), text, popts, cache_dir=cache)
            t_warm = time.perf_counter() - t0
            if isinstance(cold, Skipped) or isinstance(warm, Skipped):
                skipped = cold if isinstance(cold, Skipped) else warm
                print(f"\n{rel}: {getattr(skipped, 'reason', '')}")
                bad += 1
                continue
            lookups += 2
            hits += int(cold.cache_hit) + int(warm.cache_hit)
            cold_total += t_cold
            warm_total += t_warm
            print(
                f"\n{rel}: cold {t_cold:.2f} s (nvcc {cold.compile_seconds:.2f} s, disassembly "
                f"{cold.disassemble_seconds:.2f} s), warm {t_warm:.2f} s (cache hit: {warm.cache_hit}); "
                f"{len(cold.kernels)} SASS kernels"
            )
            try:
                models = models_of(rel, popts, text=text)
            except InputError as exc:
                print(f"  source model not built with the real headers ({exc}): not cross-checked")
                unchecked += 1
                models = []
            for m in models:
                an = Analysis(m, arch=arch)
                sass_cross.attach(an, warm, m)
                rep = sass_cross.cross_report(an)
                if rep is None:
                    print(f"  {m.name}: no unique SASS kernel")
                    continue
                agree_mma = (rep["model_async_mma"] > 0) == (rep["sass_hgmma"] > 0)
                agree_arr = bool(rep["model_arrive_lines"]) == bool(rep["sass_arrive_lines"])
                agree_exp = bool(rep["model_expect_lines"]) == bool(rep["sass_expect_lines"])
                agree_fence = (
                    not (rep["model_fence_expectations"] and rep["sass_bulk_stores"]) or rep["sass_proxy_fences"] > 0
                )
                agree_reg = (rep["model_setmaxnreg"] > 0) == (rep["sass_usetmaxreg"] > 0)
                if " [op " in m.name:
                    # one op of an MK interpreter against the whole interpreter's SASS: what the op
                    # relies on must be there; the other ops bring the rest
                    agree_mma = not rep["model_async_mma"] or rep["sass_hgmma"] > 0
                    agree_arr = not rep["model_arrive_lines"] or bool(rep["sass_arrive_lines"])
                    agree_exp = not rep["model_expect_lines"] or bool(rep["sass_expect_lines"])
                    agree_reg = not rep["model_setmaxnreg"] or rep["sass_usetmaxreg"] > 0
                ok = agree_mma and agree_arr and agree_exp and agree_fence and agree_reg
                bad += not ok
                print(
                    f"  {m.name} ({m.kind}) -> {rep['sass_kernel']}: {rep['instructions']} instructions, "
                    f"{rep['mapped_to_user_file']} with a frame in {os.path.basename(rel)}; "
                    f"{rep['registers']} registers, spill {rep['spill_bytes']} B, "
                    f"warp-specialized {rep['warp_specialized']}; {'AGREES' if ok else 'DISAGREES'}"
                )
                print(
                    f"    tensor cores: model {rep['model_async_mma']} async MMA calls, SASS {rep['sass_hgmma']} HGMMA"
                )
                same_arr = "same" if rep["model_arrive_lines"] == rep["sass_arrive_lines"] else "differ"
                same_exp = "same" if rep["model_expect_lines"] == rep["sass_expect_lines"] else "differ"
                print(
                    f"    arrive lines: model {_lines(rep['model_arrive_lines'])}, SASS "
                    f"{_lines(rep['sass_arrive_lines'])} ({same_arr}); expect_tx lines: model "
                    f"{_lines(rep['model_expect_lines'])}, SASS {_lines(rep['sass_expect_lines'])} ({same_exp})"
                )
                print(
                    f"    proxy fences: model expects {rep['model_fence_expectations']} (fences + TMA stores), "
                    f"SASS {rep['sass_proxy_fences']} FENCE.VIEW.ASYNC, {rep['sass_bulk_stores']} bulk stores"
                )
                print(
                    f"    setmaxnreg: model {rep['model_setmaxnreg']}, SASS {rep['sass_usetmaxreg']} USETMAXREG"
                    f"{' (IGNORED by ptxas)' if rep['setmaxnreg_ignored'] else ''}"
                )
            t0 = time.perf_counter()
            res = check_file(str(path), CheckOptions(parse=popts, enabled=enabled, sass=True, sass_cache_dir=cache))
            t_check = time.perf_counter() - t0
            if "sass_cache_hit" in res.timing:
                lookups += 1
                hits += int(res.timing["sass_cache_hit"])
            sass_f = [f for f in res.findings if f.code in SASS_CODES]
            bad += len(sass_f)
            print(
                f"  tkcheck --sass (warm): {t_check:.2f} s total, SASS pass {res.timing.get('sass', 0):.2f} s; "
                f"SASS findings: {len(sass_f)}"
            )
            for f in sass_f:
                print(f"    {f.code} {f.location.row}: {f.message}")
    rate = hits / lookups if lookups else 0.0
    print(
        f"\n{len(files)} files: cold compile+disassemble {cold_total:.2f} s, warm {warm_total:.2f} s, "
        f"SASS cache hit rate {hits}/{lookups} = {rate:.0%} (first lookup of each file is the cold miss)"
    )
    print(
        "result:",
        "OK" if bad == 0 else f"{bad} problem(s)",
        f"({unchecked} file(s) without a source model to compare)" if unchecked else "",
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
