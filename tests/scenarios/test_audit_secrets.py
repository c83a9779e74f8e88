"""No secret in clear: masked arguments (pointers and credential-looking values) with keyed
digests an investigator holding the key can check; a tool's stored arguments masked once the
call is done, without breaking the approval re-check or the execution; nothing from the
request metadata and no model reasoning anywhere but where the provider requires it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from gateway import pb
from gateway.arguments import canonical_sha256
from gateway.audit.keys import AuditKey
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from tests.support.audit import records
from tests.support.effects import effects
from tests.support.paths import Connect
from tests.support.provider_turns import submit_raw
from tests.support.scenarios import WEATHER

EMAIL, CARD, TOKEN = "pat@example.com", "4111111111111111", "sk-live-4fJq9TzW2bXcV7nM3kLp"
META = "meta-secret-4242"
PAYMENT = {
    "invoice": "INV-7",
    "payer": {"email": EMAIL},
    "cards": [{"number": CARD, "holder": "Pat"}],
    "api_token": TOKEN,
}


def dump(db: Path | str, tables: tuple[str, ...] = ()) -> dict[str, str]:
    """Every row of every table (or of `tables`) of the sidecar's SQLite store, as text."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = tables or tuple(
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        return {t: "\n".join(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in names}
    finally:
        conn.close()


def holding(db: Path | str, secret: str) -> list[str]:
    return sorted(t for t, text in dump(db).items() if secret in text)


def with_metadata(sidecar: SidecarProcess, token: str) -> GatewayClient:
    return GatewayClient(sidecar.target, token, metadata=[("x-request-secret", META)])


def key_of(sidecar: SidecarProcess) -> Path:
    return Path(f"{sidecar.db}-audit.key")


def test_a_paid_invoice_leaves_no_secret_in_the_store(
    connect: Connect, run_id: str, sidecar: SidecarProcess, effects_db: Path
) -> None:
    tina, olga = with_metadata(sidecar, "tina-demo-token"), connect("olga-demo-token")
    tina.start_run(run_id=run_id)
    out = tina.submit_calls(run_id, "t1", tool_call("w1", "pay_invoice", PAYMENT))
    (waiting,) = out.results
    # the approver sees exactly what they approve
    (pending,) = olga.list_approvals(run_id=run_id).approvals
    assert json.loads(pending.arguments_json) == PAYMENT
    olga.decide_approval(waiting.approval_id, approve=True, reason="invoice checked")
    # the re-check passed (the hash recomputed from the stored arguments) and the tool got the
    # real values
    (call,) = tina.get_run(run_id).calls
    assert call.status == pb.CALL_STATUS_SUCCEEDED and call.execution_count == 1
    (effect,) = effects(effects_db, f"{run_id}:w1")
    assert json.loads(effect[2]) == PAYMENT
    # once done, the call record and the approval keep masked arguments, the same hash
    key = AuditKey.load(key_of(sidecar))
    kept = json.loads(call.arguments_json)
    assert kept["payer"]["email"] == key.mask(EMAIL) and kept["api_token"] == key.mask(TOKEN)
    assert kept["cards"][0] == {"number": key.mask(CARD), "holder": "Pat"}
    assert call.arguments_sha256 == canonical_sha256(PAYMENT)
    (approval,) = olga.list_approvals(run_id=run_id, status=[]).approvals
    assert json.loads(approval.arguments_json) == kept
    for secret in (EMAIL, CARD, TOKEN, META, "tina-demo-token", "olga-demo-token"):
        assert holding(sidecar.db, secret) == [], secret
    # the trail: masks an investigator with the key can check, keyed digests
    trail = records(connect("audrey-demo-token"), run_id=run_id)
    assert {r.kind for r in trail} == {"decision", "approval", "execution"}
    for r in trail:
        assert json.loads(r.arguments_summary_json) == kept
        assert r.arguments_sha256 == key.keyed(call.arguments_sha256)
        assert not r.input_sha256 or r.input_sha256.startswith("hmac-sha256:")
    plain = hashlib.sha256(json.dumps(EMAIL).encode()).hexdigest()
    assert holding(sidecar.db, plain) == []  # nothing to brute-force without the key


def test_an_investigator_with_the_key_checks_a_known_value(
    connect: Connect, run_id: str, sidecar: SidecarProcess, tmp_path: Path
) -> None:
    tina = connect("tina-demo-token")
    tina.start_run(run_id=run_id)
    tina.submit_calls(run_id, "t1", tool_call("w1", "pay_invoice", PAYMENT))
    (rec,) = [r for r in records(tina, run_id=run_id) if r.kind == "decision"]
    mask = json.loads(rec.arguments_summary_json)["payer"]["email"]

    def check(key: Path, value: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "gateway.cli",
                "audit",
                "check-value",
                "--audit-key-file",
                str(key),
                value,
                "--mask",
                mask,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = check(key_of(sidecar), EMAIL)
    assert done.returncode == 0 and "matches" in done.stdout
    done = check(key_of(sidecar), "someone@example.com")
    assert done.returncode == 1 and "does not match" in done.stdout
    other = tmp_path / "other.key"
    AuditKey.write_new(other, b"k" * 32)
    done = check(other, EMAIL)  # another key cannot confirm it
    assert done.returncode == 1 and "does not match" in done.stdout


def test_a_masked_value_quoted_by_an_error_is_masked_there_too(
    connect: Connect, run_id: str, sidecar: SidecarProcess
) -> None:
    tina = connect("tina-demo-token")
    tina.start_run(run_id=run_id)
    bad = {**PAYMENT, "cards": [{"number": "9999-8888"}]}  # fails the schema's pattern
    (res,) = tina.submit_calls(run_id, "t1", tool_call("w1", "pay_invoice", bad)).results
    assert res.error.code == "invalid_arguments"
    (rec,) = records(tina, run_id=run_id)
    assert "does not match" in rec.message and "redacted:hmac-sha256:" in rec.message
    assert holding(sidecar.db, "9999-8888") == []  # nor in the (rejected, so done) call


def test_reasoning_stays_in_the_raw_response_the_provider_needs(
    connect: Connect, run_id: str, sidecar: SidecarProcess
) -> None:
    thought = "REASONING-7f3a: the user seems to want Berlin weather"
    alice = with_metadata(sidecar, "alice-demo-token")
    alice.start_run(run_id=run_id, provider="anthropic.messages")
    response: dict[str, Any] = {
        "id": f"msg_{run_id}",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": thought, "signature": "c2lnbmF0dXJl"},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": WEATHER},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    out = submit_raw(alice, run_id, response)
    assert out.results[0].status == pb.CALL_STATUS_SUCCEEDED
    # kept only with the turn's raw response, which the next request must echo
    assert holding(sidecar.db, thought) == ["turns"]
    conn = sqlite3.connect(f"file:{sidecar.db}?mode=ro", uri=True)
    (raw,) = conn.execute(
        "SELECT raw_response_json FROM turns WHERE run_id = ?", (run_id,)
    ).fetchone()
    conn.close()
    assert thought in raw
    assert holding(sidecar.db, META) == []
    assert all(thought not in str(r) for r in records(alice, run_id=run_id))
    assert thought not in sidecar.output  # nor in the log
