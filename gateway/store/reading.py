"""Reading runs back, written once for both SQL stores: a run, its view, its snapshot, a page of
its turns, a turn, its calls, a run's recent calls.

Each reader is a generator that does no I/O: it yields the statements it needs, one at a time
(`One` for at most one row, `All` for every row), and is sent each answer back; its return
value is the record. A store drives it with its own connection: SQLite on a thread or on the
loop's connection, PostgreSQL with `await` (`drive` and `drive_async`). The statements differ
between the stores only in their placeholder and in the column that keeps calls in the order
they were written (`Dialect`).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from gateway.model import (
    CallRecord,
    PastCall,
    RunFilter,
    RunPage,
    RunRecord,
    RunSnapshot,
    RunView,
    TurnRecord,
    rfc3339,
)
from gateway.store import codecs, fragments, schema
from gateway.store.fragments import select

T = TypeVar("T")
Row = tuple[Any, ...]


@dataclass(frozen=True)
class One:
    sql: str
    args: Sequence[Any]


@dataclass(frozen=True)
class All:
    sql: str
    args: Sequence[Any]


Reader = Generator[One | All, Any, T]


@dataclass(frozen=True)
class Dialect:
    mark: str  # the placeholder: "?" or "%s"
    call_order: str  # the column calls are kept in writing order by: "rowid" or "pos"


SQLITE = Dialect("?", "rowid")
POSTGRES = Dialect("%s", "pos")


def drive(reader: Reader[T], one: Any, every: Any) -> T:
    """Run a reader to its end with synchronous `one(sql, args)` and `every(sql, args)`."""
    try:
        step = next(reader)
        while True:
            step = reader.send(
                one(step.sql, step.args) if isinstance(step, One) else every(step.sql, step.args)
            )
    except StopIteration as done:
        return done.value


async def drive_async(reader: Reader[T], one: Any, every: Any) -> T:
    """Run a reader to its end with awaitable `one(sql, args)` and `every(sql, args)`."""
    try:
        step = next(reader)
        while True:
            answer = (
                await one(step.sql, step.args)
                if isinstance(step, One)
                else await every(step.sql, step.args)
            )
            step = reader.send(answer)
    except StopIteration as done:
        return done.value


def _run_row(d: Dialect, run_id: str) -> One:
    return One(select(schema.RUN_COLUMNS, "runs") + f" WHERE run_id = {d.mark}", (run_id,))


def _calls(d: Dialect, where: str, args: Sequence[Any], order: str) -> Reader[list[CallRecord]]:
    rows: list[Row] = yield All(
        f"{select(schema.CALL_COLUMNS, 'calls')} WHERE {where} {order}", args
    )
    return [codecs.call_from_row(r) for r in rows]


def get_run(d: Dialect, run_id: str) -> Reader[RunRecord | None]:
    row: Row | None = yield _run_row(d, run_id)
    return codecs.run_from_row(row) if row else None


def list_runs(
    d: Dialect, which: RunFilter, *, before: tuple[datetime, str] | None, limit: int
) -> Reader[list[RunRecord]]:
    """Up to `limit` runs of `which`, newest first (by creation time, then ID), created before
    the (created_at, run_id) `before` (None: from the newest); an index answers it."""
    m = d.mark
    where, args = [f"tenant = {m}"], [which.tenant]
    if which.subject is not None:
        where.append(f"subject = {m}")
        args.append(which.subject)
    if which.states:
        where.append(f"state IN ({', '.join(m for _ in which.states)})")
        args += [s.value for s in which.states]
    if before is not None:
        at = rfc3339(before[0])  # as stored
        where.append(f"(created_at < {m} OR (created_at = {m} AND run_id < {m}))")
        args += [at, at, before[1]]
    rows: list[Row] = yield All(
        select(schema.RUN_COLUMNS, "runs") + f" WHERE {' AND '.join(where)} "
        f"ORDER BY created_at DESC, run_id DESC LIMIT {m}",
        (*args, limit),
    )
    return [codecs.run_from_row(r) for r in rows]


def last_turn(d: Dialect, run_id: str) -> Reader[TurnRecord | None]:
    row: Row | None = yield One(
        select(schema.TURN_COLUMNS, "turns")
        + f" WHERE run_id = {d.mark} ORDER BY seq DESC LIMIT 1",
        (run_id,),
    )
    return codecs.turn_from_row(row) if row else None


def get_turn(d: Dialect, run_id: str, turn_id: str) -> Reader[TurnRecord | None]:
    row: Row | None = yield One(
        select(schema.TURN_COLUMNS, "turns") + f" WHERE run_id = {d.mark} AND turn_id = {d.mark}",
        (run_id, turn_id),
    )
    return codecs.turn_from_row(row) if row else None


def turn_calls(d: Dialect, run_id: str, turn_id: str) -> Reader[list[CallRecord]]:
    return (
        yield from _calls(
            d, f"run_id = {d.mark} AND turn_id = {d.mark}", (run_id, turn_id), "ORDER BY idx"
        )
    )


def find_call(d: Dialect, run_id: str, call_id: str) -> Reader[CallRecord | None]:
    found = yield from _calls(
        d,
        f"run_id = {d.mark} AND call_id = {d.mark} AND {fragments.NOT_DUPLICATE}",
        (run_id, call_id),
        f"ORDER BY {d.call_order} LIMIT 1",
    )
    return found[0] if found else None


def recent_calls(d: Dialect, run_id: str, limit: int) -> Reader[list[PastCall]]:
    """The run's last `limit` calls, oldest first."""
    rows: list[Row] = yield All(
        select(fragments.PAST_CALL_COLUMNS, "calls")
        + f" WHERE run_id = {d.mark} ORDER BY {d.call_order} DESC LIMIT {d.mark}",
        (run_id, limit),
    )
    return [codecs.past_call_from_row(r) for r in reversed(rows)]


