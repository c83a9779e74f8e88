"""Planning a batch: what may run now, what waits, what is held (pure; no I/O).

The rules are in docs/architecture.md, "Batch rules".

Input: the judged calls in the model's order. Output: every call in its planned status —
REJECTED (as judged, or `budget_exhausted`), PENDING_APPROVAL, HELD, NOT_RUN (`held_by_batch`),
or still PROPOSED with an ALLOW decision, meaning "runs now".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gateway.errors import CallCode
from gateway.model import CallRecord, CallStatus, Effect, RunRecord, Verdict

HELD_MESSAGE = (
    "not run: another write of this turn was {why}; writes of one turn run "
    "together or not at all — re-plan"
)


def _verdict(rec: CallRecord) -> Verdict | None:
    return rec.decision.verdict if rec.decision else None


def _waiting(rec: CallRecord) -> str:
    """What a call waiting for a person says: the policy's reasons say who it waits for."""
    why = "; ".join(rec.decision.reasons) if rec.decision else ""
    return f"waiting for a person's approval: {why}" if why else "waiting for a person's approval"


def is_write(rec: CallRecord) -> bool:
    return rec.effect == Effect.WRITE.value


def apply_budget(
    calls: Sequence[CallRecord], remaining: int | None, now: datetime
) -> list[CallRecord]:
    """Calls past the remaining tool-call budget, in listed order, are REJECTED."""
    out: list[CallRecord] = []
    for rec in calls:
        if rec.status == CallStatus.PROPOSED and remaining is not None:
            if remaining <= 0:
                rec = budget_rejected(rec, now, "tool-call budget")
            else:
                remaining -= 1
        out.append(rec)
    return out


def not_run(rec: CallRecord, why: str, now: datetime) -> CallRecord:
    return rec.moved(
        CallStatus.NOT_RUN,
        error_code=CallCode.HELD_BY_BATCH.value,
        error_message=HELD_MESSAGE.format(why=why),
        finished_at=now,
    )


def plan_batch(
    calls: Sequence[CallRecord],
    *,
    remaining_tool_calls: int | None,
    partial_writes: bool,
    now: datetime,
) -> list[CallRecord]:
    planned = apply_budget(calls, remaining_tool_calls, now)
    writes_rejected = any(is_write(c) and c.status == CallStatus.REJECTED for c in planned)
    writes_pending = any(
        is_write(c) and c.status == CallStatus.PROPOSED and _verdict(c) == Verdict.APPROVAL_REQUIRED
        for c in planned
    )
    out: list[CallRecord] = []
    for rec in planned:
        if rec.status != CallStatus.PROPOSED:
            out.append(rec)
        elif not partial_writes and is_write(rec) and writes_rejected:
            out.append(not_run(rec, "rejected", now))
        elif _verdict(rec) == Verdict.APPROVAL_REQUIRED:
            out.append(
                rec.moved(
                    CallStatus.PENDING_APPROVAL,
                    error_code=CallCode.APPROVAL_REQUIRED.value,
                    error_message=_waiting(rec),
                )
            )
        elif not partial_writes and is_write(rec) and writes_pending:
            out.append(
                rec.moved(
                    CallStatus.HELD,
                    error_code=CallCode.HELD_BY_BATCH.value,
                    error_message="waiting for the approval of another write of this turn",
                )
            )
        else:
            out.append(rec)
    return out


def budget_rejected(rec: CallRecord, now: datetime, which: str = "budget") -> CallRecord:
    return rec.moved(
        CallStatus.REJECTED,
        error_code=CallCode.BUDGET_EXHAUSTED.value,
        error_message=f"the run's {which} is spent; the call was not executed",
        decided_at=rec.decided_at or now,
        finished_at=now,
    )


def exceeded(run: RunRecord) -> str:
    """Why the run is past a turn or token budget (with this turn counted), or ""."""
    b = run.budget
    if b.max_turns and run.turns_used > b.max_turns:
        return f"the turn budget ({b.max_turns}) is spent"
    if b.max_total_tokens and run.usage_total.total > b.max_total_tokens:
        return f"the token budget ({b.max_total_tokens}) is spent"
    return ""


def no_turn_left(run: RunRecord) -> str:
    """Why no further model turn fits the budget, or ""."""
    b = run.budget
    if b.max_turns and run.turns_used >= b.max_turns:
        return f"the turn budget ({b.max_turns}) is used up; no further turn may be asked"
    if b.max_total_tokens and run.usage_total.total >= b.max_total_tokens:
        return f"the token budget ({b.max_total_tokens}) is used up"
    return ""
