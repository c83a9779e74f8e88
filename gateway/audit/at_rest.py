"""`redact_stored: true`: a call's arguments masked in the store once nothing needs them.

The rule (docs/tools.md, "Redaction"): the call record keeps the arguments the model produced
while anything may still need them (deciding, the approval step, the approval re-check, which
recomputes their hash, executing, reconciling an unknown write): every one of those happens
before the call is terminal. The commit that makes the call terminal (SUCCEEDED, FAILED,
REJECTED, NOT_RUN) writes its arguments masked, and its message and reasons scrubbed of the
masked values. Its approval record keeps the exact arguments while it is PENDING (the approver
must see what they approve) and is written masked once it is decided, expired or cancelled;
the re-check compares the approval's hash with the hash of the call's own arguments, which are
still whole then. `arguments_sha256` stays the plain hash in both records (it binds the
approval and lets a client match its call).

The masking happens where records are written (`gateway.store.base.StoredForm`), so it holds
for every path that ends a call.
"""

from __future__ import annotations

import json
from dataclasses import replace

from gateway.arguments import parse_arguments
from gateway.audit.keys import is_mask
from gateway.model import ApprovalRecord, ApprovalStatus, CallRecord
from gateway.tools import Registry
from gateway.tools.redaction import Masked


def _string(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


class RedactStored:
    """The StoredForm of a sidecar: tools with `redact_stored` keep masked arguments."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def _masked(self, tool_name: str, arguments_json: str) -> tuple[str, Masked] | None:
        tool = self.registry.get(tool_name)
        if tool is None or not tool.redact_stored:
            return None
        key = self.registry.audit_key
        args = parse_arguments(arguments_json)
        if args is None:  # never an object (it was rejected): keep none of its text
            if not arguments_json or is_mask(_string(arguments_json)):
                return None
            return json.dumps(key.mask(arguments_json)), Masked({})
        masked = tool.masked(args, key)
        return (json.dumps(masked.value), masked) if masked.changed else None

    def call(self, c: CallRecord) -> CallRecord:
        done = self._masked(c.tool, c.arguments_json) if c.status.terminal else None
        if done is None:
            return c
        text, masked = done
        mask = self.registry.audit_key.mask
        decision = c.decision and replace(
            c.decision, reasons=tuple(masked.scrub(r, mask) for r in c.decision.reasons)
        )
        return replace(
            c,
            arguments_json=text,
            error_message=masked.scrub(c.error_message, mask),
            decision=decision,
        )

    def approval(self, a: ApprovalRecord) -> ApprovalRecord:
        done = (
            self._masked(a.tool, a.arguments_json) if a.status != ApprovalStatus.PENDING else None
        )
        if done is None:
            return a
        text, masked = done
        mask = self.registry.audit_key.mask
        return replace(
            a,
            arguments_json=text,
            reason=masked.scrub(a.reason, mask),
            policy_reasons=tuple(masked.scrub(r, mask) for r in a.policy_reasons),
        )
