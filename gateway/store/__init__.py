"""Run stores: the RunStore contract (`base`), SQLite (`sqlite`), PostgreSQL (`postgres`).

`open_store(db)` is the one place `--db` is read: a path or `sqlite:///PATH` opens SQLite,
`postgresql://...` (or `postgres://...`) opens PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from gateway.audit.keys import AuditKey
from gateway.errors import ConfigError
from gateway.store.base import RunStore, StoredForm

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def sqlite_path(db: str) -> Path | None:
    """The SQLite file `--db` names, None for a PostgreSQL URL; ConfigError for anything
    else."""
    if db.startswith(POSTGRES_SCHEMES):
        return None
    if db.startswith("sqlite:///"):
        db = db.removeprefix("sqlite:///")
    elif "://" in db:
        raise ConfigError(
            f"--db {db.split('://')[0]}://...: expected PATH, sqlite:///PATH or postgresql://..."
        )
    if not db:
        raise ConfigError("--db: empty; expected PATH, sqlite:///PATH or postgresql://...")
    return Path(db)


async def open_store(
    db: str,
    *,
    busy_timeout_s: float = 5.0,
    min_free_bytes: int = 0,
    audit_key: AuditKey | None = None,
    stored: StoredForm | None = None,
    share_notifications: bool = False,
) -> RunStore:
    """Open (creating or migrating its schema) the store `--db` names; its audit records are
    sealed with audit_key, and records are written in their `stored` form. `min_free_bytes`:
    a SQLite store refuses writes while its filesystem has less room than this.
    `share_notifications`: a SQLite store's settlements also wake the watchers of the other
    processes that opened it so (`serve --workers`; PostgreSQL always does)."""
    path = sqlite_path(db)
    if path is None:
        from gateway.store.postgres import PostgresStore

        return await PostgresStore.open(
            db, timeout_s=busy_timeout_s, audit_key=audit_key, stored=stored
        )
    from gateway.store.sqlite import SQLiteStore

    return await SQLiteStore.open(
        path,
        busy_timeout_s=busy_timeout_s,
        min_free_bytes=min_free_bytes,
        audit_key=audit_key,
        stored=stored,
        share_notifications=share_notifications,
    )
