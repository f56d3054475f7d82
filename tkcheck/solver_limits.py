"""The solver's default limits (no z3 import here: the command line reads them at start-up).

DEFAULT_BUDGET: z3 resource-limit steps per query, about half a second of z3 on one core here and
some 15x the largest query of the corpus and the fixtures; deterministic, so a query has the same
answer on every machine and under any load. DEFAULT_SAFETY_NET_MS: the wall-clock limit per query,
far above what the budget costs, so that it decides nothing in practice.
"""

DEFAULT_BUDGET = 10_000_000
DEFAULT_SAFETY_NET_MS = 30_000
