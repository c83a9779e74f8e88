"""The SQL stores' schema: tables, columns, indexes, and the migrations that bring an older
store forward.

Column order here is the single source for both the DDL and the statements of each store.
Schema history (each store migrates forward on open):

    1  runs, turns, calls, approvals, audit
    2  calls gain resolved_by, resolved_at, resolution_reason (ResolveCall)
    3  runs gain roles_json (the owner's roles); approvals gain requester_roles_json,
       decided_by_tenant, decided_by_roles_json, policy_reasons_json (deciding approvals),
       and an index on their status; PostgreSQL approvals gain pos (listing order)
    4  audit gains verdict (filled in from decision_json for older records), actor,
       actor_tenant, approval_id, message, detail_json, and layout, key_id, seal (the hash of
       a record written since covers every column; its seal is an HMAC of that hash), indexes
       for reading a tenant's or a subject's records; audit_checkpoints (where the chain
       continues after `callgate audit prune`)
    5  turns gain an index on (run_id, seq): GetRun reads one page of a run's turns, and a
       turn's latest predecessor is found, without reading the run's other turns
    6  runs gain indexes on (tenant, subject, created_at, run_id) and (tenant, created_at,
       run_id): ListRuns reads a page of a subject's (or a tenant's) runs, newest first
    7  calls gain a partial index of those UNKNOWN: the gauge `callgate_unknown_outcome_calls`
       counts them at every scrape without reading the other calls
    8  quota_keys (each key's latest limit and window; the row every reservation of the key
       locks) and quota_usage (one row per reservation: key, call, cost, time), indexed by
       key and time (a window's sum), by key and expiry (pruning) and by call (giving a
       reservation back)
    9  tool_definitions (every definition of a tool a sidecar served: name, fingerprint, its
       canonical JSON, when first seen) and tool_pins (each tool's approved fingerprint, who
       pinned it, when and why); approvals gain tool_fingerprint (the definition approved)
   10  quota_keys gain running totals of their stored reservations (used: their cost, live:
       their count; filled in from quota_usage), kept by every commit that charges or gives
       back the key, so a reservation no longer sums its key's window; stored reservations'
       expiries are brought within their key's window
   11  quota_usage's three indexes become two, so a reserving commit writes fewer pages: one
       by key and expiry that also holds each reservation's time and cost (pruning, and a
       window summed from the index alone), and one by call that covers only reservations
       made in a run's turn (run_id not empty), the only ones ever given back (an Authorize
       without a run keeps its reservations, and indexing them by their random call IDs
       wrote a page of that index at a random place for each one)
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.audit.hashing import AUDIT_ADDED

SCHEMA_VERSION = 11


RUN_COLUMNS = (
    "run_id",
    "state",
    "subject",
    "tenant",
    "provider",
    "api_version",
    "budget_json",
    "labels_json",
    "conversation_json",
    "params_hash",
    "turns_used",
    "tool_calls_used",
    "retries_in_row",
    "input_tokens",
    "output_tokens",
    "pause_reason",
    "created_at",
    "updated_at",
    "roles_json",
)


TURN_COLUMNS = (
    "run_id",
    "turn_id",
    "seq",
    "event",
    "content_hash",
    "provider",
    "api_version",
    "model",
    "input_tokens",
    "output_tokens",
    "raw_response_json",
    "detail_json",
    "next",
    "reason",
    "created_at",
)

# What an update of a run or a turn sets: every column but its key and what is fixed when it
# is created (a run's owner and creation time, a turn's place in its run). Those are what
# the tables' other indexes hold (runs_owner, runs_tenant, turns_seq): SQLite rewrites an
# index's entry for every column named in an UPDATE's SET, changed or not, which put two
# more pages per run update, and one per turn update, into the log.
RUN_FIXED = ("run_id", "subject", "tenant", "created_at")
TURN_FIXED = ("run_id", "turn_id", "seq")
RUN_UPDATED = tuple(c for c in RUN_COLUMNS if c not in RUN_FIXED)
TURN_UPDATED = tuple(c for c in TURN_COLUMNS if c not in TURN_FIXED)


CALL_COLUMNS = (
    "run_id",
    "turn_id",
    "call_id",
    "idx",
    "tool",
    "status",
    "arguments_json",
    "tool_version",
    "effect",
    "arguments_sha256",
    "decision_json",
    "output_json",
    "error_code",
    "error_message",
    "execution_count",
    "approval_id",
    "idempotency_key",
    "created_at",
    "decided_at",
    "started_at",
    "finished_at",
    "resolved_by",
    "resolved_at",
    "resolution_reason",
)


APPROVAL_COLUMNS = (
    "approval_id",
    "run_id",
    "turn_id",
    "call_id",
    "tool",
    "tool_version",
    "arguments_json",
    "arguments_sha256",
    "status",
    "requested_by",
    "tenant",
    "created_at",
    "expires_at",
    "decided_by",
    "decided_at",
    "reason",
    "requester_roles_json",
    "decided_by_tenant",
    "decided_by_roles_json",
    "policy_reasons_json",
    "tool_fingerprint",
)


CHECKPOINT_COLUMNS = ("seq", "hash", "time", "removed", "before")


# Columns holding integers (every other column holds text); stores with typed columns use it.
INTEGER_COLUMNS = frozenset(
    {
        "turns_used",
        "tool_calls_used",
        "retries_in_row",
        "input_tokens",
        "output_tokens",
        "seq",
        "idx",
        "execution_count",
        "layout",
        "removed",
    }
)


# ADDED_COLUMNS[v]: the (table, column) pairs that version v added; a store at version v - 1
# migrates by adding them (their rows read as empty).
ADDED_COLUMNS: dict[int, tuple[tuple[str, str], ...]] = {
    2: (("calls", "resolved_by"), ("calls", "resolved_at"), ("calls", "resolution_reason")),
    3: (
        ("runs", "roles_json"),
        ("approvals", "requester_roles_json"),
        ("approvals", "decided_by_tenant"),
        ("approvals", "decided_by_roles_json"),
        ("approvals", "policy_reasons_json"),
    ),
    4: tuple(("audit", c) for c in AUDIT_ADDED),
    5: (),
    6: (),
    7: (),
    8: (),
    9: (("approvals", "tool_fingerprint"),),
    10: (),
}


# Indexes both stores create (with the tables, or when migrating to the version that added
# them); IF NOT EXISTS makes each statement safe either way.
INDEXES: dict[int, tuple[str, ...]] = {
    3: ("CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status)",),
    4: (
        "CREATE INDEX IF NOT EXISTS audit_tenant ON audit (tenant, seq)",
        "CREATE INDEX IF NOT EXISTS audit_subject ON audit (tenant, subject, seq)",
    ),
    # a run's last turn (and a page of turns) by seq, however long the run
    5: ("CREATE INDEX IF NOT EXISTS turns_seq ON turns (run_id, seq)",),
    # a page of one subject's (or one tenant's) runs, newest first (ListRuns)
    6: (
        "CREATE INDEX IF NOT EXISTS runs_owner ON runs (tenant, subject, created_at, run_id)",
        "CREATE INDEX IF NOT EXISTS runs_tenant ON runs (tenant, created_at, run_id)",
    ),
    # the calls of unknown outcome, however many calls the store holds
    7: ("CREATE INDEX IF NOT EXISTS calls_unknown ON calls (status) WHERE status = 'UNKNOWN'",),
    # a key's window summed from the index alone; its expired reservations; a call's (given
    # back) (replaced in version 11)
    8: (
        "CREATE INDEX IF NOT EXISTS quota_usage_key ON quota_usage (quota_key, reserved_at, cost)",
        "CREATE INDEX IF NOT EXISTS quota_usage_expiry ON quota_usage (quota_key, expires_at)",
        "CREATE INDEX IF NOT EXISTS quota_usage_call ON quota_usage (run_id, call_id)",
    ),
    # a key's reservations by expiry (pruning), its window summed from the index alone; a
    # turn's call's reservations (given back: `quota_sql.give_back` repeats the condition in
    # each of its terms, so that both stores may use the index)
    11: (
        "CREATE INDEX IF NOT EXISTS quota_usage_window ON quota_usage "
        "(quota_key, expires_at, reserved_at, cost)",
        "CREATE INDEX IF NOT EXISTS quota_usage_turn_call ON quota_usage (run_id, call_id) "
        "WHERE run_id <> ''",
    ),
}


# Indexes a version replaced: dropped by its migration before its own are made, and never
# made for a new store.
RETIRED_INDEXES: dict[int, tuple[str, ...]] = {
    11: ("quota_usage_key", "quota_usage_expiry", "quota_usage_call"),
}


# Tables a version added (with the tables of a new store, or when migrating to it).
TABLES: dict[int, tuple[str, ...]] = {
    4: ("audit_checkpoints",),
    8: ("quota_keys", "quota_usage"),
    9: ("tool_definitions", "tool_pins"),
}


# Columns a version added to a table a later version created, declared in full (typed the same
# in both stores): a table created at the current version has them; one created by an older
# version's migration gains them in theirs.
LATER_COLUMNS: dict[int, tuple[tuple[str, str], ...]] = {
    10: (
        ("quota_keys", "used DOUBLE PRECISION NOT NULL DEFAULT 0"),
        ("quota_keys", "live BIGINT NOT NULL DEFAULT 0"),
    ),
}


# Statements a migration runs after its columns, tables and indexes (the same in both stores).
BACKFILLS: dict[int, tuple[str, ...]] = {
    10: (
        "UPDATE quota_usage SET expires_at = reserved_at + (SELECT k.window_s FROM quota_keys k "
        "WHERE k.quota_key = quota_usage.quota_key) WHERE expires_at > reserved_at + "
        "(SELECT k.window_s FROM quota_keys k WHERE k.quota_key = quota_usage.quota_key)",
        "UPDATE quota_keys SET used = COALESCE((SELECT SUM(u.cost) FROM quota_usage u "
        "WHERE u.quota_key = quota_keys.quota_key), 0), live = (SELECT COUNT(*) FROM "
        "quota_usage u WHERE u.quota_key = quota_keys.quota_key)",
    ),
}


# Typed the same in both stores (sums and comparisons of numbers; times in epoch seconds).
# `{later}`: where a table's LATER_COLUMNS go.
QUOTA_TABLES = {
    "quota_keys": "quota_keys (quota_key TEXT NOT NULL, quota_limit DOUBLE PRECISION NOT NULL, "
    "window_s BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL{later}, "
    "PRIMARY KEY (quota_key))",
    "quota_usage": "quota_usage (quota_key TEXT NOT NULL, run_id TEXT NOT NULL, "
    "call_id TEXT NOT NULL, cost DOUBLE PRECISION NOT NULL, "
    "reserved_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)",
}


PIN_TABLES = {
    "tool_definitions": "tool_definitions (name TEXT NOT NULL, fingerprint TEXT NOT NULL, "
    "definition_json TEXT NOT NULL, first_seen_at TEXT NOT NULL, "
    "PRIMARY KEY (name, fingerprint))",
    "tool_pins": "tool_pins (name TEXT NOT NULL, fingerprint TEXT NOT NULL, "
    "pinned_at TEXT NOT NULL, pinned_by TEXT NOT NULL, reason TEXT NOT NULL, "
    "PRIMARY KEY (name))",
}


def indexes() -> list[str]:
    """Every index statement, for a store created at the current version."""
    retired = {name for names in RETIRED_INDEXES.values() for name in names}
    return [
        stmt
        for added in INDEXES.values()
        for stmt in added
        if stmt.split(" ON ", 1)[0].rsplit(" ", 1)[1] not in retired
    ]


def tables(column: Callable[[str], str], version: int | None = None) -> list[str]:
    """The CREATE TABLE statements of the tables `version` added (every version's: None)."""
    defs = {
        "audit_checkpoints": f"audit_checkpoints ({', '.join(map(column, CHECKPOINT_COLUMNS))}"
        ", PRIMARY KEY (seq))",
        **QUOTA_TABLES,
        **PIN_TABLES,
    }
    return [
        f"CREATE TABLE IF NOT EXISTS {defs[name].replace('{later}', later(name, version))}"
        for v, names in TABLES.items()
        if version in (None, v)
        for name in names
    ]


def later(table: str, version: int | None) -> str:
    """The table's LATER_COLUMNS, when created at the current version (None); none when a
    migration creates it (the later versions' migrations add them)."""
    if version is not None:
        return ""
    return "".join(
        f", {declared}" for added in LATER_COLUMNS.values() for t, declared in added if t == table
    )


def migrations(column: Callable[[str], str]) -> dict[int, list[str]]:
    """MIGRATIONS[v]: the statements that upgrade a store at version v to v + 1, given how a
    store declares a column (`column(name)`)."""
    return {
        version - 1: [
            *(
                f"ALTER TABLE {table} ADD COLUMN {column(name)}"
                for table, name in ADDED_COLUMNS.get(version, ())
            ),
            *tables(column, version),
            *(f"ALTER TABLE {t} ADD COLUMN {d}" for t, d in LATER_COLUMNS.get(version, ())),
            *(f"DROP INDEX IF EXISTS {name}" for name in RETIRED_INDEXES.get(version, ())),
            *INDEXES.get(version, ()),
            *BACKFILLS.get(version, ()),
        ]
        for version in range(2, SCHEMA_VERSION + 1)
    }
