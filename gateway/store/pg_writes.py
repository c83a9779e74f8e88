"""A PostgreSQL transaction's writes in one statement.

Each write (an INSERT or UPDATE) becomes a data-modifying CTE of one `WITH ... SELECT`, so a
turn's phase (its turn and calls, the run, its audit records) costs one round trip instead of
one per table. The SELECT answers how many rows the counted writes changed (a guarded update
checks it) and what the audit insert added.

The audit records are chained in Python after the head the store last wrote; their INSERT is
guarded by that head (it inserts nothing when another writer appended since, or when the
transaction that wrote it rolled back), so a stale head costs a re-read, never a fork in the
chain. The guard is only sound in a statement
that starts after the chain's lock is held (its snapshot then holds every earlier append).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.audit import hashing
from gateway.store import fragments

MAX_PARAMETERS = 30_000  # per statement (PostgreSQL takes up to 65,535)


@dataclass(frozen=True)
class Write:
    """One INSERT or UPDATE; a counted one ends with RETURNING (its rows are counted)."""

    sql: str
    args: Sequence[Any]
    counted: bool = False


@dataclass(frozen=True)
class Head:
    """The audit chain's last record as this store last wrote it."""

    seq: int
    hash: str

    def later(self, other: Head | None) -> Head:
        return self if other is None or self.seq > other.seq else other


def insert(
    table: str, columns: Sequence[str], values: Sequence[Sequence[Any]], returning: str = ""
) -> Write:
    """One multi-row INSERT (see `chunks`)."""
    row = f"({fragments.placeholders(columns, '%s')})"
    return Write(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
        + ", ".join([row] * len(values))
        + returning,
        [v for r in values for v in r],
    )


def chunks(values: Sequence[Sequence[Any]], width: int) -> list[Sequence[Sequence[Any]]]:
    """values in pieces of at most MAX_PARAMETERS parameters, in order."""
    per = max(1, MAX_PARAMETERS // width)
    return [values[start : start + per] for start in range(0, len(values), per)]


def audit_insert(chained: Sequence[Sequence[Any]], guard: str | None = None) -> Write:
    """The chained audit rows, answering their seq (given in the chain's order, the VALUES
    order); with `guard`, inserted only while it is the chain's head."""
    if guard is None:
        return insert("audit", hashing.AUDIT_COLUMNS, chained, " RETURNING seq")
    row = f"({fragments.typed_placeholders(hashing.AUDIT_COLUMNS, '%s')})"
    return Write(
        f"INSERT INTO audit ({', '.join(hashing.AUDIT_COLUMNS)}) SELECT * FROM (VALUES "
        + ", ".join([row] * len(chained))
        + f") v WHERE {fragments.CHAIN_HEAD} = %s "
        "RETURNING seq",
        [*(v for r in chained for v in r), guard],
    )


def fits(*writes: Write) -> bool:
    return sum(len(w.args) for w in writes) <= MAX_PARAMETERS


def statement(
    writes: Sequence[Write],
    audit: Write | None = None,
    *,
    notify: Sequence[tuple[str, str]] = (),
    audit_channel: str = "",
) -> tuple[str, list[Any]]:
    """`WITH w0 AS (...), ... SELECT ...` answering, in order: the count of each counted
    write; with `audit` (an `audit_insert`), the last seq it added (NULL when none: its guard
    failed), notifying `audit_channel` when it added any; then one `pg_notify` per
    (channel, payload) of `notify`. Notifications are delivered at commit."""
    named = [(f"w{i}", w) for i, w in enumerate(writes)]
    if audit is not None:
        named.append(("added", audit))
    select = [f"(SELECT count(*) FROM {name})" for name, w in named if w.counted]
    args: list[Any] = [a for _, w in named for a in w.args]
    if audit is not None:
        select += ["(SELECT max(seq) FROM added)", "(SELECT pg_notify(%s, '') FROM added LIMIT 1)"]
        args.append(audit_channel)
    for channel, payload in notify:
        select.append("pg_notify(%s, %s)")
        args += [channel, payload]
    ctes = ", ".join(f"{name} AS ({w.sql})" for name, w in named)
    return f"{'WITH ' + ctes + ' ' if ctes else ''}SELECT {', '.join(select) or '1'}", args
