"""SQL fragments both SQL stores build their statements from: placeholders, guarded updates,
pages of a run's turns, and the conditions of approval and audit queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.audit.records import AuditFilter
from gateway.errors import CallCode, StoreConflict
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    CallRecord,
)
from gateway.store.codecs import call_row
from gateway.store.schema import (
    APPROVAL_COLUMNS,
    CALL_COLUMNS,
    INTEGER_COLUMNS,
    RUN_COLUMNS,
    TURN_COLUMNS,
)

# A call ID belongs to one turn of a run; duplicates exist only as their own rejection, which
# this condition leaves out (of the unique index and of look-ups by call ID).
NOT_DUPLICATE = f"error_code != '{CallCode.DUPLICATE_CALL_ID.value}'"


# One page of a run's turns: those numbered below a boundary, newest first (the index on
# (run_id, seq) answers it without reading the run's other turns).
ABOVE_EVERY_SEQ = 2**62  # the boundary of the first page: above every turn's seq


def page_turns(mark: str) -> str:
    """Up to a number of a run's turns below a seq, newest first (run_id, seq, limit)."""
    return (
        f"SELECT {', '.join(TURN_COLUMNS)} FROM turns WHERE run_id = {mark} "
        f"AND seq < {mark} ORDER BY seq DESC LIMIT {mark}"
    )


def page_calls(mark: str, order: str) -> str:
    """The calls of the turns `page_turns` reads (run_id, seq, limit, run_id again), in
    `order`: each turn's calls found by the calls' primary key, never the run's other calls."""
    return (
        f"SELECT {', '.join('calls.' + c for c in CALL_COLUMNS)} FROM (SELECT turn_id "
        f"FROM turns WHERE run_id = {mark} AND seq < {mark} ORDER BY seq DESC "
        f"LIMIT {mark}) AS page JOIN calls ON calls.run_id = {mark} "
        f"AND calls.turn_id = page.turn_id ORDER BY {order}"
    )


def latest_seq_below(mark: str) -> str:
    """The seq of a run's latest turn below a seq (run_id, seq); no row when there is none."""
    return f"SELECT seq FROM turns WHERE run_id = {mark} AND seq < {mark} ORDER BY seq DESC LIMIT 1"


def select(columns: Sequence[str], table: str) -> str:
    return f"SELECT {', '.join(columns)} FROM {table}"


def placeholders(columns: Sequence[str], mark: str) -> str:
    """`mark, mark, ...`: one parameter per column (`?` for sqlite3, `%s` for psycopg)."""
    return ", ".join(mark for _ in columns)


def typed_placeholders(
    columns: Sequence[str], mark: str, integers: frozenset[str] = INTEGER_COLUMNS
) -> str:
    """`mark::BIGINT, mark::TEXT, ...`: PostgreSQL reads an untyped value (a NULL) in a VALUES
    list that is not an INSERT's own as text."""
    return ", ".join(f"{mark}::{'BIGINT' if c in integers else 'TEXT'}" for c in columns)


def assignments(columns: Sequence[str], mark: str) -> str:
    """`a = mark, b = mark, ...` for an UPDATE of these columns."""
    return ", ".join(f"{c} = {mark}" for c in columns)


Guards = dict[tuple[str, str], tuple[str, int]]


def guards(expect: Sequence[CallRecord]) -> Guards:
    """(turn_id, call_id) → the (status, execution_count) a guarded update expects."""
    return {(c.turn_id, c.call_id): (c.status.value, c.execution_count) for c in expect}


def run_and_turns(mark: str) -> str:
    """The run with its turn of one ID and its last turn (seq = its turn count), each found
    by an index whatever the run's length (an OR of the two in one join condition scans the
    run's turns); parameters: the turn ID, the run ID, the run ID. The first row always has
    the run (with no turn when none has that ID); the last turn may come twice."""
    run = ", ".join("r." + c for c in RUN_COLUMNS)
    turn = ", ".join("t." + c for c in TURN_COLUMNS)
    return (
        f"SELECT {run}, {turn} FROM runs r LEFT JOIN turns t "
        f"ON t.run_id = r.run_id AND t.turn_id = {mark} WHERE r.run_id = {mark} "
        f"UNION ALL SELECT {run}, {turn} FROM runs r JOIN turns t "
        f"ON t.run_id = r.run_id AND t.seq = r.turns_used WHERE r.run_id = {mark}"
    )


_CALL_KEYS = ("k_run", "k_turn", "k_call", "x_status", "x_count")


