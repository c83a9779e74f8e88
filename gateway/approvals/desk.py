"""ListApprovals, and approvals expiring on their own.

Listing: the approvals a caller may see — those of its own runs and those the policy's
`may_approve` lets it decide — filtered by run, status, tool or ID, in the order they were
created, a page at a time (`page_token` continues after the last approval the previous page
looked at). An approval found past its expiry is expired before it is shown.

Expiry: an `ExpiryTimer` armed for the earliest pending expiry it knows of. It learns them from
the store when the sidecar starts (so expiry survives restarts), from the runner whenever an
approval is created or a paused run is looked at (`Runner.on_pending`), and after each round.
When it fires, every approval past its expiry is expired through its run
(`Runner.expire_approvals`: under the run's drive lock, a guarded update, then the turn
settles and its watchers hear of it). With several replicas any of them may fire first; the
guarded update lets exactly one expire each approval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from gateway.approvals import records as ap
from gateway.approvals.expiry import RETRY_S, ExpiryTimer
from gateway.errors import RequestError
from gateway.model import ApprovalFilter, ApprovalRecord, ApprovalStatus, Identity
from gateway.policy.base import PolicyEngine
from gateway.request_checks import check_id
from gateway.store.base import RunStore
from gateway.tools import Registry

log = logging.getLogger("callgate.approvals")

SCAN_LIMIT = 2000  # approvals one ListApprovals request looks at, at most
EXPIRY_BATCH = 500


@dataclass(frozen=True)
class ListRequest:
    which: ApprovalFilter = ApprovalFilter()
    page_size: int = 0
    page_token: str = ""


@dataclass(frozen=True)
class ApprovalPage:
    approvals: tuple[ApprovalRecord, ...]
    next_page_token: str = ""  # "" when there is nothing after this page
    decidable: frozenset[str] = frozenset()  # the IDs of those the caller may decide now


class ApprovalRuns(Protocol):
    """What the desk needs of the run engine (`gateway.run.runner.Runner` is one): where
    approvals are stored and decided, and a way to expire a run's approvals past their time."""

    store: RunStore
    registry: Registry
    policy: PolicyEngine
    clock: Callable[[], datetime]
    on_pending: Callable[[Sequence[ApprovalRecord]], None]

    async def expire_approvals(self, run_id: str) -> None: ...


class ApprovalDesk:
    def __init__(self, runner: ApprovalRuns) -> None:
        self.runner = runner
        self.store = runner.store
        self.timer = ExpiryTimer(self.expire_due, clock=runner.clock)
        runner.on_pending = self._arm

    # ------------------------------------------------------------------ listing

    async def list_page(self, who: Identity, req: ListRequest) -> ApprovalPage:
        for kind, value in (
            ("run_id", req.which.run_id),
            ("approval_id", req.which.approval_id),
            ("tool", req.which.tool),
        ):
            check_id(kind, value)
        size = ap.page_size(req.page_size)
        found, token = await self._scan(who, req.which, ap.page_after(req.page_token), size)
        current = tuple(await self._current(found, req.which))
        return ApprovalPage(current, token, frozenset(await self._decidable(who, current)))

    async def _decidable(self, who: Identity, shown: Sequence[ApprovalRecord]) -> list[str]:
        return [
            a.approval_id
            for a in shown
            if a.status == ApprovalStatus.PENDING
            and await ap.may_approve(self.runner.policy, self.runner.registry, who, a)
        ]

    async def _scan(
        self, who: Identity, which: ApprovalFilter, after: int, size: int
    ) -> tuple[list[ApprovalRecord], str]:
        shown: list[ApprovalRecord] = []
        scanned = 0
        while True:
            rows = await self.store.list_approvals(which, after=after, limit=size)
            for position, a in rows:
                after, scanned = position, scanned + 1
                if await ap.visible(self.runner.policy, self.runner.registry, who, a):
                    shown.append(a)
                    if len(shown) == size:
                        return shown, ap.page_token(after)
            if len(rows) < size:
                return shown, ""
            if scanned >= SCAN_LIMIT:  # a partial page; the token continues the scan
                return shown, ap.page_token(after)

    async def _current(
        self, found: list[ApprovalRecord], which: ApprovalFilter
    ) -> list[ApprovalRecord]:
        """The approvals as they are once those past their expiry are expired."""
        now = self.runner.clock()
        due = {a.run_id for a in found if a.due(now)}
        if not due:
            return found
        for run_id in sorted(due):
            await self.runner.expire_approvals(run_id)
        fresh = [
            await self.store.get_approval(a.approval_id) if a.run_id in due else a for a in found
        ]
        return [
            a for a in fresh if a is not None and (not which.statuses or a.status in which.statuses)
        ]

    # ------------------------------------------------------------------ expiry

    def start(self) -> None:
        """Expire what came due while no sidecar was running, and arm the expiry of every
        pending approval in the store: one round of the timer, run as soon as the event loop
        is free (what a previous process armed is not lost with it)."""
        self.timer.arm(self.runner.clock())

    async def close(self) -> None:
        await self.timer.close()

    def _arm(self, approvals: Sequence[ApprovalRecord]) -> None:
        for a in approvals:
            if a.expires_at is not None and a.status == ApprovalStatus.PENDING:
                self.timer.arm(a.expires_at)

    async def expire_due(self) -> datetime | None:
        """Settle every pending approval past its expiry; answers the next expiry (or a
        retry soon, when the store failed)."""
        now = self.runner.clock()
        retry = now + timedelta(seconds=RETRY_S)
        try:
            due, next_at = await self._pending(now)
        except RequestError as err:  # e.g. the store is unavailable: try again soon
            log.warning("could not read the pending approvals: %s", err)
            return retry
        for run_id in sorted(due):
            try:
                await self.runner.expire_approvals(run_id)
            except RequestError as err:
                log.warning("could not expire the approvals of run %s: %s", run_id, err)
                next_at = retry if next_at is None else min(next_at, retry)
        return next_at

    async def _pending(self, now: datetime) -> tuple[set[str], datetime | None]:
        """The runs with an approval past its expiry, and the earliest expiry still ahead."""
        due: set[str] = set()
        next_at: datetime | None = None
        after = 0
        while True:
            rows = await self.store.list_approvals(
                ApprovalFilter(statuses=(ApprovalStatus.PENDING,)), after=after, limit=EXPIRY_BATCH
            )
            for _, a in rows:
                if a.due(now):
                    due.add(a.run_id)
                elif a.expires_at is not None and (next_at is None or a.expires_at < next_at):
                    next_at = a.expires_at
            if len(rows) < EXPIRY_BATCH:
                return due, next_at
            after = rows[-1][0]
