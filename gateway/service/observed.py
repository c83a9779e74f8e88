"""A run store that reports its commits: how long each write transaction kept its caller
waiting (`callgate_store_commit_duration_seconds`), and the call results each one made durable
(`callgate_call_results_total`).

A result counts once, when the commit that records it returns: a call entering a terminal
status (REJECTED, SUCCEEDED, FAILED, NOT_RUN) or UNKNOWN. An UNKNOWN call settled later counts
again under its final status; a call rewritten in the status it had does not count again.
Only `serve --metrics-listen` puts it in front of the store; every other method is the
store's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from time import perf_counter
from typing import Any, Final, TypeVar, cast

from gateway.audit.records import AuditCheckpoint, AuditEvent
from gateway.model import ApprovalRecord, CallRecord, CallStatus, RunRecord, TurnRecord
from gateway.observe.hooks import Metrics
from gateway.quotas import Reservation
from gateway.store.base import RunStore

T = TypeVar("T")

RESULTS: Final = frozenset(
    {
        CallStatus.REJECTED,
        CallStatus.SUCCEEDED,
        CallStatus.FAILED,
        CallStatus.NOT_RUN,
        CallStatus.UNKNOWN,
    }
)


class ObservedStore:
    def __init__(self, store: RunStore, metrics: Metrics) -> None:
        self.inner = store
        self.name = store.name
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:  # everything but the writes below
        return getattr(self.inner, name)

    async def _timed(self, commit: Callable[[], Awaitable[T]]) -> T:
        start = perf_counter()
        try:
            return await commit()
        finally:
            self._metrics.store_commit(self.name, perf_counter() - start)

    def _results(self, calls: Sequence[CallRecord], expect: Sequence[CallRecord]) -> None:
        before = {(c.turn_id, c.call_id): c.status for c in expect}
        for c in calls:
            if c.status in RESULTS and before.get((c.turn_id, c.call_id)) != c.status:
                self._metrics.call_result(c.status, c.error_code, c.tool)

    async def create_run(self, run: RunRecord) -> RunRecord:
        return await self._timed(lambda: self.inner.create_run(run))

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
        await self._timed(
            lambda: self.inner.begin_turn(
                run, turn, calls, audit, approvals, durable=durable, reserve=reserve
            )
        )
        self._results(calls, ())

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
        await self._timed(
            lambda: self.inner.save(
                run=run,
                turn=turn,
                calls=calls,
                approvals=approvals,
                audit=audit,
                expect=expect,
                expect_approvals=expect_approvals,
                reserve=reserve,
            )
        )
        if calls:
            self._results(calls, expect)

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        # every Authorize appends: timed here, without `_timed`'s coroutine and closure
        start = perf_counter()
        try:
            await self.inner.append_audit(events)
        finally:
            self._metrics.store_commit(self.name, perf_counter() - start)

    async def prune_audit(
        self, before: str, record: Callable[[AuditCheckpoint], AuditEvent]
    ) -> AuditCheckpoint | None:
        return await self._timed(lambda: self.inner.prune_audit(before, record))


def observed(store: RunStore, metrics: Metrics) -> RunStore:
    """store, reporting to metrics (itself when metrics are off)."""
    if not metrics.enabled:
        return store
    return cast(RunStore, ObservedStore(store, metrics))
