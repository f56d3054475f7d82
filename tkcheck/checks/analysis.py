"""The object rules query: one kernel's model plus facts computed once.

Rules receive an `Analysis`; the contract checks (`completion`, `scope`, ...)
compute shared facts lazily and cache them here, so that two rules asking the
same question (e.g. TK301 and TK302 both need per-phase accounting of every
barrier) do the work once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import ir
from .threads import ThreadSets


@dataclass
class Analysis:
    model: ir.KernelModel
    arch: str = "sm_90a"
    solver_timeout_ms: int = 2000
    facts: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        self.threads = ThreadSets(self.model)

    def fact(self, name: str, compute):
        if name not in self.facts:
            import time
            t0 = time.perf_counter()
            self.facts[name] = compute(self)
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
        return self.facts[name]
