"""What people do to a run besides driving it (a part of `Runner`): an approval decided or
expired, an UNKNOWN call resolved by an operator. Each commits its decision, then drives the
turn it ends the wait of, holding the run's lock like every other change to the run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from gateway.approvals import records as ap
from gateway.audit import events
from gateway.errors import CallCode, RequestCode, RequestError, StoreConflict
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallResult,
    CallStatus,
    Identity,
    NextAction,
    RunRecord,
    RunState,
    TurnOutcome,
    TurnRecord,
    revised,
)
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import resolve_input
from gateway.request_checks import check_id
from gateway.run import plan, resolution
from gateway.run.execute import TurnWork
from gateway.run.resolution import ResolveRequest
from gateway.store.base import RunStore
from gateway.tools import Registry

T = TypeVar("T")


class _Runner(Protocol):
    """What these steps use of the runner."""

    store: RunStore
    registry: Registry
    policy: PolicyEngine
    clock: Callable[[], datetime]
    on_pending: Callable[[Sequence[ApprovalRecord]], None]

    async def owned_run(self, identity: Identity, run_id: str) -> RunRecord: ...

    async def _cancel(self, run: RunRecord, by: Identity) -> RunRecord: ...

    async def _exclusive(self, run_id: str, work: Callable[[], Awaitable[T]]) -> T: ...

    async def _drive(
        self,
        identity: Identity,
        run: RunRecord,
        turn: TurnRecord,
        stored: Sequence[CallRecord] | None = None,
        *,
        again: bool = False,
    ) -> TurnOutcome: ...

    async def _settle(
        self,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        work: TurnWork | None = None,
        *,
        again: bool = False,
    ) -> TurnOutcome: ...

    async def _decide_approval(
        self, approver: Identity, req: ap.DecideRequest
    ) -> tuple[ApprovalRecord, CallResult]: ...

    async def _approval_now(self, approval_id: str) -> ApprovalRecord: ...

    async def _expire(self, run_id: str) -> None: ...

    async def _resolve(self, operator: Identity, req: ResolveRequest) -> CallResult: ...


class Interventions:
    async def cancel_run(self: _Runner, identity: Identity, run_id: str) -> RunRecord:
        async def locked() -> RunRecord:
            run = await self.owned_run(identity, run_id)
            if run.state == RunState.CANCELLED:
                return run
            if run.state.terminal:
                raise RequestError(
                    RequestCode.RUN_FINISHED, f"run {run_id} already ended ({run.state.value})"
                )
            return await self._cancel(run, identity)

        return await self._exclusive(run_id, locked)

    async def _cancel(self: _Runner, run: RunRecord, by: Identity) -> RunRecord:
        now = self.clock()
        last = await self.store.last_turn(run.run_id)
        calls = await self.store.turn_calls(run.run_id, last.turn_id) if last else []
        changed = _cancelled_calls(calls, now)  # guarded by `calls`: only what is still so
        pending = [
            a
            for a in await self.store.approvals_for_run(run.run_id)
            if a.status == ApprovalStatus.PENDING
        ]
        approvals = [ap.cancelled(a, now, "run cancelled") for a in pending]
        cancelled = revised(run, state=RunState.CANCELLED, pause_reason="", updated_at=now)
        stopped = None
        if last is not None and last.next in (
            None,
            NextAction.PAUSED_FOR_APPROVAL,
            NextAction.PAUSED_UNKNOWN_OUTCOME,
        ):
            stopped = revised(last, next=NextAction.HANDOFF, reason="the run was cancelled")
        audit = [
            events.approval_ended(
                a,
                actor=by,
                policy_revision=self.policy.revision,
                registry=self.registry,
                now=now,
                provider=run.provider,
            )
            for a in approvals
        ]
        audit += events.cancelled(cancelled, changed, by, registry=self.registry, now=now)
        await self.store.save(
            run=cancelled,
            turn=stopped,
            calls=changed,
            approvals=approvals,
            audit=audit,
            expect=calls,
            expect_approvals=pending,
        )
        return cancelled

    async def decide_approval(
        self: _Runner, approver: Identity, req: ap.DecideRequest
    ) -> tuple[ApprovalRecord, CallResult]:
        """A person approves or denies a call waiting for approval. The decision that ends the
        turn's wait drives the turn on: the approved calls are re-checked and run (held
        writes with them, in order), or become NOT_RUN; the turn's watchers see it settle."""
        ap.check_request(req)
        check_id("approval_id", req.approval_id)
        found = await self.store.get_approval(req.approval_id)
        if found is None:
            raise ap.not_found(req.approval_id)
        if not await ap.may_approve(self.policy, self.registry, approver, found):
            raise ap.not_allowed(approver, found)
        return await self._exclusive(found.run_id, lambda: self._decide_approval(approver, req))

    async def _decide_approval(
        self: _Runner, approver: Identity, req: ap.DecideRequest
    ) -> tuple[ApprovalRecord, CallResult]:
        a = await self._approval_now(req.approval_id)
        if a.due(self.clock()):  # expired while nobody looked: settle that first
            await self._expire(a.run_id)
            a = await self._approval_now(req.approval_id)
        run = await self.store.get_run(a.run_id)
        turn = await self.store.get_turn(a.run_id, a.turn_id)
        if a.status != ApprovalStatus.PENDING or run is None or turn is None:
            raise ap.already_decided(a)
        if run.state.terminal:
            raise RequestError(
                RequestCode.RUN_FINISHED,
                f"run {run.run_id} has ended "
                f"({run.state.value}); its approvals can no longer be decided",
            )
        now = self.clock()
        done = ap.decided(a, approver, req, now)
        event = events.approval_ended(
            done,
            actor=approver,
            policy_revision=self.policy.revision,
            registry=self.registry,
            now=now,
            provider=run.provider,
        )
        reopened = revised(turn, next=None, reason="")
        try:
            await self.store.save(
                turn=reopened, approvals=[done], audit=[event], expect_approvals=[a]
            )
        except StoreConflict:  # decided elsewhere first
            raise ap.already_decided(await self._approval_now(a.approval_id)) from None
        await self._drive(run.owner, run, reopened, again=True)
        rec = await self.store.find_call(a.run_id, a.call_id)
        assert rec is not None
        return done, CallResult.of(rec)

    async def _approval_now(self: _Runner, approval_id: str) -> ApprovalRecord:
        found = await self.store.get_approval(approval_id)
        if found is None:
            raise ap.not_found(approval_id)
        return found

    async def expire_approvals(self: _Runner, run_id: str) -> None:
        """Settle the run's approvals that are past their expiry, and its turn with them."""
        await self._exclusive(run_id, lambda: self._expire(run_id))

    async def _expire(self: _Runner, run_id: str) -> None:
        """(Holding the run's lock.) Approvals past their expiry become EXPIRED: through the
        turn (its calls REJECTED `approval_expired`, the turn settled) when the run's last
        turn waits for them, on their own otherwise. Those still pending are announced
        (`on_pending`), so their expiry is armed wherever the run is looked at."""
        run = await self.store.get_run(run_id)
        if run is None:
            return
        now = self.clock()
        found = [
            a
            for a in await self.store.approvals_for_run(run_id)
            if a.status == ApprovalStatus.PENDING
        ]
        due = [a for a in found if a.due(now)]
        self.on_pending([a for a in found if not a.due(now)])
        if not due:
            return
        turn = await self.store.last_turn(run_id)
        calls = await self.store.turn_calls(run_id, turn.turn_id) if turn is not None else []
        alone = ap.stray(
            due,
            turn,
            not run.state.terminal,
            {c.call_id for c in calls if c.status == CallStatus.PENDING_APPROVAL},
        )
        if alone:
            ended = [ap.expired(a, now) for a in alone]
            audit = [
                events.approval_ended(
                    a,
                    actor=events.NOBODY,
                    now=now,
                    policy_revision=self.policy.revision,
                    registry=self.registry,
                    provider=run.provider,
                )
                for a in ended
            ]
            await self.store.save(approvals=ended, audit=audit, expect_approvals=alone)
        if len(alone) < len(due) and turn is not None:
            await self._drive(run.owner, run, turn)

    async def resolve_call(self: _Runner, operator: Identity, req: ResolveRequest) -> CallResult:
        """An operator settles an UNKNOWN call; the turn settles once no call of it is
        unknown (its held writes run or become NOT_RUN), and its watchers see it."""
        resolution.check_request(req)
        run = await self.store.get_run(req.run_id)
        if run is None:
            raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {req.run_id!r}")
        rec = await self.store.find_call(run.run_id, req.call_id)
        grant = resolve_input(operator, run.owner, run.run_id, req.call_id, rec)
        if not await self.policy.allows("may_resolve", grant):
            raise resolution.not_allowed(operator, run)
        if rec is None:
            raise RequestError(
                RequestCode.CALL_NOT_FOUND, f"run {run.run_id} has no call {req.call_id!r}"
            )
        if rec.status != CallStatus.UNKNOWN:
            raise resolution.not_unknown(rec)
        resolution.check_output(self.registry.get(rec.tool), req)
        return await self._exclusive(run.run_id, lambda: self._resolve(operator, req))

    async def _resolve(self: _Runner, operator: Identity, req: ResolveRequest) -> CallResult:
        run = await self.store.get_run(req.run_id)
        rec = await self.store.find_call(req.run_id, req.call_id)
        assert run is not None and rec is not None
        if rec.status != CallStatus.UNKNOWN:  # settled while this request waited
            raise resolution.not_unknown(rec)
        now = self.clock()
        done = resolution.resolved(rec, operator, req, now)
        audit = events.resolved(
            done,
            run,
            operator,
            reason=req.reason,
            now=now,
            policy_revision=self.policy.revision,
            registry=self.registry,
        )
        turn = await self.store.get_turn(run.run_id, rec.turn_id)
        last = await self.store.last_turn(run.run_id)
        if run.state.terminal or turn is None or last is None or last.turn_id != turn.turn_id:
            await self.store.save(calls=[done], expect=[rec], audit=[audit])
            return CallResult.of(done)
        reopened = revised(turn, next=None, reason="")
        await self.store.save(turn=reopened, calls=[done], expect=[rec], audit=[audit])
        calls = await self.store.turn_calls(run.run_id, turn.turn_id)
        if turn.next is not None and any(c.status == CallStatus.UNKNOWN for c in calls):
            await self._settle(run, reopened, calls, again=True)  # still paused
        else:
            await self._drive(run.owner, run, reopened, calls, again=True)
        return CallResult.of(done)


def _cancelled_calls(calls: Sequence[CallRecord], now: datetime) -> list[CallRecord]:
    """What cancelling its run makes of a turn's calls: those waiting for approval REJECTED
    `approval_cancelled`, those held or not yet run NOT_RUN; the others as they are."""
    changed: list[CallRecord] = []
    for rec in calls:
        if rec.status == CallStatus.PENDING_APPROVAL:
            changed.append(
                rec.moved(
                    CallStatus.REJECTED,
                    error_code=CallCode.APPROVAL_CANCELLED.value,
                    error_message="the run was cancelled",
                    finished_at=now,
                )
            )
        elif rec.status in (CallStatus.HELD, CallStatus.PROPOSED):
            changed.append(plan.not_run(rec, "cancelled with its run", now))
    return changed
