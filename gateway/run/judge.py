"""Judging a call: propose it, then decide it (allowlist → arguments → schema →
policy).

Pure with respect to I/O: it reads the registry and asks the policy engine, nothing else.
A judged call is either REJECTED with a stable code, or still PROPOSED carrying an ALLOW or
APPROVAL_REQUIRED decision for the batch planner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from time import perf_counter
from typing import Any

from gateway.arguments import (
    INCOMPLETE_RULES,
    ArgumentsError,
    canonical_sha256,
    parse_arguments,
    read_arguments,
)
from gateway.errors import CallCode
from gateway.jsontext import JsonTextError
from gateway.limits import FLAGS, Limits, utf8_len
from gateway.memo import Memo
from gateway.model import (
    CallRecord,
    CallStatus,
    Decision,
    Identity,
    Quota,
    ToolCall,
    Verdict,
    revised,
)
from gateway.observe.hooks import OFF, Observe
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import RunContext, call_input
from gateway.run.pins import OFF_CHECK, PinBook, PinCheck
from gateway.tools import Registry, Tool

Usage = Callable[[Sequence[Quota], datetime], Awaitable[dict[str, float]]]


def quotas_input(quotas: Sequence[Quota], used: dict[str, float]) -> dict[str, Any]:
    """`input.quotas`: for each key the decision charges, its usage in its window."""
    return {
        q.key: {
            "used": used.get(q.key, 0.0),
            "limit": q.limit,
            "window_s": q.window_s,
            "cost": q.cost,
        }
        for q in quotas
    }


def rejected(
    rec: CallRecord,
    code: CallCode,
    message: str,
    *,
    now: datetime,
    decision: Decision | None = None,
) -> CallRecord:
    return rec.moved(
        CallStatus.REJECTED,
        error_code=code.value,
        error_message=message,
        decision=decision or rec.decision or Decision(Verdict.UNSPECIFIED),
        decided_at=now,
        finished_at=now,
    )


ASK_AGAIN = "the call was not executed — ask the model for the full call again"
MARKED_PARTIAL = (
    "the call was marked partial (ToolCall.partial, or the provider's response "
    f"ended inside it): its arguments are a fragment and were not read; {ASK_AGAIN}"
)


def incomplete(text: str, exc: JsonTextError) -> str:
    """What an unmarked call's arguments were, when they are not a whole JSON object."""
    if not text.strip():
        return (
            "no arguments were sent (arguments_json is empty; a tool without arguments "
            f"takes {{}}); {ASK_AGAIN}"
        )
    return (
        f"the arguments are not a complete JSON object ({exc.message}; {utf8_len(text)} "
        f"bytes received); {ASK_AGAIN}"
    )


# every proposed call's record starts as a copy of this one
_PROPOSED = CallRecord(
    run_id="",
    turn_id="",
    call_id="",
    index=0,
    tool="",
    status=CallStatus.PROPOSED,
    arguments_json="",
)


def _sha256_or_empty(text: str, max_depth: int) -> str:
    args = parse_arguments(text, max_depth)
    if args is None:
        return ""
    try:
        return canonical_sha256(args)
    except ArgumentsError:
        return ""  # judged invalid_arguments, with the reason


def _too_large(size: int, limit: int) -> str:
    return (
        f"the arguments are {size} bytes, over the limit of {limit} (callgate serve "
        f"{FLAGS['max_arguments_bytes']}); the call was not executed and its arguments "
        "were not kept — ask the model for a smaller call"
    )


