"""Phase 1 of a turn: propose each call, then decide it (allowlist → arguments → schema →
policy).

Pure with respect to I/O: it reads the registry and asks the policy engine, nothing else.
A judged call is either REJECTED with a stable code, or still PROPOSED carrying an ALLOW or
APPROVAL_REQUIRED decision for the batch planner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from gateway.arguments import ArgumentsError, canonical_sha256, parse_arguments
from gateway.errors import CallCode
from gateway.model import CallRecord, CallStatus, Decision, Identity, ToolCall, Verdict
from gateway.policy.base import PolicyEngine
from gateway.policy_input import RunContext, call_input
from gateway.tools import Registry, Tool


def rejected(rec: CallRecord, code: CallCode, message: str, *, now: datetime,
             decision: Decision | None = None) -> CallRecord:
    return rec.moved(CallStatus.REJECTED, error_code=code.value, error_message=message,
                     decision=decision or rec.decision or Decision(Verdict.UNSPECIFIED),
                     decided_at=now, finished_at=now)


INCOMPLETE = ("the arguments are not a complete JSON object; the call was not executed — ask "
              "the model for the full call again")


def _sha256_or_empty(text: str) -> str:
    args = parse_arguments(text)
    if args is None:
        return ""
    try:
        return canonical_sha256(args)
    except ArgumentsError:
        return ""  # judged invalid_arguments, with the reason


@dataclass(frozen=True)
class Judge:
    registry: Registry
    policy: PolicyEngine

    def propose(self, run_id: str, turn_id: str, index: int, call: ToolCall,
                now: datetime) -> CallRecord:
        """The one factory of call records: the call as proposed, with its tool's version and
        effect and its arguments hash. A call the model marked incomplete is rejected at once,
        so the mark survives in the store even if the turn is resumed later."""
        tool = self.registry.get(call.name)
        rec = CallRecord(
            run_id=run_id, turn_id=turn_id, call_id=call.call_id, index=index, tool=call.name,
            status=CallStatus.PROPOSED, arguments_json=call.arguments_json,
            tool_version=tool.version if tool else "", effect=tool.effect.value if tool else "",
            arguments_sha256=_sha256_or_empty(call.arguments_json), created_at=now)
        if not call.complete:
            return rejected(rec, CallCode.INCOMPLETE_ARGUMENTS, INCOMPLETE, now=now)
        return rec

    async def judge(self, rec: CallRecord, *, identity: Identity, run: RunContext | None,
              batch: Sequence[CallRecord], now: datetime) -> CallRecord:
        """allowlist → arguments → schema → policy, for a call still PROPOSED."""
        tool = self.registry.get(rec.tool)
        if tool is None:
            known = ", ".join(t.name for t in self.registry.tools())
            return rejected(rec, CallCode.UNKNOWN_TOOL,
                            f"no tool named {rec.tool!r} is registered (known: {known})", now=now)
        args = parse_arguments(rec.arguments_json)
        if args is None:
            return rejected(rec, CallCode.INCOMPLETE_ARGUMENTS, INCOMPLETE, now=now)
        if not rec.arguments_sha256:
            try:
                canonical_sha256(args)
            except ArgumentsError as exc:
                return rejected(rec, CallCode.INVALID_ARGUMENTS, str(exc), now=now)
        problem = tool.validate_arguments(args)
        if problem is not None:
            return rejected(rec, CallCode.INVALID_ARGUMENTS,
                            f"arguments do not match the {tool.name} schema: {problem}", now=now)
        return await self.decide(rec, tool, args, identity=identity, run=run, batch=batch,
                                 now=now)

    async def decide(self, rec: CallRecord, tool: Tool, args: dict[str, Any], *, identity: Identity,
               run: RunContext | None, batch: Sequence[CallRecord], now: datetime,
               approval: dict[str, Any] | None = None) -> CallRecord:
        policy_in = call_input(rec=rec, tool=tool, args=args, identity=identity, run=run,
                               batch=[(c, c.effect) for c in batch], now=now, approval=approval)
        decision = await self.policy.decide(policy_in)
        if decision.is_policy_error:
            return rejected(rec, CallCode.POLICY_ERROR,
                            f"the policy could not decide this call ({decision.error}); "
                            "denied", now=now, decision=decision)
        if decision.verdict == Verdict.DENY:
            why = "; ".join(decision.reasons) or "the policy denied this call"
            return rejected(rec, CallCode.POLICY_DENIED, why, now=now, decision=decision)
        return replace(rec, decision=decision, decided_at=now)
