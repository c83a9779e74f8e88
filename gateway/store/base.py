"""The RunStore contract: what the runner persists and reads back.

Implementations: `sqlite.SQLiteStore` (default; one file) and `postgres.PostgresStore` (several
replicas sharing runs); `gateway.store.open_store` picks one from `--db`. Every method either
commits what it was given in one transaction or raises `StoreUnavailable`; nothing is
half-written. Guarantees every implementation gives at the database level, so they hold across
processes and replicas, not just inside one:

- A run's owner (subject, tenant) and creation time, and a turn's place in its run (`seq`),
  are what they were when created: an update of the run or turn leaves them as they are.
- A call ID is unique within a run (a duplicate is stored only as a REJECTED
  `duplicate_call_id` record of its own turn).
- A guarded call update (`save(expect=...)`) applies only if the stored row is still in the
  expected status with the expected execution count, else the whole commit rolls back with
  `StoreConflict`: the claim PROPOSED → EXECUTING is won by exactly one writer. A guarded
  approval update (`save(expect_approvals=...)`) likewise applies only while the approval has
  the expected status: an approval leaves PENDING (decided, expired, cancelled) exactly once.
- `drive_lock(run_id)` admits one holder per run at a time; a holder that dies releases it.
- The audit records form one hash chain per store, appended under a lock; each record is
  sealed with the audit key the store was opened with (if any). A prune removes the oldest
  records and records where the chain continues (a checkpoint) in the same commit.
- Call and approval records are written in their stored form (`StoredForm`): a call of a
  tool with `redact_stored` keeps its arguments masked once it is terminal.
- A commit that carries reservations (`reserve`) reserves every one or nothing: it locks the
  key of each (in key order), sums the key's window and, if the reservation would pass the
  limit, rolls the whole commit back and raises `gateway.quotas.QuotaExceeded`. A commit
  that writes a call ending without executing (REJECTED, NOT_RUN; FAILED after UNKNOWN) gives
  back that call's reservations in the same commit.
- The first definition recorded of a tool pins it (`record_definitions`): of two writers
  recording different definitions of a tool at once, one pin is stored and both read it.
- After a commit that settles something of a run (`settles`), the run's watchers are woken
  (`watch`), including watchers served by other replicas of the same database; after a commit
  that appends audit records, the audit's followers are (`watch_audit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol

from gateway.audit.records import AuditCheckpoint, AuditEvent, AuditFilter, AuditRecord
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    CallRecord,
    PastCall,
    Quota,
    RunFilter,
    RunPage,
    RunRecord,
    RunSnapshot,
    RunView,
    TurnContext,
    TurnRecord,
)
from gateway.pins import SeenDefinition, ToolPin
from gateway.quotas import QuotaState, Reservation
from gateway.store.notify import Subscription


def settles(run: RunRecord | None, turn: TurnRecord | None) -> bool:
    """Whether a commit carrying this run and turn settles something watchers should see: a
    turn's outcome was decided (again), or the run ended."""
    return (turn is not None and turn.next is not None) or (run is not None and run.state.terminal)


class StoredForm(Protocol):
    """What the store keeps of a record it is given to write."""

    def call(self, c: CallRecord) -> CallRecord: ...

    def approval(self, a: ApprovalRecord) -> ApprovalRecord: ...


class AsGiven:
    """Every record kept as given."""

    def call(self, c: CallRecord) -> CallRecord:
        return c

    def approval(self, a: ApprovalRecord) -> ApprovalRecord:
        return a


