"""ListQuotas and ResetQuota: operators see quota usage and give a key's reservations back.

Quota keys belong to no run or tenant of callgate's own (the policy names them), so the
policy decides who sees which: `may_read_quotas` with input `{"action": "read_quotas",
"identity", "prefix"}` for a listing of the keys starting with `prefix`, `may_reset_quotas`
with `{"action": "reset_quota", "identity", "key"}` for a reset. A reset is audited (kind
`quota`) in the commit that gives the reservations back.

A page token is opaque to clients: the URL-safe base64 (no padding) of the page's last key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from gateway.audit import events
from gateway.errors import RequestCode, RequestError
from gateway.model import Identity
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import quotas_input
from gateway.quotas import MAX_KEY_BYTES, QuotaState
from gateway.run.desks import check_reason, refused
from gateway.store.base import RunStore

DEFAULT_PAGE_KEYS = 100
MAX_PAGE_KEYS = 1000


@dataclass(frozen=True)
class QuotaPage:
    quotas: tuple[QuotaState, ...]
    next_page_token: str = ""


def _check_key(what: str, key: str, *, empty: bool) -> None:
    if not key and not empty:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"{what} is required: the quota key to reset (callgate quotas lists them)",
        )
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES or not key.isprintable():
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"{what} is over {MAX_KEY_BYTES} bytes or holds control characters; no quota key does",
        )


def _after(token: str) -> str:
    if not token:
        return ""
    try:
        if len(token) > 2 * MAX_KEY_BYTES:
            raise ValueError(token)
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise RequestError(
            RequestCode.INVALID_PAGE_TOKEN,
            "page_token is not one ListQuotas "
            "gave out: pass next_page_token of the previous answer unchanged, "
            "or none for the first keys",
        ) from None


class QuotaDesk:
    def __init__(
        self, store: RunStore, policy: PolicyEngine, clock: Callable[[], datetime]
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock

    async def list_page(
        self, who: Identity, prefix: str, *, page_size: int = 0, page_token: str = ""
    ) -> QuotaPage:
        _check_key("prefix", prefix, empty=True)
        if page_size < 0:
            raise RequestError(
                RequestCode.INVALID_ARGUMENT,
                f"page_size is {page_size}: use 0 (the default, {DEFAULT_PAGE_KEYS}) or more",
            )
        after = _after(page_token)
        if not await self.policy.allows("may_read_quotas", quotas_input(who, prefix=prefix)):
            raise refused("may_read_quotas", f"the quota keys starting with {prefix!r}")
        size = min(page_size or DEFAULT_PAGE_KEYS, MAX_PAGE_KEYS)
        found = await self.store.list_quotas(prefix, after=after, limit=size + 1, now=self.clock())
        page = tuple(found[:size])
        more = len(found) > size
        token = base64.urlsafe_b64encode(page[-1].key.encode()).decode().rstrip("=") if more else ""
        return QuotaPage(page, token)

    async def reset(self, who: Identity, key: str, reason: str) -> int:
        """Give back every reservation of the key; answers how many there were."""
        _check_key("key", key, empty=False)
        check_reason(reason)
        if not await self.policy.allows("may_reset_quotas", quotas_input(who, key=key)):
            raise refused("may_reset_quotas", f"a reset of quota {key!r}")
        now = self.clock()
        removed = await self.store.reset_quota(
            key, lambda n: events.quota_reset(key=key, by=who, removed=n, reason=reason, now=now)
        )
        if removed is None:
            raise RequestError(
                RequestCode.QUOTA_NOT_FOUND,
                f"no reservation ever named quota "
                f"{key!r}: nothing to reset (callgate quotas lists the keys)",
            )
        return removed
