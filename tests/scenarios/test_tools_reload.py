"""Changing `--tools` under a running sidecar: an edit taken, a broken manifest rejected while
the last good set keeps serving, SIGHUP, and the workers of `serve --workers`.

Each test runs its own sidecar over a copy of the example manifests and edits the files on
disk; the sidecar is observed over gRPC (Authorize decisions, GetStatus, the audit trail) and
through `callgate tools status`.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from gateway.tools import Registry
from tests.support.paths import AUTH, POLICIES, ROOT, sidecar_env
from tests.support.reloads import NOT_SERVING, SERVING, eventually, health, sidecar_over
from tests.support.scenarios import WEATHER
from tests.support.scrape import metrics_url, samples, scrape, value


def copy_tools(tmp_path: Path, tools_dir: Path) -> Path:
    target = tmp_path / "tools"
    shutil.copytree(tools_dir, target)
    return target


def weather(client: GatewayClient) -> pb.CallDecision:
    out = client.authorize(tool_call("w1", "get_weather", WEATHER))
    decision: pb.CallDecision = out.decisions[0]
    return decision


def narrow_city(tools: Path) -> None:
    """get_weather now takes city names of at most 3 characters ("Berlin" no longer fits)."""
    path = tools / "get_weather.yaml"
    path.write_text(path.read_text().replace("maxLength: 80", "maxLength: 3"))


def tools_status(target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "tools",
            "status",
            "--target",
            target,
            "--token",
            "alice-demo-token",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


def reloads(url: str, result: str) -> float:
    return value(samples(scrape(url)), "callgate_tools_reloads_total", result=result)


def tools_records(target: str) -> list[pb.AuditRecord]:
    with GatewayClient(target, "audrey-demo-token") as auditor:
        return [r for r in auditor.query_audit(tenant="", timeout_s=30) if r.kind == "tools"]


def test_an_edited_manifest_is_used_from_the_next_call_on(tmp_path: Path, tools_dir: Path) -> None:
    tools = copy_tools(tmp_path, tools_dir)
    with sidecar_over(tmp_path, tools, POLICIES) as (proc, client):
        first = client.get_status()
        assert first.tools_revision == Registry.load(tools).revision
        before = weather(client)
        assert before.decision.verdict == pb.VERDICT_ALLOW
        assert before.decision.tools_revision == first.tools_revision

        narrow_city(tools)
        after = eventually(
            lambda: d if (d := weather(client)).error.code else None,
            "the edited manifest to be used",
        )
        assert after.error.code == "invalid_arguments" and "/city" in after.error.message
        status = client.get_status()
        assert status.tools_revision == Registry.load(tools).revision != first.tools_revision
        assert status.tools_loaded_at > first.tools_loaded_at
        assert not status.HasField("last_rejected_tools_reload")
        shown = tools_status(proc.target)
        assert shown.returncode == 0, shown.stderr
        assert status.tools_revision in shown.stdout and "rejected" not in shown.stdout
        (record,) = eventually(
            lambda: r or None if (r := tools_records(proc.target)) else None,
            "the audit record of the new tool set",
        )
        assert record.error_code == "" and status.tools_revision in record.message
        with GatewayClient(proc.target, "audrey-demo-token") as auditor:
            judged = [
                r
                for r in auditor.query_audit(tenant="acme", timeout_s=30)
                if r.kind == "authorize" and r.decision.verdict == pb.VERDICT_ALLOW
            ]
        assert judged and {r.decision.tools_revision for r in judged} == {first.tools_revision}
        detail = json.loads(record.detail_json)
        assert (detail["tools_revision"], detail["previous"]) == (
            status.tools_revision,
            first.tools_revision,
        )


def test_a_broken_manifest_is_rejected_and_the_last_good_set_keeps_serving(
    tmp_path: Path, tools_dir: Path
) -> None:
    tools = copy_tools(tmp_path, tools_dir)
    metrics = ("--metrics-listen", "127.0.0.1:0")
    with sidecar_over(tmp_path, tools, POLICIES, *metrics) as (proc, client):
        url = metrics_url(proc)
        revision = client.get_status().tools_revision
        good = (tools / "get_weather.yaml").read_text()
        (tools / "get_weather.yaml").write_text(good.replace("effect: read", "effect: sometimes"))
        status = eventually(
            lambda: (
                s if (s := client.get_status()).HasField("last_rejected_tools_reload") else None
            ),
            "the rejection to be reported",
        )
        rejected = status.last_rejected_tools_reload
        assert rejected.file.endswith("get_weather.yaml") and rejected.at
        assert rejected.message.endswith(
            "get_weather.yaml: effect: Input should be 'read' or 'write'"
        )
        assert status.tools_revision == revision
        decision = weather(client)  # still the last good definition
        assert decision.decision.verdict == pb.VERDICT_ALLOW and not decision.error.code
        assert decision.decision.tools_revision == revision
        shown = tools_status(proc.target)
        assert shown.returncode == 1  # a deploy script can wait for the reload to take
        assert "rejected reload:" in shown.stdout and "get_weather.yaml" in shown.stdout
        assert "the newest --tools files were rejected (1 problem)" in shown.stderr
        assert proc.output.count("tools reload rejected") == 1  # logged once
        (record,) = eventually(
            lambda: (
                r or None
                if (
                    r := [
                        x
                        for x in tools_records(proc.target)
                        if x.error_code == "tools_reload_rejected"
                    ]
                )
                else None
            ),
            "the audit record of the rejection",
        )
        assert json.loads(record.detail_json)["file"].endswith("get_weather.yaml")
        assert json.loads(record.detail_json)["tools_revision"] == revision
        assert reloads(url, "rejected") == 1
        eventually(
            lambda: True if health(proc.target, "callgate.tools.reload") == NOT_SERVING else None,
            "the reload component to say so",
        )
        assert health(proc.target, "") == SERVING

        # a YAML syntax error says its line
        (tools / "get_weather.yaml").write_text(good.replace("effect: read", "effect: [read"))
        status = eventually(
            lambda: (
                s
                if "line" in (s := client.get_status()).last_rejected_tools_reload.message
                else None
            ),
            "the YAML error",
        )
        assert status.last_rejected_tools_reload.line > 0

        (tools / "get_weather.yaml").write_text(good)
        eventually(
            lambda: (
                True if not client.get_status().HasField("last_rejected_tools_reload") else None
            ),
            "the rejection to clear",
        )
        assert client.get_status().tools_revision == revision
        assert tools_status(proc.target).returncode == 0
        assert reloads(url, "unchanged") == 1 and reloads(url, "rejected") == 2
        assert reloads(url, "installed") == 0
        eventually(
            lambda: True if health(proc.target, "callgate.tools.reload") == SERVING else None,
            "the reload component to recover",
        )


def test_sighup_reloads_the_tools_at_once(tmp_path: Path, tools_dir: Path) -> None:
    tools = copy_tools(tmp_path, tools_dir)
    with sidecar_over(tmp_path, tools, POLICIES, "--tools-poll-interval", "0") as (proc, client):
        revision = client.get_status().tools_revision
        narrow_city(tools)
        assert client.get_status().tools_revision == revision  # no scans: nothing yet
        proc.proc.send_signal(signal.SIGHUP)
        eventually(
            lambda: True if client.get_status().tools_revision != revision else None,
            "SIGHUP to reload the tools",
        )
        assert weather(client).error.code == "invalid_arguments"


def test_each_worker_reloads_the_tools(tmp_path: Path, tools_dir: Path) -> None:
    tools = copy_tools(tmp_path, tools_dir)
    with SidecarProcess(
        tools=tools, policies=POLICIES, db=tmp_path / "cg.db", auth=AUTH, workers=2
    ) as proc:
        revision = Registry.load(tools).revision
        narrow_city(tools)
        wanted = Registry.load(tools).revision
        assert wanted != revision

        def all_new() -> bool | None:
            # new connections are spread over the workers: ask on several, all must agree
            for _ in range(8):
                with GatewayClient(proc.target, "alice-demo-token") as client:
                    if client.get_status().tools_revision != wanted:
                        return None
            return True

        eventually(all_new, "every worker to serve the new tools")


def test_a_pending_approval_for_a_tool_a_reload_removed_is_rejected_not_run(
    tmp_path: Path,
    tools_dir: Path,
    travel: TravelService,
    effects_db: Path,
    workshop: WorkshopService,
) -> None:
    tools = copy_tools(tmp_path, tools_dir)
    env = sidecar_env(travel, effects_db, workshop)
    with (
        SidecarProcess(
            tools=tools, policies=POLICIES, db=tmp_path / "cg.db", auth=AUTH, env=env
        ) as proc,
        GatewayClient(proc.target, "mia-demo-token") as loop,
        GatewayClient(proc.target, "olga-demo-token") as owner,
    ):
        run_id = "reload-apr-1"
        loop.start_run(run_id=run_id)
        seats = {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}
        outcome = loop.submit_calls(run_id, "t1", tool_call("w1", "reserve_seat", seats))
        (paused,) = outcome.results
        assert paused.status == pb.CALL_STATUS_PENDING_APPROVAL
        revision = loop.get_status().tools_revision
        (tools / "reserve_seat.yaml").unlink()
        eventually(
            lambda: True if loop.get_status().tools_revision != revision else None,
            "the reload without reserve_seat",
        )
        answer = owner.decide_approval(paused.approval_id, approve=True, reason="fine")
        assert answer.result.status == pb.CALL_STATUS_REJECTED
        assert answer.result.error.code == "unknown_tool"
        assert answer.result.execution_count == 0
        assert workshop.reservations(f"{run_id}:w1") == []
        assert "reserve_seat" not in loop.get_status().tools
