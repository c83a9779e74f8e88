"""Delivering a call's result: the policy's `result` rule may redact parts of it or withhold it
before it is stored and handed on (docs/policies.md, "Policy over results").

Only a SUCCEEDED call with an output is asked about. The call's status never changes (a write
that ran did run); what changes is the output kept and shown: each redacted JSON pointer's value
is replaced by `REDACTED`, a withheld result keeps no output and carries the code
`result_withheld` with the policy's reasons. What was removed is recorded in the audit trail
only as the keyed HMAC (mask) of each removed value, never the value. A malformed answer, a
pointer to nowhere and a failed evaluation all withhold (fail closed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.jsontext import JsonTextError, read_json, write_json
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import CallRecord, CallStatus, Identity, RunRecord
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import result_input
from gateway.policy.results import ResultVerdict, pointer_tokens, withheld_for_error
from gateway.tools import Registry, Tool

log = logging.getLogger("callgate.run")

REDACTED: Final = "[redacted]"  # what a redacted value is replaced by
SCHEMA_NOTE: Final = "output violates output_schema: "
_MISSING: Final = object()
NOT_SERVED: Final = (
    "tool {tool!r} is no longer served, so the result rule could not be asked about its result"
)


@dataclass(frozen=True)
class Delivery:
    """What the `result` rule did to one result, as the audit trail records it."""

    withheld: bool
    masks: tuple[tuple[str, str], ...]  # (pointer, mask of the removed value)
    reasons: tuple[str, ...]

    def as_detail(self) -> dict[str, Any]:
        return {
            "withheld": self.withheld,
            "reasons": list(self.reasons),
            "redacted": [{"pointer": p, "mask": m} for p, m in self.masks],
        }


@dataclass
class Deliverer:
    policy: PolicyEngine
    registry: Registry

    async def deliver(
        self,
        rec: CallRecord,
        res: ExecutionResult,
        *,
        run: RunRecord,
        identity: Identity,
        args: dict[str, Any] | None = None,
    ) -> tuple[ExecutionResult, Delivery | None]:
        """The result as it may be kept and handed on, and what was done to it (None: as
        is). `args`: the call's arguments as the tool was given them (read again from the
        record when not given)."""
        if res.status is not CallStatus.SUCCEEDED or not res.output_json:
            return res, None
        if not self.policy.defines_result:
            return res, None
        try:
            output = read_json(res.output_json, max_depth=MAX_JSON_DEPTH_CAP, big_integers=True)
        except JsonTextError:
            output = res.output_json
        tool = self.registry.get(rec.tool)
        if tool is None:  # gone from the tool set serving now: the rule cannot be asked
            return self._withheld(res, output, (NOT_SERVED.format(tool=rec.tool),))
        verdict = await self._ask(rec, tool, res, run, identity, output, args)
        if verdict is None:
            return res, None
        if verdict.deliver:
            return self._redacted(res, output, verdict)
        return self._withheld(res, output, verdict.reasons)

    async def _ask(
        self,
        rec: CallRecord,
        tool: Tool,
        res: ExecutionResult,
        run: RunRecord,
        identity: Identity,
        output: Any,
        args: dict[str, Any] | None,
    ) -> ResultVerdict | None:
        problems = (
            [res.error_message.removeprefix(SCHEMA_NOTE)]
            if res.error_code == CallCode.OUTPUT_INVALID.value
            and res.error_message.startswith(SCHEMA_NOTE)
            else []
        )
        payload = result_input(
            rec=rec,
            tool=tool,
            identity=identity,
            run=run,
            status=res.status.value,
            output=output,
            schema_problems=problems,
            args=args,
        )
        try:
            return await self.policy.result(payload)
        except Exception as exc:  # an engine that breaks its contract still fails closed
            log.warning("result evaluation for %s failed: %s", rec.call_id, exc)
            return withheld_for_error(f"result evaluation failed: {type(exc).__name__}")

    def _withheld(
        self, res: ExecutionResult, output: Any, reasons: tuple[str, ...]
    ) -> tuple[ExecutionResult, Delivery]:
        said = "; ".join(reasons) or "no reason given"
        kept = ExecutionResult(
            CallStatus.SUCCEEDED,
            output_json=write_json({"result_withheld": {"reasons": list(reasons)}}),
            error_code=CallCode.RESULT_WITHHELD.value,
            error_message=f"the result was withheld by policy: {said}",
            attempts=res.attempts,
        )
        mask = self.registry.audit_key.mask(output)
        return kept, Delivery(withheld=True, masks=(("", mask),), reasons=reasons)

    def _redacted(
        self, res: ExecutionResult, output: Any, verdict: ResultVerdict
    ) -> tuple[ExecutionResult, Delivery | None]:
        if not verdict.redact:
            return res, None
        # deepest first: a pointer inside another is redacted before its parent is
        order = sorted(verdict.redact, key=lambda p: -len(pointer_tokens(p)))
        masks: list[tuple[str, str]] = []
        removed: list[Any] = []
        for pointer in order:
            output, old = _replace(output, pointer_tokens(pointer))
            if old is _MISSING:
                return self._withheld(
                    res,
                    output,
                    (f"policy_error: result.redact points to nowhere: {pointer[:80]!r}",),
                )
            masks.append((pointer, self.registry.audit_key.mask(old)))
            removed.append(old)
        text = write_json(output, max_depth=MAX_JSON_DEPTH_CAP)
        kept = ExecutionResult(
            res.status,
            output_json=text,
            error_code=res.error_code,
            error_message=_scrubbed(res.error_message, removed),
            attempts=res.attempts,
        )
        return kept, Delivery(withheld=False, masks=tuple(masks), reasons=verdict.reasons)


def _replace(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """doc with the value at tokens replaced by REDACTED, and the value it had (_MISSING when
    the pointer names nothing: doc is then unchanged)."""
    if not tokens:
        return REDACTED, doc
    head, rest = tokens[0], tokens[1:]
    if isinstance(doc, dict):
        if head not in doc:
            return doc, _MISSING
        inner, old = _replace(doc[head], rest)
        return ({**doc, head: inner} if old is not _MISSING else doc), old
    if isinstance(doc, list):
        if not head.isdigit() or (len(head) > 1 and head[0] == "0") or int(head) >= len(doc):
            return doc, _MISSING
        i = int(head)
        inner, old = _replace(doc[i], rest)
        return ([*doc[:i], inner, *doc[i + 1 :]] if old is not _MISSING else doc), old
    return doc, _MISSING


def _scrubbed(message: str, removed: list[Any]) -> str:
    """A note about the output (an output_schema problem may quote it) without the text of
    anything redacted."""
    for value in removed:
        for text in _strings(value):
            if len(text) >= 4:
                message = message.replace(text, REDACTED)
    return message


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
