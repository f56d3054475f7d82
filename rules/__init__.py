"""The rule catalog: one module per rule, each defining `RULE` (see tkcheck/rule.py; discovered
by tkcheck.registry).

The tool's own rules are reported by the engine, not by a query over a kernel: the code that
produces or filters them names them through these, never by spelling their codes.
"""

from .tk000_parse_error import RULE as PARSE_ERROR
from .tk001_unused_suppression import RULE as UNUSED_SUPPRESSION

__all__ = ["PARSE_ERROR", "UNUSED_SUPPRESSION"]

# the code the tool's messages show when they give a selector by example (`ignore[TK301]`)
EXAMPLE_CODE = "TK301"
