"""Row codecs shared by the SQL stores: domain records <-> flat column tuples.

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

Every row is `storable`: a text value any store could not encode (a lone surrogate) is made
encodable here, so no value can make a write fail again and again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from gateway.audit.keys import AuditKey
from gateway.errors import CallCode, StoreConflict
from gateway.jsontext import storable_text
from gateway.model import (
    ApprovalFilter,
    ApprovalRecord,
    ApprovalStatus,
    AuditEvent,
    AuditFilter,
    AuditRecord,
    Budget,
    CallRecord,
    CallStatus,
    Decision,
    EventDetail,
    EventKind,
    NextAction,
    PastCall,
    RunRecord,
    RunState,
    TurnRecord,
    Usage,
    Verdict,
    audit_time,
    now_utc,
    rfc3339,
)

SCHEMA_VERSION = 5

RUN_COLUMNS = ("run_id", "state", "subject", "tenant", "provider", "api_version", "budget_json",
               "labels_json", "conversation_json", "params_hash", "turns_used",
               "tool_calls_used", "retries_in_row", "input_tokens", "output_tokens",
               "pause_reason", "created_at", "updated_at", "roles_json")
TURN_COLUMNS = ("run_id", "turn_id", "seq", "event", "content_hash", "provider", "api_version",
                "model", "input_tokens", "output_tokens", "raw_response_json", "detail_json",
                "next", "reason", "created_at")
CALL_COLUMNS = ("run_id", "turn_id", "call_id", "idx", "tool", "status", "arguments_json",
                "tool_version", "effect", "arguments_sha256", "decision_json", "output_json",
                "error_code", "error_message", "execution_count", "approval_id",
                "idempotency_key", "created_at", "decided_at", "started_at", "finished_at",
                "resolved_by", "resolved_at", "resolution_reason")
APPROVAL_COLUMNS = ("approval_id", "run_id", "turn_id", "call_id", "tool", "tool_version",
                    "arguments_json", "arguments_sha256", "status", "requested_by", "tenant",
                    "created_at", "expires_at", "decided_by", "decided_at", "reason",
                    "requester_roles_json", "decided_by_tenant", "decided_by_roles_json",
                    "policy_reasons_json")
# The audit columns in the order of AuditRecord (after seq): the 17 of the first layout, the
# chain (prev_hash, hash), then what schema 4 added.
AUDIT_BODY_V1 = ("time", "kind", "subject", "tenant", "run_id", "turn_id", "call_id",
                 "provider", "tool", "tool_version", "arguments_summary_json",
                 "arguments_sha256", "decision_json", "status", "error_code",
                 "execution_count", "policy_revision")
AUDIT_ADDED = ("verdict", "actor", "actor_tenant", "approval_id", "message", "detail_json",
               "layout", "key_id", "seal")
AUDIT_COLUMNS = (*AUDIT_BODY_V1, "prev_hash", "hash", *AUDIT_ADDED)
CHECKPOINT_COLUMNS = ("seq", "hash", "time", "removed", "before")

# A call ID belongs to one turn of a run; duplicates exist only as their own rejection, which
# this condition leaves out (of the unique index and of look-ups by call ID).
NOT_DUPLICATE = f"error_code != '{CallCode.DUPLICATE_CALL_ID.value}'"

# Columns holding integers (every other column holds text); stores with typed columns use it.
INTEGER_COLUMNS = frozenset({"turns_used", "tool_calls_used", "retries_in_row", "input_tokens",
                             "output_tokens", "seq", "idx", "execution_count", "layout",
                             "removed"})

# ADDED_COLUMNS[v]: the (table, column) pairs that version v added; a store at version v - 1
# migrates by adding them (their rows read as empty).
ADDED_COLUMNS: dict[int, tuple[tuple[str, str], ...]] = {
    2: (("calls", "resolved_by"), ("calls", "resolved_at"), ("calls", "resolution_reason")),
    3: (("runs", "roles_json"), ("approvals", "requester_roles_json"),
        ("approvals", "decided_by_tenant"), ("approvals", "decided_by_roles_json"),
        ("approvals", "policy_reasons_json")),
    4: tuple(("audit", c) for c in AUDIT_ADDED),
    5: (),
}

# Indexes both stores create (with the tables, or when migrating to the version that added
# them); IF NOT EXISTS makes each statement safe either way.
INDEXES: dict[int, tuple[str, ...]] = {
    3: ("CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status)",),
    4: ("CREATE INDEX IF NOT EXISTS audit_tenant ON audit (tenant, seq)",
        "CREATE INDEX IF NOT EXISTS audit_subject ON audit (tenant, subject, seq)"),
    # a run's last turn (and a page of turns) by seq, however long the run
    5: ("CREATE INDEX IF NOT EXISTS turns_seq ON turns (run_id, seq)",),
}

# Tables a version added (with the tables of a new store, or when migrating to it).
TABLES: dict[int, tuple[str, ...]] = {
    4: ("audit_checkpoints",),
}


def indexes() -> list[str]:
    """Every index statement, for a store created at the current version."""
    return [stmt for added in INDEXES.values() for stmt in added]


def tables(column: Callable[[str], str], version: int | None = None) -> list[str]:
    """The CREATE TABLE statements of the tables `version` added (every version's: None)."""
    defs = {"audit_checkpoints": f"audit_checkpoints ({', '.join(map(column, CHECKPOINT_COLUMNS))}"
                                 ", PRIMARY KEY (seq))"}
    return [f"CREATE TABLE IF NOT EXISTS {defs[name]}"
            for v, names in TABLES.items() if version in (None, v) for name in names]


def migrations(column: Callable[[str], str]) -> dict[int, list[str]]:
    """MIGRATIONS[v]: the statements that upgrade a store at version v to v + 1, given how a
    store declares a column (`column(name)`)."""
    return {version - 1: [*(f"ALTER TABLE {table} ADD COLUMN {column(name)}"
                            for table, name in ADDED_COLUMNS.get(version, ())),
                          *tables(column, version), *INDEXES.get(version, ())]
            for version in range(2, SCHEMA_VERSION + 1)}


# One page of a run's turns: those numbered below a boundary, newest first (the index on
# (run_id, seq) answers it without reading the run's other turns).
ABOVE_EVERY_SEQ = 2 ** 62  # the boundary of the first page: above every turn's seq


def page_turns(mark: str) -> str:
    """Up to a number of a run's turns below a seq, newest first (run_id, seq, limit)."""
    return (f"SELECT {', '.join(TURN_COLUMNS)} FROM turns WHERE run_id = {mark} "
            f"AND seq < {mark} ORDER BY seq DESC LIMIT {mark}")


def page_calls(mark: str, order: str) -> str:
    """The calls of the turns `page_turns` reads (run_id, seq, limit, run_id again), in
    `order`: each turn's calls found by the calls' primary key, never the run's other calls."""
    return (f"SELECT {', '.join('calls.' + c for c in CALL_COLUMNS)} FROM (SELECT turn_id "
            f"FROM turns WHERE run_id = {mark} AND seq < {mark} ORDER BY seq DESC "
            f"LIMIT {mark}) AS page JOIN calls ON calls.run_id = {mark} "
            f"AND calls.turn_id = page.turn_id ORDER BY {order}")


def latest_seq_below(mark: str) -> str:
    """The seq of a run's latest turn below a seq (run_id, seq); no row when there is none."""
    return (f"SELECT seq FROM turns WHERE run_id = {mark} AND seq < {mark} "
            "ORDER BY seq DESC LIMIT 1")


def placeholders(columns: Sequence[str], mark: str) -> str:
    """`mark, mark, ...`: one parameter per column (`?` for sqlite3, `%s` for psycopg)."""
    return ", ".join(mark for _ in columns)


def typed_placeholders(columns: Sequence[str], mark: str,
                       integers: frozenset[str] = INTEGER_COLUMNS) -> str:
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
    run = ', '.join('r.' + c for c in RUN_COLUMNS)
    turn = ', '.join('t.' + c for c in TURN_COLUMNS)
    return (f"SELECT {run}, {turn} FROM runs r LEFT JOIN turns t "
            f"ON t.run_id = r.run_id AND t.turn_id = {mark} WHERE r.run_id = {mark} "
            f"UNION ALL SELECT {run}, {turn} FROM runs r JOIN turns t "
            f"ON t.run_id = r.run_id AND t.seq = r.turns_used WHERE r.run_id = {mark}")


_CALL_KEYS = ("k_run", "k_turn", "k_call", "x_status", "x_count")


def calls_update(count: int, mark: str, *, typed: bool = False) -> str:
    """One UPDATE of `count` calls from a VALUES list (values: `calls_update_values`): a call
    with a guard changes only while its row has the expected status and execution count.
    `typed` casts every value (PostgreSQL reads an untyped NULL in a VALUES list as text)."""
    names = (*_CALL_KEYS, *CALL_COLUMNS[3:])
    row = (f"({typed_placeholders(names, mark, INTEGER_COLUMNS | {'x_count'})})" if typed
           else f"({placeholders(names, mark)})")
    return (f"WITH v ({', '.join(names)}) AS (VALUES {', '.join([row] * count)}) "
            f"UPDATE calls SET {', '.join(f'{c} = v.{c}' for c in CALL_COLUMNS[3:])} FROM v "
            "WHERE calls.run_id = v.k_run AND calls.turn_id = v.k_turn "
            "AND calls.call_id = v.k_call AND (v.x_status IS NULL OR "
            "(calls.status = v.x_status AND calls.execution_count = v.x_count))")


def calls_update_values(calls: Sequence[CallRecord], guards: Guards) -> list[Any]:
    values: list[Any] = []
    for c in calls:
        guard = guards.get((c.turn_id, c.call_id))
        values.extend((c.run_id, c.turn_id, c.call_id, *(guard or (None, None)),
                       *call_row(c)[3:]))
    return values


def conflict(c: CallRecord, expected: tuple[str, int]) -> StoreConflict:
    return StoreConflict(
        f"call {c.call_id} of run {c.run_id} is no longer {expected[0]} (execution count "
        f"{expected[1]}): another replica changed it first; nothing was executed here, and "
        "ResumeRun shows the recorded outcome")


def approval_guards(expect: Sequence[ApprovalRecord]) -> dict[str, str]:
    """approval_id → the status a guarded approval update expects."""
    return {a.approval_id: a.status.value for a in expect}


def approval_conflict(a: ApprovalRecord, expected: str) -> StoreConflict:
    return StoreConflict(
        f"approval {a.approval_id} is no longer {expected}: it was decided (or expired) "
        "meanwhile; nothing was changed here")


def approval_upsert(mark: str) -> str:
    """Insert an approval, or update every column of the stored one (its row, and with it
    its place in listings, stays)."""
    cols = APPROVAL_COLUMNS
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols[1:])
    return (f"INSERT INTO approvals ({', '.join(cols)}) VALUES ({placeholders(cols, mark)}) "
            f"ON CONFLICT (approval_id) DO UPDATE SET {updates}")


