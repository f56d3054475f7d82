"""Deadlock classification and traces from the protocol exploration (TK502, TK503, TK504)."""

from __future__ import annotations

from tkcheck.checks import phases, violations
from tkcheck.checks import protocol as P
from tkcheck.findings import TraceStep

from ._common import finding, in_helper, related, user_site

MAX_STEPS = 24


def _explained(an) -> bool:
    """A completion-contract violation (bytes, counts, parity, wrong barrier) already explains
    a hang of this kernel: the deadlock rules then stay silent instead of repeating it. Asked of
    the completion and phase engines' verdicts (`checks/violations`, `checks/phases`), the facts
    TK301-TK305 word, not of those rules."""

    def compute(an):
        # every query runs (no short cut), so that an inconclusive proof in any of them is seen
        with an.tracking() as t:
            waits = phases.phases(an)
            found = [
                any(wp.status == "mismatch" for wp in waits),
                # each wait's ring slot is asked, as the phase-advance contract asks it
                any(
                    [wp.status == "not-advanced" for wp in waits]
                    + [phases.slot_mismatch(an, wp) is not None for wp in waits]
                ),
                bool(violations.wrong_barrier_loads(an)),
                bool(violations.byte_mismatches(an)),
                bool(violations.arrival_mismatches(an)),
            ]
        # a completion proof that ran out of budget might have explained the hang: then the
        # deadlock rules do not guess (the kernel's inconclusive proofs are reported instead)
        return any(found) or t.inconclusive

    return an.fact("completion_explains_hang", compute)


def classify(an):
    """(code, blocked role index, blocked event, waiting-on role indices) or None.

    Every reachable deadlock of the exploration is classified, named barriers as mbarriers: a
    named barrier no role left will arrive at (TK502), one whose count is more than the threads
    that ever reach it (TK404), then the mbarrier waits in order as before: nothing left to
    complete it (TK504 when its signallers have exited, else TK502) or roles blocked on each
    other (TK503, shown at a named barrier of the cycle when there is one)."""
    ex = P.explore(an)
    if ex.deadlock is None or _explained(an):
        return None
    d = ex.deadlock
    blocked_ids = {i for i, _ in d.blocked}
    syncs = [(ri, e, P.arrivals_left(ex, ri, e.sync[0])) for ri, e in d.blocked if e.kind == "sync"]
    # a named barrier no role left will arrive at
    for ri, e, left in syncs:
        if not left:
            return "TK502", ri, e, []
    # roles that could still arrive at a named barrier are blocked, and its count is more than
    # the threads of every role that ever reaches it: no generation can complete by design
    for ri, e, _ in syncs:
        if not e.block and e.sync[0] < P.MMA_IDS and P.barrier_threads(ex, e.sync[0]) < e.sync[1]:
            return "TK404", ri, e, []
    for ri, e in d.blocked:
        if e.kind != "wait":
            continue
        left = P.signals_left(ex, ri, e.elem)
        if not left:
            signallers = [
                i
                for i, r in enumerate(ex.roles)
                if any(x.elem == e.elem and x.kind in ("arrive", "expect", "load") for x in r.events)
            ]
            if any(i in d.exited for i in signallers):
                return "TK504", ri, e, [i for i in signallers if i in d.exited]
            # a role that signals other elements of this barrier array and returned before it
            # came to this one (an instruction loop left through a `return`)
            kin = [
                i
                for i in d.exited
                if any(
                    x.elem is not None and x.elem[0] == e.elem[0] and x.kind in ("arrive", "expect", "load")
                    for x in ex.roles[i].events
                )
            ]
            if not signallers and kin:
                return "TK504", ri, e, kin
            return "TK502", ri, e, []
        if all(i in blocked_ids for i in left):
            # a cycle: every role that could still complete what this role waits for is blocked
            # itself; shown at a named barrier of the cycle when there is one
            named = [(rj, x, lf) for rj, x, lf in syncs if x.sync[0] < P.MMA_IDS and all(i in blocked_ids for i in lf)]
            if named:
                return "TK503", *named[0]
            return "TK503", ri, e, left
    for ri, e, left in syncs:
        if all(i in blocked_ids for i in left):
            return "TK503", ri, e, left
    return None


