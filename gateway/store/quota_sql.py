"""The quota statements both SQL stores run, in either placeholder style.

A commit that charges or gives back quotas locks the rows of every key it touches first, in
key order (an upsert of `quota_keys`: a row lock on PostgreSQL, held to the end of the
transaction; SQLite's write transactions are serial anyway), and reads their running totals
from it (`gateway.store.quota_book`). Only a reservation refused, an operator's listing or a
policy's usage read sums a window row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gateway.model import Quota
from gateway.quotas import QuotaState, Reservation, epoch, from_epoch

USAGE_COLUMNS = ("quota_key", "run_id", "call_id", "cost", "reserved_at", "expires_at")
TOTALS = (  # and when its soonest stored reservation expires (None: it has none)
    "quota_key, window_s, used, live, (SELECT MIN(u.expires_at) FROM quota_usage u "
    "WHERE u.quota_key = quota_keys.quota_key)"
)


def lock(
    reservations: Sequence[Reservation], back: Sequence[Quota], mark: str
) -> tuple[str, list[Any]]:
    """One upsert of every key charged or given back (each once, in key order: the locks are
    always taken in that order), answering each key's (key, window_s, used, live, soonest
    expiry). A key charged records the limit of its latest reservation; its window is changed
    by the commit's totals (`Book.windows`), so here a known key keeps the one it had. A key
    only given back keeps its row as it is (its time 0 is never the latest)."""
    latest: dict[str, tuple[Any, ...]] = {q.key: (q.key, q.limit, q.window_s, 0.0) for q in back}
    for r in reservations:
        latest[r.quota.key] = (r.quota.key, r.quota.limit, r.quota.window_s, epoch(r.at))
    rows = [latest[k] for k in sorted(latest)]
    values = ", ".join([f"({mark}, {mark}, {mark}, {mark})"] * len(rows))
    newer = "excluded.updated_at >= quota_keys.updated_at"
    return (
        f"INSERT INTO quota_keys (quota_key, quota_limit, window_s, updated_at) VALUES "
        f"{values} ON CONFLICT (quota_key) DO UPDATE SET "
        f"quota_limit = CASE WHEN {newer} THEN excluded.quota_limit "
        "ELSE quota_keys.quota_limit END, "
        f"updated_at = CASE WHEN {newer} THEN excluded.updated_at "
        f"ELSE quota_keys.updated_at END RETURNING {TOTALS}",
        [v for row in rows for v in row],
    )


def prune(mark: str, keys: int) -> str:
    """The keys' reservations whose own window has passed: (keys..., now); answers (key,
    cost) of each removed."""
    return (
        f"DELETE FROM quota_usage WHERE quota_key IN ({', '.join([mark] * keys)}) "
        f"AND expires_at <= {mark} RETURNING quota_key, cost"
    )


def clip(mark: str) -> str:
    """A key's reservations brought within its shortened window: (window, key, window)."""
    return (
        f"UPDATE quota_usage SET expires_at = reserved_at + {mark} "
        f"WHERE quota_key = {mark} AND expires_at > reserved_at + {mark} RETURNING quota_key"
    )


def totals(mark: Callable[[str], str], count: int) -> str:
    """The keys' running totals written back: (key, used, live, window_s) per key; `mark(t)`
    is the store's placeholder for a value of SQL type t."""
    row = f"({mark('text')}, {mark('float8')}, {mark('bigint')}, {mark('bigint')})"
    return (  # (VALUES' columns are column1... in both stores)
        "UPDATE quota_keys SET used = v.column2, live = v.column3, window_s = v.column4 FROM "
        f"(VALUES {', '.join([row] * count)}) AS v WHERE quota_keys.quota_key = v.column1"
    )


def less(mark: str) -> str:
    """A key's totals less what was removed: (cost, count, key)."""
    return (
        f"UPDATE quota_keys SET used = used - {mark}, live = live - {mark} WHERE quota_key = {mark}"
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


def give_back(mark: str, count: int) -> str:
    """The reservations of `count` calls of turns, each (run_id, call_id); answers (key, cost)
    of each removed. (Each term says `run_id <> ''` itself: the index by call covers only
    reservations with a run, and a store uses it for a term only when the term says so.)"""
    calls = " OR ".join([f"(run_id = {mark} AND call_id = {mark} AND run_id <> '')"] * count)
    return f"DELETE FROM quota_usage WHERE {calls} RETURNING quota_key, cost"


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


def zero(mark: str) -> str:
    """A key's totals after a reset."""
    return f"UPDATE quota_keys SET used = 0, live = 0 WHERE quota_key = {mark}"


def known(mark: str) -> str:
    return f"SELECT 1 FROM quota_keys WHERE quota_key = {mark}"
