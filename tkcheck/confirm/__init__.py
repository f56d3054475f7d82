"""`tkcheck confirm` (instrumented runs, compute-sanitizer, verdicts) and `tkcheck triage`.

Public interface: `register_cli(group)`, which cli.py calls to add both commands. Importing this
package loads nothing of CUDA; the GPU-facing modules load when a command runs.

The modules, for code inside tkcheck and its tests (not a stable API):
- runner: `confirm_file` (plain, instrumented and repaired runs of one file -> verdicts),
  evidence records and the batch tables;
- triage: findings ranked by how well each explains a symptom;
- widen, instrument: the widened and instrumented copies a rule's `confirm` asks for;
- sanitizer, outcome, sassmap: reading compute-sanitizer's and the program's output back onto
  the source;
- device, procs, gpu_batch: the GPU probe, the bounded child processes, the device batch script.
"""

from __future__ import annotations

__all__ = ["register_cli"]


def register_cli(group) -> None:
    """Called by cli.py (`_COMMAND_MODULES`): adds `confirm` and `triage`."""
    from .cli_commands import register

    register(group)
