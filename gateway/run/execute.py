"""Executing a turn: run what the plan allows, with write-ahead intent.

For each call: EXECUTING (with the run's tool-call counter) is committed before the side effect
starts (for a new turn's reads, in the commit that records the turn: `claim_reads`). A write's
result is committed as soon as it is known; a read's result rides with the next commit (the next
write's intent, or the turn's settlement): a read lost to a crash before that is EXECUTING,
which is run again if repeatable and UNKNOWN otherwise, never an outcome already answered.
Reads run concurrently, writes one at a time in the model's order; a write that ends FAILED
or UNKNOWN stops the writes after it (unless the batch policy permits partial writes). An
UNKNOWN write is reconciled at once. What runs: calls the plan left PROPOSED, and the calls the
approval step released (`released`: approved and re-checked, or writes no longer held).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from time import perf_counter
from typing import Any

from gateway.arguments import parse_arguments
from gateway.audit import events
from gateway.audit.records import AuditEvent, AuditKind
from gateway.errors import CallCode
from gateway.executors.base import ExecutionContext, ExecutionResult
from gateway.model import CallRecord, CallStatus, Identity, RunRecord, revised
from gateway.observe.hooks import OFF, Observe
from gateway.observe.logs import CALL_ID
from gateway.pins import PinMode
from gateway.policy.base import PolicyEngine
from gateway.run.deliver import Deliverer
from gateway.run.pins import PinBook
from gateway.run.plan import is_write, not_run
from gateway.store.base import RunStore
from gateway.tools import Registry, Tool


def idempotency_key(rec: CallRecord) -> str:
    return f"{rec.run_id}:{rec.call_id}"


@dataclass
class Unsaved:
    """Results known but not committed yet (reads), with the records they replace."""

    calls: list[CallRecord] = field(default_factory=list)
    expect: list[CallRecord] = field(default_factory=list)
    audit: list[AuditEvent] = field(default_factory=list)

    def take(self) -> Unsaved:
        held = Unsaved(self.calls, self.expect, self.audit)
        self.calls, self.expect, self.audit = [], [], []
        return held


@dataclass
class TurnWork:
    """The mutable state of one turn while it is driven (one task at a time per run)."""

    run: RunRecord
    calls: dict[str, CallRecord]
    identity: Identity
    order: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # intent committed: may be on the wire
    unsaved: Unsaved = field(default_factory=Unsaved)

    def ordered(self) -> list[CallRecord]:
        return [self.calls[c] for c in self.order]


Clock = Callable[[], datetime]


@dataclass
class ExecutionPhase:
    store: RunStore
    registry: Registry
    clock: Clock
    partial_writes: bool = False
    released: frozenset[str] = frozenset()  # approved or held calls cleared to run now
    observe: Observe = OFF
    policy: PolicyEngine | None = None  # asked `result` before a result is kept (deliver)
    pins: PinBook | None = None  # under enforce, a tool changed since its call was decided
    # sends nothing

    def __post_init__(self) -> None:
        self._deliverer = Deliverer(self.policy, self.registry) if self.policy is not None else None

    async def run(self, work: TurnWork) -> None:
        reads = [c for c in work.ordered() if not is_write(c)]
        await self._reads(work, reads)
        await self._writes(work, [c for c in work.ordered() if is_write(c)])

    # ------------------------------------------------------------------ reads

    async def _reads(self, work: TurnWork, reads: Sequence[CallRecord]) -> None:
        claimed = set(work.started)  # EXECUTING committed by this driver already
        fresh = [c for c in reads if c.call_id not in claimed]
        runnable = [c for c in fresh if self._runnable(c)]
        stale = [c for c in fresh if c.status == CallStatus.EXECUTING and not self._repeatable(c)]
        for rec in stale:
            await self._commit(
                work,
                [
                    rec.moved(
                        CallStatus.UNKNOWN,
                        error_code=CallCode.OUTCOME_UNKNOWN.value,
                        execution_count=rec.execution_count + 1,
                        error_message="the read was in flight when the gateway stopped and is not "
                        "repeatable",
                    )
                ],
            )
        started = {c.call_id: c for c in await self._intent(work, runnable)} if runnable else {}
        started.update((c, work.calls[c]) for c in claimed if c in work.calls)
        ordered = [started[c.call_id] for c in reads if c.call_id in started]
        if not ordered:
            return
        parallel = [c for c in ordered if self._parallel_safe(c)]
        serial = [c for c in ordered if not self._parallel_safe(c)]
        outcomes = await asyncio.gather(
            *(self._execute(work, c) for c in parallel), return_exceptions=True
        )
        for failure in outcomes:  # every read settled or failed to record; then report one
            if isinstance(failure, BaseException):
                raise failure
        for rec in serial:
            await self._execute(work, rec)

    def _runnable(self, rec: CallRecord) -> bool:
        if self._ready(rec):
            return True
        return rec.status == CallStatus.EXECUTING and self._repeatable(rec)

    def _ready(self, rec: CallRecord) -> bool:
        """Decided and cleared to start: PROPOSED after the plan, or released."""
        return rec.status == CallStatus.PROPOSED or (
            rec.call_id in self.released
            and rec.status in (CallStatus.PENDING_APPROVAL, CallStatus.HELD)
        )

    def _repeatable(self, rec: CallRecord) -> bool:
        tool = self.registry.get(rec.tool)
        return tool is not None and tool.repeatable

    def _parallel_safe(self, rec: CallRecord) -> bool:
        tool = self.registry.get(rec.tool)
        return tool is not None and tool.parallel_safe

    # ------------------------------------------------------------------ writes

    async def _writes(self, work: TurnWork, writes: Sequence[CallRecord]) -> None:
        blocked = ""
        for rec in writes:
            rec = work.calls[rec.call_id]
            if blocked and (self._ready(rec) or rec.status == CallStatus.HELD):
                await self._commit(work, [not_run(rec, blocked, self.clock())])
                continue
            if rec.status == CallStatus.EXECUTING:  # found in flight: never simply re-run
                rec = rec.moved(
                    CallStatus.UNKNOWN,
                    error_code=CallCode.OUTCOME_UNKNOWN.value,
                    execution_count=rec.execution_count + 1,
                    error_message="the write was in flight when the gateway stopped; looking it up",
                )
                await self._commit(work, [rec])
            if self._ready(rec):
                (rec,) = await self._intent(work, [rec])
                rec = await self._execute(work, rec)
            if rec.status == CallStatus.UNKNOWN:
                rec = await self.reconcile(work, rec)
            if rec.status in (CallStatus.FAILED, CallStatus.UNKNOWN) and not self.partial_writes:
                blocked = "failed" if rec.status == CallStatus.FAILED else "of unknown outcome"

    # ------------------------------------------------------------------ steps

    def claim_reads(
        self, run: RunRecord, calls: Sequence[CallRecord], now: datetime
    ) -> tuple[RunRecord, list[CallRecord], list[str]]:
        """A new turn's reads cleared to run, moved to EXECUTING with the run's counter, for the
        commit that records the turn (nothing written here): the run, every call, the IDs
        claimed."""
        reads = [c for c in calls if not is_write(c) and self._ready(c)]
        if not reads:
            return run, list(calls), []
        moved = {r.call_id: self._started(r, now) for r in reads}
        run = revised(run, tool_calls_used=run.tool_calls_used + len(reads), updated_at=now)
        return run, [moved.get(c.call_id, c) for c in calls], list(moved)

    @staticmethod
    def _started(rec: CallRecord, now: datetime) -> CallRecord:
        return rec.moved(CallStatus.EXECUTING, started_at=now, idempotency_key=idempotency_key(rec))

    async def _intent(self, work: TurnWork, recs: Sequence[CallRecord]) -> list[CallRecord]:
        """Commit EXECUTING (and the tool-call counter) before any request is sent. The commit
        is the claim to execute: guarded by each call's status as read, it succeeds for one
        writer only, and a replica that loses it (StoreConflict) sends nothing."""
        now = self.clock()
        fresh = [r for r in recs if r.status != CallStatus.EXECUTING]
        moved = [
            self._started(r, now) if r.status != CallStatus.EXECUTING else self._repeat(r, now)
            for r in recs
        ]
        run = revised(
            work.run, tool_calls_used=work.run.tool_calls_used + len(fresh), updated_at=now
        )
        await self._save(work, run=run, calls=moved, expect=recs)
        work.run = run
        for r in moved:
            work.calls[r.call_id] = r
        work.started.extend(r.call_id for r in moved)
        return moved

    @staticmethod
    def _repeat(rec: CallRecord, now: datetime) -> CallRecord:
        """A read found EXECUTING is run again; its lost attempt may have reached the target,
        so it counts as sent."""
        return revised(rec, started_at=now, execution_count=rec.execution_count + 1)

    async def _execute(self, work: TurnWork, rec: CallRecord) -> CallRecord:
        token = CALL_ID.set(rec.call_id)
        try:
            if self.observe.enabled:
                tracer = self.observe.tracer
                with tracer.span(
                    "callgate.execute", {"callgate.tool": rec.tool} if tracer.enabled else None
                ) as span:
                    done = await self._execute_call(work, rec)
                    span.set_attribute("callgate.status", done.status.value)
                return done
            return await self._execute_call(work, rec)
        finally:
            CALL_ID.reset(token)

    async def _execute_call(self, work: TurnWork, rec: CallRecord) -> CallRecord:
        tool = self.registry.get(rec.tool)
        args = parse_arguments(rec.arguments_json)
        if tool is None or args is None:  # the registry changed since the decision
            res = ExecutionResult(
                CallStatus.FAILED,
                error_code="unknown_tool",
                error_message=f"tool {rec.tool!r} is no longer registered",
            )
        else:
            res = await self._run_tool(work, rec, tool, args)
        return await self._record_result(work, rec, res, AuditKind.EXECUTION, args)

    async def reconcile(self, work: TurnWork, rec: CallRecord) -> CallRecord:
        tool = self.registry.get(rec.tool)
        args = parse_arguments(rec.arguments_json)
        if tool is None or args is None:
            return rec
        res = await self._run_tool(work, rec, tool, args, reconcile=True)
        if res.status == CallStatus.UNKNOWN and res.attempts == 0:
            return rec
        return await self._record_result(work, rec, res, AuditKind.RECONCILE, args)

    async def _run_tool(
        self,
        work: TurnWork,
        rec: CallRecord,
        tool: Tool,
        args: dict[str, Any],
        *,
        reconcile: bool = False,
    ) -> ExecutionResult:
        """The executor's answer; when observed, in a client span of its own (whose trace
        context the request carries), timed by the status it answered."""
        run = tool.reconcile if reconcile else tool.run
        held = "" if reconcile else self._fingerprint(tool, rec)
        if not self.observe.enabled:
            return await run(args, self._ctx(work, rec, fingerprint=held))
        tracer = self.observe.tracer
        name = "callgate.tool.reconcile" if reconcile else "callgate.tool"
        with tracer.span(name, {"callgate.tool": rec.tool}, client=True) as span:
            ctx = self._ctx(work, rec, tracer.headers(), fingerprint=held)
            start = perf_counter()
            res = await run(args, ctx)
            elapsed = perf_counter() - start
            span.set_attribute("callgate.outcome", res.status.value)
            if res.error_code:
                span.set_attribute("callgate.code", res.error_code)
        self.observe.metrics.tool_run(rec.tool, res.status.value, elapsed)
        return res

    def _fingerprint(self, tool: Tool, rec: CallRecord) -> str:
        """The definition the call must still run under (enforced pins), else ""."""
        if self.pins is None or self.pins.mode(tool) is not PinMode.ENFORCE:
            return ""
        return rec.decision.tool_fingerprint if rec.decision is not None else ""

    def _ctx(
        self,
        work: TurnWork,
        rec: CallRecord,
        trace_headers: Mapping[str, str] | None = None,
        *,
        fingerprint: str = "",
    ) -> ExecutionContext:
        return ExecutionContext(
            run_id=rec.run_id,
            call_id=rec.call_id,
            idempotency_key=rec.idempotency_key or idempotency_key(rec),
            identity=work.identity,
            trace_headers=trace_headers,
            tool_fingerprint=fingerprint,
        )

    async def _record_result(
        self,
        work: TurnWork,
        rec: CallRecord,
        res: ExecutionResult,
        kind: AuditKind,
        args: dict[str, Any] | None = None,
    ) -> CallRecord:
        delivery = None
        if self._deliverer is not None:
            res, delivery = await self._deliverer.deliver(
                rec, res, run=work.run, identity=work.identity, args=args
            )
        now = self.clock()
        count = rec.execution_count + res.attempts
        if res.status == rec.status:  # still UNKNOWN after a re-send
            done = revised(rec, execution_count=count, error_message=res.error_message)
        else:
            done = rec.moved(
                res.status,
                output_json=res.output_json,
                error_code=res.error_code,
                error_message=res.error_message,
                execution_count=count,
                finished_at=now if res.status != CallStatus.UNKNOWN else None,
            )
        await self._commit(
            work,
            [done],
            kind,
            attempts=res.attempts,
            delivery=delivery.as_detail() if delivery else None,
        )
        return done

    async def _commit(
        self,
        work: TurnWork,
        recs: Sequence[CallRecord],
        kind: AuditKind = AuditKind.EXECUTION,
        attempts: int | None = None,
        delivery: dict[str, Any] | None = None,
    ) -> None:
        """Record these calls' new state: reads' results are held for the next commit, anything
        else is committed now (with what is held)."""
        now = self.clock()
        audit = [
            events.execution(
                r,
                work.run,
                registry=self.registry,
                now=now,
                attempts=attempts,
                kind=kind,
                delivery=delivery,
            )
            for r in recs
        ]
        before = [work.calls[r.call_id] for r in recs]
        if all(not is_write(r) and r.status != CallStatus.EXECUTING for r in recs) and all(
            b.status == CallStatus.EXECUTING for b in before
        ):
            work.unsaved.calls.extend(recs)
            work.unsaved.expect.extend(before)
            work.unsaved.audit.extend(audit)
        else:
            await self._save(work, calls=recs, expect=before, audit=audit)
        for r in recs:
            work.calls[r.call_id] = r

    async def _save(
        self,
        work: TurnWork,
        *,
        run: RunRecord | None = None,
        calls: Sequence[CallRecord] = (),
        expect: Sequence[CallRecord] = (),
        audit: Sequence[AuditEvent] = (),
    ) -> None:
        held = work.unsaved.take()
        await self.store.save(
            run=run,
            calls=[*held.calls, *calls],
            expect=[*held.expect, *expect],
            audit=[*held.audit, *audit],
        )
