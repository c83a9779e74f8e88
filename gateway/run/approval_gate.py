"""The approval step of driving a turn: what the turn's approvals let run now.

Before anything of a turn runs, its calls waiting for approval are matched with their approval
records (`ApprovalGate.open`):

1. an approval that ended otherwise than APPROVED (denied, expired, cancelled) rejects its
   call with the matching code; a pending one past its expiry expires here;
2. unless the batch policy permits partial writes, a write that is rejected (or failed, or of
   unknown outcome) makes every other waiting write of the turn NOT_RUN, and their pending
   approvals are cancelled: writes of one turn run together or not at all;
3. an approved call is ready when it is a read, or when no write of the turn still waits for a
   person; an approved write whose sibling writes still wait stays PENDING_APPROVAL (saying
   so), so that its re-check can still reject it;
4. every ready call is re-checked (`ApprovalGate.recheck`): the approval must cover this call,
   this tool version and these arguments (hash recomputed from the stored arguments), must be
   unexpired, and `decision` is asked again with `input.approval` set; only ALLOW lets it run,
   anything else rejects it with the matching code and nothing of it runs (rule 2 applies);
5. once no write waits, the writes the batch HELD are released with the approved ones.

Everything it changes is committed together, guarded by what was read, before the released
calls run (`gateway.run.execute.ExecutionPhase` with `released`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from gateway.approvals import records as ap
from gateway.arguments import ArgumentsError, canonical_sha256, parse_arguments
from gateway.audit import events
from gateway.audit.records import AuditEvent
from gateway.errors import CallCode
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallRecord,
    CallStatus,
    RunRecord,
    TurnRecord,
    Verdict,
    rfc3339,
)
from gateway.pins import short
from gateway.policy.inputs import RECENT_CALLS, RunContext, approval_input
from gateway.run.judge import Judge, rejected
from gateway.run.pins import PinCheck
from gateway.run.plan import is_write, not_run
from gateway.store.base import RunStore
from gateway.tools import Registry, Tool

WAITING = (CallStatus.PENDING_APPROVAL, CallStatus.HELD)
_BLOCKING = (CallStatus.REJECTED, CallStatus.FAILED, CallStatus.UNKNOWN)


@dataclass
class GateStep:
    """The turn's calls and approvals as the gate changes them (one turn, one driver)."""

    calls: list[CallRecord]
    approvals: dict[str, ApprovalRecord]  # by call ID
    now: datetime
    partial: bool
    changed: dict[str, ApprovalRecord] = field(default_factory=dict)  # by approval ID

    def approval(self, rec: CallRecord) -> ApprovalRecord | None:
        return self.approvals.get(rec.call_id)

    def update(self, a: ApprovalRecord) -> None:
        self.approvals[a.call_id] = a
        self.changed[a.approval_id] = a

    def map(self, fn: Callable[[CallRecord], CallRecord]) -> None:
        self.calls = [fn(c) for c in self.calls]


def _why(blocker: CallRecord) -> str:
    if blocker.status == CallStatus.FAILED:
        return "failed"
    if blocker.status == CallStatus.UNKNOWN:
        return "of unknown outcome"
    return {
        CallCode.APPROVAL_DENIED.value: "denied",
        CallCode.APPROVAL_EXPIRED.value: "not approved in time",
        CallCode.APPROVAL_CANCELLED.value: "cancelled",
    }.get(blocker.error_code, "rejected")


def reject_refused(step: GateStep) -> None:
    """Rule 1: calls whose approval ended otherwise than APPROVED are rejected."""

    def reject(rec: CallRecord) -> CallRecord:
        if rec.status != CallStatus.PENDING_APPROVAL:
            return rec
        a = step.approval(rec)
        if a is not None and a.due(step.now):
            a = ap.expired(a, step.now)
            step.update(a)
        return ap.call_after(rec, a, step.now)

    step.map(reject)


def block_writes(step: GateStep) -> None:
    """Rule 2: a write that did not (or will not) succeed stops the turn's waiting writes."""
    if step.partial:
        return
    blocker = next((c for c in step.calls if is_write(c) and c.status in _BLOCKING), None)
    if blocker is None:
        return
    why = _why(blocker)

    def stop(rec: CallRecord) -> CallRecord:
        if not is_write(rec) or rec.status not in WAITING:
            return rec
        a = step.approval(rec)
        if a is not None and a.status == ApprovalStatus.PENDING:
            step.update(
                ap.cancelled(
                    a, step.now, f"not needed: write {blocker.call_id} of the same turn was {why}"
                )
            )
        return not_run(rec, why, step.now)

    step.map(stop)


def writes_waiting(step: GateStep) -> bool:
    """Whether a write of the turn still waits for a person (and so holds the others)."""
    return not step.partial and any(
        is_write(c)
        and c.status == CallStatus.PENDING_APPROVAL
        and (a := step.approval(c)) is not None
        and a.status == ApprovalStatus.PENDING
        for c in step.calls
    )


