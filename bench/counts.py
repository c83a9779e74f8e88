"""SQL statements and commits per SubmitTurn (two HTTP reads), per store, counted in-process.

The real runner drives turns against a store of each kind (`bench.inproc`); the store's
connections are traced from outside (`bench.counting`) while `turns` turns run one after
another, after a few unmeasured ones (the first turns of a run, and connections opening).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.counting import PgTraces, SQLiteCounter, Tally
from bench.inproc import InProcess, in_process, sqlite_opener
from gateway.audit.keys import AuditKey
from gateway.store.base import RunStore, StoredForm
from gateway.store.postgres import PostgresStore
from gateway.store.sqlite import SQLiteStore

WARM_TURNS = 3


@dataclass(frozen=True)
class TurnCounts:
    store: str
    turns: int
    tally: Tally

    def per_turn(self, count: int) -> float:
        return count / self.turns

    @property
    def statements(self) -> float:
        return self.per_turn(self.tally.data)

    @property
    def control(self) -> float:
        """BEGIN, COMMIT, ROLLBACK and SAVEPOINT statements per turn."""
        t = self.tally
        return self.per_turn(t.begins + t.commit_statements + t.rollbacks + t.savepoints)

    @property
    def commits(self) -> float:
        return self.per_turn(self.tally.commits)

    @property
    def writing_commits(self) -> float:
        return self.per_turn(self.tally.writing_commits)

    def summary(self) -> str:
        t = self.tally
        return (
            f"{self.statements:.1f} data statements ({self.per_turn(t.writes):.1f} writes), "
            f"{self.per_turn(t.begins):.1f} BEGIN, {self.commits:.1f} commits "
            f"({self.writing_commits:.1f} that wrote), {self.per_turn(t.rollbacks):.1f} "
            f"ROLLBACK, {self.per_turn(t.settings):.1f} settings (PRAGMA, SET) per turn, "
            f"over {self.turns} turns"
        )


async def _warmed_run(proc: InProcess) -> str:
    """A new run that has had its uncounted turns."""
    run_id = f"count-{uuid.uuid4().hex[:8]}"
    await proc.start_run(run_id)
    for i in range(WARM_TURNS):
        await proc.turn(run_id, f"warm_{i}")
    return run_id


async def count_sqlite(db: Path, travel_url: str, turns: int) -> TurnCounts:
    async with in_process(sqlite_opener(db), travel_url) as proc:
        run_id = await _warmed_run(proc)
        assert isinstance(proc.store, SQLiteStore)
        with SQLiteCounter(*proc.store.connections) as tally:
            for i in range(turns):
                await proc.turn(run_id, f"resp_{i}")
    return TurnCounts("sqlite", turns, tally)


class TracedPostgres(PostgresStore):
    """PostgresStore whose pooled connections (statements and drive locks) report to
    `traces` (the LISTEN connection is not counted: it runs no statement per turn)."""

    traces: PgTraces

    def __init__(self, conninfo: str, **kwargs: object) -> None:
        # the store's own keyword arguments, passed through untyped
        super().__init__(conninfo, **kwargs)  # type: ignore[arg-type]
        self.traces = PgTraces()
        for pool in (self._pool, self._locks.pool):
            pool.connection_class = self.traces.connection_class(pool.connection_class)


async def count_postgres(url: str, travel_url: str, turns: int) -> TurnCounts:
    async def open_pg(key: AuditKey, stored: StoredForm) -> RunStore:
        return await TracedPostgres.open(url, audit_key=key, stored=stored)

    async with in_process(open_pg, travel_url) as proc:
        run_id = await _warmed_run(proc)
        assert isinstance(proc.store, TracedPostgres)
        proc.store.traces.start()
        try:
            for i in range(turns):
                await proc.turn(run_id, f"resp_{i}")
        finally:
            tally = proc.store.traces.stop()
    return TurnCounts("postgresql", turns, tally)
