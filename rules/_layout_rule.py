"""Shared glue for the layout rules TK101..TK104 (the contract check is tkcheck.checks.layout)."""
from tkcheck.checks import layout

from ._common import finding


def check_code(an, code: str):
    out = []
    for i in layout.issues(an, code):
        out.append(finding(code, i.message, i.op.location, related=list(i.related),
                           witness=dict(i.witness), help=i.help))
    return out
