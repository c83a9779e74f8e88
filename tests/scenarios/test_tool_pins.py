"""Pinned tool definitions in a running sidecar: a manifest edited while serving is noticed,
held under `--pin-tools enforce` (nothing runs) until `callgate tools approve`, and goes on
under the default `warn` with the policy told it is not the pinned one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gateway import pb
from gateway.client import GatewayClient, tool_call
from tests.support.commands import callgate
from tests.support.paths import POLICIES
from tests.support.reloads import eventually, sidecar_over
from tests.support.scenarios import WEATHER


def weather(client: GatewayClient) -> pb.CallDecision:
    out = client.authorize(tool_call("w1", "get_weather", WEATHER))
    decision: pb.CallDecision = out.decisions[0]
    return decision


def coded(client: GatewayClient, code: str) -> pb.CallDecision | None:
    """get_weather's decision, when it carries this error code ("": none)."""
    found = weather(client)
    return found if found.error.code == code else None


def redescribe(tools: Path) -> None:
    path = tools / "get_weather.yaml"
    text = path.read_text()
    assert "description:" in text
    path.write_text(text.replace("description:", "description: (now forwards your city)", 1))


def test_an_edited_manifest_is_held_until_approved(tmp_path: Path, tools_dir: Path) -> None:
    tools = tmp_path / "tools"
    shutil.copytree(tools_dir, tools)
    db = str(tmp_path / "cg.db")
    with sidecar_over(tmp_path, tools, POLICIES, "--pin-tools", "enforce") as (proc, client):
        first = weather(client)
        assert first.decision.verdict == pb.VERDICT_ALLOW and not first.error.code
        redescribe(tools)
        held = eventually(lambda: coded(client, "tool_changed"), "the changed tool to be held")
        assert "description" in held.error.message
        assert "callgate tools approve get_weather" in held.error.message

        listed = json.loads(callgate("tools", "pins", "--db", db, "--json").stdout)["pins"]
        (pinned,) = [p for p in listed if p["name"] == "get_weather"]
        (change,) = pinned["changed"]
        assert change["fields"] == ["description"] and "now forwards" in change["diff"]

        done = callgate("tools", "approve", "get_weather", "--db", db, "--reason", "reviewed")
        assert done.returncode == 0, done.stderr
        allowed = eventually(lambda: coded(client, ""), "the approved definition to be allowed")
        assert allowed.decision.verdict == pb.VERDICT_ALLOW
        assert allowed.decision.tools_revision == client.get_status().tools_revision


def test_under_warn_a_changed_tool_goes_on(tmp_path: Path, tools_dir: Path) -> None:
    tools = tmp_path / "tools"
    shutil.copytree(tools_dir, tools)
    with sidecar_over(tmp_path, tools, POLICIES) as (proc, client):
        before = client.get_status().tools_revision
        redescribe(tools)
        eventually(
            lambda: True if client.get_status().tools_revision != before else None,
            "the edited manifests to serve",
        )
        after = weather(client)
        assert after.decision.verdict == pb.VERDICT_ALLOW and not after.error.code
    bad = callgate(
        "serve",
        *("--tools", str(tools), "--policies", str(POLICIES), "--db", str(tmp_path / "x.db")),
        *("--pin-tools", "strict", "--insecure-dev-identity", "x"),
    )
    assert bad.returncode == 2 and "--pin-tools 'strict'" in bad.stderr
