"""Stores for tests: a fresh SQLite file, or a fresh schema in a PostgreSQL database of the
test session's own.

PostgreSQL is the server `CALLGATE_TEST_POSTGRES_DSN` names (default: 127.0.0.1:5432, database
`test`, user `postgres`); a test that needs it fails when it is missing, never skips. Each
session creates a database of its own and drops it at the end; each store gets a schema in it,
named in the URL (`options=-csearch_path=...`), so a sidecar given that URL as `--db` uses it.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
KINDS = ("sqlite", "postgresql")


def server_url() -> str:
    return os.environ.get("CALLGATE_TEST_POSTGRES_DSN", DEFAULT_DSN)


def with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    option = "options=" + quote(f"-csearch_path={schema}", safe="")
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit(parts._replace(query=query))


@contextmanager
def session_database() -> Iterator[str]:
    """A new database on the test server (dropped afterwards); its URL."""
    admin_url = server_url()
    name = f"callgate_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def new_schema(database_url: str) -> str:
    """A new empty schema in the database; the URL that makes it the store's."""
    name = f"s_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    return with_schema(database_url, name)


def run_sql(url: str, script: str) -> None:
    """Run a SQL script in the store the URL names (its schema first on the search path)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(script)  # type: ignore[arg-type]


def query(db: str, statement: str) -> list[tuple[object, ...]]:
    """The rows a query answers in a store (a SQLite file's path, or a PostgreSQL URL)."""
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            return [tuple(r) for r in conn.execute(statement).fetchall()]  # type: ignore[arg-type]
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return [tuple(r) for r in conn.execute(statement).fetchall()]
    finally:
        conn.close()


def restore(fixture: Path, tmp_path: Path, pg_database: str) -> str:
    """A frozen store dump (`postgres_schema_v<N>.sql` into a new schema of pg_database, any
    other into a SQLite file in tmp_path) loaded into a new store; answers its --db."""
    if fixture.name.startswith("postgres_"):
        url = new_schema(pg_database)
        run_sql(url, fixture.read_text())
        return url
    to = tmp_path / "old.db"
    conn = sqlite3.connect(to)
    conn.executescript(fixture.read_text())
    conn.close()
    return str(to)
