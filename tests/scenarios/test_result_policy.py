"""Policy over results through a real sidecar: a real HTTP tool answers a secret; the default
bundle's `result` rule redacts it, a rule of the test's own withholds a result, and a failing
evaluation withholds too. Each is checked on every provider's next-request shape, on GetRun,
and the secret is absent from the store file, the audit rows and the sidecar's output."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gateway import pb
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH, POLICIES
from tests.support.provider_turns import submit_raw
from tests.support.wire_responses import PROVIDERS, WIRES, Call

SECRET_MAIL = "vault.owner@example.com"
SECRET_KEY = "sk-proj-Zq8v3Lr9Tx2Wm5Kp7Hn4Jd6Fg1"
ANSWER = {"owner": SECRET_MAIL, "api_key": SECRET_KEY, "train": "ICE123", "seats": 3}
SECRETS = (SECRET_MAIL, SECRET_KEY)
WRITE_ANSWER = {"booked": True, "contact": "desk@example.org"}  # writes are not redacted
TOKEN = "walt-demo-token"  # tester: every tool; trusted_writer: writes need no approval

# the default rule, plus: read_vault is withheld, read_broken's evaluation fails
EXTRA_RULES = """
result := {"deliver": false, "reasons": ["vault contents stay with the operator"]} if {
	input.tool.name == "read_vault"
}

result := {"deliver": to_number("not a number") > 0} if input.tool.name == "read_broken"
"""


class _Secretive(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the http.server hook's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(WRITE_ANSWER if self.path.endswith("/write_account") else ANSWER).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def secret_service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Secretive)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(10)
    server.server_close()


def _manifest(name: str, effect: str, url: str) -> str:
    return json.dumps(
        {
            "name": name,
            "version": "1",
            "effect": effect,
            "description": f"{name} (a test tool answering a secret)",
            "input_schema": {"type": "object"},
            "executor": {"type": "http", "url": f"{url}/{name}", "timeout_s": 5},
        }
    )


@pytest.fixture(scope="module")
def secret_sidecar(
    tmp_path_factory: pytest.TempPathFactory, secret_service: str
) -> Iterator[SidecarProcess]:
    root = tmp_path_factory.mktemp("results")
    tools = root / "tools"
    tools.mkdir()
    for name, effect in [
        ("read_account", "read"),
        ("read_vault", "read"),
        ("read_broken", "read"),
        ("write_account", "write"),
    ]:
        (tools / f"{name}.yaml").write_text(_manifest(name, effect, secret_service))
    policies = root / "policies"
    shutil.copytree(POLICIES, policies)
    rules = (policies / "results.rego").read_text()
    rules = rules.replace(
        '\tinput.tool.effect == "read"\n',
        '\tinput.tool.effect == "read"\n\tnot input.tool.name in {"read_vault", "read_broken"}\n',
        1,
    )
    (policies / "results.rego").write_text(rules + EXTRA_RULES)
    with SidecarProcess(tools=tools, policies=policies, db=root / "callgate.db", auth=AUTH) as proc:
        yield proc


def _turn(
    sidecar: SidecarProcess, provider: str, run_id: str, tool: str
) -> tuple[pb.TurnOutcome, str]:
    wire = WIRES[provider]
    with sidecar.client(TOKEN, timeout_s=30) as c:
        c.start_run(
            run_id=run_id,
            provider=provider,
            conversation_json=json.dumps([wire.user("Look it up.")]),
        )
        extra = {} if wire.has_ids else {"turn_id": f"turn-{run_id}"}
        out = submit_raw(
            c, run_id, wire.calls(f"resp-{run_id}", [Call("call_1", tool, {})]), **extra
        )
        run = c.get_run(run_id)
    return out, json.dumps(json.loads(run.conversation_json)) + str(run)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_read_is_redacted_on_every_provider_shape(
    secret_sidecar: SidecarProcess, provider: str
) -> None:
    run_id = f"redact-{provider}"
    out, seen_later = _turn(secret_sidecar, provider, run_id, "read_account")
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_SUCCEEDED and res.error.code == ""
    assert json.loads(res.output_json) == {**ANSWER, "owner": "[redacted]", "api_key": "[redacted]"}
    assert "[redacted]" in out.provider_input_json and "ICE123" in out.provider_input_json
    for secret in SECRETS:
        assert secret not in out.provider_input_json and secret not in seen_later


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_withheld_read_reaches_the_model_as_an_error(
    secret_sidecar: SidecarProcess, provider: str
) -> None:
    out, seen_later = _turn(secret_sidecar, provider, f"withhold-{provider}", "read_vault")
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_SUCCEEDED  # it ran; its result is what is held back
    assert res.error.code == "result_withheld"
    assert "vault contents stay with the operator" in res.error.message
    assert "result_withheld" in out.provider_input_json
    assert "vault contents stay with the operator" in out.provider_input_json
    for text in (*SECRETS, "ICE123"):
        assert text not in out.provider_input_json and text not in seen_later


def test_a_failing_result_rule_withholds(secret_sidecar: SidecarProcess) -> None:
    out, _ = _turn(secret_sidecar, "openai.responses", "broken-rule", "read_broken")
    (res,) = out.results
    assert res.error.code == "result_withheld" and "policy_error" in res.error.message
    assert "ICE123" not in out.provider_input_json


def test_a_write_is_delivered_as_is(secret_sidecar: SidecarProcess) -> None:
    out, _ = _turn(secret_sidecar, "anthropic.messages", "write-as-is", "write_account")
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_SUCCEEDED and json.loads(res.output_json) == WRITE_ANSWER


def test_nothing_redacted_is_kept_in_the_store_audit_or_logs(
    secret_sidecar: SidecarProcess,
) -> None:
    out, _ = _turn(secret_sidecar, "openai.chat_completions", "kept-nowhere", "read_account")
    assert out.results[0].output_json
    db = Path(str(secret_sidecar.db))
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT output_json FROM calls WHERE run_id = ?", ("kept-nowhere",)
        ).fetchall()
        audit = json.dumps(
            conn.execute("SELECT * FROM audit WHERE run_id = ?", ("kept-nowhere",)).fetchall()
        )
    assert rows and "[redacted]" in rows[0][0]
    assert '\\"delivery\\"' in audit and '\\"/owner\\"' in audit
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    text = secret_sidecar.output
    for secret in SECRETS:
        assert secret not in rows[0][0] and secret not in audit
        assert secret.encode() not in raw, "a redacted value is in the store's files"
        assert secret not in text, "a redacted value is in the sidecar's output"
