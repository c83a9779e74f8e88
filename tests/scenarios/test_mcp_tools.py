"""Tools on MCP servers end to end: `callgate tools import` writes manifests from a real MCP
server's tools/list (official SDK), and `callgate serve --mcp-servers` guards them like any
tool: a policy over the imported labels allows a write and a read and denies another write,
which never reaches the server's SQLite file."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from examples.mcp_tools.server import notes
from gateway import pb
from gateway.client import tool_call
from gateway.executors.mcp_servers import load_servers
from gateway.executors.mcp_sessions import McpSessions
from gateway.policy.inputs import tool_input
from gateway.testing import SidecarProcess, run_serve_expecting_failure
from gateway.tools import Registry
from tests.support.commands import callgate
from tests.support.mcp_hostile import rows
from tests.support.paths import ROOT

POLICY = """package callgate

import rego.v1

default decision := {"allow": false, "reasons": ["not an MCP tool of the notes server"]}

decision := {"allow": true} if {
	input.tool.labels["mcp.server"] == "notes"
	not forbidden
}

decision := {"allow": false, "reasons": ["that title is forbidden"]} if forbidden

forbidden if input.call.args.title == "forbidden"
"""


def servers_file(path: Path, db: Path, extra: str = "") -> Path:
    path.write_text(
        f"servers:\n  notes:\n    command: [{sys.executable}, -m, "
        f"examples.mcp_tools.server, --db, {db}]\n    cwd: {ROOT}\n    start_timeout_s: 60\n"
        + extra
    )
    return path


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    db = tmp_path / "notes.db"
    servers = servers_file(tmp_path / "servers.yaml", db)
    out = tmp_path / "tools"
    done = callgate(
        "tools",
        "import",
        "--mcp-servers",
        str(servers),
        "--server",
        "notes",
        "--out",
        str(out),
        "--read",
        "get_note,find_note",
    )
    assert done.returncode == 0, done.stderr
    yield servers, out, db


async def test_import_writes_one_manifest_per_tool_with_hints_as_labels(
    imported: tuple[Path, Path, Path],
) -> None:
    servers, out, _ = imported
    made = {p.stem: yaml.safe_load(p.read_text()) for p in out.glob("*.yaml")}
    assert sorted(made) == ["add_note", "find_note", "get_note"]
    add, get = made["add_note"], made["get_note"]
    assert (add["effect"], get["effect"]) == ("write", "read")  # --read, not the hints
    assert add["executor"] == {"type": "mcp", "server": "notes"}
    assert add["input_schema"]["required"] == ["title", "body"]
    assert "output_schema" in get and add["description"].startswith("Add a note")
    assert get["labels"]["mcp.readOnlyHint"] == "true"
    assert add["labels"]["mcp.destructiveHint"] == "false"
    assert add["labels"]["source"] == "mcp:notes"
    sessions = McpSessions(load_servers(servers, {}), source=str(servers))
    registry = Registry.load(out, env={}, mcp=sessions)  # serve's loader takes them
    tool = registry.get("get_note")
    assert tool is not None and tool_input(tool)["labels"]["mcp.server"] == "notes"
    await registry.aclose()


def test_import_names_a_tool_whose_schema_callgate_refuses(tmp_path: Path) -> None:
    servers = tmp_path / "servers.yaml"
    servers.write_text(
        f"servers:\n  hostile:\n    command: [{sys.executable}, -m, "
        f"tests.support.mcp_hostile, --db, {tmp_path / 'h.db'}]\n"
        f"    cwd: {ROOT}\n    start_timeout_s: 60\n"
    )
    out = tmp_path / "tools"
    done = callgate(
        "tools", "import", "--mcp-servers", str(servers), "--server", "hostile", "--out", str(out)
    )
    assert done.returncode == 1
    assert "tool 'refused' not imported" in done.stderr and "nonsense" in done.stderr
    assert not (out / "refused.yaml").exists() and (out / "echo_meta.yaml").exists()
    unknown = callgate(
        "tools",
        "import",
        "--mcp-servers",
        str(servers),
        "--server",
        "hostile",
        "--out",
        str(out),
        "--read",
        "no_such_tool",
    )
    assert unknown.returncode != 0 and "--read no_such_tool" in unknown.stderr


def test_serve_guards_imported_mcp_tools(tmp_path: Path, imported: tuple[Path, Path, Path]) -> None:
    servers, out, db = imported
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "callgate.rego").write_text(POLICY)
    with (
        SidecarProcess(
            tools=out,
            policies=policies,
            db=tmp_path / "callgate.db",
            extra_args=["--insecure-dev-identity", "alice", "--mcp-servers", str(servers)],
        ) as sidecar,
        sidecar.client() as client,
    ):
        run_id = f"mcp-{uuid.uuid4().hex[:8]}"
        client.start_run(run_id=run_id)
        outcome = client.submit_calls(
            run_id,
            "t1",
            tool_call("w1", "add_note", {"title": "kept", "body": "b"}),
            tool_call("w2", "add_note", {"title": "forbidden", "body": "b"}),
        )
        results = {r.call_id: r for r in outcome.results}
        assert results["w2"].status == pb.CALL_STATUS_REJECTED
        assert results["w1"].status in (pb.CALL_STATUS_NOT_RUN, pb.CALL_STATUS_SUCCEEDED)
        outcome = client.submit_calls(
            run_id, "t2", tool_call("w3", "add_note", {"title": "kept", "body": "b"})
        )
        (written,) = outcome.results
        assert written.status == pb.CALL_STATUS_SUCCEEDED, written
        note = json.loads(written.output_json)
        assert note["idempotency_key"] == f"{run_id}:w3"
        outcome = client.submit_calls(
            run_id, "t3", tool_call("r1", "get_note", {"note_id": note["note_id"]})
        )
        assert outcome.results[0].status == pb.CALL_STATUS_SUCCEEDED
        assert json.loads(outcome.results[0].output_json)["title"] == "kept"
    assert [n["title"] for n in notes(db)] == ["kept"]  # nothing denied reached the server


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "  other: {command: [x], url: 'http://127.0.0.1:1/mcp'}\n",
            "servers.other.url: give command (stdio) or url (streamable HTTP), not both",
        ),
        ("  other: {command: [x], colour: blue}\n", "servers.other.colour: unknown field"),
        (
            "  other: {url: 'http://127.0.0.1:1/mcp',\n"
            "          headers_from_env: {Authorization: NO_SUCH_VAR_X}}\n",
            "servers.other.headers_from_env.Authorization: the environment variable NO_SUCH_VAR_X "
            "is not set",
        ),
        ("  other: {url: 'ftp://h/mcp'}\n", "servers.other.url: 'ftp://h/mcp' is not an absolute"),
    ],
)
def test_serve_refuses_a_bad_servers_file(tmp_path: Path, extra: str, expected: str) -> None:
    servers = servers_file(tmp_path / "servers.yaml", tmp_path / "n.db", extra)
    code, output = run_serve_expecting_failure(
        [
            "--tools",
            str(ROOT / "examples" / "mcp_tools" / "tools"),
            "--policies",
            str(ROOT / "policies"),
            "--db",
            str(tmp_path / "c.db"),
            "--insecure-dev-identity",
            "alice",
            "--listen",
            "127.0.0.1:0",
            "--mcp-servers",
            str(servers),
        ]
    )
    assert code != 0 and expected in output, output


def test_serve_refuses_a_manifest_naming_an_undeclared_server(tmp_path: Path) -> None:
    servers = tmp_path / "servers.yaml"
    servers.write_text("servers:\n  elsewhere: {url: 'http://127.0.0.1:1/mcp'}\n")
    args = [
        "--tools",
        str(ROOT / "examples" / "mcp_tools" / "tools"),
        "--policies",
        str(ROOT / "policies"),
        "--db",
        str(tmp_path / "c.db"),
        "--insecure-dev-identity",
        "alice",
        "--listen",
        "127.0.0.1:0",
    ]
    code, output = run_serve_expecting_failure([*args, "--mcp-servers", str(servers)])
    assert code != 0
    assert "executor.server: MCP server 'notes' is not declared in --mcp-servers" in output
    assert "(declared: elsewhere)" in output
    code, output = run_serve_expecting_failure(args)
    assert code != 0 and "no MCP servers file was given (--mcp-servers)" in output


def test_a_server_that_crashes_mid_write_is_reconciled_with_one_effect(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    servers = tmp_path / "servers.yaml"
    servers.write_text(
        f"servers:\n  hostile:\n    command: [{sys.executable}, -m, "
        f"tests.support.mcp_hostile, --db, {db}]\n    cwd: {ROOT}\n"
        "    start_timeout_s: 60\n"
    )
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "crash_write.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "crash_write",
                "version": "1",
                "effect": "write",
                "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}},
                "executor": {"type": "mcp", "server": "hostile"},
                "reconcile": {"type": "mcp", "tool": "find_row", "after_s": 0},
                "labels": {"mcp.server": "notes"},  # what the test policy allows
            }
        )
    )
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "callgate.rego").write_text(POLICY)
    with (
        SidecarProcess(
            tools=tools,
            policies=policies,
            db=tmp_path / "callgate.db",
            extra_args=["--insecure-dev-identity", "alice", "--mcp-servers", str(servers)],
        ) as sidecar,
        sidecar.client() as client,
    ):
        run_id = f"mcp-{uuid.uuid4().hex[:8]}"
        client.start_run(run_id=run_id)
        outcome = client.submit_calls(
            run_id, "t1", tool_call("w1", "crash_write", {"title": "once"})
        )
        (result,) = outcome.results
        assert result.status == pb.CALL_STATUS_SUCCEEDED, result  # found by the look-up
        assert json.loads(result.output_json) == {"title": "once"}
        assert result.execution_count == 1
    assert rows(db) == [("once", f"{run_id}:w1")]  # at most one effect
