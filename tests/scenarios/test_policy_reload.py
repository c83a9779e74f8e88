"""Changing policy under a running sidecar: edits, broken files, SIGHUP, a reload during a burst.

Each test runs its own sidecar over a copy of a policy directory and changes the files on disk;
the sidecar is observed over gRPC only (Authorize decisions, GetStatus, health).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.policy import load_bundle
from gateway.testing import run_serve_expecting_failure
from tests.support.paths import AUTH, POLICIES, ROOT
from tests.support.reloads import (
    NOT_SERVING,
    SERVING,
    eventually,
    health,
    sidecar_over,
    weather_decision,
)
from tests.support.scenarios import WEATHER


def copy_policies(tmp_path: Path) -> Path:
    target = tmp_path / "policies"
    shutil.copytree(POLICIES, target)
    return target


BLOCK_WEATHER = (
    'package callgate\n\ndeny contains "weather is blocked today" if '
    'input.call.tool == "get_weather"\n'
)


def test_an_edit_changes_the_next_decision_and_the_revision(
    tmp_path: Path, tools_dir: Path
) -> None:
    policies = copy_policies(tmp_path)
    with sidecar_over(tmp_path, tools_dir, policies) as (_, client):
        before = weather_decision(client)
        assert before.verdict == pb.VERDICT_ALLOW
        (policies / "block.rego").write_text(BLOCK_WEATHER)
        after = eventually(
            lambda: d if (d := weather_decision(client)).verdict == pb.VERDICT_DENY else None,
            "the edit to take effect",
        )
        assert list(after.reasons) == ["weather is blocked today"]
        assert after.policy_revision == load_bundle(policies).revision
        assert after.policy_revision != before.policy_revision
        status = client.get_status()
        assert status.policy_revision == after.policy_revision
        assert not status.HasField("last_rejected_reload")


def test_a_syntax_error_is_rejected_and_the_old_revision_keeps_serving(
    tmp_path: Path, tools_dir: Path
) -> None:
    policies = copy_policies(tmp_path)
    with sidecar_over(tmp_path, tools_dir, policies) as (proc, client):
        revision = client.get_status().policy_revision
        (policies / "broken.rego").write_text("package callgate\n\nbroken if {\n  input.x ==\n}\n")
        status = eventually(
            lambda: s if (s := client.get_status()).HasField("last_rejected_reload") else None,
            "the rejection to be reported",
        )
        rejected = status.last_rejected_reload
        assert rejected.file.endswith("broken.rego") and rejected.line == 5
        assert "expecting expression" in rejected.message and rejected.at
        assert status.policy_revision == revision
        decision = weather_decision(client)
        assert (decision.verdict, decision.policy_revision) == (pb.VERDICT_ALLOW, revision)
        eventually(
            lambda: True if health(proc.target, "callgate.policy.reload") == NOT_SERVING else None,
            "the reload component to say so",
        )
        assert health(proc.target, "callgate.policy") == SERVING
        assert health(proc.target, "") == SERVING
        shown = subprocess.run(
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
        assert shown.returncode == 1  # a deploy script can wait for the reload to take
        assert "rejected reload:" in shown.stdout and "broken.rego:5:1:" in shown.stdout
        assert shown.stdout.count("broken.rego") == 1  # the place, once
        assert "the newest policy files were rejected (1 problem" in shown.stderr
        assert proc.output.count("policy reload rejected") == 1  # logged once
        # and recorded once in the audit trail, among callgate's own records
        with GatewayClient(proc.target, "audrey-demo-token") as auditor:
            found = eventually(
                lambda: (
                    r
                    if (
                        r := [
                            x
                            for x in auditor.query_audit(tenant="", timeout_s=30)
                            if x.error_code == "policy_reload_rejected"
                        ]
                    )
                    else None
                ),
                "the audit record of the rejection",
            )
        (record,) = found
        assert (record.kind, record.policy_revision, record.actor) == ("policy", revision, "")
        assert json.loads(record.detail_json)["file"].endswith("broken.rego")
        assert json.loads(record.detail_json)["line"] == 5
        assert "expecting expression" in record.message

        (policies / "broken.rego").unlink()
        eventually(
            lambda: True if not client.get_status().HasField("last_rejected_reload") else None,
            "the rejection to clear",
        )
        fixed = subprocess.run(
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
        assert fixed.returncode == 0 and "rejected reload" not in fixed.stdout
        eventually(
            lambda: True if health(proc.target, "callgate.policy.reload") == SERVING else None,
            "the reload component to recover",
        )
        assert client.get_status().policy_revision == revision


def test_every_problem_is_reported_once_and_at_its_place(tmp_path: Path, tools_dir: Path) -> None:
    policies = copy_policies(tmp_path)
    with sidecar_over(tmp_path, tools_dir, policies) as (proc, client):
        # an unclosed brace (the parser gives up at the end of the file) and a second problem
        (policies / "a.rego").write_text(
            "package callgate\n\nfoo if {\n\tinput.x == 1\n\nbar := 2\n"
        )
        (policies / "b.rego").write_text("package callgate\n\nx if {\n\ty := \n}\n")
        status = eventually(
            lambda: (
                s
                if (s := client.get_status()).HasField("last_rejected_reload")
                and len(s.last_rejected_reload.problems) == 2
                else None
            ),
            "both problems to be reported",
        )
        rejected = status.last_rejected_reload
        assert (Path(rejected.file).name, rejected.line, rejected.column) == ("a.rego", 3, 8)
        assert [(Path(p.file).name, p.line) for p in rejected.problems] == [
            ("a.rego", 3),
            ("b.rego", 4),
        ]
        assert rejected.message.endswith(
            "this { is never closed: the file ends (line 7) before its }"
        )
        shown = subprocess.run(
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
        assert shown.returncode == 1
        lines = shown.stdout.splitlines()
        at = lines.index(next(line for line in lines if line.startswith("rejected reload:")))
        assert [line.split(":")[0].rsplit("/", 1)[-1] for line in lines[at + 1 :]] == [
            "a.rego",
            "b.rego",
        ]
        assert "more problem" not in shown.stdout
        assert "2 problems, listed above" in shown.stderr
        assert "problem 2 of 2" in eventually(
            lambda: proc.output if "problem 2 of 2" in proc.output else None, "the log"
        )
        with GatewayClient(proc.target, "audrey-demo-token") as auditor:
            (record,) = eventually(
                lambda: (
                    r
                    if (
                        r := [
                            x
                            for x in auditor.query_audit(tenant="", timeout_s=30)
                            if x.error_code == "policy_reload_rejected"
                        ]
                    )
                    else None
                ),
                "the audit record of the rejection",
            )
        detail = json.loads(record.detail_json)
        assert (Path(detail["file"]).name, detail["line"], detail["column"]) == ("a.rego", 3, 8)
        assert [Path(p["file"]).name for p in detail["problems"]] == ["a.rego", "b.rego"]
        table = subprocess.run(
            [
                sys.executable,
                "-m",
                "gateway.cli",
                "audit",
                "--callgate",
                "--wide",
                "--target",
                proc.target,
                "--token",
                "audrey-demo-token",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        ).stdout
        (row,) = [line for line in table.splitlines() if "policy_reload_rejected" in line]
        assert "a.rego:3:8: this { is never closed" in row and "(and 1 more: --json" in row


def test_removing_decision_is_rejected(tmp_path: Path, tools_dir: Path) -> None:
    policies = copy_policies(tmp_path)
    main = policies / "callgate.rego"
    with sidecar_over(tmp_path, tools_dir, policies) as (_, client):
        revision = client.get_status().policy_revision
        main.write_text(
            main.read_text()
            .replace("decision :=", "old_decision :=")
            .replace("default decision", "default old_decision")
        )
        status = eventually(
            lambda: s if (s := client.get_status()).HasField("last_rejected_reload") else None,
            "the rejection",
        )
        assert "data.callgate.decision is not defined" in status.last_rejected_reload.message
        assert weather_decision(client).policy_revision == revision


def test_deleting_a_data_file_reloads(tmp_path: Path, tools_dir: Path) -> None:
    policies = copy_policies(tmp_path)
    (policies / "blocklist").mkdir()
    (policies / "blocklist" / "data.json").write_text(json.dumps({"tools": ["get_weather"]}))
    (policies / "blocklist.rego").write_text(
        'package callgate\n\ndeny contains "blocked by the list" if '
        "input.call.tool in data.blocklist.tools\n"
    )
    with sidecar_over(tmp_path, tools_dir, policies) as (_, client):
        assert weather_decision(client).verdict == pb.VERDICT_DENY
        (policies / "blocklist" / "data.json").unlink()
        after = eventually(
            lambda: d if (d := weather_decision(client)).verdict == pb.VERDICT_ALLOW else None,
            "the data file's removal",
        )
        assert after.policy_revision == load_bundle(policies).revision


def test_sighup_reloads_when_polling_is_off(tmp_path: Path, tools_dir: Path) -> None:
    policies = copy_policies(tmp_path)
    with sidecar_over(tmp_path, tools_dir, policies, "--policy-poll-interval", "0") as (
        proc,
        client,
    ):
        revision = client.get_status().policy_revision
        (policies / "block.rego").write_text(BLOCK_WEATHER)
        assert weather_decision(client).policy_revision == revision  # nobody is watching
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGHUP)
        after = eventually(
            lambda: d if (d := weather_decision(client)).verdict == pb.VERDICT_DENY else None,
            "SIGHUP to reload",
        )
        assert after.policy_revision == load_bundle(policies).revision


REVISION = (
    'package callgate\n\ndecision := {{"allow": {allow}, "reasons": ["{reason}"]}}\n'
    '\nmarker := "{reason}"\n'
)


def test_a_reload_during_a_burst_of_decisions_never_gives_an_unexplained_answer(
    tmp_path: Path, tools_dir: Path
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    rev = policies / "p.rego"
    rev.write_text(REVISION.format(allow="true", reason="rev-a"))
    revisions = {"rev-a": load_bundle(policies).revision}
    rev.write_text(REVISION.format(allow="false", reason="rev-b"))
    revisions["rev-b"] = load_bundle(policies).revision
    rev.write_text(REVISION.format(allow="true", reason="rev-a"))
    expected = {
        revisions["rev-a"]: (pb.VERDICT_ALLOW, ["rev-a"]),
        revisions["rev-b"]: (pb.VERDICT_DENY, ["rev-b"]),
    }
    answers: list[tuple[str, int, list[str]]] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    with sidecar_over(tmp_path, tools_dir, policies) as (proc, _):

        def burst() -> None:
            try:
                with GatewayClient(proc.target, "alice-demo-token") as c:
                    while not stop.is_set():
                        out = c.authorize(
                            *(tool_call(f"w{i}", "get_weather", WEATHER) for i in range(4))
                        )
                        answers.extend(
                            (
                                d.decision.policy_revision,
                                d.decision.verdict,
                                list(d.decision.reasons),
                            )
                            for d in out.decisions
                        )
            except BaseException as exc:  # noqa: BLE001  (reported by the test)
                errors.append(exc)

        workers = [threading.Thread(target=burst) for _ in range(3)]
        for worker in workers:
            worker.start()
        with GatewayClient(proc.target, "alice-demo-token") as watcher:
            for reason in ("rev-b", "rev-a", "rev-b", "rev-a"):
                rev.write_text(REVISION.format(allow=str(reason == "rev-a").lower(), reason=reason))
                eventually(
                    lambda r=reason: (
                        True if watcher.get_status().policy_revision == revisions[r] else None
                    ),
                    f"{reason} to serve",
                )
        stop.set()
        for worker in workers:
            worker.join(timeout=60)
    assert errors == []
    seen = {revision for revision, _, _ in answers}
    assert seen == set(expected), "both revisions answered during the burst"
    unexplained = [a for a in answers if (a[1], a[2]) != expected[a[0]]]
    assert unexplained == []


def test_logged_decision_input_replays_with_policy_eval(tmp_path: Path, tools_dir: Path) -> None:
    with sidecar_over(tmp_path, tools_dir, POLICIES, "--log-decision-inputs") as (proc, client):
        decision = weather_decision(client)
        line = eventually(
            lambda: next((ln for ln in proc.lines if "callgate.decision_input" in ln), None),
            "the logged input",
        )
    logged = json.loads(line[line.index("{") :])
    text = json.dumps(logged["input"], sort_keys=True, separators=(",", ":"))
    assert logged["input_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert logged["policy_revision"] == decision.policy_revision
    with sqlite3.connect(tmp_path / "cg.db") as db:
        stored = [
            json.loads(row[0])
            for row in db.execute("SELECT decision_json FROM audit WHERE kind = 'authorize'")
        ]
    assert [d["input_sha256"] for d in stored] == [logged["input_sha256"]]
    replay = tmp_path / "input.json"
    replay.write_text(json.dumps(logged["input"]))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "policy",
            "eval",
            str(POLICIES),
            "--input",
            str(replay),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0
    assert "verdict: ALLOW" in out.stdout
    assert f"policy revision: {decision.policy_revision}" in out.stdout


def test_decision_inputs_are_not_logged_by_default(tmp_path: Path, tools_dir: Path) -> None:
    with sidecar_over(tmp_path, tools_dir, POLICIES) as (proc, client):
        weather_decision(client)
    assert "callgate.decision_input" not in proc.output


def serve_args(tmp_path: Path, tools_dir: Path, policies: Path, *extra: str) -> list[str]:
    return [
        "--listen",
        "127.0.0.1:0",
        "--tools",
        str(tools_dir),
        "--policies",
        str(policies),
        "--db",
        str(tmp_path / "x.db"),
        "--auth",
        str(AUTH),
        *extra,
    ]


def test_start_up_applies_the_same_checks_as_a_reload(tmp_path: Path, tools_dir: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.rego").write_text("package callgate\n\nmay_approve := true\n")
    code, out = run_serve_expecting_failure(serve_args(tmp_path, tools_dir, policies))
    assert code != 0 and "data.callgate.decision is not defined" in out
    (policies / "p.rego").write_text(REVISION.format(allow="true", reason="rev-a"))
    (policies / "p_test.rego").write_text("package t\n\ntest_fails if false\n")
    code, out = run_serve_expecting_failure(
        serve_args(tmp_path, tools_dir, policies, "--reload-requires-tests")
    )
    assert code != 0 and "test data.t.test_fails failed" in out and "Traceback" not in out
