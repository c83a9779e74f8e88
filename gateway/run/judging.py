"""Judging a turn: every undecided call judged (with the run's earlier calls when the policy
reads them), the batch planned, and the approval requests and decision records that go with
them, ready to be committed together. Nothing here writes; the runner commits what it answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway import quotas
from gateway.approvals import records as ap
from gateway.audit import events
from gateway.audit.records import AuditEvent
from gateway.errors import CallCode
from gateway.limits import DEFAULT_LIMITS, Limits
from gateway.model import (
    DEFAULT_APPROVAL_TTL_S,
    ApprovalRecord,
    CallRecord,
    CallStatus,
    Identity,
    PastCall,
    RunRecord,
    TurnInput,
    TurnRecord,
    revised,
)
from gateway.observe.hooks import OFF, Observe
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import RECENT_CALLS, HistoryEntry, RunContext, batch_input
from gateway.quotas import QuotaExceeded, Reservation
from gateway.run import plan
from gateway.run.history import HistoryNeed, judged_with_history
from gateway.run.judge import Judge, rejected
from gateway.store.base import RunStore
from gateway.tools import Registry

# a new turn's reads cleared to run, claimed: (run, calls) → (run, calls, IDs claimed)
Claim = Callable[
    [RunRecord, Sequence[CallRecord], datetime], tuple[RunRecord, list[CallRecord], list[str]]
]


@dataclass(frozen=True)
class JudgedTurn:
    """A turn's calls judged and planned, and what goes with them (not written yet)."""

    calls: list[CallRecord]
    changed: list[CallRecord]  # the calls the judging changed
    approvals: list[ApprovalRecord]
    audit: list[AuditEvent]
    partial: bool
    before: list[CallRecord]  # the calls as given to the judging
    judged: list[CallRecord]  # the calls as judged, before planning
    reserve: list[Reservation]  # the quotas of the calls decided now


