"""`tkcheck confirm` (instrumented runs, compute-sanitizer, verdicts) and `tkcheck triage`."""

from __future__ import annotations


def register_cli(group) -> None:
    """Called by cli.py (`_COMMAND_MODULES`): adds `confirm` and `triage`."""
    from .cli_commands import register

    register(group)
