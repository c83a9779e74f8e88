"""`callgate approvals list|show|approve|deny`: human approval against a running sidecar.

    callgate approvals list [--run-id RUN] [--status pending|...|all] [--tool T] [--json]
    callgate approvals show APPROVAL_ID [--json]
    callgate approvals approve APPROVAL_ID --reason TEXT [--json]
    callgate approvals deny APPROVAL_ID --reason TEXT [--json]

A readable table (or one approval's details) by default, the RPC's answer as JSON with
`--json`. A refused request (not allowed, already decided, expired) exits 1 with its code.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from google.protobuf.json_format import MessageToDict

from gateway import pb
from gateway.cli.common import UsageError, connected, nonempty, option, switch
from gateway.errors import RequestCode, RequestError

ACTIONS = ("list", "show", "approve", "deny")
STATUSES = ("pending", "approved", "denied", "expired", "cancelled")


def statuses(text: str) -> str:
    """Comma-separated approval statuses, or `all` (checked, normalized)."""
    names = list(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    if names == ["all"]:
        return "all"
    if not names or any(n not in STATUSES for n in names):
        raise ValueError(f"expected all, or some of {', '.join(STATUSES)} (comma-separated)")
    return ",".join(names)


def status_values(text: str) -> list[int]:
    """The ListApprovals filter for a checked --status ([] for all)."""
    return (
        []
        if text == "all"
        else [getattr(pb, f"APPROVAL_STATUS_{n.upper()}") for n in text.split(",")]
    )


def page_size(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 500:
        raise ValueError("expected a number from 1 to 500")
    return int(text)


def add_parser(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "approvals",
        help="list, show, approve or deny approval requests",
        description="The approval requests of a running sidecar:\n"
        "  callgate approvals list [--run-id RUN] [--status pending] [--tool T]\n"
        "  callgate approvals show APPROVAL_ID\n"
        "  callgate approvals approve APPROVAL_ID --reason TEXT\n"
        "  callgate approvals deny APPROVAL_ID --reason TEXT\n"
        "A caller sees the approvals of its own runs and those the policy's may_approve "
        "lets it decide.",
    )
    p.add_argument("action", choices=ACTIONS, help="what to do")
    p.add_argument(
        "approval_id",
        nargs="?",
        default="",
        metavar="APPROVAL_ID",
        help="the approval (show, approve, deny)",
    )
    client_options(p)
    option(p, "--reason", default="", help="why you approve or deny (required for both)")
    option(p, "--run-id", default="", metavar="RUN", help="list: only this run's approvals")
    option(
        p,
        "--status",
        parse=statuses,
        default="pending",
        metavar="STATUS[,STATUS]",
        help="list: pending, approved, denied, expired, cancelled, or all",
    )
    option(p, "--tool", default="", metavar="NAME", help="list: only this tool's approvals")
    option(
        p,
        "--page-size",
        parse=page_size,
        default=50,
        metavar="N",
        help="list: approvals per page (1-500)",
    )
    option(
        p,
        "--page-token",
        default="",
        metavar="TOKEN",
        help="list: the page after the one that printed this token",
    )
    switch(p, "--json", help="print the answer as JSON")
    p.set_defaults(handler=run)


def run(ns: argparse.Namespace) -> int:
    if ns.action == "list" and ns.approval_id:
        raise UsageError("list takes no APPROVAL_ID (use show APPROVAL_ID)")
    if ns.action != "list" and not ns.approval_id:
        raise UsageError(f"{ns.action} needs an APPROVAL_ID (see 'callgate approvals list')")
    if ns.action in ("approve", "deny"):
        nonempty_reason(ns.reason)
    with connected(ns) as client:
        if ns.action == "list":
            return _list(client, ns)
        if ns.action == "show":
            return _show(client, ns)
        answer = client.decide_approval(
            ns.approval_id, approve=ns.action == "approve", reason=ns.reason
        )
        _print(answer, ns.json, lambda: decided_text(answer))
        return 0


def nonempty_reason(reason: str) -> None:
    try:
        nonempty(reason)
    except ValueError:
        raise UsageError(
            "--reason is required: say why you approve or deny (or set CALLGATE_REASON)"
        ) from None


def _list(client: Any, ns: argparse.Namespace) -> int:
    answer = client.list_approvals(
        run_id=ns.run_id,
        tool=ns.tool,
        page_size=ns.page_size,
        page_token=ns.page_token,
        status=status_values(statuses(ns.status)),
    )
    _print(answer, ns.json, lambda: table_text(answer))
    return 0


def _show(client: Any, ns: argparse.Namespace) -> int:
    found = client.list_approvals(approval_id=ns.approval_id).approvals
    if not found:  # not there, or not one this caller may see
        raise RequestError(
            RequestCode.APPROVAL_NOT_FOUND, f"no approval {ns.approval_id} that you may see"
        )
    (approval,) = found
    _print(approval, ns.json, lambda: details_text(approval))
    return 0


def _print(message: Any, as_json: bool, text: Callable[[], str]) -> None:
    if as_json:
        print(json.dumps(MessageToDict(message, preserving_proto_field_name=True), indent=2))
    else:
        print(text())


# ---------------------------------------------------------------------- text


def status_name(value: int) -> str:
    return str(pb.ApprovalStatus.Name(value)).removeprefix("APPROVAL_STATUS_")


COLUMNS = ("APPROVAL", "STATUS", "YOU", "RUN", "CALL", "TOOL", "REQUESTED BY", "EXPIRES")
LEGEND = (
    "YOU: decide: you may approve or deny it (callgate approvals approve|deny APPROVAL_ID "
    "--reason TEXT); asked: your own run's, for someone else to decide"
)


def yours(a: Any) -> str:
    """What the caller may do with an approval: decide it, or wait (its own run's)."""
    if a.caller_may_decide:
        return "decide"
    return "asked" if a.status == pb.APPROVAL_STATUS_PENDING else "-"


def table_text(answer: Any) -> str:
    rows = [
        (
            a.approval_id,
            status_name(a.status),
            yours(a),
            a.run_id,
            a.call_id,
            a.tool,
            f"{a.requested_by} ({a.tenant})",
            a.expires_at,
        )
        for a in answer.approvals
    ]
    if not rows:
        lines = ["no approvals"]
    else:
        widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in [COLUMNS, *rows]
        ]
        if any(a.status == pb.APPROVAL_STATUS_PENDING for a in answer.approvals):
            lines.append(LEGEND)
    if answer.next_page_token:
        lines.append(f"more: --page-token {answer.next_page_token}")
    return "\n".join(lines)


