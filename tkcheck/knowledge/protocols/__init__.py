"""Protocols of TK's prototype templates, modelled once and reused.

Each template (lcf, lcsf) is described by a small pseudo-CUDA file in this
folder, written for tkcheck. The front end walks the file's protocol function
with `lcft` bound to the user's template struct and inlines the user's
callbacks, so the user's `producer::load` / `consumer::compute` code is checked
against the barriers, counts and phases the template sets up.

This package holds the files; which template a user's struct is launched with is read from
the syntax tree (`frontend.discovery`), and parsing a protocol file is the front end's
(`frontend.parse.protocol_function`).
"""

from __future__ import annotations

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


def protocol_file(kind: str) -> Path | None:
    """The pseudo-CUDA file modelling `kind`'s protocol; None when tkcheck has none."""
    fname = PROTOCOL_FILES.get(kind)
    if fname is None:
        return None
    path = HERE / fname
    return path if path.exists() else None


def in_protocol_file(filename: str) -> bool:
    """Whether a source file is one of tkcheck's own protocol files: a line there is no place a
    user can act on (coverage and findings are told at the user's line instead)."""
    import os

    return os.path.abspath(filename).startswith(str(HERE) + os.sep)


def protocol_function_name(kind: str) -> str:
    """The function in `protocol_file(kind)` that holds the protocol."""
    return {"mk_worker": "tkcheck_mk_worker"}.get(kind, f"tkcheck_{kind}_protocol")


__all__ = [
    "HERE",
    "PROTOCOL_FILES",
    "in_protocol_file",
    "protocol_file",
    "protocol_function_name",
]