def approval_update(mark: str) -> str:
    """Update a stored approval only while it still has the expected status."""
    return (f"UPDATE approvals SET {assignments(APPROVAL_COLUMNS[1:], mark)} "
            f"WHERE approval_id = {mark} AND status = {mark}")


def approval_where(f: ApprovalFilter, mark: str) -> tuple[str, list[Any]]:
    """The conditions of an approval listing (AND-ed; "TRUE" when there are none)."""
    conds: list[str] = []
    args: list[Any] = []
    for column, value in (("run_id", f.run_id), ("tool", f.tool),
                          ("approval_id", f.approval_id)):
        if value:
            conds.append(f"{column} = {mark}")
            args.append(value)
    if f.statuses:
        conds.append(f"status IN ({placeholders(f.statuses, mark)})")
        args.extend(s.value for s in f.statuses)
    return " AND ".join(conds) or "1 = 1", args


def storable(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """values with each text made storable (`storable_text`); the same tuple when every
    text is ASCII without NUL, as nearly all are (one scan of them joined)."""
    joined = "".join([v for v in values if isinstance(v, str)])
    if joined.isascii() and "\x00" not in joined:
        return values
    return tuple(storable_text(v) if isinstance(v, str) else v for v in values)


def _t(value: datetime | None) -> str | None:
    return rfc3339(value) if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _texts_json(values: Sequence[str]) -> str:
    return json.dumps(list(values))


def _texts(text: str | None) -> tuple[str, ...]:
    """A stored JSON array of strings; a row written before the column existed has none."""
    if not text:
        return ()
    values = json.loads(text)
    return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


def decision_to_json(d: Decision | None) -> str | None:
    return None if d is None else _decision_json(d)


@functools.lru_cache(maxsize=1024)  # a remembered decision is stored again and again
def _decision_json(d: Decision) -> str:
    body = {"verdict": d.verdict.value, "reasons": list(d.reasons),
            "policy_revision": d.policy_revision, "approval_ttl_s": d.approval_ttl_s,
            "error": d.error}
    if d.input_sha256:
        body["input_sha256"] = d.input_sha256
    return json.dumps(body)


def decision_from_json(text: str | None) -> Decision | None:
    if not text:
        return None
    d = json.loads(text)
    return Decision(verdict=Verdict(d["verdict"]), reasons=tuple(d["reasons"]),
                    policy_revision=d["policy_revision"], approval_ttl_s=d.get("approval_ttl_s"),
                    error=d.get("error", ""), input_sha256=d.get("input_sha256", ""))


_FIELDS: dict[type, tuple[str, ...]] = {kind: tuple(f.name for f in fields(kind))
                                        for kind in (Budget, EventDetail)}


def _flat_json(value: Budget | EventDetail) -> str:
    """`json.dumps(asdict(value))` for a dataclass of scalars, without asdict's deep copy."""
    return json.dumps({name: getattr(value, name) for name in _FIELDS[type(value)]})


def run_row(r: RunRecord) -> tuple[Any, ...]:
    return storable((r.run_id, r.state.value, r.subject, r.tenant, r.provider, r.api_version,
            _flat_json(r.budget), json.dumps(r.labels), r.conversation_json,
            r.params_hash, r.turns_used, r.tool_calls_used, r.retries_in_row,
            r.usage_total.input_tokens, r.usage_total.output_tokens, r.pause_reason,
            _t(r.created_at), _t(r.updated_at), _texts_json(r.roles)))


def run_from_row(row: tuple[Any, ...]) -> RunRecord:
    v = dict(zip(RUN_COLUMNS, row, strict=True))
    return RunRecord(
        run_id=v["run_id"], state=RunState(v["state"]), subject=v["subject"],
        tenant=v["tenant"], provider=v["provider"], api_version=v["api_version"],
        budget=Budget(**json.loads(v["budget_json"])), labels=json.loads(v["labels_json"]),
        conversation_json=v["conversation_json"], params_hash=v["params_hash"],
        turns_used=v["turns_used"], tool_calls_used=v["tool_calls_used"],
        retries_in_row=v["retries_in_row"],
        usage_total=Usage(v["input_tokens"], v["output_tokens"]),
        pause_reason=v["pause_reason"], created_at=_dt(v["created_at"]),
        updated_at=_dt(v["updated_at"]), roles=_texts(v["roles_json"]))


def turn_row(t: TurnRecord) -> tuple[Any, ...]:
    return storable((t.run_id, t.turn_id, t.seq, t.event.value, t.content_hash, t.provider,
            t.api_version, t.model, t.usage.input_tokens, t.usage.output_tokens,
            t.raw_response_json, _flat_json(t.detail), t.next.value if t.next else None,
            t.reason, _t(t.created_at)))


def turn_from_row(row: tuple[Any, ...]) -> TurnRecord:
    v = dict(zip(TURN_COLUMNS, row, strict=True))
    return TurnRecord(
        run_id=v["run_id"], turn_id=v["turn_id"], seq=v["seq"], event=EventKind(v["event"]),
        content_hash=v["content_hash"], provider=v["provider"], api_version=v["api_version"],
        model=v["model"], usage=Usage(v["input_tokens"], v["output_tokens"]),
        raw_response_json=v["raw_response_json"],
        detail=EventDetail(**json.loads(v["detail_json"])),
        next=NextAction(v["next"]) if v["next"] else None, reason=v["reason"],
        created_at=_dt(v["created_at"]))


def call_row(c: CallRecord) -> tuple[Any, ...]:
    return storable((
            c.run_id, c.turn_id, c.call_id, c.index, c.tool, c.status.value, c.arguments_json,
            c.tool_version, c.effect, c.arguments_sha256, decision_to_json(c.decision),
            c.output_json, c.error_code, c.error_message, c.execution_count, c.approval_id,
            c.idempotency_key, _t(c.created_at), _t(c.decided_at), _t(c.started_at),
            _t(c.finished_at), c.resolved_by, _t(c.resolved_at), c.resolution_reason))


def call_from_row(row: tuple[Any, ...]) -> CallRecord:
    v = dict(zip(CALL_COLUMNS, row, strict=True))
    return CallRecord(
        run_id=v["run_id"], turn_id=v["turn_id"], call_id=v["call_id"], index=v["idx"],
        tool=v["tool"], status=CallStatus(v["status"]), arguments_json=v["arguments_json"],
        tool_version=v["tool_version"], effect=v["effect"],
        arguments_sha256=v["arguments_sha256"], decision=decision_from_json(v["decision_json"]),
        output_json=v["output_json"], error_code=v["error_code"],
        error_message=v["error_message"], execution_count=v["execution_count"],
        approval_id=v["approval_id"], idempotency_key=v["idempotency_key"],
        created_at=_dt(v["created_at"]), decided_at=_dt(v["decided_at"]),
        started_at=_dt(v["started_at"]), finished_at=_dt(v["finished_at"]),
        resolved_by=v["resolved_by"] or "", resolved_at=_dt(v["resolved_at"]),
        resolution_reason=v["resolution_reason"] or "")


# what the policy input shows of the run's earlier calls (`PastCall`)
PAST_CALL_COLUMNS = ("turn_id", "call_id", "tool", "effect", "status", "arguments_json")


def past_call_from_row(row: tuple[Any, ...]) -> PastCall:
    turn_id, call_id, tool, effect, status, arguments_json = row
    return PastCall(turn_id, call_id, tool, effect, CallStatus(status), arguments_json)


def approval_row(a: ApprovalRecord) -> tuple[Any, ...]:
    return storable((a.approval_id, a.run_id, a.turn_id, a.call_id, a.tool, a.tool_version,
            a.arguments_json, a.arguments_sha256, a.status.value, a.requested_by, a.tenant,
            _t(a.created_at), _t(a.expires_at), a.decided_by, _t(a.decided_at), a.reason,
            _texts_json(a.requester_roles), a.decided_by_tenant, _texts_json(a.decided_by_roles),
            _texts_json(a.policy_reasons)))


def approval_from_row(row: tuple[Any, ...]) -> ApprovalRecord:
    v = dict(zip(APPROVAL_COLUMNS, row, strict=True))
    created = _dt(v["created_at"])
    assert created is not None
    return ApprovalRecord(
        approval_id=v["approval_id"], run_id=v["run_id"], turn_id=v["turn_id"],
        call_id=v["call_id"], tool=v["tool"], tool_version=v["tool_version"],
        arguments_json=v["arguments_json"], arguments_sha256=v["arguments_sha256"],
        status=ApprovalStatus(v["status"]), requested_by=v["requested_by"], tenant=v["tenant"],
        created_at=created, expires_at=_dt(v["expires_at"]), decided_by=v["decided_by"],
        decided_at=_dt(v["decided_at"]), reason=v["reason"],
        requester_roles=_texts(v["requester_roles_json"]),
        decided_by_tenant=v["decided_by_tenant"] or "",
        decided_by_roles=_texts(v["decided_by_roles_json"]),
        policy_reasons=_texts(v["policy_reasons_json"]))


# ---------------------------------------------------------------------- the audit chain

AUDIT_LAYOUT = 4  # the layout of records written now


# the columns each layout's hash covers, picked from a row in AUDIT_COLUMNS order
_HASH = AUDIT_COLUMNS.index("hash")
_BODY_V1 = operator.itemgetter(*(AUDIT_COLUMNS.index(c) for c in AUDIT_BODY_V1))
_BODY_ADDED = operator.itemgetter(*(AUDIT_COLUMNS.index(c) for c in (*AUDIT_ADDED[:-3],
                                                                      "key_id")))


def _audit_body(values: Sequence[Any], layout: int | None) -> list[Any]:
    """What a record's hash covers: layout None (before schema 4) the first 17 columns;
    layout 4 the layout, those, and every column schema 4 added but the seal."""
    if len(values) != len(AUDIT_COLUMNS):
        raise ValueError(f"an audit row has {len(AUDIT_COLUMNS)} columns, not {len(values)}")
    if layout is None:
        return list(_BODY_V1(values))
    if layout != AUDIT_LAYOUT:
        raise ValueError(f"unknown audit record layout {layout}")
    return [layout, *_BODY_V1(values), *_BODY_ADDED(values)]


# the chain's head as SQL: its last record's hash, else that of the checkpoint that replaced
# the pruned ones, else "" (an empty chain)
CHAIN_HEAD = ("COALESCE((SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), "
              "(SELECT hash FROM audit_checkpoints ORDER BY seq DESC LIMIT 1), '')")


def chained(events: Sequence[AuditEvent], prev_hash: str, key: AuditKey | None
            ) -> tuple[list[tuple[Any, ...]], str]:
    """The events' audit rows chained one after the other from prev_hash, and the last hash."""
    values = []
    for event in events:
        row, prev_hash = audit_row(event, prev_hash, key)
        values.append(row)
    return values, prev_hash


def chain_hash(prev_hash: str, body: Sequence[Any]) -> str:
    return hashlib.sha256((prev_hash + json.dumps(list(body))).encode()).hexdigest()


def audit_row(e: AuditEvent, prev_hash: str, key: AuditKey | None = None
              ) -> tuple[tuple[Any, ...], str]:
    """The audit row for e chained after prev_hash, and its hash (sha256(prev_hash + body));
    sealed with key (HMAC of the hash) when there is one."""
    verdict = e.decision.verdict.value if e.decision else None
    values: list[Any] = [
        audit_time(e.time or now_utc()), e.kind, e.subject, e.tenant, e.run_id, e.turn_id,
        e.call_id, e.provider, e.tool, e.tool_version, e.arguments_summary_json,
        e.arguments_sha256, decision_to_json(e.decision), e.status.value if e.status else None,
        e.error_code, e.execution_count, e.policy_revision, prev_hash, "", verdict, e.actor,
        e.actor_tenant, e.approval_id, e.message, e.detail_json, AUDIT_LAYOUT,
        key.key_id if key else "", ""]
    values = list(storable(tuple(values)))
    digest = chain_hash(prev_hash, _audit_body(values, AUDIT_LAYOUT))
    values[_HASH] = digest
    values[-1] = key.seal(digest) if key else ""
    return tuple(values), digest


def audit_from_row(seq: int, values: Sequence[Any]) -> AuditRecord:
    return AuditRecord(seq, *values)


def recomputed_hash(r: AuditRecord) -> str:
    """The hash r's stored columns give (compare with r.hash)."""
    values = [getattr(r, c) for c in AUDIT_COLUMNS]
    return chain_hash(r.prev_hash, _audit_body(values, r.layout))


def audit_where(f: AuditFilter, mark: str) -> tuple[str, list[Any]]:
    """The conditions of an audit query (AND-ed; "1 = 1" when there are none)."""
    conds: list[str] = []
    args: list[Any] = []
    for column, value in (("run_id", f.run_id), ("call_id", f.call_id), ("tool", f.tool),
                          ("subject", f.subject)):
        if value:
            conds.append(f"{column} = {mark}")
            args.append(value)
    if f.tenant is not None:
        conds.append(f"tenant = {mark}")
        args.append(f.tenant)
    for column, values in (("verdict", [v.value for v in f.verdicts]),
                           ("status", [s.value for s in f.statuses])):
        if values:
            conds.append(f"{column} IN ({placeholders(values, mark)})")
            args.extend(values)
    for cond, value in ((f"time >= {mark}", f.since), (f"time < {mark}", f.until)):
        if value:
            conds.append(cond)
            args.append(value)
    return " AND ".join(conds) or "1 = 1", args
