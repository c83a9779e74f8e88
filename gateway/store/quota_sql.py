"""The quota statements both SQL stores run, in either placeholder style.

A commit that reserves first locks the key rows of every key it charges, in key order (an
upsert of `quota_keys`: a row lock on PostgreSQL, held to the end of the transaction; SQLite's
write transactions are serial anyway), then sums each key's window and inserts the
reservation. Only after the lock is held does the sum read, so on PostgreSQL (read committed:
each statement reads what committed before it began) a concurrent reservation of the same key
is always counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.quotas import QuotaState, Reservation, epoch, from_epoch

USAGE_COLUMNS = ("quota_key", "run_id", "call_id", "cost", "reserved_at", "expires_at")


def lock_keys(reservations: Sequence[Reservation], mark: str) -> tuple[str, list[Any]]:
    """One upsert of every key charged (each once, in key order: the locks are always taken
    in that order), recording its latest limit and window."""
    latest: dict[str, Reservation] = {}
    for r in reservations:
        latest[r.quota.key] = r
    rows = [latest[k] for k in sorted(latest)]
    values = ", ".join([f"({mark}, {mark}, {mark}, {mark})"] * len(rows))
    args = [v for r in rows for v in (r.quota.key, r.quota.limit, r.quota.window_s, epoch(r.at))]
    return (
        f"INSERT INTO quota_keys (quota_key, quota_limit, window_s, updated_at) VALUES "
        f"{values} ON CONFLICT (quota_key) DO UPDATE SET quota_limit = excluded.quota_limit, "
        "window_s = excluded.window_s, updated_at = excluded.updated_at",
        args,
    )


def used(mark: str) -> str:
    """A key's usage in a window: (key, window start)."""
    return (
        f"SELECT COALESCE(SUM(cost), 0) AS total FROM quota_usage WHERE quota_key = {mark} "
        f"AND reserved_at > {mark}"
    )


def window(mark: str) -> str:
    """A key's reservations in a window, oldest first: (key, window start)."""
    return (
        f"SELECT cost, reserved_at FROM quota_usage WHERE quota_key = {mark} "
        f"AND reserved_at > {mark} ORDER BY reserved_at"
    )


def insert(mark: str) -> str:
    return (
        f"INSERT INTO quota_usage ({', '.join(USAGE_COLUMNS)}) "
        f"VALUES ({', '.join([mark] * len(USAGE_COLUMNS))})"
    )


def row(r: Reservation) -> tuple[Any, ...]:
    at = epoch(r.at)
    return (r.quota.key, r.run_id, r.call_id, r.quota.cost, at, at + r.quota.window_s)


def start(r: Reservation) -> float:
    """Where the reservation's window starts (reservations after it count)."""
    return epoch(r.at) - r.quota.window_s


def prune(mark: str) -> str:
    """Reservations whose own window has passed: (key, now)."""
    return f"DELETE FROM quota_usage WHERE quota_key = {mark} AND expires_at <= {mark}"


def give_back(mark: str, count: int) -> str:
    """The reservations of `count` calls, each (run_id, call_id)."""
    calls = " OR ".join([f"(run_id = {mark} AND call_id = {mark})"] * count)
    return f"DELETE FROM quota_usage WHERE {calls}"


def listing(mark: str, prefix_match: str) -> str:
    """Keys after a key, matching a prefix (`prefix_match`: the store's test of it), with
    their usage in their latest window: (now, after, prefix..., limit)."""
    return (
        "SELECT k.quota_key, k.quota_limit, k.window_s, k.updated_at, "
        "COALESCE(SUM(u.cost), 0), COUNT(u.cost) FROM quota_keys k LEFT JOIN quota_usage u "
        f"ON u.quota_key = k.quota_key AND u.reserved_at > {mark} - k.window_s "
        f"WHERE k.quota_key > {mark} AND {prefix_match} "
        "GROUP BY k.quota_key, k.quota_limit, k.window_s, k.updated_at "
        f"ORDER BY k.quota_key LIMIT {mark}"
    )


def state(found: tuple[Any, ...]) -> QuotaState:
    key, limit, window_s, updated, total, count = found
    return QuotaState(
        key=str(key),
        used=float(total),
        limit=float(limit),
        window_s=int(window_s),
        reservations=int(count),
        updated_at=from_epoch(float(updated)),
    )


def reset(mark: str) -> str:
    return f"DELETE FROM quota_usage WHERE quota_key = {mark}"


def known(mark: str) -> str:
    return f"SELECT 1 FROM quota_keys WHERE quota_key = {mark}"