def calls_update(count: int, mark: str, *, typed: bool = False) -> str:
    """One UPDATE of `count` calls from a VALUES list (values: `calls_update_values`): a call
    with a guard changes only while its row has the expected status and execution count.
    `typed` casts every value (PostgreSQL reads an untyped NULL in a VALUES list as text)."""
    names = (*_CALL_KEYS, *CALL_COLUMNS[3:])
    row = (
        f"({typed_placeholders(names, mark, INTEGER_COLUMNS | {'x_count'})})"
        if typed
        else f"({placeholders(names, mark)})"
    )
    return (
        f"WITH v ({', '.join(names)}) AS (VALUES {', '.join([row] * count)}) "
        f"UPDATE calls SET {', '.join(f'{c} = v.{c}' for c in CALL_COLUMNS[3:])} FROM v "
        "WHERE calls.run_id = v.k_run AND calls.turn_id = v.k_turn "
        "AND calls.call_id = v.k_call AND (v.x_status IS NULL OR "
        "(calls.status = v.x_status AND calls.execution_count = v.x_count))"
    )


def calls_update_values(calls: Sequence[CallRecord], guards: Guards) -> list[Any]:
    values: list[Any] = []
    for c in calls:
        guard = guards.get((c.turn_id, c.call_id))
        values.extend((c.run_id, c.turn_id, c.call_id, *(guard or (None, None)), *call_row(c)[3:]))
    return values


def conflict(c: CallRecord, expected: tuple[str, int]) -> StoreConflict:
    return StoreConflict(
        f"call {c.call_id} of run {c.run_id} is no longer {expected[0]} (execution count "
        f"{expected[1]}): another replica changed it first; nothing was executed here, and "
        "ResumeRun shows the recorded outcome"
    )


def approval_guards(expect: Sequence[ApprovalRecord]) -> dict[str, str]:
    """approval_id → the status a guarded approval update expects."""
    return {a.approval_id: a.status.value for a in expect}


def approval_conflict(a: ApprovalRecord, expected: str) -> StoreConflict:
    return StoreConflict(
        f"approval {a.approval_id} is no longer {expected}: it was decided (or expired) "
        "meanwhile; nothing was changed here"
    )


def approval_upsert(mark: str) -> str:
    """Insert an approval, or update every column of the stored one (its row, and with it
    its place in listings, stays)."""
    cols = APPROVAL_COLUMNS
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols[1:])
    return (
        f"INSERT INTO approvals ({', '.join(cols)}) VALUES ({placeholders(cols, mark)}) "
        f"ON CONFLICT (approval_id) DO UPDATE SET {updates}"
    )


def approval_update(mark: str) -> str:
    """Update a stored approval only while it still has the expected status."""
    return (
        f"UPDATE approvals SET {assignments(APPROVAL_COLUMNS[1:], mark)} "
        f"WHERE approval_id = {mark} AND status = {mark}"
    )


def approval_where(f: ApprovalFilter, mark: str) -> tuple[str, list[Any]]:
    """The conditions of an approval listing (AND-ed; "TRUE" when there are none)."""
    conds: list[str] = []
    args: list[Any] = []
    for column, value in (("run_id", f.run_id), ("tool", f.tool), ("approval_id", f.approval_id)):
        if value:
            conds.append(f"{column} = {mark}")
            args.append(value)
    if f.statuses:
        conds.append(f"status IN ({placeholders(f.statuses, mark)})")
        args.extend(s.value for s in f.statuses)
    return " AND ".join(conds) or "1 = 1", args


# what the policy input shows of the run's earlier calls (`PastCall`)
PAST_CALL_COLUMNS = ("turn_id", "call_id", "tool", "effect", "status", "arguments_json")


# the chain's head as SQL: its last record's hash, else that of the checkpoint that replaced
# the pruned ones, else "" (an empty chain)
CHAIN_HEAD = (
    "COALESCE((SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), "
    "(SELECT hash FROM audit_checkpoints ORDER BY seq DESC LIMIT 1), '')"
)


def audit_where(f: AuditFilter, mark: str) -> tuple[str, list[Any]]:
    """The conditions of an audit query (AND-ed; "1 = 1" when there are none)."""
    conds: list[str] = []
    args: list[Any] = []
    for column, value in (
        ("run_id", f.run_id),
        ("call_id", f.call_id),
        ("tool", f.tool),
        ("subject", f.subject),
    ):
        if value:
            conds.append(f"{column} = {mark}")
            args.append(value)
    if f.tenant is not None:
        conds.append(f"tenant = {mark}")
        args.append(f.tenant)
    for column, values in (
        ("verdict", [v.value for v in f.verdicts]),
        ("status", [s.value for s in f.statuses]),
    ):
        if values:
            conds.append(f"{column} IN ({placeholders(values, mark)})")
            args.extend(values)
    for cond, value in ((f"time >= {mark}", f.since), (f"time < {mark}", f.until)):
        if value:
            conds.append(cond)
            args.append(value)
    return " AND ".join(conds) or "1 = 1", args
