"""How `callgate audit` prints records: a table whose last column says why, or JSON lines.

The table: SEQ, TIME, KIND, RUN, CALL, TOOL, VERDICT, STATUS, CODE, ACTOR and WHY. STATUS is
the call's status, or for an approval record the approval's (PENDING, APPROVED, DENIED, ...).
WHY is the record's message (the error, the reason given, a rejected policy's `file:line`) or,
for a record without one, its decision's reasons; cut at `WHY_CHARS` unless `wide`.

JSON lines: every field of the record, with its default when unset, named as in the proto;
numbers are numbers (`seq` too), enums their names, and the two JSON texts arrive parsed:
`detail` for `detail_json`, `arguments_summary` for `arguments_summary_json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from google.protobuf.json_format import MessageToDict

from gateway import pb

WHY_CHARS = 72
COLUMNS = (
    "SEQ",
    "TIME",
    "KIND",
    "RUN",
    "CALL",
    "TOOL",
    "VERDICT",
    "STATUS",
    "CODE",
    "ACTOR",
    "WHY",
)
WIDTHS = (6, 27, 9, 16, 10, 16, 17, 16, 22, 10, 0)  # --follow: rows printed as they come
REASONED = {"decision", "authorize", "approval", "resolve", "policy"}


def print_records(
    records: Iterable[Any], *, as_json: bool, aligned: bool, wide: bool = False
) -> tuple[int, int]:
    """Print each record as it arrives (aligned: the table's columns fitted to all of them,
    printed at the end); answers how many, and the last seq."""
    rows: list[tuple[str, ...]] = []
    shown = last = 0
    if not as_json and not aligned:
        print(_line(COLUMNS, WIDTHS), flush=True)
    for r in records:
        shown, last = shown + 1, r.seq
        if as_json:
            print(json.dumps(typed(r)), flush=True)
        elif aligned:
            rows.append(cells(r, wide=wide))
        else:
            print(_line(cells(r, wide=wide), WIDTHS), flush=True)
    if aligned and not as_json:
        print(table_text(rows))
    return shown, last


def typed(r: Any) -> dict[str, Any]:
    """The record as a JSON object with typed fields (see the module's docstring)."""
    out = MessageToDict(
        r, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    out["seq"] = int(r.seq)
    for name, parsed in (
        ("detail_json", "detail"),
        ("arguments_summary_json", "arguments_summary"),
    ):
        text = out.pop(name, "")
        try:
            out[parsed] = json.loads(text) if text else None
        except ValueError:
            out[parsed] = text
    return out


def _name(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix) if value else ""


def why(r: Any) -> str:
    """The record's message or, for a record that decided something, its reasons."""
    text = r.message
    if not text and r.kind in REASONED and r.HasField("decision"):
        text = "; ".join(r.decision.reasons)
    if r.kind == "policy":
        problems = (json.loads(r.detail_json or "{}") or {}).get("problems") or []
        if len(problems) > 1:
            text += f" (and {len(problems) - 1} more: --json lists every one under detail)"
    return " ".join(text.split())


def cells(r: Any, *, wide: bool = False) -> tuple[str, ...]:
    verdict = _name(pb.Verdict, r.decision.verdict, "VERDICT_") if r.HasField("decision") else ""
    status = (
        _name(pb.ApprovalStatus, r.approval_status, "APPROVAL_STATUS_")
        if r.kind == "approval"
        else _name(pb.CallStatus, r.status, "CALL_STATUS_")
    )
    said = why(r)
    if not wide and len(said) > WHY_CHARS:
        said = said[: WHY_CHARS - 1] + "…"
    return (
        str(r.seq),
        r.time,
        r.kind,
        r.run_id,
        r.call_id,
        r.tool,
        verdict,
        status,
        r.error_code,
        r.actor or "callgate",
        said,
    )


def _line(row: tuple[str, ...], widths: tuple[int, ...]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()


def table_text(rows: list[tuple[str, ...]]) -> str:
    if not rows:
        return "no audit records"
    widths = tuple(max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS)))
    return "\n".join(_line(r, widths) for r in [COLUMNS, *rows])