@dataclass(frozen=True)
class Judge:
    registry: Registry
    policy: PolicyEngine
    limits: Limits = Limits()
    # arguments text → its arguments_sha256 ("" when it has none): repeated calls repeat it
    _hashes: Memo[str] = field(default_factory=Memo, compare=False, repr=False)
    observe: Observe = field(default=OFF, compare=False, repr=False)
    # each quota's key's usage now (`RunStore.quota_usage`): for a policy that reads
    # `input.quotas`
    usage: Usage | None = field(default=None, compare=False, repr=False)
    # the pins of tools' definitions (None: not checked)
    pins: PinBook | None = field(default=None, compare=False, repr=False)

    def propose(
        self, run_id: str, turn_id: str, index: int, call: ToolCall, now: datetime
    ) -> CallRecord:
        """The one factory of call records: the call as proposed, with its tool's version and
        effect and its arguments hash. A call marked partial is rejected at once,
        so the mark survives in the store even if the turn is resumed later; so is a call whose
        arguments are over the size limit (and they are not kept)."""
        tool = self.registry.get(call.name)
        size = utf8_len(call.arguments_json)
        oversize = size > self.limits.max_arguments_bytes
        text = "" if oversize else call.arguments_json
        rec = revised(  # (a copy of the blank record: a third of the dataclass's __init__)
            _PROPOSED,
            run_id=run_id,
            turn_id=turn_id,
            call_id=call.call_id,
            index=index,
            tool=call.name,
            arguments_json=text,
            tool_version=tool.version if tool else "",
            effect=tool.effect.value if tool else "",
            arguments_sha256=self._hashes.get_or(
                text, lambda: _sha256_or_empty(text, self.limits.max_json_depth)
            ),
            created_at=now,
        )
        if oversize:
            return rejected(
                rec,
                CallCode.INVALID_ARGUMENTS,
                _too_large(size, self.limits.max_arguments_bytes),
                now=now,
            )
        if not call.complete:
            return rejected(rec, CallCode.INCOMPLETE_ARGUMENTS, MARKED_PARTIAL, now=now)
        return rec

    async def judge(
        self,
        rec: CallRecord,
        *,
        identity: Identity,
        run: RunContext | None,
        batch: Sequence[CallRecord],
        now: datetime,
    ) -> CallRecord:
        """allowlist → arguments → schema → policy, for a call still PROPOSED."""
        tool = self.registry.get(rec.tool)
        if tool is None:
            return self._unknown(rec, now)
        pin = await self.pin(tool)
        if pin.held:
            return rejected(rec, pin.code, pin.held, now=now)
        try:
            args = read_arguments(rec.arguments_json, self.limits.max_json_depth)
        except JsonTextError as exc:
            if exc.rule in INCOMPLETE_RULES:
                return rejected(
                    rec, CallCode.INCOMPLETE_ARGUMENTS, incomplete(rec.arguments_json, exc), now=now
                )
            return rejected(
                rec,
                CallCode.INVALID_ARGUMENTS,
                "the arguments break a rule of "
                f"JSON ({exc.rule}): {exc.message}; the call was not executed",
                now=now,
            )
        if not rec.arguments_sha256:
            try:
                canonical_sha256(args)
            except ArgumentsError as exc:
                return rejected(rec, CallCode.INVALID_ARGUMENTS, str(exc), now=now)
        problem = tool.validate_arguments(args, rec.arguments_json)
        if problem is not None:
            return rejected(
                rec,
                CallCode.INVALID_ARGUMENTS,
                f"arguments do not match the {tool.name} schema: {problem}",
                now=now,
            )
        return await self.decide(
            rec, tool, args, identity=identity, run=run, batch=batch, now=now, pin=pin
        )

    def _unknown(self, rec: CallRecord, now: datetime) -> CallRecord:
        known = ", ".join(t.name for t in self.registry.tools())
        return rejected(
            rec,
            CallCode.UNKNOWN_TOOL,
            f"no tool named {rec.tool!r} is registered (known: {known})",
            now=now,
        )

    async def pin(self, tool: Tool) -> PinCheck:
        """The tool's definition against its pin (not checked without a book)."""
        return OFF_CHECK if self.pins is None else await self.pins.check(tool)

    async def decide(
        self,
        rec: CallRecord,
        tool: Tool,
        args: dict[str, Any],
        *,
        identity: Identity,
        run: RunContext | None,
        batch: Sequence[CallRecord],
        now: datetime,
        approval: dict[str, Any] | None = None,
        pin: PinCheck = OFF_CHECK,
    ) -> CallRecord:
        policy_in = call_input(
            rec=rec,
            tool=tool,
            args=args,
            identity=identity,
            run=run,
            batch=[(c, c.effect) for c in batch],
            now=now,
            approval=approval,
            pin=(pin.fingerprint, pin.pinned),
        )
        decision = await self._decision(tool.name, policy_in)
        if decision.quotas and self.usage is not None and self.policy.reads("quotas"):
            # decided again, seeing how much of each key it charges is used
            used = await self.usage(decision.quotas, now)
            policy_in["quotas"] = quotas_input(decision.quotas, used)
            decision = await self._decision(tool.name, policy_in)
        decision = revised(
            decision, tools_revision=self.registry.revision, tool_fingerprint=pin.fingerprint
        )
        if decision.is_policy_error:
            return rejected(
                rec,
                CallCode.POLICY_ERROR,
                f"the policy could not decide this call ({decision.error}); denied",
                now=now,
                decision=decision,
            )
        if decision.verdict == Verdict.DENY:
            why = "; ".join(decision.reasons) or "the policy denied this call"
            return rejected(rec, CallCode.POLICY_DENIED, why, now=now, decision=decision)
        return revised(rec, decision=decision, decided_at=now)

    async def _decision(self, tool: str, policy_in: dict[str, Any]) -> Decision:
        if self.observe.enabled:
            return await self._observed_decision(tool, policy_in)
        return await self.policy.decide(policy_in)

    async def _observed_decision(self, tool: str, policy_in: dict[str, Any]) -> Decision:
        """`decision` evaluated in a span of its own (when tracing), timed and counted by
        verdict."""
        tracer = self.observe.tracer
        if not tracer.enabled:  # metrics only: no span to open or describe
            return (await self._counted_decision(tool, policy_in))[0]
        with tracer.span("callgate.policy", {"callgate.tool": tool}) as span:
            decision, verdict = await self._counted_decision(tool, policy_in)
            span.set_attribute("callgate.verdict", verdict)
            span.set_attribute("callgate.policy_revision", decision.policy_revision)
        return decision

    async def _counted_decision(self, tool: str, policy_in: dict[str, Any]) -> tuple[Decision, str]:
        """`decision` timed and counted; with the verdict it was counted under
        (`POLICY_ERROR` when it failed closed)."""
        start = perf_counter()
        decision = await self.policy.decide(policy_in)
        elapsed = perf_counter() - start
        verdict = "POLICY_ERROR" if decision.is_policy_error else decision.verdict._value_
        self.observe.metrics.decision(verdict, tool, self.policy.name, elapsed)
        return decision, verdict
