"""The turn/batch state machine (docs/architecture.md). No gRPC and no SQL in here.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from gateway.audit import events
from gateway.errors import (
    PermissionDenied,
    RequestCode,
    RequestError,
    StoreUnavailable,
)
from gateway.limits import DEFAULT_LIMITS, Limits
from gateway.model import (
    DEFAULT_APPROVAL_TTL_S,
    ApprovalRecord,
    Budget,
    CallRecord,
    CallStatus,
    EventKind,
    Identity,
    NextAction,
    RunPage,
    RunRecord,
    RunState,
    TurnContext,
    TurnInput,
    TurnOutcome,
    TurnRecord,
    now_utc,
    revised,
)
from gateway.observe.hooks import OFF, Observe
from gateway.observe.logs import RUN_ID, TURN_ID
from gateway.pins import PinModes
from gateway.policy.base import PolicyEngine
from gateway.request_checks import (
    check_budget,
    check_calls,
    check_id,
    check_labels,
    check_usage,
)
from gateway.run import pages
from gateway.run.approval_gate import ApprovalGate
from gateway.run.execute import ExecutionPhase, TurnWork, Unsaved
from gateway.run.follow import Seen, follow
from gateway.run.history import HistoryNeed
from gateway.run.interventions import Interventions
from gateway.run.judge import Judge
from gateway.run.judging import TurnJudging
from gateway.run.pins import PinBook
from gateway.run.settle import (
    STATE_AFTER,
    outcome_of,
    settle_next,
    settled_outcome,
    without_turn,
)
from gateway.store.base import RunStore
from gateway.tools import Registry

log = logging.getLogger("callgate.runner")
T = TypeVar("T")


@dataclass(frozen=True)
class StartRunParams:
    run_id: str = ""
    provider: str = ""
    api_version: str = ""
    budget: Budget = Budget()
    labels: dict[str, str] | None = None
    conversation_json: str = ""

    def params_hash(self) -> str:
        body = [
            self.provider,
            self.api_version,
            list(vars(self.budget).values()),
            sorted((self.labels or {}).items()),
            self.conversation_json,
        ]
        return hashlib.sha256(json.dumps(body).encode()).hexdigest()


class Runner(Interventions):
    """Runs, turns and their phases; cancelling, approvals decided and calls resolved are
    `Interventions`."""

    def __init__(
        self,
        *,
        store: RunStore,
        registry: Registry,
        policy: PolicyEngine,
        clock: Callable[[], datetime] = now_utc,
        approval_ttl_s: int = DEFAULT_APPROVAL_TTL_S,
        limits: Limits = DEFAULT_LIMITS,
        observe: Observe = OFF,
        pins: PinModes | None = None,
    ) -> None:
        self.store = store
        self.observe = observe
        self.registry = registry
        self.policy = policy
        self.clock = clock
        self.approval_ttl_s = approval_ttl_s
        self.limits = limits
        # the pins of tools' definitions (`serve --pin-tools`; None: not checked)
        self.pins = PinBook(store, pins, clock) if pins is not None else None
        self.judge = Judge(
            registry,
            policy,
            limits,
            observe=observe,
            usage=store.quota_usage,
            pins=self.pins,
        )
        self.gate = ApprovalGate(store, self.judge, registry)
        self.judging = TurnJudging(
            store,
            registry,
            policy,
            self.judge,
            limits=limits,
            approval_ttl_s=approval_ttl_s,
            observe=observe,
        )
        # told about approvals that wait for a person (committed), e.g. to arm their expiry
        self.on_pending: Callable[[Sequence[ApprovalRecord]], None] = lambda _: None
        self._inflight: set[asyncio.Future[Any]] = set()

    async def _exclusive(self, run_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run work holding the run's drive lock (taken in the store, so no other task,
        process or replica drives the run meanwhile), to completion even when the caller goes
        away: a turn that started executing finishes and commits its results, so a client's
        deadline or disconnect never leaves a call half-recorded."""

        async def locked() -> T:
            RUN_ID.set(run_id)  # (this task's own: the log lines of its work name the run)
            async with self.store.drive_lock(run_id):
                return await work()

        task = asyncio.ensure_future(locked())
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await asyncio.shield(task)

    async def drain(self, timeout_s: float) -> None:
        """Wait (bounded) for turns still being driven, e.g. before the store closes."""
        if self._inflight:
            await asyncio.wait(set(self._inflight), timeout=timeout_s)

    # ------------------------------------------------------------------ runs

    async def start_run(self, identity: Identity, params: StartRunParams) -> RunRecord:
        check_id("run_id", params.run_id)
        check_budget(params.budget)
        check_labels(params.labels or {}, self.limits)
        now = self.clock()
        run = RunRecord(
            run_id=params.run_id or f"run_{uuid.uuid4().hex}",
            state=RunState.ACTIVE,
            subject=identity.subject,
            tenant=identity.tenant,
            provider=params.provider,
            api_version=params.api_version,
            budget=params.budget,
            labels=dict(params.labels or {}),
            conversation_json=params.conversation_json,
            params_hash=params.params_hash(),
            created_at=now,
            updated_at=now,
            roles=identity.roles,
        )
        stored = await self.store.create_run(run)
        if (
            stored.params_hash != run.params_hash
            or stored.subject != identity.subject
            or stored.tenant != identity.tenant
        ):
            raise RequestError(
                RequestCode.RUN_CONFLICT,
                f"run {run.run_id} already exists with other parameters; choose another run_id",
            )
        return stored

    async def owned_run(self, identity: Identity, run_id: str) -> RunRecord:
        return self._owned(identity, run_id, await self.store.get_run(run_id))

    @staticmethod
    def _owned(identity: Identity, run_id: str, run: RunRecord | None) -> RunRecord:
        if run is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {run_id!r}")
        if run.subject != identity.subject or run.tenant != identity.tenant:
            raise PermissionDenied(f"run {run_id} belongs to another subject")
        return run

    async def get_run(
        self, identity: Identity, run_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> RunPage:
        """The run with one page of its turns (`gateway.run.pages`): the latest ones, or
        those before the page `page_token` continues from."""
        limit = pages.page_turns(page_size, self.limits.max_run_page_turns)
        await self.owned_run(identity, run_id)
        before = pages.page_before(run_id, page_token)
        page = await self.store.run_page(run_id, before=before, limit=limit)
        if page is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {run_id!r}")
        pages.check_in_run(run_id, before, page)
        return pages.within_bytes(page, self.limits.max_run_page_bytes)

    # ------------------------------------------------------------------ turns

    async def submit_turn(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        return await self._exclusive(turn.run_id, lambda: self._submit(identity, turn))

    async def _submit(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        TURN_ID.set(turn.turn_id)
        need = HistoryNeed.of(self.policy)
        ctx = await self.store.turn_context(
            turn.run_id, turn.turn_id, [c.call_id for c in turn.event.calls], need.limit
        )
        run = self._owned(identity, turn.run_id, ctx.run if ctx else None)
        assert ctx is not None
        self._check_turn_shape(run, turn)
        existing = ctx.turn
        if existing is not None:
            if existing.content_hash != turn.content_hash():
                raise RequestError(
                    RequestCode.TURN_CONFLICT,
                    f"turn {turn.turn_id} was already submitted with other content",
                )
            if existing.next is None:  # accepted before, never settled: finish it
                if run.state.terminal:
                    raise RequestError(
                        RequestCode.RUN_FINISHED, f"run {run.run_id} has ended ({run.state.value})"
                    )
                return await self._drive(identity, run, existing)
            return await self._outcome(run, existing)
        self._check_accepting(run, ctx.last)
        return await self._accept(identity, ctx, turn, need)

    def _check_turn_shape(self, run: RunRecord, turn: TurnInput) -> None:
        if not turn.turn_id:
            raise RequestError(RequestCode.INVALID_ARGUMENT, "turn_id is required")
        check_id("turn_id", turn.turn_id)
        if turn.provider and run.provider and turn.provider != run.provider:
            raise RequestError(
                RequestCode.UNKNOWN_PROVIDER,
                f"run {run.run_id} was started for provider {run.provider}; "
                f"a turn for {turn.provider} is not accepted",
            )
        check_usage(turn.usage)
        check_calls(turn.event.calls, self.limits)

    @staticmethod
    def _check_accepting(run: RunRecord, last: TurnRecord | None) -> None:
        if run.state.terminal:
            raise RequestError(
                RequestCode.RUN_FINISHED,
                f"run {run.run_id} has ended ({run.state.value}); start a new run",
            )
        if run.state.paused:
            raise RequestError(
                RequestCode.RUN_PAUSED,
                f"run {run.run_id} is paused: "
                f"{run.pause_reason}; settle it (approval, ResolveCall or "
                "ResumeRun) before the next turn",
            )
        if last is not None and last.next is None:
            raise RequestError(
                RequestCode.RUN_PAUSED,
                f"turn {last.turn_id} of run {run.run_id} has not settled; call ResumeRun first",
            )

    async def _accept(
        self, identity: Identity, ctx: TurnContext, turn: TurnInput, need: HistoryNeed
    ) -> TurnOutcome:
        """A new turn: its calls are judged and planned, and the reads cleared to run are
        claimed (EXECUTING, counted), before anything is written; then the turn, its calls,
        their approval requests and decision records are committed together, and the claimed
        reads go out."""
        now = self.clock()
        record = _turn_record(ctx, turn, now)
        run = revised(
            ctx.run,
            turns_used=ctx.run.turns_used + 1,
            usage_total=ctx.run.usage_total + turn.usage,
            updated_at=now,
            roles=identity.roles,
        )
        proposed = self.judging.proposed(run, turn, now, ctx.used)
        if turn.event.kind != EventKind.TOOL_REQUEST or not proposed:
            await self.store.begin_turn(
                run,
                record,
                proposed,
                [
                    events.decision(
                        c,
                        run,
                        actor=identity,
                        registry=self.registry,
                        now=now,
                        provider=turn.provider,
                    )
                    for c in proposed
                    if c.status == CallStatus.REJECTED
                ],
            )
            return await self._drive(identity, run, record, proposed)
        recent = [c for c in ctx.recent if c.turn_id != record.turn_id]
        judged = await self.judging.judge_turn(identity, run, record, proposed, recent, now, need)
        phase = self._phase(judged.partial)
        run, calls, claimed, judged = await self.judging.begin(
            identity, run, record, proposed, judged, phase.claim_reads, now
        )
        if judged.approvals:
            self.on_pending(judged.approvals)
        return await self._execute(identity, run, record, calls, phase, claimed)

    # ------------------------------------------------------------------ driving a turn

    async def _drive(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        stored: Sequence[CallRecord] | None = None,
        *,
        again: bool = False,
    ) -> TurnOutcome:
        """Take an accepted turn as far as it can go, then settle it. `stored` are the turn's
        call records when the caller has them (a new turn), else they are read back.

        A write found UNKNOWN is looked up again (`ExecutionPhase.run`); a read found UNKNOWN
        (one that is not repeatable and was in flight when the gateway stopped) is never
        repeated or looked up: it stays UNKNOWN until an operator settles it."""
        TURN_ID.set(turn.turn_id)
        if turn.event != EventKind.TOOL_REQUEST:
            return await self._settle(run, turn, [])
        if turn.next is not None:
            # driven again (e.g. a paused turn resumed): it has no settled outcome until it
            # settles anew, so nobody reads a half-updated turn as settled (nor counts it)
            turn, again = revised(turn, next=None, reason=""), True
            await self.store.save(turn=turn)
        calls = (
            list(stored)
            if stored is not None
            else await self.store.turn_calls(run.run_id, turn.turn_id)
        )
        calls, partial = await self._judge_pending(identity, run, turn, calls)
        return await self._execute(identity, run, turn, calls, self._phase(partial), again=again)

    def _phase(self, partial: bool) -> ExecutionPhase:
        return ExecutionPhase(
            self.store,
            self.registry,
            self.clock,
            partial_writes=partial,
            observe=self.observe,
            policy=self.policy,
            pins=self.pins,
        )

    async def _execute(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        phase: ExecutionPhase,
        claimed: Sequence[str] = (),
        *,
        again: bool = False,
    ) -> TurnOutcome:
        """Let the turn's approvals speak, run what may run, settle the turn. `claimed`: reads
        whose EXECUTING is already committed by this driver (they go out without another
        commit). Read results are committed with the settlement (a crash before it leaves them
        EXECUTING: run again if repeatable, UNKNOWN otherwise); write results at once."""
        calls, released = await self.gate.open(
            run, turn, calls, partial=phase.partial_writes, now=self.clock()
        )
        phase.released = released
        work = TurnWork(
            run=run,
            calls={c.call_id: c for c in calls},
            identity=identity,
            order=[c.call_id for c in calls],
            started=list(claimed),
        )
        try:
            await phase.run(work)
            return await self._settle(work.run, turn, work.ordered(), work, again=again)
        except StoreUnavailable as err:
            if not work.started:
                raise
            raise RequestError(
                RequestCode.RESULTS_NOT_RECORDED,
                (
                    f"the run store failed ({err.message}) after call(s) "
                    f"{', '.join(work.started)} had gone out: their results are not recorded. "
                    "They stay EXECUTING; once the store is back, ResumeRun (or this turn "
                    "submitted again) settles them: reads are run again, writes looked up, never "
                    "blindly repeated"
                ),
            ) from err

    async def _judge_pending(
        self, identity: Identity, run: RunRecord, turn: TurnRecord, calls: list[CallRecord]
    ) -> tuple[list[CallRecord], bool]:
        """Judge and plan the calls not decided yet (a turn accepted before and driven again);
        answers the calls and whether the batch policy permits partial writes (asked once per
        turn)."""
        undecided = [c for c in calls if c.status == CallStatus.PROPOSED and c.decision is None]
        if not undecided:
            return calls, await self.judging.partial_writes(identity, calls)
        now = self.clock()
        need = HistoryNeed.of(self.policy)
        recent = await self.judging.history(run.run_id, turn.turn_id, need.limit)
        judged = await self.judging.judge_turn(identity, run, turn, calls, recent, now, need)
        judged = await self.judging.save(identity, run, turn, judged, now)
        if judged.approvals:
            self.on_pending(judged.approvals)
        return judged.calls, judged.partial

    # ------------------------------------------------------------------ settling

    async def _settle(
        self,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        work: TurnWork | None = None,
        *,
        again: bool = False,
    ) -> TurnOutcome:
        """Decide the turn's NextAction and commit it with the run's state (and the results
        `work` holds uncommitted) in one commit; only then is the outcome built."""
        next_action, reason = settle_next(run, turn, calls)
        now = self.clock()
        state = STATE_AFTER[next_action]
        retries = run.retries_in_row + 1 if next_action == NextAction.RETRY_TURN else 0
        pause = reason if state.paused else ""
        settled = revised(run, state=state, retries_in_row=retries, pause_reason=pause)
        changed = settled != run  # (`run` is as committed: a run unchanged is not rewritten)
        run = revised(settled, updated_at=now) if changed else run
        turn = revised(turn, next=next_action, reason=reason)
        held = work.unsaved.take() if work is not None else Unsaved()
        tracer = self.observe.tracer
        with tracer.span(
            "callgate.settle", {"callgate.next_action": next_action} if tracer.enabled else None
        ):
            await self.store.save(
                run=run if changed else None,
                turn=turn,
                calls=held.calls,
                audit=held.audit,
                expect=held.expect,
            )
        if not again:  # a turn is counted once, when it first settles
            self.observe.metrics.turn(next_action, turn.provider or run.provider)
        log.info(
            "run %s turn %s: %s, %d call(s), run %s",
            run.run_id,
            turn.turn_id,
            next_action.value,
            len(calls),
            state.value,
        )
        return outcome_of(run, turn, calls)

    async def _outcome(self, run: RunRecord, turn: TurnRecord) -> TurnOutcome:
        calls = await self.store.turn_calls(run.run_id, turn.turn_id)
        return outcome_of(run, turn, calls)

    # ------------------------------------------------------------------ resume / authorize

    async def resume_run(self, identity: Identity, run_id: str) -> TurnOutcome:
        return await self._exclusive(run_id, lambda: self._resume(identity, run_id))

    async def _resume(self, identity: Identity, run_id: str) -> TurnOutcome:
        run = await self.owned_run(identity, run_id)
        if run.state.paused:  # an approval past its expiry is settled first
            await self._expire(run_id)
            run = await self.owned_run(identity, run_id)
        turn = await self.store.last_turn(run_id)
        if turn is None:  # nothing submitted yet: the run's state is the whole answer
            return without_turn(run)
        recoverable = turn.next is None or run.state == RunState.PAUSED_UNKNOWN_OUTCOME
        if recoverable and not run.state.terminal:
            return await self._drive(identity, run, turn)
        return await self._outcome(run, turn)

    # ------------------------------------------------------------------ watch

    async def watch_run(self, identity: Identity, run_id: str) -> AsyncIterator[TurnOutcome]:
        """The run's current settled outcome, then every later settlement, until the run
        finishes. A turn that nobody is driving any more (its replica died) is finished
        first, as ResumeRun would, so the first message is always a settled outcome."""
        await self.owned_run(identity, run_id)

        async def first() -> Seen:
            seen = await self._seen(run_id)
            if seen.outcome is not None and seen.outcome.run_state.paused:
                await self.expire_approvals(run_id)  # and arms their expiry here
                seen = await self._seen(run_id)
            if seen.outcome is not None or seen.finished:
                return seen
            await self._exclusive(run_id, lambda: self._finish(identity, run_id))
            return await self._seen(run_id)

        async with self.store.watch(run_id) as changes:
            async for outcome in follow(changes, first, lambda: self._seen(run_id)):
                yield outcome

    async def _seen(self, run_id: str) -> Seen:
        snap = await self.store.snapshot(run_id)
        if snap is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {run_id!r}")
        return Seen(settled_outcome(snap), snap.run.state.terminal)

    async def _finish(self, identity: Identity, run_id: str) -> None:
        """Drive the run's last turn if it is still unsettled (the lock is held: nobody else
        is driving it)."""
        run = await self.owned_run(identity, run_id)
        turn = await self.store.last_turn(run_id)
        if turn is not None and turn.next is None and not run.state.terminal:
            await self._drive(identity, run, turn)


def _turn_record(ctx: TurnContext, turn: TurnInput, now: datetime) -> TurnRecord:
    """The record of a turn the run accepts, next in its sequence."""
    last = ctx.last
    return TurnRecord(
        run_id=ctx.run.run_id,
        turn_id=turn.turn_id,
        seq=(last.seq + 1) if last else 1,
        event=turn.event.kind,
        content_hash=turn.content_hash(),
        provider=turn.provider,
        api_version=turn.api_version,
        model=turn.model,
        usage=turn.usage,
        raw_response_json=turn.raw_response_json,
        detail=turn.event.detail(),
        created_at=now,
    )
