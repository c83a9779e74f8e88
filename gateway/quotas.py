"""Quotas: what a policy charges a call against a key, and what the stores reserve.

A policy's allowing `decision` may carry `quotas` (`gateway.model.Quota`): key, limit, window
and cost. The runner hands the store one `Reservation` per quota of each call it commits as
allowed; the store reserves them in that commit, or, when one would pass its limit, rolls the
whole commit back and raises `QuotaExceeded` (the runner then rejects that call and commits
again). Windows are sliding: a reservation counts for `window_s` seconds from its time.
The bounds here keep what a policy may ask for small enough to store and to sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.errors import CallCode
from gateway.model import CallRecord, CallStatus, Quota

MAX_QUOTAS_PER_CALL = 16
MAX_KEY_BYTES = 256
MAX_WINDOW_S = 366 * 24 * 3600  # a year (and a day): reservations are kept this long at most
MAX_AMOUNT = 1e15  # limits and costs: exact in a double, summed over many reservations
NOT_APPLIED = CallCode.TOOL_NOT_APPLIED.value


@dataclass(frozen=True)
class Reservation:
    """One quota of one call (run_id "" and a unique call_id for an Authorize decision),
    reserved at `at`."""

    run_id: str
    call_id: str
    quota: Quota
    at: datetime


@dataclass(frozen=True)
class QuotaState:
    """A key as `ListQuotas` shows it: its usage in the window of its latest reservation."""

    key: str
    used: float
    limit: float
    window_s: int
    reservations: int
    updated_at: datetime


class QuotaExceeded(Exception):
    """A reservation would pass its key's limit; the commit that carried it was rolled back."""

    def __init__(
        self, run_id: str, call_id: str, quota: Quota, used: float, frees_at: datetime | None
    ) -> None:
        super().__init__(exceeded_message(quota, used, frees_at))
        self.run_id = run_id
        self.call_id = call_id
        self.quota = quota
        self.used = used
        self.frees_at = frees_at


@dataclass
class Together:
    """One caller's reservations and audit records, committed with other callers' (a group
    commit): `refused` is set when its reservations did not fit (then nothing of it was
    written, while the others were)."""

    reservations: Sequence[Reservation]
    audit: Sequence[object]
    refused: QuotaExceeded | None = None


def over(quota: Quota, used: float) -> bool:
    """Whether charging the quota's cost on top of `used` passes its limit (sums of decimal
    fractions are compared with a margin for their rounding)."""
    return used + quota.cost > quota.limit + 1e-9 * max(1.0, quota.limit)


def amount(value: float) -> str:
    """A limit, cost or usage as a person reads it: 3, not 3.0."""
    return f"{value:g}" if not float(value).is_integer() else str(int(value))


def exceeded_message(quota: Quota, used: float, frees_at: datetime | None) -> str:
    when = (
        "it never will: the cost alone is over the limit"
        if frees_at is None
        else f"enough of it frees at {frees_at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    )
    return (
        f"quota {quota.key!r} is exhausted: {amount(used)} of {amount(quota.limit)} used "
        f"in the last {quota.window_s} s, and this call costs {amount(quota.cost)}; "
        f"{when}; the call was not executed"
    )


def frees_at(
    quota: Quota, used: float, window: Iterable[tuple[float, datetime]]
) -> datetime | None:
    """When enough of the window's reservations ((cost, at), oldest first) have aged out for
    `quota.cost` to fit; None when it never fits."""
    if quota.cost > quota.limit:
        return None
    for cost, at in window:
        used -= cost
        if used + quota.cost <= quota.limit:
            return at + timedelta(seconds=quota.window_s)
    return None


def in_order(reservations: Sequence[Reservation]) -> list[Reservation]:
    """Reservations in key order (every store locks keys in this order: no deadlock), each
    key's in the order given."""
    return sorted(reservations, key=lambda r: r.quota.key)


def reservations(calls: Iterable[CallRecord], at: datetime) -> list[Reservation]:
    """What committing these calls as decided reserves: the quotas of each call allowed to go
    on (not REJECTED or NOT_RUN)."""
    return [
        Reservation(c.run_id, c.call_id, q, at)
        for c in calls
        if c.decision is not None and c.status not in (CallStatus.REJECTED, CallStatus.NOT_RUN)
        for q in c.decision.quotas
    ]


def given_back(calls: Sequence[CallRecord], expect: Sequence[CallRecord]) -> list[CallRecord]:
    """The calls whose reservations a commit gives back: those that end without executing
    (REJECTED, NOT_RUN), and those FAILED whose effect is known not to have happened though
    the outcome was in doubt (an UNKNOWN one settled FAILED, or a write found in flight that
    the look-up found never applied)."""
    unknown = {(c.run_id, c.call_id) for c in expect if c.status == CallStatus.UNKNOWN}
    return [
        c
        for c in calls
        if c.decision is not None
        and c.decision.quotas
        and (
            c.status in (CallStatus.REJECTED, CallStatus.NOT_RUN)
            or (
                c.status == CallStatus.FAILED
                and ((c.run_id, c.call_id) in unknown or c.error_code == NOT_APPLIED)
            )
        )
    ]


def epoch(at: datetime) -> float:
    return at.timestamp()


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
