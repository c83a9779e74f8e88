"""Each quota key's running total (schema 10: `quota_keys.used`, `.live`) is what a reservation
is checked against instead of summing the key's window. On each store, a random history of
reservations, refusals, expiries, changed windows and resets is checked step by step against a
model of the sliding window, and the totals against the stored rows themselves."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from gateway.audit import events
from gateway.audit.records import AuditEvent
from gateway.model import Identity, Quota
from gateway.quotas import QuotaExceeded, Reservation, Together, over
from gateway.store import open_store
from gateway.store.quota_book import Book
from tests.support import databases
from tests.support.paths import NewDb

T0 = datetime(2026, 12, 1, tzinfo=UTC)
LIMIT = 5.0
BOB = Identity("bob", "acme", ("operator",))


@dataclass
class Held:
    key: str
    cost: float
    reserved: float  # seconds after T0
    expires: float


def usage(model: list[Held], key: str, now: float) -> float:
    return sum(h.cost for h in model if h.key == key and h.expires > now)


def totals_match_rows(db: str) -> None:
    rows = databases.query(
        db,
        "SELECT k.quota_key, k.used, k.live, COALESCE(SUM(u.cost), 0), COUNT(u.cost) "
        "FROM quota_keys k LEFT JOIN quota_usage u ON u.quota_key = k.quota_key "
        "GROUP BY k.quota_key, k.used, k.live",
    )
    assert rows, "no key was recorded"
    for key, used, live, summed, count in rows:
        assert (live, round(float(used), 6)) == (count, round(float(summed), 6)), key


@pytest.mark.parametrize("seed", [1, 2])
async def test_totals_follow_a_sliding_window_through_a_random_history(
    new_db: NewDb, seed: int
) -> None:
    rng = random.Random(seed)
    db = new_db()
    store = await open_store(db)
    model: list[Held] = []
    windows = {"k/a": 60, "k/b": 60}
    now, outcomes = 0.0, {"kept": 0, "refused": 0}
    try:
        for step in range(160):
            now += rng.choice([0, 0, 1, 5, 20, 45])
            key = rng.choice(sorted(windows))
            if rng.random() < 0.05:  # the policy changes the key's window
                windows[key] = rng.choice([30, 60, 120])
            if rng.random() < 0.03:
                assert await store.reset_quota(key, functools.partial(_reset, key)) is not None
                model = [h for h in model if h.key != key]
                continue
            window = windows[key]
            for h in model:  # a shortened window brings the stored reservations within it
                if h.key == key:
                    h.expires = min(h.expires, h.reserved + window)
            quota = Quota(key, LIMIT, window, rng.choice([0.5, 1.0, 2.5]))
            at = T0 + timedelta(seconds=now)
            used = usage(model, key, now)
            try:
                await store.reserve_quotas([Reservation("", f"c{step}", quota, at)], [])
            except QuotaExceeded as exc:
                assert over(quota, used), (step, used)
                assert exc.used == pytest.approx(used)
                outcomes["refused"] += 1
            else:
                assert not over(quota, used), (step, used)
                model.append(Held(key, quota.cost, now, now + window))
                outcomes["kept"] += 1
            totals_match_rows(db)
    finally:
        await store.close()
    assert outcomes["kept"] > 20 and outcomes["refused"] > 10, outcomes


def _reset(key: str, removed: int) -> AuditEvent:
    return events.quota_reset(key=key, by=BOB, removed=removed, reason="test", now=T0)


async def test_an_entry_whose_second_reservation_does_not_fit_keeps_neither() -> None:
    book = Book([("k", 60, 3.5, 3, None)])
    both = Together([Reservation("", "c", Quota("k", 5, 60, 1), T0)] * 2, ())
    (refused,) = book.fit([both], lambda r: r.call_id)
    assert (refused.used, refused.pending, book.rows) == (4.5, 0.0, [])
    one = Together([Reservation("", "d", Quota("k", 5, 60, 1.5), T0)], ())
    assert book.fit([one], lambda r: r.call_id) == [] and book.rows == ["d"]
    assert book.totals() == [("k", 5.0, 4, 60)]


def test_a_key_left_with_no_reservation_is_at_zero_exactly() -> None:
    book = Book([("k", 60, 0.30000000000000004, 3, None)])
    book.removed([("k", 0.1), ("k", 0.1), ("k", 0.1)])
    assert book.totals() == [("k", 0.0, 0, 60)]