def details_text(a: Any) -> str:
    try:
        args = json.dumps(json.loads(a.arguments_json), indent=2, sort_keys=True)
    except ValueError:
        args = a.arguments_json
    you = {
        "decide": "you may decide it (callgate approvals approve|deny ... --reason TEXT)",
        "asked": "your own run's: someone the policy's may_approve allows decides it",
        "-": "decided",
    }[yours(a)]
    fields = [
        ("approval", a.approval_id),
        ("status", status_name(a.status)),
        ("you", you),
        ("run", a.run_id),
        ("turn", a.turn_id),
        ("call", a.call_id),
        ("tool", f"{a.tool} {a.tool_version}"),
        (
            "requested by",
            f"{a.requested_by} (tenant {a.tenant}, roles {', '.join(a.requester_roles) or 'none'})",
        ),
        ("why", "; ".join(a.policy_reasons)),
        ("created", a.created_at),
        ("expires", a.expires_at),
        ("arguments sha256", a.arguments_sha256),
    ]
    if a.decided_at:
        fields += [
            ("decided", f"{a.decided_at} by {a.decided_by or '(nobody)'}"),
            ("reason", a.reason),
        ]
    width = max(len(k) for k, _ in fields) + 1
    lines = [f"{(k + ':').ljust(width)} {v}" for k, v in fields]
    return "\n".join([*lines, "arguments:", *("  " + line for line in args.splitlines())])


def decided_text(answer: Any) -> str:
    a, r = answer.approval, answer.result
    status = str(pb.CallStatus.Name(r.status)).removeprefix("CALL_STATUS_")
    line = (
        f"{status_name(a.status).lower()} {a.approval_id}: call {r.call_id} of run "
        f"{a.run_id} is {status} (sent {r.execution_count} time(s))"
    )
    if r.error.code:
        line += f"\n  {r.error.code}: {r.error.message}"
    return line
