"""Rewrite the generated tables of docs/api.md from the code, so they cannot drift.

    .venv/bin/python scripts/gen_docs.py           rewrite docs/api.md in place
    .venv/bin/python scripts/gen_docs.py --check   exit 1 when docs/api.md is stale

Each table sits between `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`:

    rpcs           every RPC of the ToolGateway service with its request and response
                   (the proto's service descriptor)
    request-codes  every `gateway.errors.RequestCode` with its gRPC status
                   (`gateway.wire.server.GRPC_STATUS`) and what it means
    call-codes     every `gateway.errors.CallCode` and what it means
    enums          every value of every enum of the proto (`gateway.pb`: CallStatus, Verdict,
                   NextAction, RunState, ApprovalStatus, EventKind) with its number and what
                   it means

The meanings below are the only hand-written part: a code without one stops the generator, so a
new code cannot reach the docs undescribed. tests/test_docs.py fails when the committed tables
differ from what this script writes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from gateway import pb
from gateway.errors import CallCode, RequestCode
from gateway.wire.server import GRPC_STATUS

ROOT = Path(__file__).resolve().parent.parent

API_DOC = ROOT / "docs" / "api.md"

REQUEST_MEANINGS: dict[str, str] = {
    "unauthenticated": "no `authorization: Bearer <token>` metadata, or a token the auth file "
    "does not know",
    "permission_denied": "the run belongs to another subject or tenant, or the policy's "
    "`may_approve` (`DecideApproval`), `may_resolve` (`ResolveCall`), "
    "`may_read_audit` (`QueryAudit`), `may_read_quotas` (`ListQuotas`), "
    "`may_reset_quotas` (`ResetQuota`) or `may_pin_tools` (`ListToolPins`, `ApproveToolPin`) "
    "refuses the caller",
    "run_not_found": "no run with this `run_id` (`QueryAudit` too)",
    "approval_not_found": "`DecideApproval` names no approval that exists",
    "call_not_found": "`ResolveCall` names a call the run does not have",
    "quota_not_found": "`ResetQuota` names a key no reservation ever named",
    "tool_not_found": "`ApproveToolPin` names a tool never pinned, or a definition of it no "
    "sidecar served",
    "run_paused": "the run waits for an approval or an unknown outcome, or its last turn has "
    "not settled: call `ResumeRun` (or `CancelRun`)",
    "run_finished": "the run has ended (COMPLETED, HANDED_OFF, BUDGET_EXHAUSTED or CANCELLED); "
    "start a new run (its approvals can no longer be decided either)",
    "already_decided": "`DecideApproval` on an approval that was already approved, denied or "
    "cancelled (by another approver, or with its run)",
    "approval_expired": "`DecideApproval` on an approval that expired before it was decided "
    "(the call was not run)",
    "not_unknown": "`ResolveCall` on a call that is not UNKNOWN",
    "turn_conflict": "this `turn_id` was already submitted with other content",
    "run_conflict": "this `run_id` exists with other parameters, or was started by another subject",
    "unknown_provider": "an unknown `provider` or an `api_version` it does not accept, a turn "
    "for another provider than the run's, or a raw response with no "
    "provider named",
    "malformed_response": "a raw provider response or stream event that is not JSON, not an "
    "object, or not valid for that provider",
    "duplicate_call_id": "the same call ID twice in one turn",
    "invalid_argument": "a request field is missing or malformed: no event, no `turn_id`, a "
    "call without `call_id`, an ID longer than 256 characters or not "
    "printable, a `conversation_json` that is not a JSON array, an empty "
    "stream, a decision without a reason, a `page_token` callgate did not "
    "give out (ListApprovals), a negative `page_size`, a `QueryAudit` time "
    "that is not RFC 3339",
    "invalid_page_token": "a GetRun `page_token` that is not a `next_page_token` GetRun gave "
    "out for this `run_id` (garbage, changed, or from another run): "
    "pass it back unchanged with the same `run_id`, or send none to "
    "start again from the latest turns",
    "unimplemented": "an RPC this sidecar does not know (a client built from a newer proto)",
    "store_unavailable": "the run store cannot be read or written (locked past "
    "`--db-busy-timeout`, disk error); nothing ran after the failed "
    "commit, and the request can be repeated",
    "limit_exceeded": "a request past one of the sidecar's size limits (calls per turn, stream "
    "events or bytes, labels, conversation size, token counts); the message "
    'names the limit and its flag (docs/operations.md, "Limits")',
    "results_not_recorded": "the run store failed after the named calls had gone out: their "
    "results are not recorded yet; once the store is back, `ResumeRun` "
    "settles them (reads run again, writes looked up, never blindly "
    "repeated)",
    "shutting_down": "the sidecar is stopping: a `WatchRun` or following `QueryAudit` stream "
    "ends with it; reconnect (to another replica, or once it is back): "
    "`WatchRun`'s first message is the current state, `QueryAudit` continues "
    "with `after_seq`",
    "internal": "a bug in callgate: the log has the traceback, and `ResumeRun` shows what was "
    "recorded",
    "unavailable": "the client's own (never sent by a sidecar): no sidecar answered at the "
    "target (not running, wrong address, a TLS mismatch) within the client's "
    "retries; see docs/client.md",
    "deadline_exceeded": "the client's own (never sent by a sidecar): no answer within the "
    "call's deadline; the sidecar may still finish the request, so "
    "`ResumeRun` (or the same `SubmitTurn`) shows what happened",
}

CALL_MEANINGS: dict[str, str] = {
    "unknown_tool": "REJECTED: no tool of that name is registered",
    "invalid_arguments": "REJECTED: the arguments do not match the tool's `input_schema`, or "
    "have no canonical JSON form (an integer beyond ±2^53, a lone "
    "surrogate)",
    "incomplete_arguments": "REJECTED: the arguments are not a complete JSON object (empty, "
    "cut off, or JSON that is not an object: the message quotes what "
    "the reader found), or the call was marked `partial: true`",
    "duplicate_call_id": "REJECTED: the call ID was used in an earlier turn of the run",
    "policy_denied": "REJECTED: the policy's `decision` denied the call; the message joins its "
    "reasons",
    "policy_error": "REJECTED: the policy could not decide (undefined, malformed or failing "
    "`decision`): fail closed",
    "approval_required": "PENDING_APPROVAL: the call waits for a person's approval",
    "approval_denied": "REJECTED: a person denied the approval; the message carries who and "
    "their reason",
    "approval_expired": "REJECTED: nobody decided the approval before it expired (or it was "
    "approved but expired before the call could run)",
    "approval_cancelled": "REJECTED: the call was pending approval when its run was cancelled",
    "approval_mismatch": "REJECTED: the approved call is not what was approved: its arguments "
    "(hash recomputed at execution) or its tool version differ",
    "budget_exhausted": "REJECTED: the run's turn, token or tool-call budget is spent",
    "held_by_batch": "NOT_RUN: another write of the turn did not succeed (re-plan); HELD: "
    "another write of the turn waits for approval",
    "tool_error": "FAILED: the tool answered an error, could not be reached, or raised",
    "tool_timeout": "FAILED: a read got no answer within `timeout_s`, or a request (read or "
    "write) could not even be sent within it",
    "tool_not_applied": "FAILED: reconcile found no trace of the write at the target, which "
    "does not enforce idempotency keys",
    "output_too_large": "a read whose output is larger than `--max-output-bytes` (FAILED); a "
    "write keeps a marker with the output's size instead of cut JSON",
    "output_invalid": "FAILED for a read whose output is not JSON or violates `output_schema`; "
    "on a SUCCEEDED write, a note that the effect happened but the output "
    "is not what was promised",
    "outcome_unknown": "UNKNOWN: a write whose effect cannot be known yet; never repeated blindly",
    "resolved_by_operator": "SUCCEEDED or FAILED: an operator resolved the call with "
    "`ResolveCall`; the message carries who and their reason",
    "quota_exceeded": "REJECTED, never executed: reserving a quota the policy charged would "
    "pass its limit; the message names the key, limit, usage and when "
    "enough of the window frees",
    "result_withheld": "SUCCEEDED: the call ran, but the policy's `result` rule withheld its "
    "result (or failed: fail closed); the message carries the reasons and "
    'no output is kept (docs/policies.md, "Policy over results")',
    "tool_changed": "REJECTED or FAILED, nothing sent: the tool's definition is not the one "
    "its call was decided (or pinned) under; the message names what changed "
    '(docs/tools.md, "Pinned definitions")',
}


ENUM_MEANINGS: dict[str, str] = {
    "CALL_STATUS_UNSPECIFIED": "not set: a call of an interrupted turn not started yet "
    "(`ResumeRun` decides it), or a record that has no call status",
    "CALL_STATUS_SUCCEEDED": "the effect happened / the read answered (terminal)",
    "CALL_STATUS_REJECTED": "never ran: the code says why (terminal)",
    "CALL_STATUS_FAILED": "the effect is known not to have happened (terminal)",
    "CALL_STATUS_UNKNOWN": "a write whose effect cannot be known yet; looked up, never "
    "repeated blindly",
    "CALL_STATUS_PENDING_APPROVAL": "waits for a person's approval (`approval_id`)",
    "CALL_STATUS_HELD": "an allowed write waiting for a sibling write's approval",
    "CALL_STATUS_EXECUTING": "intent committed: the request may be on the wire",
    "CALL_STATUS_NOT_RUN": "an allowed write the batch will not run (`held_by_batch`): re-plan "
    "(terminal)",
    "VERDICT_UNSPECIFIED": "no policy ran (an unknown tool, invalid arguments): the error says why",
    "VERDICT_ALLOW": "the policy allowed the call",
    "VERDICT_DENY": "the policy denied it (or could not decide: `policy_error`)",
    "VERDICT_APPROVAL_REQUIRED": "the policy asks a person first",
    "NEXT_ACTION_UNSPECIFIED": "not set (a turn not settled yet)",
    "NEXT_ACTION_CONTINUE": "send the results back to the model and ask again",
    "NEXT_ACTION_DONE": "the model gave its final answer",
    "NEXT_ACTION_RETRY_TURN": "ask the model again: nothing ran",
    "NEXT_ACTION_PAUSED_FOR_APPROVAL": "stop asking the model: a call waits for a person",
    "NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME": "stop asking the model: a write's outcome is unknown",
    "NEXT_ACTION_HANDOFF": "hand over to a person (refusal, fatal provider error, retries spent, "
    "cancelled)",
    "NEXT_ACTION_BUDGET_EXHAUSTED": "stop: a budget of the run is spent",
    "RUN_STATE_UNSPECIFIED": "not set",
    "RUN_STATE_ACTIVE": "accepts a new turn",
    "RUN_STATE_PAUSED_FOR_APPROVAL": "waits for approvals to be decided (or to expire)",
    "RUN_STATE_PAUSED_UNKNOWN_OUTCOME": "waits for an unknown write to be looked up or resolved",
    "RUN_STATE_COMPLETED": "ended with a final answer (terminal)",
    "RUN_STATE_HANDED_OFF": "ended: handed to a person (terminal)",
    "RUN_STATE_BUDGET_EXHAUSTED": "ended: a budget is spent (terminal)",
    "RUN_STATE_CANCELLED": "ended by `CancelRun` (terminal)",
    "APPROVAL_STATUS_UNSPECIFIED": "not set (an audit record of another kind)",
    "APPROVAL_STATUS_PENDING": "waits for a person's decision until `expires_at`",
    "APPROVAL_STATUS_APPROVED": "approved: the call is re-checked and runs",
    "APPROVAL_STATUS_DENIED": "denied: the call is REJECTED `approval_denied`",
    "APPROVAL_STATUS_EXPIRED": "nobody decided in time: REJECTED `approval_expired`",
    "APPROVAL_STATUS_CANCELLED": "its run was cancelled, or a sibling write will not run",
    "EVENT_KIND_UNSPECIFIED": "not set",
    "EVENT_KIND_TOOL_REQUEST": "the model asked for tool calls",
    "EVENT_KIND_FINAL": "the model answered",
    "EVENT_KIND_REFUSAL": "the model refused",
    "EVENT_KIND_INCOMPLETE": "the response was cut short (nothing ran)",
    "EVENT_KIND_PAUSED": "the provider paused the turn (Anthropic `pause_turn`)",
    "EVENT_KIND_PROVIDER_ERROR": "the provider answered with an error",
}


class MissingMeaning(Exception):
    """A code of the enum has no meaning in this script."""


def _meaning(table: dict[str, str], code: str, kind: str) -> str:
    try:
        return table[code]
    except KeyError:
        raise MissingMeaning(
            f"{kind} {code!r} has no meaning in scripts/gen_docs.py: "
            "describe it there, then run the script"
        ) from None


def request_codes() -> str:
    rows = [
        f"| `{code.value}` | {GRPC_STATUS[code].name} | "
        f"{_meaning(REQUEST_MEANINGS, code.value, 'request')} |"
        for code in RequestCode
    ]
    return "\n".join(["| code | gRPC status | meaning |", "|---|---|---|", *rows])


def call_codes() -> str:
    rows = [
        f"| `{code.value}` | {_meaning(CALL_MEANINGS, code.value, 'per-call')} |"
        for code in CallCode
    ]
    return "\n".join(["| code | status and meaning |", "|---|---|", *rows])


def enums() -> str:
    """One table per enum: each value, its number, and what it means."""
    parts = []
    for name, enum in pb.DESCRIPTOR.enum_types_by_name.items():
        rows = [
            f"| `{v.name}` | {v.number} | {_meaning(ENUM_MEANINGS, v.name, 'enum')} |"
            for v in enum.values
        ]
        parts.append(
            "\n".join(
                [
                    f"`{name}` (`gateway.pb.{name}`)",
                    "",
                    "| value | number | meaning |",
                    "|---|---|---|",
                    *rows,
                ]
            )
        )
    return "\n\n".join(parts)


def rpcs() -> str:
    service = pb.DESCRIPTOR.services_by_name["ToolGateway"]
    rows = []
    for method in service.methods:
        stream_in = "stream " if method.client_streaming else ""
        stream_out = "stream " if method.server_streaming else ""
        shape = f"`{stream_in}{method.input_type.name}` → `{stream_out}{method.output_type.name}`"
        rows.append(f"| [`{method.name}`](#{method.name.lower()}) | {shape} |")
    return "\n".join(["| RPC | request → response |", "|---|---|", *rows])


TABLES: dict[str, Callable[[], str]] = {
    "rpcs": rpcs,
    "request-codes": request_codes,
    "call-codes": call_codes,
    "enums": enums,
}


def render(text: str) -> str:
    """text with every generated table rewritten; raises ValueError for a missing marker."""
    for name, build in TABLES.items():
        block = re.search(
            rf"<!-- BEGIN GENERATED: {name} -->\n(.*?)<!-- END GENERATED: "
            rf"{name} -->",
            text,
            re.S,
        )
        if block is None:
            raise ValueError(f"docs/api.md has no markers for the generated table {name!r}")
        text = f"{text[: block.start(1)]}{build()}\n{text[block.end(1) :]}"
    return text


def main(argv: list[str]) -> int:
    current = API_DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print("docs/api.md is stale: run .venv/bin/python scripts/gen_docs.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        API_DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
