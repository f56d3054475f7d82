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

PROTOCOL_FILES = {
    "lcf": "lcf.cu",
    "lcsf": "lcsf.cu",
    "lcsc": "lcsc.cu",
    "mk_worker": "mk_worker.cu",
    # one op of a prototype::interpreter pack, with or without producer::store
    "interpreter": "interpreter.cu",
    "interpreter_load_only": "interpreter.cu",
}
# the TK phase bitfields the protocol files keep (`update_phasebit<n>(NAME, ring)`), so that their
# constant initialisations are phase-bit sets (tests/test_phases.py checks the files against it)
PHASE_BITFIELDS = frozenset({"semaphore_bitfield"})


def template_kind_for(text: str, struct_name: str) -> str:
    """Which template the user's struct is launched with (default lcf)."""
    m = re.search(
        r"\b(lcf|lcsf|lcsc|pc|interpreter)\s*::\s*(?:kernel|main_kernel)\s*<\s*" + re.escape(struct_name) + r"\b", text
    )
    if m:
        return m.group(1)
    m = re.search(
        r"\b(lcf|lcsf|lcsc|pc|interpreter)\s*::\s*(?:launch_kernel|main_kernel)\s*<[^;]*?\b"
        + re.escape(struct_name)
        + r"\s*>",
        text,
    )
    if m:
        return m.group(1)
    if re.search(r"\bpc\s*<\s*(?:\w+::)*" + re.escape(struct_name) + r"\s*>", text):
        return "pc"  # TK's first prototype template (2024): not modelled
    if re.search(r"using\s+namespace\s+(kittens::)?prototype::lcsf\b", text):
        return "lcsf"
    return "lcf"


def launch_type_args(text: str, struct_name: str) -> list[str] | None:
    """[config, globals] of `lcsc::launch_kernel<config, globals, NAME>` (or main_kernel)."""
    m = re.search(
        r"\blcsc\s*::\s*(?:launch_kernel|main_kernel)\s*<\s*([\w:]+)\s*,\s*([\w:]+)\s*,\s*"
        + re.escape(struct_name)
        + r"\s*>",
        text,
    )
    return [m.group(1), m.group(2)] if m else None


def interpreter_ops(text: str) -> list[list[str]]:
    """The op packs of `interpreter::kernel<config, op1, op2>` / `interpreter::run<config, ...>` in
    comment-free text: per launch, the ops' spellings (`partial_template<16>`), config left out."""
    out = []
    for m in re.finditer(r"\binterpreter\s*::\s*(?:kernel|run)\s*<", text):
        args = _template_args(text, m.end())
        if args and len(args) >= 2:
            out.append(args[1:])
    return out


def _template_args(text: str, start: int) -> list[str] | None:
    """The comma-separated arguments of a template argument list opened just before `start`."""
    depth = 1
    args: list[str] = []
    cur: list[str] = []
    for i in range(start, min(len(text), start + 4000)):
        ch = text[i]
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return [" ".join(a.split()) for a in args if a]
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            continue
        elif ch == ";":
            return None
        cur.append(ch)
    return None


def protocol_file(kind: str) -> Path | None:
    """The pseudo-CUDA file modelling `kind`'s protocol; None when tkcheck has none."""
    fname = PROTOCOL_FILES.get(kind)
    if fname is None:
        return None
    path = HERE / fname
    return path if path.exists() else None


def protocol_function_name(kind: str) -> str:
    """The function in `protocol_file(kind)` that holds the protocol."""
    return {"mk_worker": "tkcheck_mk_worker"}.get(kind, f"tkcheck_{kind}_protocol")


__all__ = [
    "HERE",
    "PROTOCOL_FILES",
    "template_kind_for",
    "launch_type_args",
    "interpreter_ops",
    "protocol_file",
    "protocol_function_name",
]
