"""Python tools for tests whose external effect lands in a real SQLite file.

Whether an effect happened is read from this target database, never from callgate's records.
The file is named by CALLGATE_TEST_EFFECTS_DB in the sidecar's environment.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from gateway.executors.base import ExecutionContext


def _db() -> sqlite3.Connection:
    conn = sqlite3.connect(os.environ["CALLGATE_TEST_EFFECTS_DB"], timeout=10)
    conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT, tool TEXT, args TEXT)")
    return conn


def apply(tool: str, args: dict[str, Any], ctx: ExecutionContext) -> int:
    with _db() as conn:
        cur = conn.execute(
            "INSERT INTO effects VALUES (?, ?, ?)",
            (ctx.idempotency_key, tool, json.dumps(args, sort_keys=True)),
        )
        return int(cur.lastrowid or 0)


def effects(path: Path, key: str | None = None) -> list[tuple[str, str, str]]:
    """The effects recorded in the target database (all, or those of one idempotency key)."""
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT, tool TEXT, args TEXT)")
        sql, params = "SELECT key, tool, args FROM effects", ()
        if key is not None:
            sql, params = sql + " WHERE key = ?", (key,)
        return list(conn.execute(sql, params).fetchall())
    finally:
        conn.close()


def book_ticket(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    return {"booking_id": apply("book_ticket", args, ctx), "train_number": args["train_number"]}


def pay_invoice(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    return {"payment_id": apply("pay_invoice", args, ctx), "invoice": args["invoice"]}


def cancel_ticket(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    if args.get("booking_id") == "missing":
        raise ValueError("no booking missing")
    return {"cancelled": apply("cancel_ticket", args, ctx)}


def crash_booking(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    """Applies the write, then the process dies before callgate can record the result."""
    apply("crash_booking", args, ctx)
    os._exit(17)


def log_note(args: dict[str, Any], ctx: ExecutionContext) -> dict[str, Any]:
    """Applies the write; the output echoes the note (as large as the caller made it)."""
    return {"logged": apply("log_note", args, ctx), "note": args["note"]}