class TurnJudging:
    def __init__(
        self,
        store: RunStore,
        registry: Registry,
        policy: PolicyEngine,
        judge: Judge,
        *,
        limits: Limits = DEFAULT_LIMITS,
        approval_ttl_s: int = DEFAULT_APPROVAL_TTL_S,
        observe: Observe = OFF,
    ) -> None:
        self.store = store
        self.tracer = observe.tracer
        self.metrics = observe.metrics
        self.registry = registry
        self.policy = policy
        self.judge = judge
        self.limits = limits
        self.approval_ttl_s = approval_ttl_s

    def proposed(
        self, run: RunRecord, turn: TurnInput, now: datetime, used: frozenset[str]
    ) -> list[CallRecord]:
        """The turn's calls as records: PROPOSED, or REJECTED already (unknown tool, broken
        arguments, a call ID the run used before)."""
        out: list[CallRecord] = []
        for i, call in enumerate(turn.event.calls):
            rec = self.judge.propose(run.run_id, turn.turn_id, i, call, now)
            if call.call_id in used and rec.status == CallStatus.PROPOSED:
                rec = rejected(
                    rec,
                    CallCode.DUPLICATE_CALL_ID,
                    f"call ID {call.call_id} was already used in an earlier turn of "
                    "this run; call IDs are unique per run",
                    now=now,
                )
            out.append(rec)
        return out

    async def history(self, run_id: str, turn_id: str, limit: int) -> Sequence[PastCall]:
        """The run's last `limit` calls but those of turn_id (none read when limit is 0)."""
        if not limit:
            return []
        return [c for c in await self.store.recent_calls(run_id, limit) if c.turn_id != turn_id]

    def context(
        self, run: RunRecord, turn_seq: int, turn_id: str
    ) -> Callable[[Sequence[HistoryEntry]], RunContext]:
        def context(recent: Sequence[HistoryEntry]) -> RunContext:
            return RunContext(
                run=run,
                turn_seq=turn_seq,
                turn_id=turn_id,
                recent=recent,
                history_bytes=self.limits.max_policy_history_bytes,
            )

        return context

    async def judge_turn(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        recent: Sequence[HistoryEntry],
        now: datetime,
        need: HistoryNeed,
    ) -> JudgedTurn:
        """The turn's undecided calls judged and the batch planned, with the approval requests
        and audit records that go with them (nothing written)."""
        pending = {
            c.call_id for c in calls if c.status == CallStatus.PROPOSED and c.decision is None
        }
        spent = plan.exceeded(run)

        async def judge(c: CallRecord, ctx: RunContext) -> CallRecord:
            if c.call_id not in pending:
                return c
            if spent:
                return plan.budget_rejected(c, now)
            return await self.judge.judge(c, identity=identity, run=ctx, batch=calls, now=now)

        traced = self.tracer.enabled
        with self.tracer.span(
            "callgate.judge", {"callgate.calls": len(pending)} if traced else None
        ):
            judged = await judged_with_history(
                need,
                self.policy,
                calls,
                recent,
                self.context(run, turn.seq, turn.turn_id),
                judge,
                lambda: self.history(run.run_id, turn.turn_id, RECENT_CALLS),
            )
        with self.tracer.span("callgate.plan", {"callgate.calls": len(judged)} if traced else None):
            partial = await self.partial_writes(identity, judged)
            return self.planned(identity, run, turn, calls, judged, partial, now)

    def planned(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        judged: Sequence[CallRecord],
        partial: bool,
        now: datetime,
    ) -> JudgedTurn:
        """The judged calls planned as a batch, with their approval requests, audit records
        and the quotas of the calls decided now (pure)."""
        remaining = (
            None
            if run.budget.max_tool_calls == 0
            else max(run.budget.max_tool_calls - run.tool_calls_used, 0)
        )
        planned = plan.plan_batch(
            judged, remaining_tool_calls=remaining, partial_writes=partial, now=now
        )
        approvals = [
            ap.requested(identity, c, now, self.approval_ttl_s)
            for c in planned
            if c.status == CallStatus.PENDING_APPROVAL and not c.approval_id
        ]
        by_call = {a.call_id: a.approval_id for a in approvals}
        planned = [
            revised(c, approval_id=by_call[c.call_id]) if c.call_id in by_call else c
            for c in planned
        ]
        changed = [c for c, before in zip(planned, calls, strict=True) if c != before]
        audit = self._planned_audit(identity, run, turn, changed, planned, approvals, now)
        undecided = {
            c.call_id for c in calls if c.status == CallStatus.PROPOSED and c.decision is None
        }
        reserve = quotas.reservations([c for c in planned if c.call_id in undecided], now)
        return JudgedTurn(
            planned, changed, approvals, audit, partial, list(calls), list(judged), reserve
        )

    def _planned_audit(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        changed: Sequence[CallRecord],
        planned: Sequence[CallRecord],
        approvals: Sequence[ApprovalRecord],
        now: datetime,
    ) -> list[AuditEvent]:
        """A decision record per call the judging changed, an approval request per approval."""
        audit = [
            events.decision(
                c, run, actor=identity, registry=self.registry, now=now, provider=turn.provider
            )
            for c in changed
        ]
        audit += [
            events.approval_requested(
                a, c.decision, registry=self.registry, now=now, provider=run.provider
            )
            for a in approvals
            for c in planned
            if c.call_id == a.call_id and c.decision
        ]
        return audit

    def refused(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        jt: JudgedTurn,
        exc: QuotaExceeded,
        now: datetime,
    ) -> JudgedTurn:
        """The turn planned again with the call whose quota did not fit REJECTED
        `quota_exceeded` (its siblings follow the batch rules)."""
        judged = [
            rejected(c, CallCode.QUOTA_EXCEEDED, str(exc), now=now)
            if c.call_id == exc.call_id and c.status == CallStatus.PROPOSED
            else c
            for c in jt.judged
        ]
        for c in judged:
            if c.call_id == exc.call_id:
                self.metrics.quota_rejected(c.tool)
        return self.planned(identity, run, turn, jt.before, judged, jt.partial, now)

    async def begin(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        proposed: Sequence[CallRecord],
        judged: JudgedTurn,
        claim: Claim,
        now: datetime,
    ) -> tuple[RunRecord, list[CallRecord], list[str], JudgedTurn]:
        """Commit a new turn with its judged calls (the reads `claim` clears to run claimed),
        their approval requests, decision records and quota reservations; a call whose quota
        does not fit is rejected and the turn planned and committed again. Answers the run,
        the calls, the IDs claimed and the turn as committed."""
        for _ in range(len(judged.reserve) + 1):
            claimed_run, calls, claimed = claim(run, judged.calls, now)
            audit = [
                events.decision(
                    c,
                    claimed_run,
                    actor=identity,
                    registry=self.registry,
                    now=now,
                    provider=turn.provider,
                )
                for c in proposed
                if c.status == CallStatus.REJECTED
            ]
            # Reads only, all going out now: nothing leaves the sidecar before the settling
            # commit, which syncs, and nothing here has an effect; this one need not sync.
            reads_only = (
                bool(claimed)
                and not judged.approvals
                and all(c.status == CallStatus.REJECTED or c.call_id in claimed for c in calls)
            )
            try:
                await self.store.begin_turn(
                    claimed_run,
                    turn,
                    calls,
                    [*audit, *judged.audit],
                    judged.approvals,
                    durable=not reads_only,
                    reserve=judged.reserve,
                )
                return claimed_run, calls, claimed, judged
            except QuotaExceeded as exc:
                judged = self.refused(identity, run, turn, judged, exc, now)
        raise AssertionError("a quota was refused for a call that reserves none")

    async def save(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        judged: JudgedTurn,
        now: datetime,
    ) -> JudgedTurn:
        """Commit the calls judged (of a turn accepted before) with their approval requests,
        decision records and quota reservations, rejecting any whose quota does not fit."""
        for _ in range(len(judged.reserve) + 1):
            try:
                await self.store.save(
                    calls=judged.changed,
                    approvals=judged.approvals,
                    audit=judged.audit,
                    expect=judged.before,
                    reserve=judged.reserve,
                )
                return judged
            except QuotaExceeded as exc:
                judged = self.refused(identity, run, turn, judged, exc, now)
        raise AssertionError("a quota was refused for a call that reserves none")

    async def partial_writes(self, identity: Identity, calls: Sequence[CallRecord]) -> bool:
        writes = [c for c in calls if plan.is_write(c)]
        if len(writes) < 2:
            return False
        return await self.policy.partial_writes(batch_input(identity, calls))
