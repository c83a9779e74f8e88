"""One commit's quota bookkeeping, the same in both SQL stores.

Each key's row in `quota_keys` carries a running total of its stored reservations (`used`,
their cost; `live`, their count). A commit that charges or gives back a key locks its row first
(`quota_sql.lock`, in key order, answering the totals as the last commit left them), removes
what it removes (the key's expired reservations, the given-back ones: each DELETE answers what
it removed), decides what fits against the totals, and writes the totals back with the new
reservations. Every writer of a key's reservations holds the key's lock, so the totals always
equal the sum of the stored rows; with the expired ones pruned first they are the window's sum,
read without summing the window row by row.

A reservation expires `window_s` after it was made. When a policy shortens a key's window, the
stored reservations' expiries are first brought within it (`Book.windows` names the keys), so
"stored" still means "inside the window".

`settling` is the commit's steps without I/O (a reader, as in `gateway.store.reading`): each
store drives it on its own connection, then writes the book's rows and totals its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.model import CallRecord
from gateway.quotas import (
    QuotaExceeded,
    Reservation,
    Together,
    epoch,
    frees_at,
    from_epoch,
    in_order,
    over,
)
from gateway.store import quota_sql
from gateway.store.reading import All, Reader


@dataclass
class KeyTotal:
    """A key's totals as this commit sees them (read under its lock, then changed here)."""

    window_s: int
    used: float
    live: int
    soonest: float | None  # when its soonest stored reservation expires (epoch seconds)
    charged: float = 0.0  # what this commit's accepted reservations added
    changed: bool = False


@dataclass(frozen=True)
class Refusal:
    """An entry that does not fit: its first reservation over a limit, the key's usage, and
    how much of that usage this commit's earlier entries charged."""

    entry: Together
    reservation: Reservation
    used: float
    pending: float


class Book:
    def __init__(self, locked: Iterable[Sequence[Any]]) -> None:
        """`locked`: (key, window_s, used, live, soonest expiry) rows, as `quota_sql.lock`
        answers them."""
        self.keys = {
            str(k): KeyTotal(int(w), float(u or 0), int(n or 0), None if e is None else float(e))
            for k, w, u, n, e in locked
        }
        self.rows: list[tuple[Any, ...]] = []  # the accepted reservations' rows
        self.unlocked: dict[str, tuple[float, int]] = {}

    def windows(self, reservations: Sequence[Reservation]) -> list[tuple[str, int, bool]]:
        """Keys whose window this commit changes: (key, new window, shortened). The latest
        reservation of a key sets its window (as it sets its limit)."""
        latest = {r.quota.key: r.quota.window_s for r in in_order(reservations)}
        out = []
        for key, window in latest.items():
            t = self.keys[key]
            if window != t.window_s:
                shortened = window < t.window_s
                out.append((key, window, shortened))
                t.window_s, t.changed = window, True
                if shortened and t.soonest is not None:
                    t.soonest = float("-inf")  # clipped: its expiries are no longer known
        return out

    def expired(self, keys: Iterable[str], now: float) -> list[str]:
        """Which of the keys hold a reservation expired at `now` (those to prune), in order."""
        return sorted(k for k in set(keys) if (e := self.keys[k].soonest) is not None and e <= now)

    def removed(self, rows: Iterable[Sequence[Any]]) -> None:
        """Reservations this commit deleted: (key, cost) rows."""
        for key, cost in rows:
            t = self.keys.get(str(key))
            if t is None:  # (not expected: a call's reservations carry its decision's keys)
                c, n = self.unlocked.get(str(key), (0.0, 0))
                self.unlocked[str(key)] = (c + float(cost), n + 1)
                continue
            t.used -= float(cost)
            t.live -= 1
            t.changed = True

    def fit(self, entries: Sequence[Together], row: Any) -> list[Refusal]:
        """Each entry's reservations in key order, all or none of each; `row(r)`: a
        reservation's row. Answers the entries that did not fit."""
        refused = []
        for e in entries:
            trial: dict[str, tuple[float, int]] = {}
            for r in in_order(e.reservations):
                t = self.keys[r.quota.key]
                cost, count = trial.get(r.quota.key, (0.0, 0))
                used = t.used + t.charged + cost
                if over(r.quota, used):
                    refused.append(Refusal(e, r, used, t.charged))
                    break
                trial[r.quota.key] = (cost + r.quota.cost, count + 1)
            else:
                for key, (cost, count) in trial.items():
                    t = self.keys[key]
                    t.charged, t.live, t.changed = t.charged + cost, t.live + count, True
                self.rows += [row(r) for r in in_order(e.reservations)]
        return refused

    def totals(self) -> list[tuple[str, float, int, int]]:
        """The changed keys' new totals: (key, used, live, window_s). A key with no stored
        reservation left is at 0 exactly (no rounding carried over from its past)."""
        out = []
        for key, t in sorted(self.keys.items()):
            if t.changed:
                used = t.used + t.charged if t.live > 0 else 0.0
                out.append((key, used, t.live, t.window_s))
        return out


def settling(
    entries: Sequence[Together],
    back: Sequence[CallRecord],
    mark: str,
    locking: Callable[[str, list[Any]], tuple[str, list[Any]]] = lambda q, a: (q, a),
) -> Reader[Book]:
    """The commit's quotas: every key charged or given back locked and read (`locking` may
    add to the lock's statement), shortened windows clipped, the expired and given-back
    reservations removed, each entry's reservations kept or refused (a refused entry's
    `refused` set: nothing of it is to be written). Answers the book; an empty one when
    there is nothing to settle."""
    reservations = [r for e in entries for r in e.reservations]
    if not reservations and not back:
        return Book(())
    quotas = [q for c in back if c.decision is not None for q in c.decision.quotas]
    book = Book((yield All(*locking(*quota_sql.lock(reservations, quotas, mark)))))
    if reservations:
        now = epoch(reservations[0].at)
        for key, window, shortened in book.windows(reservations):
            if shortened:
                yield All(quota_sql.clip(mark), (window, key, window))
        keys = book.expired((r.quota.key for r in reservations), now)
        if keys:
            book.removed((yield All(quota_sql.prune(mark, len(keys)), [*keys, now])))
    if back:
        pairs = [v for c in back for v in (c.run_id, c.call_id)]
        book.removed((yield All(quota_sql.give_back(mark, len(back)), pairs)))
    for f in book.fit(entries, quota_sql.row):
        r = f.reservation
        rows = yield All(quota_sql.window(mark), (r.quota.key, quota_sql.start(r)))
        held = [(float(c), from_epoch(float(t))) for c, t in rows]
        if f.pending:
            held.append((f.pending, r.at))
        f.entry.refused = QuotaExceeded(
            r.run_id, r.call_id, r.quota, f.used, frees_at(r.quota, f.used, held)
        )
    return book