def ready(step: GateStep) -> list[CallRecord]:
    """Rule 3: the approved calls that may be re-checked and run now."""
    holding = writes_waiting(step)
    return [
        c
        for c in step.calls
        if c.status == CallStatus.PENDING_APPROVAL
        and (a := step.approval(c)) is not None
        and a.status == ApprovalStatus.APPROVED
        and not (is_write(c) and holding)
    ]


def say_waiting(step: GateStep) -> None:
    """An approved write held by its siblings says who approved it and what it waits for."""
    runs_now = {c.call_id for c in ready(step)}

    def note(rec: CallRecord) -> CallRecord:
        a = step.approval(rec)
        if (
            rec.status != CallStatus.PENDING_APPROVAL
            or rec.call_id in runs_now
            or a is None
            or a.status != ApprovalStatus.APPROVED
        ):
            return rec
        return replace(rec, error_message=ap.waiting_message(a))

    step.map(note)


@dataclass(frozen=True)
class ApprovalGate:
    store: RunStore
    judge: Judge
    registry: Registry

    async def open(
        self,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        *,
        partial: bool,
        now: datetime,
    ) -> tuple[list[CallRecord], frozenset[str]]:
        """Apply the turn's approvals (committed); answers its calls and the IDs of the calls
        released to run now (approved and re-checked, or held writes no longer held)."""
        if not any(c.status in WAITING for c in calls):
            return list(calls), frozenset()
        found = await self.store.approvals_for_run(run.run_id)
        step = GateStep(
            list(calls), {a.call_id: a for a in found if a.turn_id == turn.turn_id}, now, partial
        )
        before = dict(step.approvals)
        reject_refused(step)
        block_writes(step)
        checked = {c.call_id: c for c in await self._rechecked(run, turn, step)}
        step.map(lambda c: checked.get(c.call_id, c))
        block_writes(step)  # a write the re-check rejected stops the others
        say_waiting(step)
        released = self._released(step, set(checked))
        await self._commit(run, calls, step, before, rechecked=released & set(checked))
        return step.calls, released

    @staticmethod
    def _released(step: GateStep, checked: set[str]) -> frozenset[str]:
        ids = {
            c.call_id
            for c in step.calls
            if c.call_id in checked and c.status == CallStatus.PENDING_APPROVAL
        }
        if not writes_waiting(step):
            ids |= {c.call_id for c in step.calls if c.status == CallStatus.HELD}
        return frozenset(ids)

    async def _rechecked(
        self, run: RunRecord, turn: TurnRecord, step: GateStep
    ) -> list[CallRecord]:
        candidates = ready(step)
        if not candidates:
            return []
        recent = await self.store.recent_calls(run.run_id, RECENT_CALLS)
        ctx = RunContext(
            run=run,
            turn_seq=turn.seq,
            turn_id=turn.turn_id,
            recent=[c for c in recent if c.turn_id != turn.turn_id],
        )
        out = []
        for rec in candidates:
            a = step.approval(rec)
            assert a is not None
            out.append(await self.recheck(rec, a, ctx=ctx, batch=step.calls, now=step.now))
        return out

    async def recheck(
        self,
        rec: CallRecord,
        a: ApprovalRecord,
        *,
        ctx: RunContext,
        batch: Sequence[CallRecord],
        now: datetime,
    ) -> CallRecord:
        """The approved call decided again, or REJECTED with the code that says why not."""
        tool = self.registry.get(rec.tool)
        if tool is None:
            return rejected(
                rec,
                CallCode.UNKNOWN_TOOL,
                f"tool {rec.tool!r} is no longer registered; the approved call was not run",
                now=now,
            )
        args = parse_arguments(rec.arguments_json)
        refused = _refused(rec, a, tool, args, now)
        if refused is not None:
            return refused
        assert args is not None  # _refused refuses an approved call without arguments
        pin = await self.judge.pin(tool)
        changed = _changed_since(rec, a, pin, now)
        if changed is not None:
            return changed
        judged = await self.judge.decide(
            rec,
            tool,
            args,
            identity=a.requester,
            run=ctx,
            batch=batch,
            now=now,
            approval=approval_input(a),
            pin=pin,
        )
        if judged.decision is not None and rec.decision is not None:
            # what the request reserved stays reserved (and is given back if this rejects)
            judged = replace(judged, decision=replace(judged.decision, quotas=rec.decision.quotas))
        return _rechecked(judged, a, now)

    async def _commit(
        self,
        run: RunRecord,
        before: Sequence[CallRecord],
        step: GateStep,
        approvals_before: dict[str, ApprovalRecord],
        *,
        rechecked: frozenset[str],
    ) -> None:
        calls = [c for c, old in zip(step.calls, before, strict=True) if c != old]
        if not calls and not step.changed:
            return
        audit = [
            events.rechecked(c, run, registry=self.registry, now=step.now)
            if c.call_id in rechecked
            else events.decision(c, run, actor=events.NOBODY, registry=self.registry, now=step.now)
            for c in calls
        ]
        audit += [self._ended(a, run, step.now) for a in step.changed.values()]
        expect = [approvals_before[a.call_id] for a in step.changed.values()]
        await self.store.save(
            calls=calls,
            approvals=list(step.changed.values()),
            audit=audit,
            expect=list(before),
            expect_approvals=expect,
        )

    def _ended(self, a: ApprovalRecord, run: RunRecord, now: datetime) -> AuditEvent:
        """The audit record of an approval the gate ended (expired, or cancelled because a
        sibling write will not run): nobody decided it, callgate did."""
        return events.approval_ended(
            a,
            actor=events.NOBODY,
            registry=self.registry,
            now=now,
            policy_revision=self.judge.policy.revision,
            provider=run.provider,
        )


