"""The RunStore contract: what the runner persists and reads back.

Implementations: `sqlite.SQLiteStore` (default). Every method either commits what it was given
in one transaction or raises `StoreUnavailable`; nothing is half-written. A call ID is unique
within a run at the database level (a duplicate is stored only as a REJECTED
`duplicate_call_id` record of its own turn).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from gateway.model import (
    ApprovalRecord,
    AuditEvent,
    CallRecord,
    RunRecord,
    RunView,
    TurnRecord,
)


class RunStore(Protocol):
    name: str

    async def create_run(self, run: RunRecord) -> RunRecord:
        """Insert the run; when the ID exists, answer the stored run unchanged."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def get_view(self, run_id: str) -> RunView | None: ...

    async def get_turn(self, run_id: str, turn_id: str) -> TurnRecord | None: ...

    async def last_turn(self, run_id: str) -> TurnRecord | None: ...

    async def turn_calls(self, run_id: str, turn_id: str) -> list[CallRecord]: ...

    async def recent_calls(self, run_id: str, limit: int) -> list[CallRecord]: ...

    async def used_call_ids(self, run_id: str, call_ids: Sequence[str]) -> set[str]:
        """Which of call_ids already belong to an earlier turn of the run."""
        ...

    async def begin_turn(self, run: RunRecord, turn: TurnRecord, calls: Sequence[CallRecord],
                         audit: Sequence[AuditEvent] = ()) -> None:
        """Insert the turn and its calls, update the run and append audit, atomically."""
        ...

    async def save(self, *, run: RunRecord | None = None, turn: TurnRecord | None = None,
                   calls: Sequence[CallRecord] = (), approvals: Sequence[ApprovalRecord] = (),
                   audit: Sequence[AuditEvent] = ()) -> None:
        """Update existing run/turn/call rows, upsert approvals and append audit records,
        atomically (one commit, durable before it returns)."""
        ...

    async def append_audit(self, events: Sequence[AuditEvent]) -> None: ...

    async def approvals_for_run(self, run_id: str) -> list[ApprovalRecord]: ...

    async def healthy(self) -> bool: ...

    async def close(self) -> None: ...
