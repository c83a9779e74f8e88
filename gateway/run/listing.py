"""ListRuns: a caller's runs, newest first, a page at a time.

A caller lists its own runs without asking anyone. Another subject's runs of its tenant, or
every subject's (`every_subject`), only as the policy's `may_list_runs` allows (input
`{"action": "list_runs", "identity", "tenant", "subject"}`, subject "" for every subject); a
refusal names the rule and, under the default policy, the roles it grants. A listing never
crosses tenants. Runs are summaries (no turns, no calls): `GetRun` reads one in full.

A page token is opaque to clients: the URL-safe base64 (no padding) of a JSON array holding the
last run's creation time and ID; the next page holds the runs created before it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from gateway.errors import PermissionDenied, RequestCode, RequestError
from gateway.model import Identity, RunFilter, RunRecord, RunState, rfc3339
from gateway.policy.base import PolicyEngine
from gateway.policy.grants import refused
from gateway.policy.inputs import list_runs_input
from gateway.request_checks import check_id
from gateway.store.base import RunStore

DEFAULT_PAGE_RUNS = 50
MAX_PAGE_RUNS = 500


@dataclass(frozen=True)
class RunsRequest:
    states: tuple[RunState, ...] = ()
    page_size: int = 0
    page_token: str = ""
    subject: str = ""  # "": the caller's own runs
    every_subject: bool = False


@dataclass(frozen=True)
class RunsPage:
    runs: tuple[RunRecord, ...]
    next_page_token: str = ""  # "" when there is nothing after this page


def _page_size(requested: int) -> int:
    if requested < 0:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"page_size is {requested}: use 0 (the default, {DEFAULT_PAGE_RUNS}) or more",
        )
    return min(requested or DEFAULT_PAGE_RUNS, MAX_PAGE_RUNS)


def page_token(last: RunRecord) -> str:
    text = json.dumps([rfc3339(last.created_at), last.run_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _bad_token() -> RequestError:
    return RequestError(
        RequestCode.INVALID_PAGE_TOKEN,
        "page_token is not one ListRuns gave "
        "out: pass next_page_token of the previous answer unchanged, or none "
        "for the newest runs",
    )


def page_after(token: str) -> tuple[datetime, str] | None:
    """The (created_at, run_id) a page token continues before (None: no token)."""
    if not token:
        return None
    if len(token) > 1024:
        raise _bad_token()
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        at, run_id = json.loads(raw)
        return datetime.fromisoformat(str(at).replace("Z", "+00:00")), str(run_id)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise _bad_token() from None


def _whose(subject: str | None, tenant: str) -> str:
    return f"subject {subject}" if subject else f"every subject of tenant {tenant}"


@dataclass(frozen=True)
class RunLister:
    store: RunStore
    policy: PolicyEngine

    async def list_page(self, who: Identity, req: RunsRequest) -> RunsPage:
        check_id("subject", req.subject)
        if req.every_subject and req.subject:
            raise RequestError(
                RequestCode.INVALID_ARGUMENT, "give subject or every_subject, not both"
            )
        subject = None if req.every_subject else (req.subject or who.subject)
        if subject != who.subject:
            await self._authorize(who, subject)
        size = _page_size(req.page_size)
        found = await self.store.list_runs(
            RunFilter(who.tenant, subject, req.states),
            before=page_after(req.page_token),
            limit=size + 1,
        )
        page = tuple(found[:size])
        return RunsPage(page, page_token(page[-1]) if len(found) > size else "")

    async def _authorize(self, who: Identity, subject: str | None) -> None:
        grant = list_runs_input(who, who.tenant, subject or "")
        if not await self.policy.allows("may_list_runs", grant):
            raise PermissionDenied(
                f"{who.subject} may not list the runs of {_whose(subject, who.tenant)}: "
                f"{refused('may_list_runs', who, who.tenant)}; your own runs need no grant"
            )