def _rechecked(judged: CallRecord, a: ApprovalRecord, now: datetime) -> CallRecord:
    """The approved call as the policy decided it again: it runs now (still PENDING_APPROVAL,
    no longer waiting for anyone), REJECTED when the policy no longer allows it, or as the
    policy otherwise decided."""
    verdict = judged.decision.verdict if judged.decision else Verdict.UNSPECIFIED
    if judged.status == CallStatus.PENDING_APPROVAL and verdict != Verdict.ALLOW:
        return rejected(
            judged,
            CallCode.POLICY_DENIED,
            "the policy did not allow the "
            "approved call when it was checked again with the approval: "
            f"{'; '.join(judged.decision.reasons if judged.decision else ())}",
            now=now,
        )
    if judged.status != CallStatus.PENDING_APPROVAL:
        return judged
    return replace(
        judged,
        error_code="",
        error_message=(
            f"approved by {a.decided_by} ({a.approval_id}) and checked again with the "
            "approval: it runs now"
        ),
    )


def _changed_since(
    rec: CallRecord, a: ApprovalRecord, pin: PinCheck, now: datetime
) -> CallRecord | None:
    """The approved call REJECTED when its tool's definition is not the one approved
    (`approval_mismatch`), or is held as changed since its pin (`tool_changed`) or as not
    checkable now (`tool_error`)."""
    if a.tool_fingerprint and pin.fingerprint and pin.fingerprint != a.tool_fingerprint:
        return rejected(
            rec,
            CallCode.APPROVAL_MISMATCH,
            f"tool {rec.tool!r} changed after the approval was requested (the approval "
            f"covers definition {short(a.tool_fingerprint)}, the tool is now "
            f"{short(pin.fingerprint)}); the approved call was not run",
            now=now,
        )
    if pin.held:
        return rejected(rec, pin.code, pin.held, now=now)
    return None


def _refused(
    rec: CallRecord, a: ApprovalRecord, tool: Tool, args: dict[str, object] | None, now: datetime
) -> CallRecord | None:
    """The approved call REJECTED before the policy is asked again: an approval for other
    arguments or another version, an expired approval, arguments the schema refuses."""
    mismatch = _mismatch(rec, a, tool.version, args)
    if mismatch or args is None:
        return rejected(
            rec,
            CallCode.APPROVAL_MISMATCH,
            f"{mismatch or 'no arguments'}; the approved call was not run",
            now=now,
        )
    if a.expires_at is not None and now >= a.expires_at:
        return rejected(
            rec,
            CallCode.APPROVAL_EXPIRED,
            f"approved by {a.decided_by}, but "
            f"the approval expired at {rfc3339(a.expires_at)} before the call "
            "could run; it was not run",
            now=now,
        )
    problem = tool.validate_arguments(args)
    if problem is not None:
        return rejected(
            rec,
            CallCode.INVALID_ARGUMENTS,
            f"arguments do not match the {tool.name} schema: {problem}",
            now=now,
        )
    return None


def _mismatch(
    rec: CallRecord, a: ApprovalRecord, registered_version: str, args: dict[str, object] | None
) -> str:
    """Why the approval does not cover this call exactly ("" when it does)."""
    if a.call_id != rec.call_id or a.approval_id != rec.approval_id:
        return f"approval {a.approval_id} is for call {a.call_id}, not {rec.call_id}"
    if not (a.tool_version == rec.tool_version == registered_version):
        return (
            f"the approval covers {a.tool} version {a.tool_version}; the call would run "
            f"version {registered_version}"
        )
    try:
        actual = canonical_sha256(args) if args is not None else ""
    except ArgumentsError:
        actual = ""
    if not (a.arguments_sha256 == rec.arguments_sha256 == actual):
        return (
            "the call's arguments are not the ones approved (arguments_sha256 "
            f"{actual or '(none)'} instead of {a.arguments_sha256})"
        )
    return ""
