"""The turn/batch state machine (DESIGN §2, §3, §7). No gRPC and no SQL in here.

A turn moves through separate phases with typed results:
accept (idempotency, state, budgets) → judge each call → plan the batch → execute
(write-ahead intent) → settle (NextAction and run state) → TurnOutcome.
Only committed state leaves this module: an outcome is built after its last write commits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from gateway import batch
from gateway.errors import (
    CallCode,
    PermissionDenied,
    RequestCode,
    RequestError,
    StoreUnavailable,
)
from gateway.execute import ExecutionPhase, TurnWork, audit_of
from gateway.judge import Judge, rejected
from gateway.limits import DEFAULT_LIMITS, Limits
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    AuditEvent,
    Budget,
    CallRecord,
    CallResult,
    CallStatus,
    Decision,
    EventKind,
    Identity,
    NextAction,
    RunRecord,
    RunState,
    RunView,
    ToolCall,
    TurnInput,
    TurnOutcome,
    TurnRecord,
    Verdict,
    now_utc,
)
from gateway.policy.base import PolicyEngine
from gateway.policy_input import RECENT_CALLS, RunContext, batch_input
from gateway.request_checks import (
    check_budget,
    check_calls,
    check_id,
    check_labels,
    check_usage,
)
from gateway.store.base import RunStore
from gateway.tools import Registry

log = logging.getLogger("callgate.runner")
T = TypeVar("T")

DEFAULT_APPROVAL_TTL_S = 3600
@dataclass(frozen=True)
class StartRunParams:
    run_id: str = ""
    provider: str = ""
    api_version: str = ""
    budget: Budget = Budget()
    labels: dict[str, str] | None = None
    conversation_json: str = ""

    def params_hash(self) -> str:
        body = [self.provider, self.api_version, list(vars(self.budget).values()),
                sorted((self.labels or {}).items()), self.conversation_json]
        return hashlib.sha256(json.dumps(body).encode()).hexdigest()


@dataclass(frozen=True)
class AuthorizeDecision:
    call_id: str
    decision: Decision
    error_code: str = ""
    error_message: str = ""


class Runner:
    def __init__(self, *, store: RunStore, registry: Registry, policy: PolicyEngine,
                 clock: Callable[[], datetime] = now_utc, limits: Limits = DEFAULT_LIMITS) -> None:
        self.store = store
        self.registry = registry
        self.policy = policy
        self.clock = clock
        self.limits = limits
        self.judge = Judge(registry, policy, limits)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary())
        self._inflight: set[asyncio.Future[Any]] = set()

    async def _exclusive(self, run_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run work holding the run's lock, to completion even when the caller goes away:
        a turn that started executing finishes and commits its results, so a client's
        deadline or disconnect never leaves a call half-recorded."""
        async def locked() -> T:
            async with self._lock(run_id):
                return await work()
        task = asyncio.ensure_future(locked())
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await asyncio.shield(task)

    async def drain(self, timeout_s: float) -> None:
        """Wait (bounded) for turns still being driven, e.g. before the store closes."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout_s)

    def _lock(self, run_id: str) -> asyncio.Lock:
        lock = self._locks.get(run_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[run_id] = lock
        return lock

    # ------------------------------------------------------------------ runs

    async def start_run(self, identity: Identity, params: StartRunParams) -> RunRecord:
        check_id("run_id", params.run_id)
        check_budget(params.budget)
        check_labels(params.labels or {}, self.limits)
        now = self.clock()
        run = RunRecord(
            run_id=params.run_id or f"run_{uuid.uuid4().hex}", state=RunState.ACTIVE,
            subject=identity.subject, tenant=identity.tenant, provider=params.provider,
            api_version=params.api_version, budget=params.budget,
            labels=dict(params.labels or {}), conversation_json=params.conversation_json,
            params_hash=params.params_hash(), created_at=now, updated_at=now)
        stored = await self.store.create_run(run)
        if stored.params_hash != run.params_hash or stored.subject != identity.subject:
            raise RequestError(RequestCode.RUN_CONFLICT, f"run {run.run_id} already exists "
                               "with other parameters; choose another run_id")
        return stored

    async def owned_run(self, identity: Identity, run_id: str) -> RunRecord:
        run = await self.store.get_run(run_id)
        if run is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {run_id!r}")
        if run.subject != identity.subject or run.tenant != identity.tenant:
            raise PermissionDenied(f"run {run_id} belongs to another subject")
        return run

    async def get_run(self, identity: Identity, run_id: str) -> RunView:
        await self.owned_run(identity, run_id)
        view = await self.store.get_view(run_id)
        if view is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {run_id!r}")
        return view

    async def cancel_run(self, identity: Identity, run_id: str) -> RunRecord:
        async def locked() -> RunRecord:
            run = await self.owned_run(identity, run_id)
            if run.state == RunState.CANCELLED:
                return run
            if run.state.terminal:
                raise RequestError(RequestCode.RUN_FINISHED,
                                   f"run {run_id} already ended ({run.state.value})")
            return await self._cancel(run)
        return await self._exclusive(run_id, locked)

    async def _cancel(self, run: RunRecord) -> RunRecord:
        now = self.clock()
        last = await self.store.last_turn(run.run_id)
        calls = await self.store.turn_calls(run.run_id, last.turn_id) if last else []
        changed: list[CallRecord] = []
        for rec in calls:
            if rec.status == CallStatus.PENDING_APPROVAL:
                changed.append(rec.moved(CallStatus.REJECTED,
                                         error_code=CallCode.APPROVAL_CANCELLED.value,
                                         error_message="the run was cancelled", finished_at=now))
            elif rec.status in (CallStatus.HELD, CallStatus.PROPOSED):
                changed.append(batch.not_run(rec, "cancelled with its run", now))
        approvals = [replace(a, status=ApprovalStatus.CANCELLED, decided_at=now,
                             reason="run cancelled")
                     for a in await self.store.approvals_for_run(run.run_id)
                     if a.status == ApprovalStatus.PENDING]
        cancelled = replace(run, state=RunState.CANCELLED, pause_reason="", updated_at=now)
        stopped = None
        if last is not None and last.next in (None, NextAction.PAUSED_FOR_APPROVAL,
                                               NextAction.PAUSED_UNKNOWN_OUTCOME):
            stopped = replace(last, next=NextAction.HANDOFF, reason="the run was cancelled")
        await self.store.save(run=cancelled, turn=stopped, calls=changed, approvals=approvals)
        return cancelled

    # ------------------------------------------------------------------ turns

    async def submit_turn(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        return await self._exclusive(turn.run_id, lambda: self._submit(identity, turn))

    async def _submit(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        run = await self.owned_run(identity, turn.run_id)
        self._check_turn_shape(run, turn)
        existing = await self.store.get_turn(run.run_id, turn.turn_id)
        if existing is not None:
            if existing.content_hash != turn.content_hash():
                raise RequestError(RequestCode.TURN_CONFLICT, f"turn {turn.turn_id} was already "
                                   "submitted with other content")
            if existing.next is None:  # accepted before, never settled: finish it
                if run.state.terminal:
                    raise RequestError(RequestCode.RUN_FINISHED,
                                       f"run {run.run_id} has ended ({run.state.value})")
                return await self._drive(identity, run, existing)
            return await self._outcome(run, existing)
        last = await self.store.last_turn(run.run_id)
        self._check_accepting(run, last)
        return await self._accept(identity, run, turn, last)

    def _check_turn_shape(self, run: RunRecord, turn: TurnInput) -> None:
        if not turn.turn_id:
            raise RequestError(RequestCode.INVALID_ARGUMENT, "turn_id is required")
        check_id("turn_id", turn.turn_id)
        if turn.provider and run.provider and turn.provider != run.provider:
            raise RequestError(RequestCode.UNKNOWN_PROVIDER,
                               f"run {run.run_id} was started for provider {run.provider}; "
                               f"a turn for {turn.provider} is not accepted")
        check_usage(turn.usage)
        check_calls(turn.event.calls, self.limits)

    @staticmethod
    def _check_accepting(run: RunRecord, last: TurnRecord | None) -> None:
        if run.state.terminal:
            raise RequestError(RequestCode.RUN_FINISHED, f"run {run.run_id} has ended "
                               f"({run.state.value}); start a new run")
        if run.state.paused:
            raise RequestError(RequestCode.RUN_PAUSED, f"run {run.run_id} is paused: "
                               f"{run.pause_reason}; settle it (approval, ResolveCall or "
                               "ResumeRun) before the next turn")
        if last is not None and last.next is None:
            raise RequestError(RequestCode.RUN_PAUSED, f"turn {last.turn_id} of run "
                               f"{run.run_id} has not settled; call ResumeRun first")

    async def _accept(self, identity: Identity, run: RunRecord, turn: TurnInput,
                      last: TurnRecord | None) -> TurnOutcome:
        now = self.clock()
        record = TurnRecord(
            run_id=run.run_id, turn_id=turn.turn_id, seq=(last.seq + 1) if last else 1,
            event=turn.event.kind, content_hash=turn.content_hash(), provider=turn.provider,
            api_version=turn.api_version, model=turn.model, usage=turn.usage,
            raw_response_json=turn.raw_response_json, detail=turn.event.detail(),
            created_at=now)
        run = replace(run, turns_used=run.turns_used + 1, usage_total=run.usage_total + turn.usage,
                      updated_at=now)
        calls = await self._proposed(run, turn, now)
        audit = [self._audit("decision", c, run, turn.provider, now)
                 for c in calls if c.status == CallStatus.REJECTED]
        await self.store.begin_turn(run, record, calls, audit)
        return await self._drive(identity, run, record, calls)

    async def _proposed(self, run: RunRecord, turn: TurnInput,
                        now: datetime) -> list[CallRecord]:
        used = await self.store.used_call_ids(run.run_id, [c.call_id for c in turn.event.calls])
        out: list[CallRecord] = []
        for i, call in enumerate(turn.event.calls):
            rec = self.judge.propose(run.run_id, turn.turn_id, i, call, now)
            if call.call_id in used and rec.status == CallStatus.PROPOSED:
                rec = rejected(rec, CallCode.DUPLICATE_CALL_ID,
                               f"call ID {call.call_id} was already used in an earlier turn of "
                               "this run; call IDs are unique per run", now=now)
            out.append(rec)
        return out

    # ------------------------------------------------------------------ driving a turn

    async def _drive(self, identity: Identity, run: RunRecord, turn: TurnRecord,
                     stored: Sequence[CallRecord] | None = None) -> TurnOutcome:
        """Take an accepted turn as far as it can go, then settle it. `stored` are the turn's
        call records when the caller has them (a new turn), else they are read back.

        A write found UNKNOWN is looked up again (`ExecutionPhase.run`); a read found UNKNOWN
        (one that is not repeatable and was in flight when the gateway stopped) is never
        repeated or looked up: it stays UNKNOWN until an operator settles it."""
        if turn.event != EventKind.TOOL_REQUEST:
            return await self._settle(run, turn, [])
        calls = (list(stored) if stored is not None
                 else await self.store.turn_calls(run.run_id, turn.turn_id))
        calls, partial = await self._decide(identity, run, turn, calls)
        work = TurnWork(run=run, calls={c.call_id: c for c in calls}, identity=identity,
                        order=[c.call_id for c in calls])
        phase = ExecutionPhase(self.store, self.registry, self.clock, partial_writes=partial)
        try:
            await phase.run(work)
            return await self._settle(work.run, turn, work.ordered())
        except StoreUnavailable as err:
            if not work.started:
                raise
            raise RequestError(RequestCode.RESULTS_NOT_RECORDED, (
                f"the run store failed ({err.message}) after call(s) "
                f"{', '.join(work.started)} had gone out: their results are not recorded. "
                "They stay EXECUTING; once the store is back, ResumeRun (or this turn "
                "submitted again) settles them: reads are run again, writes looked up, never "
                "blindly repeated")) from err

    async def _decide(self, identity: Identity, run: RunRecord, turn: TurnRecord,
                      calls: list[CallRecord]) -> tuple[list[CallRecord], bool]:
        """Judge and plan the calls not decided yet; answers the calls and whether the batch
        policy permits partial writes (asked once per turn)."""
        undecided = [c for c in calls if c.status == CallStatus.PROPOSED and c.decision is None]
        if not undecided:
            return calls, self._partial_writes(identity, calls)
        now = self.clock()
        recent = await self.store.recent_calls(run.run_id, RECENT_CALLS)
        ctx = RunContext(run=run, turn_seq=turn.seq, turn_id=turn.turn_id,
                         recent=[c for c in recent if c.turn_id != turn.turn_id],
                         history_bytes=self.limits.max_policy_history_bytes)
        pending = {c.call_id for c in undecided}
        spent = batch.exceeded(run)
        judged = [c if c.call_id not in pending
                  else batch.budget_rejected(c, now) if spent
                  else self.judge.judge(c, identity=identity, run=ctx, batch=calls, now=now)
                  for c in calls]
        remaining = (None if run.budget.max_tool_calls == 0
                     else max(run.budget.max_tool_calls - run.tool_calls_used, 0))
        partial = self._partial_writes(identity, judged)
        planned = batch.plan(judged, remaining_tool_calls=remaining, partial_writes=partial,
                             now=now)
        approvals = [self._approval(identity, c, now) for c in planned
                     if c.status == CallStatus.PENDING_APPROVAL and not c.approval_id]
        by_call = {a.call_id: a.approval_id for a in approvals}
        planned = [replace(c, approval_id=by_call[c.call_id]) if c.call_id in by_call else c
                   for c in planned]
        changed = [c for c, before in zip(planned, calls, strict=True) if c != before]
        audit = [self._audit("decision", c, run, turn.provider, now) for c in changed]
        await self.store.save(calls=changed, approvals=approvals, audit=audit)
        return planned, partial

    def _partial_writes(self, identity: Identity, calls: Sequence[CallRecord]) -> bool:
        writes = [c for c in calls if batch.is_write(c)]
        if len(writes) < 2:
            return False
        return self.policy.partial_writes(batch_input(identity, calls))

    def _approval(self, identity: Identity, rec: CallRecord, now: datetime) -> ApprovalRecord:
        ttl = (rec.decision.approval_ttl_s if rec.decision and rec.decision.approval_ttl_s
               else DEFAULT_APPROVAL_TTL_S)
        return ApprovalRecord(
            approval_id=f"apr_{uuid.uuid4().hex}", run_id=rec.run_id, turn_id=rec.turn_id,
            call_id=rec.call_id, tool=rec.tool, tool_version=rec.tool_version,
            arguments_json=rec.arguments_json, arguments_sha256=rec.arguments_sha256,
            status=ApprovalStatus.PENDING, requested_by=identity.subject, tenant=identity.tenant,
            created_at=now, expires_at=now + timedelta(seconds=ttl))

    # ------------------------------------------------------------------ settling

    async def _settle(self, run: RunRecord, turn: TurnRecord,
                      calls: Sequence[CallRecord]) -> TurnOutcome:
        next_action, reason = settle_next(run, turn, calls)
        now = self.clock()
        state = STATE_AFTER[next_action]
        retries = run.retries_in_row + 1 if next_action == NextAction.RETRY_TURN else 0
        pause = reason if state.paused else ""
        run = replace(run, state=state, retries_in_row=retries, pause_reason=pause,
                      updated_at=now)
        turn = replace(turn, next=next_action, reason=reason)
        await self.store.save(run=run, turn=turn)
        log.info("run %s turn %s: %s, %d call(s), run %s", run.run_id, turn.turn_id,
                 next_action.value, len(calls), state.value)
        return self._build_outcome(run, turn, calls)

    async def _outcome(self, run: RunRecord, turn: TurnRecord) -> TurnOutcome:
        calls = await self.store.turn_calls(run.run_id, turn.turn_id)
        return self._build_outcome(run, turn, calls)

    def _build_outcome(self, run: RunRecord, turn: TurnRecord,
                       calls: Sequence[CallRecord]) -> TurnOutcome:
        assert turn.next is not None
        return TurnOutcome(run_id=run.run_id, turn_id=turn.turn_id, next=turn.next,
                           run_state=run.state, reason=turn.reason,
                           results=tuple(CallResult.of(c) for c in calls))

    # ------------------------------------------------------------------ resume / authorize

    async def resume_run(self, identity: Identity, run_id: str) -> TurnOutcome:
        return await self._exclusive(run_id, lambda: self._resume(identity, run_id))

    async def _resume(self, identity: Identity, run_id: str) -> TurnOutcome:
        run = await self.owned_run(identity, run_id)
        turn = await self.store.last_turn(run_id)
        if turn is None:  # nothing submitted yet: the run's state is the whole answer
            return TurnOutcome(run_id=run_id, turn_id="", next=NEXT_WITHOUT_TURN[run.state],
                               run_state=run.state, reason="no turn has been submitted")
        recoverable = turn.next is None or run.state == RunState.PAUSED_UNKNOWN_OUTCOME
        if recoverable and not run.state.terminal:
            return await self._drive(identity, run, turn)
        return await self._outcome(run, turn)

    async def authorize(self, identity: Identity, run_id: str,
                        calls: Sequence[ToolCall]) -> list[AuthorizeDecision]:
        check_calls(calls, self.limits)
        run = await self.owned_run(identity, run_id) if run_id else None
        now = self.clock()
        recs = [self.judge.propose(run_id, "", i, c, now) for i, c in enumerate(calls)]
        ctx = None
        if run is not None:
            recent = await self.store.recent_calls(run.run_id, RECENT_CALLS)
            ctx = RunContext(run=run, turn_seq=run.turns_used, turn_id="", recent=recent,
                             history_bytes=self.limits.max_policy_history_bytes)
        judged = [r if r.status != CallStatus.PROPOSED
                  else self.judge.judge(r, identity=identity, run=ctx, batch=recs, now=now)
                  for r in recs]
        await self.store.append_audit([self._authorize_audit(identity, r, now) for r in judged])
        return [AuthorizeDecision(r.call_id, r.decision or Decision(Verdict.UNSPECIFIED),
                                  r.error_code if r.status == CallStatus.REJECTED else "",
                                  r.error_message if r.status == CallStatus.REJECTED else "")
                for r in judged]

    def _audit(self, kind: str, rec: CallRecord, run: RunRecord, provider: str,
               now: datetime) -> AuditEvent:
        return audit_of(kind, rec, subject=run.subject, tenant=run.tenant,
                        provider=provider or run.provider, registry=self.registry, now=now)

    def _authorize_audit(self, identity: Identity, rec: CallRecord, now: datetime) -> AuditEvent:
        return audit_of("authorize", rec, subject=identity.subject, tenant=identity.tenant,
                        provider="", registry=self.registry, now=now)


# ---------------------------------------------------------------------- settle rules

STATE_AFTER: dict[NextAction, RunState] = {
    NextAction.CONTINUE: RunState.ACTIVE,
    NextAction.RETRY_TURN: RunState.ACTIVE,
    NextAction.DONE: RunState.COMPLETED,
    NextAction.PAUSED_FOR_APPROVAL: RunState.PAUSED_FOR_APPROVAL,
    NextAction.PAUSED_UNKNOWN_OUTCOME: RunState.PAUSED_UNKNOWN_OUTCOME,
    NextAction.HANDOFF: RunState.HANDED_OFF,
    NextAction.BUDGET_EXHAUSTED: RunState.BUDGET_EXHAUSTED,
}


NEXT_WITHOUT_TURN: dict[RunState, NextAction] = {
    RunState.ACTIVE: NextAction.CONTINUE,
    RunState.COMPLETED: NextAction.DONE,
    RunState.HANDED_OFF: NextAction.HANDOFF,
    RunState.BUDGET_EXHAUSTED: NextAction.BUDGET_EXHAUSTED,
    RunState.CANCELLED: NextAction.HANDOFF,
    RunState.PAUSED_FOR_APPROVAL: NextAction.PAUSED_FOR_APPROVAL,
    RunState.PAUSED_UNKNOWN_OUTCOME: NextAction.PAUSED_UNKNOWN_OUTCOME,
}


def settle_next(run: RunRecord, turn: TurnRecord,
                calls: Sequence[CallRecord]) -> tuple[NextAction, str]:
    """The NextAction of DESIGN §4 for a turn whose calls are as given."""
    if batch.exceeded(run) and turn.event != EventKind.FINAL:
        return NextAction.BUDGET_EXHAUSTED, batch.exceeded(run)
    kind = turn.event
    if kind == EventKind.FINAL:
        return NextAction.DONE, "final answer"
    if kind == EventKind.REFUSAL:
        return NextAction.HANDOFF, "the model refused"
    if kind == EventKind.PAUSED:
        return NextAction.CONTINUE, "the provider paused the turn; continue it"
    detail = turn.detail
    if kind == EventKind.INCOMPLETE:
        return _retry_or_handoff(run, f"the response was incomplete ({detail.text or 'no reason'})")
    if kind == EventKind.PROVIDER_ERROR:
        what = f"provider error ({detail.error_kind or 'other'}): {detail.text}"
        if not detail.retryable:
            return NextAction.HANDOFF, f"{what}; not retryable"
        return _retry_or_handoff(run, what)
    return _after_calls(run, calls)


def _retry_or_handoff(run: RunRecord, what: str) -> tuple[NextAction, str]:
    if run.retries_in_row >= run.budget.retries_allowed:
        return NextAction.HANDOFF, (f"{what}; the retry budget ({run.budget.retries_allowed}) "
                                    "is spent")
    return NextAction.RETRY_TURN, f"{what}; nothing ran, ask the model again"


def _after_calls(run: RunRecord, calls: Sequence[CallRecord]) -> tuple[NextAction, str]:
    unknown = [c.call_id for c in calls if c.status == CallStatus.UNKNOWN]
    if unknown:
        return NextAction.PAUSED_UNKNOWN_OUTCOME, (
            f"outcome unknown for {', '.join(unknown)}; callgate will look it up on ResumeRun, "
            "or an operator may ResolveCall")
    waiting = [c.call_id for c in calls
               if c.status in (CallStatus.PENDING_APPROVAL, CallStatus.HELD)]
    if waiting:
        return NextAction.PAUSED_FOR_APPROVAL, f"waiting for approval: {', '.join(waiting)}"
    if any(c.error_code == CallCode.BUDGET_EXHAUSTED.value for c in calls):
        return NextAction.BUDGET_EXHAUSTED, "the tool-call budget is spent"
    spent = batch.no_turn_left(run)
    if spent:
        return NextAction.BUDGET_EXHAUSTED, spent
    return NextAction.CONTINUE, "every call is settled"
