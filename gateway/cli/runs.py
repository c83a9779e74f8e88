"""`callgate runs list|show|watch`: the caller's runs, from a running sidecar.

    callgate runs list [--state paused_for_approval,...] [--subject S | --every-subject]
                       [--page-size N] [--page-token T] [--json]
    callgate runs show RUN_ID [--json]
    callgate runs watch RUN_ID [--json]

`list` is ListRuns (the caller's own runs, newest first; another subject's as the policy's
may_list_runs allows). `show` reads the whole run page by page (GetRun) with its pending
approvals (ListApprovals): every turn, each call's status, code, message and output. `watch`
follows WatchRun, printing the current outcome and every later settlement until the run ends
(Ctrl-C stops watching). A table or text by default; `--json` prints the answers as JSON (one
object per line for `watch`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf.json_format import MessageToDict

from gateway import pb
from gateway.cli.common import UsageError, connected, option, switch

ACTIONS = ("list", "show", "watch")
STATES = (
    "active",
    "paused_for_approval",
    "paused_unknown_outcome",
    "completed",
    "handed_off",
    "budget_exhausted",
    "cancelled",
)


def states(text: str) -> tuple[str, ...]:
    found = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
    if not found or any(n not in STATES for n in found):
        raise ValueError(f"expected some of {', '.join(STATES)} (comma-separated)")
    return found


def page_size(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 500:
        raise ValueError("expected a number from 1 to 500")
    return int(text)


def add_parser(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "runs",
        help="list, show or watch runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=ACTIONS, help="what to do")
    p.add_argument("run_id", nargs="?", default="", metavar="RUN_ID", help="the run (show, watch)")
    client_options(p)
    option(
        p,
        "--state",
        parse=states,
        default=(),
        metavar="STATE[,STATE]",
        help=f"list: only runs in these states: {', '.join(STATES)}",
    )
    option(
        p,
        "--subject",
        default="",
        metavar="SUBJECT",
        help="list: another subject's runs of your tenant (as may_list_runs allows)",
    )
    switch(
        p,
        "--every-subject",
        help="list: every subject's runs of your tenant (as may_list_runs allows)",
    )
    option(
        p,
        "--page-size",
        parse=page_size,
        default=50,
        metavar="N",
        help="list: runs per page (1-500)",
    )
    option(
        p,
        "--page-token",
        default="",
        metavar="TOKEN",
        help="list: the page after the one that printed this token",
    )
    switch(p, "--json", help="print the answers as JSON")
    p.set_defaults(handler=run)


def run(ns: argparse.Namespace) -> int:
    if ns.action == "list" and ns.run_id:
        raise UsageError("list takes no RUN_ID (use show RUN_ID)")
    if ns.action != "list" and not ns.run_id:
        raise UsageError(f"{ns.action} needs a RUN_ID (see 'callgate runs list')")
    if ns.subject and ns.every_subject:
        raise UsageError("--subject and --every-subject name different runs: give one")
    with connected(ns, timeout_s=60) as client:
        if ns.action == "list":
            answer = client.list_runs(
                state=[getattr(pb, f"RUN_STATE_{s.upper()}") for s in ns.state],
                subject=ns.subject,
                every_subject=ns.every_subject,
                page_size=ns.page_size,
                page_token=ns.page_token,
            )
            print(as_json(answer) if ns.json else list_text(answer))
        elif ns.action == "show":
            whole = client.whole_run(ns.run_id)
            pending = client.list_approvals(
                run_id=ns.run_id, status=[pb.APPROVAL_STATUS_PENDING]
            ).approvals
            print(
                json.dumps(
                    {"run": _dict(whole), "pending_approvals": [_dict(a) for a in pending]},
                    indent=2,
                )
                if ns.json
                else show_text(whole, pending)
            )
        else:
            watch(client.watch_run(ns.run_id), as_json_lines=ns.json)
    return 0


def watch(stream: Any, *, as_json_lines: bool) -> None:
    try:
        for outcome in stream:
            print(
                json.dumps(_dict(outcome)) if as_json_lines else outcome_text(outcome), flush=True
            )
    finally:
        stream.cancel()


# ---------------------------------------------------------------------- text


def _dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True)


def as_json(message: Any) -> str:
    return json.dumps(_dict(message), indent=2)


def name(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix) if value else "-"


def table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [columns, *rows]
    ]


RUN_COLUMNS = ("RUN", "STATE", "SUBJECT", "TURNS", "CALLS", "CREATED", "WAITING FOR")


def list_text(answer: Any) -> str:
    if not answer.runs:
        lines = ["no runs"]
    else:
        lines = table(
            RUN_COLUMNS,
            (
                (
                    r.run_id,
                    name(pb.RunState, r.state, "RUN_STATE_"),
                    r.subject,
                    str(r.turns_used),
                    str(r.tool_calls_used),
                    r.created_at,
                    _short(r.pause_reason, 60),
                )
                for r in answer.runs
            ),
        )
    if answer.next_page_token:
        lines.append(f"more: --page-token {answer.next_page_token}")
    return "\n".join(lines)


def _short(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def show_text(run: Any, pending: Iterable[Any]) -> str:
    budget = run.budget
    lines = [
        f"run:      {run.run_id}",
        f"state:    {name(pb.RunState, run.state, 'RUN_STATE_')}"
        + (f" ({run.pause_reason})" if run.pause_reason else ""),
        f"owner:    {run.subject} (tenant {run.tenant})",
        f"provider: {run.provider or '-'}",
        f"used:     {run.turns_used} turn(s) of {budget.max_turns or 'unlimited'}, "
        f"{run.tool_calls_used} call(s) of {budget.max_tool_calls or 'unlimited'}, "
        f"{run.usage_total.input_tokens + run.usage_total.output_tokens} token(s)",
        f"created:  {run.created_at}",
    ]
    calls: dict[str, list[Any]] = {}
    for c in run.calls:
        calls.setdefault(c.turn_id, []).append(c)
    for turn in run.turns:
        lines += turn_lines(turn, calls.get(turn.turn_id, []))
    waiting = list(pending)
    if waiting:
        lines.append("\npending approvals (callgate approvals show APPROVAL_ID):")
        lines += [
            f"  {a.approval_id}  call {a.call_id} ({a.tool}), expires {a.expires_at}"
            for a in waiting
        ]
    return "\n".join(lines)


def turn_lines(turn: Any, calls: list[Any]) -> list[str]:
    event = name(pb.EventKind, turn.event, "EVENT_KIND_").lower()
    head = (
        f"\nturn {turn.turn_id} ({event}, {turn.created_at}): "
        f"{name(pb.NextAction, turn.next, 'NEXT_ACTION_')}"
    )
    lines = [head + (f": {turn.reason}" if turn.reason else "")]
    for c in calls:
        lines.append(
            f"  {c.call_id}  {c.tool}  {name(pb.CallStatus, c.status, 'CALL_STATUS_')}"
            f"  sent {c.execution_count} time(s)"
            + (f"  approval {c.approval_id}" if c.approval_id else "")
        )
        if c.error.code:
            lines.append(f"    {c.error.code}: {c.error.message}")
        elif c.output_json:
            lines.append(f"    output: {_short(c.output_json, 200)}")
    return lines


def outcome_text(outcome: Any) -> str:
    head = (
        f"turn {outcome.turn_id or '(none yet)'}: "
        f"{name(pb.NextAction, outcome.next, 'NEXT_ACTION_')}, run "
        f"{name(pb.RunState, outcome.run_state, 'RUN_STATE_')}"
    )
    lines = [head + (f": {outcome.reason}" if outcome.reason else "")]
    for r in outcome.results:
        line = (
            f"  {r.call_id}  {r.tool}  {name(pb.CallStatus, r.status, 'CALL_STATUS_')}"
            f"  sent {r.execution_count} time(s)"
        )
        lines.append(line + (f"  {r.error.code}: {r.error.message}" if r.error.code else ""))
    return "\n".join(lines)
