"""Shared wording for the phase rules (TK303, TK304): message, trace, related sites."""

from __future__ import annotations

from tkcheck.checks import phases as P
from tkcheck.findings import TraceStep
from tkcheck.model import ir

from ._common import finding, related


def phase_finding(an, wp: P.WaitPhase, code: str):
    w, wit = wp.op, wp.witness
    m = an.model
    it, stage = wit.get("iteration"), wit.get("stage")
    elem = P.element(wp)
    due = wit["due_phase"]
    where = f"iteration {it}" if it is not None else "its one use"
    if it is None and wit.get("after_loop") is not None:
        where = f"its use after the loop's {wit['after_loop']} iteration(s)"
    if it is not None and wit.get("outer_iteration") is not None:
        where += f" of outer-loop iteration {wit['outer_iteration']}"
    if due is not None and due < 0:
        due_txt = "no completed phase yet (fresh barrier: parity 1 returns at once)"
    else:
        due_txt = f"phase {due} (parity {wit['parity_due']})"
    msg = f"wait on '{elem}' passes parity {wit['parity_waited']} at {where}, but that use is due to observe {due_txt}"
    if code == "TK304":
        msg = (
            f"the parity waited on '{wp.barrier}' never changes, but "
            f"{f'slot {stage} is reused' if stage is not None else 'it is waited on again'}: at {where} "
            f"the wait passes parity {wit['parity_waited']} while {due_txt} is due"
        )
    if wp.assumption:
        msg += f" ({wp.assumption})"
    rel = []
    for o in m.ops:
        if (
            o.barrier is not None
            and o.barrier.name == wp.barrier
            and o is not w
            and o.kind in (ir.MBAR_INIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
        ):
            what = {
                "mbar_init": "initialised here (fresh barrier: phase 0 pending)",
                "mbar_arrive": "arrived on here",
                "mbar_expect": "expect_tx (one arrival) here",
            }[o.kind]
            rel.append(related(o, what))
            if len(rel) >= 4:
                break
    waited, wanted = wit["parity_waited"], wit["parity_due"]
    trace = []
    if due is not None and due >= 0:
        trace.append(
            TraceStep(
                wp.role,
                f"at {where} this site has used {elem} {wit['use']} time(s) before"
                + (f" ({wp.pre} phase(s) completed before the loop)" if wp.pre else ""),
                w.location,
                wp.barrier,
                None,
            )
        )
        trace.append(
            TraceStep(
                wp.role,
                f"wait({elem}, {waited}) is due to observe phase {due} (parity {wanted})",
                w.location,
                wp.barrier,
                due,
                fault=True,  # the wait the finding is about: not a wait that passes as it should
            )
        )
    else:
        trace.append(
            TraceStep(
                wp.role,
                f"wait({elem}, {waited}) at {where}: the slot was never used before, "
                "so no phase needs to complete (parity 1 would pass on the fresh barrier)",
                w.location,
                wp.barrier,
                0,
                fault=True,
            )
        )
    if waited == 1 and due is not None and due >= 0 and (due + 1) % 2 == 1 and due % 2 == 0:
        effect = (
            f"parity {waited} names the phase before phase {due}: the wait returns at once, before "
            f"phase {due} completed (stale data)"
        )
    else:
        effect = (
            f"parity {waited} names phase {due + 1}: the wait blocks until a phase that can only complete "
            f"after this wait (hang) or returns a phase late"
        )
    hang = "hang" in effect
    trace.append(TraceStep(wp.role, effect, w.location, wp.barrier, due, blocked=hang, fault=not hang))
    symptom = "stale read" if "stale" in effect else "hang"
    help_ = (
        "a consumer waits parity (k / STAGES) % 2 for the fill of round k / STAGES; a producer waits "
        "((k / STAGES) % 2) ^ 1 on a fresh 'empty' barrier (parity 1 passes at once); flip a phase bit "
        "each time its ring index wraps"
    )
    if code == "TK304":
        help_ = (
            "flip the phase each time the ring index wraps (`if (++s == STAGES) { s = 0; phase ^= 1; }`), "
            "or derive it from the iteration: (k / STAGES) % 2"
        )
    return finding(code, msg, w.location, related=rel, witness=dict(wit, effect=symptom), trace=trace, help=help_)