class RunStore(Protocol):
    name: str

    async def create_run(self, run: RunRecord) -> RunRecord:
        """Insert the run; when the ID exists, answer the stored run unchanged."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(
        self, which: RunFilter, *, before: tuple[datetime, str] | None, limit: int
    ) -> list[RunRecord]:
        """Up to `limit` runs of `which`, newest first (created_at, then run_id, descending),
        those created before `before` (a (created_at, run_id) pair; None: from the newest)."""
        ...

    async def get_view(self, run_id: str) -> RunView | None: ...

    async def snapshot(self, run_id: str) -> RunSnapshot | None:
        """The run, its latest turn and that turn's calls, from one consistent read."""
        ...

    async def run_page(self, run_id: str, *, before: int | None, limit: int) -> RunPage | None:
        """The run and one page of its turns: the latest `limit` numbered below `before`
        (None: the run's latest turns), oldest first, with their calls (in the order they were
        recorded), the run's turn count and whether older turns exist, from one consistent
        read; None when there is no such run. Reads only the page's rows (an index on the
        turns' (run_id, seq)), however long the run."""
        ...

    async def get_turn(self, run_id: str, turn_id: str) -> TurnRecord | None: ...

    async def last_turn(self, run_id: str) -> TurnRecord | None: ...

    async def turn_calls(self, run_id: str, turn_id: str) -> list[CallRecord]: ...

    async def find_call(self, run_id: str, call_id: str) -> CallRecord | None:
        """The call with this ID in the run (not a later duplicate's rejection)."""
        ...

    async def recent_calls(self, run_id: str, limit: int) -> list[PastCall]:
        """The run's last `limit` calls, oldest first, as the policy input shows them."""
        ...

    async def turn_context(
        self, run_id: str, turn_id: str, call_ids: Sequence[str], recent: int
    ) -> TurnContext | None:
        """What accepting a turn needs to read (`TurnContext`; `recent`: how many of the run's
        latest calls), in one read; None when there is no such run."""
        ...

    async def begin_turn(
        self,
        run: RunRecord,
        turn: TurnRecord,
        calls: Sequence[CallRecord],
        audit: Sequence[AuditEvent] = (),
        approvals: Sequence[ApprovalRecord] = (),
        *,
        durable: bool = True,
        reserve: Sequence[Reservation] = (),
    ) -> None:
        """Insert the turn, its calls and their approval requests, update the run, append
        audit and reserve `reserve`, atomically (one commit). `durable=False`: the commit may
        reach the disk with the store's next durable commit rather than before this returns
        (safe only when nothing leaves the sidecar before that next commit, and nothing it
        holds has an effect); a store may commit durably all the same."""
        ...

    async def save(
        self,
        *,
        run: RunRecord | None = None,
        turn: TurnRecord | None = None,
        calls: Sequence[CallRecord] = (),
        approvals: Sequence[ApprovalRecord] = (),
        audit: Sequence[AuditEvent] = (),
        expect: Sequence[CallRecord] = (),
        expect_approvals: Sequence[ApprovalRecord] = (),
        reserve: Sequence[Reservation] = (),
    ) -> None:
        """Update existing run/turn/call rows, upsert approvals, append audit records,
        reserve `reserve` and give back what the calls ending unexecuted had reserved,
        atomically (one commit, durable before it returns). A call of `calls` that has a
        record of the same turn and ID in `expect` is guarded: it is written only if its row
        still has that record's status and execution count (else `StoreConflict`, nothing
        written). An approval of `approvals` with a record of the same ID in
        `expect_approvals` is guarded the same way on its status. Wakes the run's watchers
        when `settles(run, turn)`."""
        ...

    async def append_audit(self, events: Sequence[AuditEvent]) -> None: ...

    async def reserve_quotas(
        self, reservations: Sequence[Reservation], audit: Sequence[AuditEvent]
    ) -> None:
        """Reserve every reservation and append audit, in one commit (or QuotaExceeded)."""
        ...

    async def quota_usage(self, quotas: Sequence[Quota], now: datetime) -> dict[str, float]:
        """Each quota's key's usage in its window ending at `now`."""
        ...

    async def list_quotas(
        self, prefix: str, *, after: str, limit: int, now: datetime
    ) -> list[QuotaState]:
        """Up to `limit` keys starting with `prefix`, those after `after`, in key order, with
        their usage in the window of their latest reservation."""
        ...

    async def reset_quota(self, key: str, audit: Callable[[int], AuditEvent]) -> int | None:
        """Give back every reservation of the key and append `audit(removed)`, in one commit;
        None (nothing written) when no reservation ever named the key."""
        ...

    async def tool_pins(self, names: Sequence[str] | None = None) -> dict[str, ToolPin]:
        """The pins of these tools (every pin: None), by name."""
        ...

    async def tool_definitions(self, names: Sequence[str] | None = None) -> list[SeenDefinition]:
        """Every definition recorded of these tools (of every tool: None), by name, then in
        the order they were first seen."""
        ...

    async def record_definitions(
        self,
        seen: Sequence[SeenDefinition],
        audit: Callable[[Sequence[ToolPin]], Sequence[AuditEvent]],
    ) -> dict[str, ToolPin]:
        """Record each definition (once per name and fingerprint), pin each of their tools
        that has no pin yet to its definition and append `audit(the pins made)`, in one commit;
        answers the pins of their tools as stored after it."""
        ...

    async def approve_pin(
        self, pin: ToolPin, audit: Callable[[ToolPin], Sequence[AuditEvent]]
    ) -> ToolPin | None:
        """Pin the tool to `pin.fingerprint` (who, when and why as `pin` says) and append
        `audit(pin)`, in one commit; None (nothing written) when no such definition of the tool
        was ever recorded."""
        ...

    async def audit_rows(self, run_id: str) -> list[dict[str, Any]]:
        """A run's audit records, oldest first (for tests and offline tools)."""
        ...

    async def query_audit(
        self, which: AuditFilter, *, after: int, limit: int, newest: bool = False
    ) -> list[AuditRecord]:
        """Up to `limit` audit records matching `which` with a seq above `after`, in seq
        order (chain order); `newest`: the last `limit` of them (still in seq order)."""
        ...

    async def audit_checkpoint(self) -> AuditCheckpoint | None:
        """Where the chain continues after the latest prune (None: never pruned)."""
        ...

    async def prune_audit(
        self, before: str, record: Callable[[AuditCheckpoint], AuditEvent]
    ) -> AuditCheckpoint | None:
        """Remove the oldest records, up to the first one written at or after `before` (an
        audit time), record the checkpoint and append `record(checkpoint)`, in one commit;
        None when nothing is that old."""
        ...

    async def approvals_for_run(self, run_id: str) -> list[ApprovalRecord]: ...

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None: ...

    async def list_approvals(
        self, which: ApprovalFilter, *, after: int, limit: int
    ) -> list[tuple[int, ApprovalRecord]]:
        """Up to `limit` approvals matching `which`, in the order they were created, each
        with its position; `after` is the position of the last one already seen (0 first)."""
        ...

    def drive_lock(self, run_id: str) -> AbstractAsyncContextManager[None]:
        """Held while a run is driven (a turn accepted, executed, resumed, resolved,
        cancelled); waits while any other task, process or replica holds it."""
        ...

    def watch(self, run_id: str) -> AbstractAsyncContextManager[Subscription]:
        """Subscribe to the run's settlements: `await sub.wait()` returns after each later
        commit that settles something of the run (wake-ups coalesce)."""
        ...

    def watch_audit(self) -> AbstractAsyncContextManager[Subscription]:
        """Subscribe to audit appends: `await sub.wait()` returns after each later commit that
        appended audit records (wake-ups coalesce)."""
        ...

    def close_watches(self) -> None:
        """End every subscription (their `wait` raises WatchClosed): shutting down."""
        ...

    def watchers(self) -> int:
        """How many subscriptions this store instance serves right now."""
        ...

    async def unsettled(self) -> tuple[int, int]:
        """How many approvals are PENDING and how many calls UNKNOWN, in the whole store (the
        gauges of `serve --metrics-listen`)."""
        ...

    async def healthy(self) -> bool: ...

    async def close(self) -> None: ...
