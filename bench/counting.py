"""Counting the SQL statements a store runs, from outside the store.

SQLite: `sqlite3.Connection.set_trace_callback` on the store's connections (every statement the
engine starts, BEGIN and COMMIT included). PostgreSQL: libpq's protocol trace of every pooled
connection (`PGconn.trace`): each simple `Query` and each extended-protocol `Execute` is one
statement, its text taken from the `Parse` that prepared it. Either way the statements are
tallied by `Tally`: transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) and connection
settings (SQLite's PRAGMA, PostgreSQL's SET: no data is read or written) apart from the data
statements, and commits that ended a transaction which wrote apart from read-only ones.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from psycopg import AsyncConnection, pq

_BEGIN = ("BEGIN", "START")
_COMMIT = ("COMMIT", "END")
_ROLLBACK = ("ROLLBACK", "ABORT")
_SAVEPOINT = ("SAVEPOINT", "RELEASE")
_SETTING = ("PRAGMA", "SET")
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_WRITE_WORD = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE)\b")


def first_word(sql: str) -> str:
    return sql.lstrip(" \t\n(").split(None, 1)[0].upper() if sql.strip() else ""


def writes(sql: str) -> bool:
    """Whether a data statement changes rows (a WITH ... UPDATE too)."""
    word = first_word(sql)
    if word in _WRITES:
        return True
    return word == "WITH" and _WRITE_WORD.search(sql.upper()) is not None


_TARGET = re.compile(r"\b(INSERT INTO|UPDATE|DELETE FROM|FROM)\s+(\w+)")
_FUNCTION = re.compile(r"^SELECT\s+(\w+)\s*\(")


def kind(sql: str) -> str:
    """What a statement does, in a few words: `BEGIN`, `INSERT audit`, `SELECT runs`,
    `SELECT pg_advisory_xact_lock` (the first table a SELECT reads)."""
    word = first_word(sql)
    if word in (*_BEGIN, *_COMMIT, *_ROLLBACK, *_SAVEPOINT, *_SETTING):
        return word
    upper = " ".join(sql.split()).upper()
    if word != "SELECT" or "INSERT INTO" in upper:  # a write, or WITH ... a write
        found = _TARGET.search(upper)
        if found and found.group(1) != "FROM":
            return f"{found.group(1).split()[0]} {found.group(2).lower()}"
    function = _FUNCTION.match(upper)
    if function and " FROM " not in upper:
        return f"SELECT {function.group(1).lower()}"
    found = _TARGET.search(upper)
    return f"{word} {found.group(2).lower()}" if found else word


@dataclass
class Tally:
    """Statements seen on one connection (their order matters: transactions are tracked)."""

    data: int = 0  # every statement but transaction control and settings
    writes: int = 0  # of those, the ones that change rows
    begins: int = 0
    commit_statements: int = 0  # COMMIT (or END) statements
    commits: int = 0  # those, and writes outside a transaction (each commits by itself)
    writing_commits: int = 0  # of those, the ones that made a write durable
    rollbacks: int = 0
    savepoints: int = 0
    settings: int = 0  # PRAGMA (SQLite: the loop connection's synchronous level), SET
    texts: list[str] = field(default_factory=list)
    _open: bool = False
    _wrote: bool = False

    def add(self, sql: str) -> None:
        word = first_word(sql)
        self.texts.append(sql)
        if word in _BEGIN:
            self.begins += 1
            self._open, self._wrote = True, False
        elif word in _COMMIT:
            self.commit_statements += 1
            self.commits += 1
            self.writing_commits += self._wrote
            self._open = self._wrote = False
        elif word in _ROLLBACK:
            self.rollbacks += 1
            self._open = self._wrote = False
        elif word in _SAVEPOINT:
            self.savepoints += 1
        elif word in _SETTING:
            self.settings += 1
        else:
            self.data += 1
            if writes(sql):
                self.writes += 1
                if self._open:
                    self._wrote = True
                else:  # autocommit: the statement is its own transaction
                    self.commits += 1
                    self.writing_commits += 1

    def kinds(self) -> Counter[str]:
        return Counter(kind(s) for s in self.texts)

    def __iadd__(self, other: Tally) -> Tally:
        for name in (
            "data",
            "writes",
            "begins",
            "commit_statements",
            "commits",
            "writing_commits",
            "rollbacks",
            "savepoints",
            "settings",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.texts.extend(other.texts)
        return self


# ---------------------------------------------------------------------- SQLite


class SQLiteCounter:
    """Tallies the statements connections run while counting (`with counter:`); the store
    uses its two one at a time, so their statements do not interleave."""

    def __init__(self, *conns: sqlite3.Connection) -> None:
        self.conns = conns
        self.tally = Tally()

    def __enter__(self) -> Tally:
        self.tally = Tally()
        for conn in self.conns:
            conn.set_trace_callback(self.tally.add)
        return self.tally

    def __exit__(self, *exc: object) -> None:
        for conn in self.conns:
            conn.set_trace_callback(None)


# ---------------------------------------------------------------------- PostgreSQL (libpq)


def tally_trace(lines: Iterable[str]) -> Tally:
    """The statements of one connection's libpq trace (sent by the client: lines `F`)."""
    tally = Tally()
    prepared: dict[str, str] = {}
    bound = ""
    for line in lines:
        parts = line.rstrip("\n").split("\t", 3)
        if len(parts) < 4 or parts[0] != "F":
            continue
        kind, rest = parts[2], parts[3].strip()
        if kind == "Query":
            tally.add(rest.strip('"'))
        elif kind == "Parse":
            name, _, tail = rest.removeprefix('"').partition('" "')
            prepared[name] = tail.rsplit('" ', 1)[0]
        elif kind == "Bind":
            statement = rest.split('" "', 1)[1].split('"', 1)[0] if '" "' in rest else ""
            bound = prepared.get(statement, "")
        elif kind == "Execute":
            tally.add(bound)
    return tally


class PgTraces:
    """libpq traces of connections while counting: `connection_class` makes pool connections
    report here; `start()` traces every one into a file, `stop()` ends that and tallies."""

    def __init__(self) -> None:
        self.connections: list[AsyncConnection[Any]] = []
        self._files: list[tuple[AsyncConnection[Any], IO[bytes]]] = []
        self._tracing = False

    def connection_class(self, base: type[AsyncConnection[Any]]) -> type[AsyncConnection[Any]]:
        traces = self

        # a subclass of a class known only at run time (psycopg's or the pool's)
        class Traced(base):  # type: ignore[valid-type, misc]
            @classmethod
            async def connect(cls, *args: Any, **kwargs: Any) -> Any:
                conn = await super().connect(*args, **kwargs)
                # every statement parsed where it runs, so that the trace names its text
                # (the number of statements is the same as with server-side prepared ones)
                conn.prepare_threshold = None
                traces.opened(conn)
                return conn

        return Traced

    def opened(self, conn: AsyncConnection[Any]) -> None:
        self.connections.append(conn)
        if self._tracing:
            self._trace(conn)

    def _trace(self, conn: AsyncConnection[Any]) -> None:
        out = tempfile.TemporaryFile()
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        self._files.append((conn, out))

    def start(self) -> None:
        self._tracing = True
        for conn in self.connections:
            if not conn.closed:
                self._trace(conn)

    def stop(self) -> Tally:
        self._tracing = False
        total = Tally()
        for conn, out in self._files:
            if not conn.closed:
                conn.pgconn.untrace()  # flushes libpq's buffer
            out.seek(0)
            total += tally_trace(out.read().decode("utf-8", "replace").splitlines())
            out.close()
        self._files = []
        return total
