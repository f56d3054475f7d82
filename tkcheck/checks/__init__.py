"""The checks: rule-agnostic facts about one kernel, computed once per `Analysis` and cached
there (`an.fact(name, compute)`); the rules (tkcheck.rules) turn them into findings.

Public interface:
  Analysis(model, arch=...)     what a rule's check(an) receives: an.model, an.threads, an.fact
  threads       who runs / issues an op (ThreadSets, describe)
  paths         the shared program-path queries: flow, in-flight hits, aliasing, issue signatures
  completion    arrivals and bytes per barrier phase
  phases        the phase each wait is due to observe
  protocol      explicit-state search over warp roles (deadlocks, traces; the race search)
  violations    the completion and phase engines' verdicts (broken byte / arrival accounts,
                loads on the wrong ring barrier) that the contract and deadlock rules query
  happens_before  memory events: shared-scalar races, global publication and acquisition
  accumulator   MMA operands and shapes, operands refilled while an MMA is in flight
  syncscope     shared-memory dependencies and the barriers and fences between them
  single_issue  operations that must have one issuer per copy
  tmem          Blackwell tensor memory
  layout, layout_proofs   swizzle layouts and their z3 proofs
  sass_cross    the SASS pass's facts next to the source model
The solver they share with the front end is `tkcheck.solver`.
"""

from importlib import import_module as _import_module

__all__ = [
    "Analysis",
    "threads",
    "paths",
    "completion",
    "phases",
    "protocol",
    "violations",
    "happens_before",
    "accumulator",
    "syncscope",
    "single_issue",
    "tmem",
    "layout",
    "layout_proofs",
    "sass_cross",
    "analysis",
]
_MODULES = tuple(__all__[1:])


def __getattr__(name):
    # lazily: a rule imports only the facts it asks for
    if name == "Analysis":
        return _import_module(f"{__name__}.analysis").Analysis
    if name in _MODULES:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
