"""QueryAudit: who may read which records, in pages, and following new ones.

Reading is authorized per set of records, never record by record, so the database does the
filtering (on indexes) and paging by `after_seq` never skips what a caller may not see:

- one run's records (`run_id`): the run's owner, or whoever `may_read_audit` allows for the
  run's tenant and owner;
- a subject's records (`subject`, in the caller's tenant unless `tenant` names another): that
  subject, or whoever `may_read_audit` allows for that tenant and subject;
- a tenant's records (no `subject`): whoever `may_read_audit` allows for the tenant with
  subject ""; anyone else reading their own tenant gets their own records only;
- callgate's own records (policy reloads, prunes: `tenant` set to ""): whoever
  `may_read_audit` allows for tenant "".

A refusal is PERMISSION_DENIED (fail closed: a policy error refuses too). Records stream in
seq order; `limit` ends the stream after that many (0: no limit); `tail` starts with the last
`tail` matching records instead. `follow` keeps the stream open and sends new matching
records as they are committed, woken by the store's notification (no polling), until the
caller cancels it or the sidecar stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime

from gateway.audit.records import AuditFilter, AuditRecord, audit_time
from gateway.errors import PermissionDenied, RequestCode, RequestError
from gateway.model import CallStatus, Identity, Verdict
from gateway.policy.base import PolicyEngine
from gateway.policy.grants import refused
from gateway.policy.inputs import audit_input
from gateway.request_checks import check_id
from gateway.store.base import RunStore
from gateway.store.notify import Subscription, WatchClosed

PAGE = 500


@dataclass(frozen=True)
class AuditQuery:
    run_id: str = ""
    call_id: str = ""
    tool: str = ""
    subject: str = ""
    tenant: str | None = None  # None: the caller's own tenant; "": callgate's own records
    verdicts: tuple[Verdict, ...] = ()
    statuses: tuple[CallStatus, ...] = ()
    since: str = ""  # RFC 3339, inclusive
    until: str = ""  # RFC 3339, exclusive
    limit: int = 0
    after_seq: int = 0
    tail: int = 0
    follow: bool = False


def _invalid(message: str) -> RequestError:
    return RequestError(RequestCode.INVALID_ARGUMENT, message)


def _time(name: str, text: str) -> str:
    if not text:
        return ""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _invalid(
            f"{name} {text[:40]!r} is not an RFC 3339 time (such as 2026-11-29T21:00:00Z)"
        ) from None
    if t.tzinfo is None:
        raise _invalid(f"{name} {text[:40]!r} has no time zone (end it with Z or +HH:MM)")
    return audit_time(t)


def checked(q: AuditQuery) -> AuditFilter:
    """The filter a query asks for (before its scope is authorized); INVALID_ARGUMENT for a
    malformed one."""
    for kind, value in (
        ("run_id", q.run_id),
        ("call_id", q.call_id),
        ("tool", q.tool),
        ("subject", q.subject),
        ("tenant", q.tenant or ""),
    ):
        check_id(kind, value)
    for kind, number in (("limit", q.limit), ("after_seq", q.after_seq), ("tail", q.tail)):
        if number < 0:
            raise _invalid(f"{kind} must be 0 or more")
    return AuditFilter(
        call_id=q.call_id,
        tool=q.tool,
        verdicts=q.verdicts,
        statuses=q.statuses,
        since=_time("since", q.since),
        until=_time("until", q.until),
    )


def own(who: Identity, tenant: str, subject: str) -> bool:
    return bool(subject) and subject == who.subject and tenant == who.tenant


class AuditReader:
    def __init__(self, store: RunStore, policy: PolicyEngine) -> None:
        self.store = store
        self.policy = policy

    async def _may(self, who: Identity, tenant: str, subject: str) -> bool:
        return own(who, tenant, subject) or await self.policy.allows(
            "may_read_audit", audit_input(who, tenant, subject)
        )

    async def scope(self, who: Identity, q: AuditQuery) -> AuditFilter:
        """The records this caller may read of what the query asks: its filter narrowed to
        an authorized set; PERMISSION_DENIED (or RUN_NOT_FOUND) otherwise."""
        which = checked(q)
        if q.run_id:
            run = await self.store.get_run(q.run_id)
            if run is None:
                raise RequestError(RequestCode.RUN_NOT_FOUND, f"no run {q.run_id!r}")
            if not await self._may(who, run.tenant, run.subject):
                raise PermissionDenied(
                    f"{who.subject} may not read the audit records of run "
                    f"{q.run_id}: {refused('may_read_audit', who, run.tenant)}"
                )
            return replace(which, run_id=q.run_id, subject=q.subject, tenant=q.tenant)
        tenant = who.tenant if q.tenant is None else q.tenant
        if q.subject:
            if not await self._may(who, tenant, q.subject):
                raise PermissionDenied(
                    f"{who.subject} may not read the audit records of "
                    f"{q.subject} in tenant {tenant!r}: "
                    f"{refused('may_read_audit', who, tenant)}"
                )
            return replace(which, tenant=tenant, subject=q.subject)
        if await self._may(who, tenant, ""):
            return replace(which, tenant=tenant)
        if tenant == who.tenant and who.subject:  # not an auditor: their own records
            return replace(which, tenant=tenant, subject=who.subject)
        raise PermissionDenied(
            f"{who.subject} may not read the audit records of tenant "
            f"{tenant!r}: {refused('may_read_audit', who, tenant)}"
        )

    async def stream(self, who: Identity, q: AuditQuery) -> AsyncIterator[AuditRecord]:
        which = await self.scope(who, q)
        feed: AbstractAsyncContextManager[Subscription | None] = (
            self.store.watch_audit() if q.follow else nullcontext()
        )
        async with feed as changes:  # subscribed before the first read: nothing is missed
            pages = _Pages(self.store, which, q)
            async for record in pages.first():
                yield record
            while changes is not None and not pages.done:
                try:
                    await changes.wait()
                except WatchClosed as exc:
                    raise RequestError(
                        RequestCode.SHUTTING_DOWN,
                        "callgate is shutting down; "
                        "query again with after_seq set to the last seq "
                        "received",
                    ) from exc
                async for record in pages.rest():
                    yield record


class _Pages:
    """Reads one query's records page by page, remembering the last seq sent."""

    def __init__(self, store: RunStore, which: AuditFilter, q: AuditQuery) -> None:
        self.store = store
        self.which = which
        self.limit = q.limit
        self.tail = q.tail
        self.after = q.after_seq
        self.sent = 0

    @property
    def done(self) -> bool:
        return bool(self.limit) and self.sent >= self.limit

    def _room(self, page: int) -> int:
        return min(page, self.limit - self.sent) if self.limit else page

    async def first(self) -> AsyncIterator[AuditRecord]:
        if self.tail:
            for r in await self.store.query_audit(
                self.which, after=self.after, limit=self._room(self.tail), newest=True
            ):
                yield self._sent(r)
            return
        async for r in self.rest():
            yield r

    async def rest(self) -> AsyncIterator[AuditRecord]:
        while not self.done:
            asked = self._room(PAGE)
            page = await self.store.query_audit(self.which, after=self.after, limit=asked)
            for r in page:
                yield self._sent(r)
            if len(page) < asked:
                return

    def _sent(self, r: AuditRecord) -> AuditRecord:
        self.after, self.sent = r.seq, self.sent + 1
        return r
