"""Protocols of TK's prototype templates, modelled once and reused.

Each template (lcf, lcsf) is described by a small pseudo-CUDA file in this
folder, written for tkcheck. The front end walks the file's protocol function
with `lcft` bound to the user's template struct and inlines the user's
callbacks, so the user's `producer::load` / `consumer::compute` code is checked
against the barriers, counts and phases the template sets up.

This package holds the files and the text searches over the user's source that
pick one; parsing a protocol file is the front end's (`frontend.parse.protocol_function`).
"""
from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROTOCOL_FILES = {"lcf": "lcf.cu", "lcsf": "lcsf.cu", "lcsc": "lcsc.cu", "mk_worker": "mk_worker.cu",
                  # one op of a prototype::interpreter pack, with or without producer::store
                  "interpreter": "interpreter.cu", "interpreter_load_only": "interpreter.cu"}
# the TK phase bitfields the protocol files keep (`update_phasebit<n>(NAME, ring)`), so that their
# constant initialisations are phase-bit sets (tests/test_phases.py checks the files against it)
PHASE_BITFIELDS = frozenset({"semaphore_bitfield"})


def template_kind_for(text: str, struct_name: str) -> str:
    """Which template the user's struct is launched with (default lcf)."""
    m = re.search(r"\b(lcf|lcsf|lcsc|pc|interpreter)\s*::\s*(?:kernel|main_kernel)\s*<\s*" + re.escape(struct_name)
                  + r"\b", text)
    if m:
        return m.group(1)
    m = re.search(r"\b(lcf|lcsf|lcsc|pc|interpreter)\s*::\s*(?:launch_kernel|main_kernel)\s*<[^;]*?\b" + re.escape(struct_name)
                  + r"\s*>", text)
    if m:
        return m.group(1)
    if re.search(r"\bpc\s*<\s*(?:\w+::)*" + re.escape(struct_name) + r"\s*>", text):
        return "pc"          # TK's first prototype template (2024): not modelled
    if re.search(r"using\s+namespace\s+(kittens::)?prototype::lcsf\b", text):
        return "lcsf"
    return "lcf"


def launch_type_args(text: str, struct_name: str) -> list[str] | None:
    """[config, globals] of `lcsc::launch_kernel<config, globals, NAME>` (or main_kernel)."""
    m = re.search(r"\blcsc\s*::\s*(?:launch_kernel|main_kernel)\s*<\s*([\w:]+)\s*,\s*([\w:]+)\s*,\s*"
                  + re.escape(struct_name) + r"\s*>", text)
    return [m.group(1), m.group(2)] if m else None


