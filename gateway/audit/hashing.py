"""The audit chain's hashes: which columns each record layout covers, and how a record's hash
follows from its predecessor's (sha256 over the previous hash and the record's body).

The audit columns are listed in the order of `AuditRecord` (after seq): the 17 of the first
layout, the chain (prev_hash, hash), then what layout 4 added. The stores write them in this
order; `callgate audit verify` recomputes each hash from them."""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Sequence
from typing import Any

from gateway.audit.records import AuditRecord

# The audit columns in the order of AuditRecord (after seq): the 17 of the first layout, the
# chain (prev_hash, hash), then what schema 4 added.
AUDIT_BODY_V1 = (
    "time",
    "kind",
    "subject",
    "tenant",
    "run_id",
    "turn_id",
    "call_id",
    "provider",
    "tool",
    "tool_version",
    "arguments_summary_json",
    "arguments_sha256",
    "decision_json",
    "status",
    "error_code",
    "execution_count",
    "policy_revision",
)


AUDIT_ADDED = (
    "verdict",
    "actor",
    "actor_tenant",
    "approval_id",
    "message",
    "detail_json",
    "layout",
    "key_id",
    "seal",
)


AUDIT_COLUMNS = (*AUDIT_BODY_V1, "prev_hash", "hash", *AUDIT_ADDED)


AUDIT_LAYOUT = 4  # the layout of records written now


# the columns each layout's hash covers, picked from a row in AUDIT_COLUMNS order
HASH_COLUMN = AUDIT_COLUMNS.index("hash")


BODY_V1 = operator.itemgetter(*(AUDIT_COLUMNS.index(c) for c in AUDIT_BODY_V1))


BODY_ADDED = operator.itemgetter(*(AUDIT_COLUMNS.index(c) for c in (*AUDIT_ADDED[:-3], "key_id")))


def hashed_body(values: Sequence[Any], layout: int | None) -> list[Any]:
    """What a record's hash covers: layout None (before schema 4) the first 17 columns;
    layout 4 the layout, those, and every column schema 4 added but the seal."""
    if len(values) != len(AUDIT_COLUMNS):
        raise ValueError(f"an audit row has {len(AUDIT_COLUMNS)} columns, not {len(values)}")
    if layout is None:
        return list(BODY_V1(values))
    if layout != AUDIT_LAYOUT:
        raise ValueError(f"unknown audit record layout {layout}")
    return [layout, *BODY_V1(values), *BODY_ADDED(values)]


def chain_hash(prev_hash: str, body: Sequence[Any]) -> str:
    return hashlib.sha256((prev_hash + json.dumps(list(body))).encode()).hexdigest()


def recomputed_hash(r: AuditRecord) -> str:
    """The hash r's stored columns give (compare with r.hash)."""
    values = [getattr(r, c) for c in AUDIT_COLUMNS]
    return chain_hash(r.prev_hash, hashed_body(values, r.layout))