def _phase_need(ex, e):
    if e.kind == "sync":
        arrived, gen = P.sync_state(ex, e.sync[0])
        return gen, f"{e.sync[1] - arrived} more thread(s) (has {arrived} of {e.sync[1]})"
    st = ex.deadlock.state["barriers"][e.elem]
    done, pend, tx = st
    need = []
    if pend > 0:
        need.append(f"{pend} more arrival(s)")
    if tx > 0:
        need.append(f"{tx} more bytes")
    return done, " and ".join(need) or "nothing more"


def build_trace(an, code, ri, e, others) -> list[TraceStep]:
    ex = P.explore(an)
    d = ex.deadlock
    steps = []
    for rj, ev, outcome in d.trace:
        if ev.kind in ("wait", "sync", "exit") or outcome:
            steps.append((rj, ev, outcome))
        elif ev.kind in ("arrive", "expect", "barrive"):
            steps.append((rj, ev, ""))
    out: list[TraceStep] = []
    if len(steps) > MAX_STEPS:
        skipped = len(steps) - MAX_STEPS + 4
        head, tail = steps[:4], steps[-(MAX_STEPS - 4) :]
        steps = head + [None] + tail
    else:
        skipped = 0
    for s in steps:
        if s is None:
            out.append(TraceStep("...", f"{skipped} more steps in which every role keeps its pace"))
            continue
        rj, ev, outcome = s
        role = ex.roles[rj].name
        it = ", ".join(f"{k}={v}" for k, v in an.model.user_iteration(ev.env).items())
        text = P.event_text(ev) + (f" {outcome}" if outcome else "") + (f" [{it}]" if it else "")
        out.append(TraceStep(role, text, ev.op.location, P.elem_str(ev.elem) if ev.elem else None, None))
    for rj, ev in d.blocked:
        done, need = _phase_need(ex, ev)
        if ev.kind == "sync":
            who = P.arrivals_left(ex, rj, ev.sync[0])
            what, verb, where = f"generation {done} of {P.blocked_on(ev)}", "arrive at", None
        else:
            who = P.signals_left(ex, rj, ev.elem)
            what, verb, where = f"phase {done} of {P.elem_str(ev.elem)}", "signal", P.elem_str(ev.elem)
        if not who:
            tail = "none will come"
        else:
            tail = "only " + ", ".join(ex.roles[i].name for i in who) + f" could still {verb} it, and it is blocked"
        it = ", ".join(f"{k}={v}" for k, v in an.model.user_iteration(ev.env).items())
        out.append(
            TraceStep(
                ex.roles[rj].name,
                f"{P.event_text(ev)} blocks forever{f' [{it}]' if it else ''}: {what} needs {need}, {tail}",
                ev.op.location,
                where,
                done,
                blocked=True,
            )
        )
    for i in d.finished:
        r = ex.roles[i]
        last = r.events[-1]
        out.append(
            TraceStep(
                r.name, "has exited" if i in d.exited else "has finished its program", last.op.location, None, None
            )
        )
    return out


def deadlock_finding(an, code, ri, e, others, message, help_):
    ex = P.explore(an)
    trace = build_trace(an, code, ri, e, others)
    done, need = _phase_need(ex, e)
    rel = []
    for i in others:
        r = ex.roles[i]
        rel.append(
            related(
                r.events[-1].op if i in ex.deadlock.finished else dict(ex.deadlock.blocked)[i].op,
                f"{r.name} {'exits here' if i in ex.deadlock.exited else 'is blocked here'}",
            )
        )
    wit = {
        "barrier": P.elem_str(e.elem) if e.elem is not None else P.blocked_on(e),
        "parity_waited": e.parity,
        "phase": done,
        "needs": need,
        "role": ex.roles[ri].name,
        "sizes": ex.params,
        "iteration": an.model.user_iteration(e.env),
        "states_explored": ex.states,
    }
    if ex.assumption:
        wit["assumption"] = ex.assumption
        message = f"{message} ({ex.assumption})"
    # an instruction inside the user's helper function is shown where the kernel calls the helper
    # (the helper may be called from several places), the instruction itself as a related site
    return finding(code, message, user_site(e.op), related=rel + in_helper(e.op), witness=wit, trace=trace, help=help_)
