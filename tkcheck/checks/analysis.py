"""The object rules query: one kernel's model plus facts computed once.

Rules receive an `Analysis`; the contract checks (`completion`, `scope`, ...)
compute shared facts lazily and cache them here, so that two rules asking the
same question (e.g. the expect-tx and arrival-count rules both need per-phase
accounting of every barrier) do the work once.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..model import ir
from .threads import ThreadSets


@dataclass
class Analysis:
    model: ir.KernelModel
    arch: str = "sm_90a"
    solver_timeout_ms: int | None = None  # the check's safety net, for reading (solver.current() decides)
    facts: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        self.threads = ThreadSets(self.model)
        self._collecting: list[set[str]] = []  # facts used by the blocks being tracked
        self._uses: dict[str, set[str]] = {}  # fact -> the facts its computation used
        self._inconclusive: dict[str, int] = {}  # fact -> inconclusive proofs while computing it

    def fact(self, name: str, compute):
        for used in self._collecting:
            used.add(name)
            used |= self._uses.get(name, set())
        if name not in self.facts:
            import time
            from .. import solver

            used = set()
            self._collecting.append(used)
            mark = solver.inconclusive_count()
            t0 = time.perf_counter()
            try:
                with solver.scope(f"fact:{name}"):
                    self.facts[name] = compute(self)
            finally:
                self._collecting.pop()
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - t0
            self._uses[name] = used
            self._inconclusive[name] = solver.inconclusive_count() - mark
            for outer in self._collecting:
                outer |= used
        return self.facts[name]

    @contextmanager
    def tracking(self):
        """Did the code inside (and every fact it used, computed now or before) run into an
        inconclusive proof? `with an.tracking() as t: ...; t.inconclusive`.

        A check that stays silent because another check explains the problem must know whether
        that other check could decide: a spent budget there is not an explanation."""
        from .. import solver

        t = _Tracked()
        used: set[str] = set()
        self._collecting.append(used)
        mark = solver.inconclusive_count()
        try:
            yield t
        finally:
            self._collecting.pop()
            t.inconclusive = solver.inconclusive_count() > mark or any(self._inconclusive.get(f, 0) for f in used)


@dataclass
class _Tracked:
    inconclusive: bool = False
