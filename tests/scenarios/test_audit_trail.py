"""Every decision and execution leaves an audit record, redacted, hash-chained, with the
policy revision; read straight from the sidecar's store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

from gateway.arguments import canonical_sha256
from gateway.client import tool_call
from gateway.store import rows
from gateway.testing import SidecarProcess
from tests.conftest import Connect
from tests.scenarios.test_guide_cases import WEATHER


def audit(sidecar: SidecarProcess, run_id: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{sidecar.db}?mode=ro", uri=True)
    try:
        cols = ("seq", *rows.AUDIT_COLUMNS)
        found = conn.execute(f"SELECT {', '.join(cols)} FROM audit WHERE run_id = ? "
                             "ORDER BY seq", (run_id,)).fetchall()
        return [dict(zip(cols, r, strict=True)) for r in found]
    finally:
        conn.close()


def test_a_turn_is_audited_per_call(connect: Connect, run_id: str,
                                    sidecar: SidecarProcess) -> None:
    c = connect("writer-token")
    c.start_run(run_id=run_id)
    booking = {"train_number": "ICE123", "seat": "12A"}
    c.submit_calls(run_id, "t1", tool_call("r1", "get_weather", WEATHER),
                   tool_call("w1", "book_ticket", booking))
    recs = audit(sidecar, run_id)
    kinds = [(r["kind"], r["call_id"], r["status"]) for r in recs]
    assert ("decision", "r1", None) in kinds and ("decision", "w1", None) in kinds
    assert ("execution", "r1", "SUCCEEDED") in kinds and ("execution", "w1", "SUCCEEDED") in kinds
    w1 = next(r for r in recs if r["call_id"] == "w1" and r["kind"] == "execution")
    assert json.loads(w1["arguments_summary_json"]) == {"train_number": "ICE123", "seat": "***"}
    assert w1["arguments_sha256"] == canonical_sha256(booking)
    assert w1["policy_revision"].startswith("sha256:") and w1["subject"] == "walt"
    assert json.loads(w1["decision_json"])["verdict"] == "ALLOW"


def test_authorize_is_audited_and_the_chain_holds(connect: Connect,
                                                  sidecar: SidecarProcess) -> None:
    c = connect("alice-token")
    c.authorize(tool_call("auth-probe-1", "get_weather", WEATHER))
    conn = sqlite3.connect(f"file:{sidecar.db}?mode=ro", uri=True)
    try:
        chain = conn.execute(f"SELECT seq, {', '.join(rows.AUDIT_COLUMNS)} FROM audit "
                             "ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert any(r[2] == "authorize" and r[7] == "auth-probe-1" for r in chain)
    prev = ""
    for r in chain:
        body = list(r[1:-2])
        assert r[-2] == prev
        assert r[-1] == hashlib.sha256((prev + json.dumps(body)).encode()).hexdigest()
        prev = r[-1]
