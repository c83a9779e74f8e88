"""Phase 1 of a turn: decide each call (allowlist → arguments → schema → policy).

Pure with respect to I/O: it reads the registry and asks the policy engine, nothing else.
A judged call is either REJECTED with a stable code, or still PROPOSED carrying an ALLOW or
APPROVAL_REQUIRED decision for the batch planner.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from gateway.errors import CallCode
from gateway.model import CallRecord, CallStatus, Decision, Identity, ToolCall, Verdict
from gateway.policy.base import PolicyEngine
from gateway.policy_input import RunContext, call_input
from gateway.registry import Registry, Tool


def parse_arguments(text: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when the text is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def rejected(rec: CallRecord, code: CallCode, message: str, *, now: datetime,
             decision: Decision | None = None) -> CallRecord:
    return rec.moved(CallStatus.REJECTED, error_code=code.value, error_message=message,
                     decision=decision or rec.decision or Decision(Verdict.UNSPECIFIED),
                     decided_at=now, finished_at=now)


@dataclass(frozen=True)
class Judge:
    registry: Registry
    policy: PolicyEngine

    def describe(self, rec: CallRecord) -> CallRecord:
        """Fill tool version and effect from the registry (before anything is decided)."""
        tool = self.registry.get(rec.tool)
        if tool is None:
            return rec
        return replace(rec, tool_version=tool.version, effect=tool.effect.value)

    def judge(self, rec: CallRecord, call: ToolCall | None, *, identity: Identity,
              run: RunContext | None, batch: Sequence[CallRecord], now: datetime) -> CallRecord:
        tool = self.registry.get(rec.tool)
        if tool is None:
            known = ", ".join(t.name for t in self.registry.tools())
            return rejected(rec, CallCode.UNKNOWN_TOOL,
                            f"no tool named {rec.tool!r} is registered (known: {known})", now=now)
        args = parse_arguments(rec.arguments_json)
        if (call is not None and not call.complete) or args is None:
            return rejected(rec, CallCode.INCOMPLETE_ARGUMENTS,
                            "the arguments are not a complete JSON object; the call was not "
                            "executed — ask the model for the full call again", now=now)
        problem = tool.validate_arguments(args)
        if problem is not None:
            return rejected(rec, CallCode.INVALID_ARGUMENTS,
                            f"arguments do not match the {tool.name} schema: {problem}", now=now)
        return self.decide(rec, tool, args, identity=identity, run=run, batch=batch, now=now)

    def decide(self, rec: CallRecord, tool: Tool, args: dict[str, Any], *, identity: Identity,
               run: RunContext | None, batch: Sequence[CallRecord], now: datetime,
               approval: dict[str, Any] | None = None) -> CallRecord:
        policy_in = call_input(rec=rec, tool=tool, args=args, identity=identity, run=run,
                               batch=[(c, c.effect) for c in batch], now=now, approval=approval)
        decision = self.policy.decide(policy_in)
        if decision.is_policy_error:
            return rejected(rec, CallCode.POLICY_ERROR,
                            f"the policy could not decide this call ({decision.error}); "
                            "denied", now=now, decision=decision)
        if decision.verdict == Verdict.DENY:
            why = "; ".join(decision.reasons) or "the policy denied this call"
            return rejected(rec, CallCode.POLICY_DENIED, why, now=now, decision=decision)
        return replace(rec, decision=decision, decided_at=now)
