"""SQLite's query plans, read for tests of which index a statement uses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gateway.store.sqlite import SQLiteStore


class Steps:
    """Counts the SQLite virtual machine's steps on a connection (rows visited, sorted)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        self.count += 1
        return 0


async def sqlite_steps(store: SQLiteStore, read: Callable[[], Awaitable[object]]) -> int:
    """The steps of SQLite's virtual machine while `read` runs, on every connection."""
    steps = Steps()
    for conn in store.connections:
        conn.set_progress_handler(steps, 1)
    try:
        await read()
    finally:
        for conn in store.connections:
            conn.set_progress_handler(None, 1)
    return steps.count


def explain_rows(plan: dict[str, Any]) -> int:
    """Rows every node of an EXPLAIN ANALYZE plan produced, together."""
    return int(plan.get("Actual Rows", 0)) + sum(explain_rows(p) for p in plan.get("Plans", []))
