"""A real sidecar deciding through OPA (--engine opa) and comparing with it (--engine shadow).

OPA is the stand-in of tests/support/opa.py (regorus behind OPA's REST API), so these check
the sidecar's side: pushing, decisions and their revisions, failing closed, health, shadow
counts, audit records and `callgate policy status`. The same decisions against a real OPA run
in tests/gateway/policy/test_default_policy.py when one is present.
"""

from __future__ import annotations

import http.client
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.policy import load_bundle
from tests.support.opa import FakeOpa
from tests.support.paths import POLICIES, ROOT
from tests.support.reloads import (
    NOT_SERVING,
    SERVING,
    eventually,
    health,
    sidecar_over,
    weather_decision,
)
from tests.support.scenarios import WEATHER

ALLOW = "ALLOW"


def verdict_name(decision: pb.Decision) -> str:
    return pb.Verdict.Name(decision.verdict).removeprefix("VERDICT_")


def test_opa_decides_with_the_pushed_revision_and_fails_closed_while_down(
    tmp_path: Path, tools_dir: Path
) -> None:
    with (
        FakeOpa() as opa,
        sidecar_over(
            tmp_path,
            tools_dir,
            POLICIES,
            "--engine",
            "opa",
            "--opa-url",
            opa.url,
            "--opa-timeout",
            "2",
        ) as (proc, client),
    ):
        assert "callgate/callgate.rego" in opa.policies  # pushed at start
        decision = weather_decision(client)
        assert verdict_name(decision) == ALLOW
        assert decision.policy_revision == load_bundle(POLICIES).revision
        status = client.get_status()
        assert status.engine == "opa" and status.policy_revision == decision.policy_revision

        opa.stop()
        denied = client.authorize(tool_call("w1", "get_weather", WEATHER))
        assert verdict_name(denied.decisions[0].decision) == "DENY"
        assert denied.decisions[0].error.code == "policy_error"
        assert "unreachable" in denied.decisions[0].error.message
        eventually(
            lambda: health(proc.target, "callgate.policy") == NOT_SERVING or None,
            "callgate.policy NOT_SERVING while OPA is down",
        )
        opa.start()
        eventually(
            lambda: health(proc.target, "callgate.policy") == SERVING or None,
            "callgate.policy SERVING once OPA is back",
        )
        assert verdict_name(weather_decision(client)) == ALLOW


def test_shadow_mode_counts_and_records_disagreements(tmp_path: Path, tools_dir: Path) -> None:
    opa_policies = tmp_path / "opa-policies"
    shutil.copytree(POLICIES, opa_policies)
    rego = opa_policies / "callgate.rego"
    rego.write_text(
        rego.read_text() + '\ndeny contains "OPA says no weather" if '
        'input.call.tool == "get_weather"\n'
    )
    with FakeOpa() as opa:
        _load(opa, opa_policies)
        with sidecar_over(
            tmp_path,
            tools_dir,
            POLICIES,
            "--engine",
            "shadow",
            "--opa-url",
            opa.url,
            "--opa-policies",
            "external",
        ) as (proc, client):
            assert verdict_name(weather_decision(client)) == ALLOW  # embedded decided
            status = eventually(lambda: _with_disagreement(client), "a shadow disagreement")
            assert status.engine == "shadow" and status.shadow.opa_reachable
            assert status.shadow.dropped == 0 and status.shadow.failed == 0
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "gateway.cli",
                    "policy",
                    "status",
                    "--target",
                    proc.target,
                    "--token",
                    "alice-demo-token",
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            assert f"{status.shadow.disagreed} disagreed" in out.stdout
            assert health(proc.target, "callgate.policy.shadow") == SERVING
    rows = (
        sqlite3.connect(tmp_path / "cg.db")
        .execute(
            "SELECT subject, tool, error_code, policy_revision, arguments_summary_json FROM audit "
            "WHERE kind = 'shadow'"
        )
        .fetchall()
    )
    assert rows, "no shadow audit record"
    subject, tool, code, revision, summary = rows[0]
    assert (subject, tool, code) == ("alice", "get_weather", "shadow_disagreement")
    assert revision == load_bundle(POLICIES).revision
    found = json.loads(summary)
    assert found["embedded"]["verdict"] == "ALLOW" and found["opa"]["verdict"] == "DENY"
    assert "OPA says no weather" in found["opa"]["reasons"] and found["input_sha256"]


def _with_disagreement(client: GatewayClient) -> pb.Status | None:
    status = client.get_status()
    return status if status.shadow.disagreed >= 1 else None


def _load(opa: FakeOpa, directory: Path) -> None:
    """Put a policy directory on the stand-in as a team's own bundle would."""
    bundle = load_bundle(directory)
    host, port = opa.url.removeprefix("http://").split(":")
    for path, body in [
        *(("/v1/data/" + k, json.dumps(v)) for k, v in bundle.data.items()),
        *(("/v1/policies/team/" + rel, text) for rel, text in bundle.sources.items()),
    ]:
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("PUT", path, body=body)
        assert conn.getresponse().status in (200, 204), path
        conn.close()
    opa.bundles = {"team": "team-rev-7"}