def view(d: Dialect, run_id: str) -> Reader[RunView | None]:
    """The whole run: every turn and every call (read from one snapshot by the caller)."""
    row: Row | None = yield _run_row(d, run_id)
    if row is None:
        return None
    turns: list[Row] = yield All(
        select(schema.TURN_COLUMNS, "turns") + f" WHERE run_id = {d.mark} ORDER BY seq", (run_id,)
    )
    calls = yield from _calls(d, f"run_id = {d.mark}", (run_id,), f"ORDER BY {d.call_order}")
    return RunView(
        codecs.run_from_row(row), tuple(codecs.turn_from_row(t) for t in turns), tuple(calls)
    )


def snapshot(d: Dialect, run_id: str) -> Reader[RunSnapshot | None]:
    """The run, its last turn and that turn's calls."""
    row: Row | None = yield _run_row(d, run_id)
    if row is None:
        return None
    turn = yield from last_turn(d, run_id)
    calls = (yield from turn_calls(d, run_id, turn.turn_id)) if turn else []
    return RunSnapshot(codecs.run_from_row(row), turn, tuple(calls))


def run_page(d: Dialect, run_id: str, *, before: int | None, limit: int) -> Reader[RunPage | None]:
    """Up to `limit` of the run's turns numbered below `before` (None: its latest), with their
    calls, the run's latest turn number and whether older turns remain."""
    row: Row | None = yield _run_row(d, run_id)
    if row is None:
        return None
    bound = fragments.ABOVE_EVERY_SEQ if before is None else before
    rows: list[Row] = yield All(fragments.page_turns(d.mark), (run_id, bound, limit))
    turns = [codecs.turn_from_row(r) for r in rows][::-1]
    latest: Row | None = yield One(
        fragments.latest_seq_below(d.mark), (run_id, fragments.ABOVE_EVERY_SEQ)
    )
    older = False
    if turns:
        older = (yield One(fragments.latest_seq_below(d.mark), (run_id, turns[0].seq))) is not None
    calls = yield All(
        fragments.page_calls(d.mark, f"calls.{d.call_order}"), (run_id, bound, limit, run_id)
    )
    page = RunView(
        codecs.run_from_row(row), tuple(turns), tuple(codecs.call_from_row(r) for r in calls)
    )
    return RunPage(page, int(latest[0]) if latest else 0, older)
