"""The mcp executor against real MCP servers built with the official SDK: the notes example
(examples/mcp_tools) and a hostile one (tests/support/mcp_hostile), over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.mcp_tools.server import notes
from gateway.errors import ConfigError
from gateway.executors import ExecutionContext
from gateway.executors.mcp import KEY_META
from gateway.executors.mcp_servers import ServerSpec, StdioServer, parse_servers
from gateway.model import CallStatus, Identity
from gateway.tools import Registry
from tests.support.mcp_hostile import rows
from tests.support.mcp_servers import (
    HOSTILE,
    NOTES,
    HttpProcess,
    http_server,
    mcp_manifest,
    registry,
    start_http,
    stdio,
)

NOTE_OUTPUT = {"type": "object", "required": ["note_id", "title", "body"]}


def context(call_id: str = "call-1") -> ExecutionContext:
    return ExecutionContext(
        run_id="run-1",
        call_id=call_id,
        idempotency_key=f"run-1:{call_id}",
        identity=Identity(subject="alice", tenant="acme"),
    )


def notes_tools(server: str = "notes") -> list[dict[str, Any]]:
    return [
        mcp_manifest("get_note", server=server, output_schema=NOTE_OUTPUT),
        mcp_manifest(
            "add_note",
            server=server,
            effect="write",
            reconcile={"type": "mcp", "tool": "find_note", "after_s": 0},
        ),
        mcp_manifest(
            "strict_get",
            server=server,
            tool="get_note",
            output_schema={"type": "object", "required": ["missing_field"]},
        ),
    ]


@pytest.fixture
async def built() -> AsyncIterator[list[Registry]]:
    made: list[Registry] = []
    yield made
    for reg in made:
        await reg.aclose()


def _registry(
    built: list[Registry], manifests: list[dict[str, Any]], servers: dict[str, ServerSpec]
) -> Registry:
    reg = registry(manifests, servers)
    built.append(reg)
    return reg


@pytest.fixture
def notes_http(tmp_path: Path) -> Iterator[HttpProcess]:
    with http_server(NOTES, tmp_path / "notes-http.db") as server:
        yield server


async def _write_then_read(reg: Registry, db: Path) -> None:
    add, get = reg.get("add_note"), reg.get("get_note")
    assert add is not None and get is not None
    written = await add.run({"title": "hello", "body": "world"}, context())
    assert written.status is CallStatus.SUCCEEDED, written
    note = json.loads(written.output_json)
    assert note["idempotency_key"] == "run-1:call-1"  # the key travelled in _meta
    read = await get.run({"note_id": note["note_id"]}, context("call-2"))
    assert read.status is CallStatus.SUCCEEDED
    assert json.loads(read.output_json)["body"] == "world"
    again = await add.run({"title": "hello", "body": "world"}, context())  # same key
    assert json.loads(again.output_json)["note_id"] == note["note_id"]
    assert [n["title"] for n in notes(db)] == ["hello"]  # one effect, in the server's file


async def test_a_write_and_a_read_over_stdio(tmp_path: Path, built: list[Registry]) -> None:
    db = tmp_path / "notes.db"
    reg = _registry(built, notes_tools(), {"notes": stdio("notes", NOTES, db)})
    await _write_then_read(reg, db)


async def test_a_write_and_a_read_over_http(
    tmp_path: Path, built: list[Registry], notes_http: HttpProcess
) -> None:
    reg = _registry(built, notes_tools(), {"notes": notes_http.spec("notes")})
    await _write_then_read(reg, tmp_path / "notes-http.db")


async def test_a_tool_error_fails_with_the_tools_text(
    tmp_path: Path, built: list[Registry]
) -> None:
    reg = _registry(built, notes_tools(), {"notes": stdio("notes", NOTES, tmp_path / "n.db")})
    get = reg.get("get_note")
    assert get is not None
    result = await get.run({"note_id": "nope"}, context())
    assert (result.status, result.error_code) == (CallStatus.FAILED, "tool_error")
    assert "no note 'nope'" in result.error_message


async def test_a_read_breaking_its_output_schema_is_invalid_output(
    tmp_path: Path, built: list[Registry]
) -> None:
    db = tmp_path / "n.db"
    reg = _registry(built, notes_tools(), {"notes": stdio("notes", NOTES, db)})
    add, strict = reg.get("add_note"), reg.get("strict_get")
    assert add is not None and strict is not None
    note = json.loads((await add.run({"title": "t", "body": "b"}, context())).output_json)
    result = await strict.run({"note_id": note["note_id"]}, context("call-2"))
    assert (result.status, result.error_code) == (CallStatus.FAILED, "output_invalid")
    assert "missing_field" in result.error_message


def hostile_tools(server: str = "hostile", timeout_s: float = 10.0) -> list[dict[str, Any]]:
    return [
        mcp_manifest(name, server=server, timeout_s=timeout_s)
        for name in ("echo_meta", "big", "deep", "hang", "garbage")
    ] + [
        mcp_manifest(
            "crash_write",
            server=server,
            effect="write",
            reconcile={"type": "mcp", "tool": "find_row", "after_s": 0},
        ),
        mcp_manifest("crash_unreconciled", server=server, effect="write", tool="crash_write"),
    ]


async def test_meta_carries_the_key_the_ids_and_the_trace_context(
    tmp_path: Path, built: list[Registry]
) -> None:
    reg = _registry(
        built, hostile_tools(), {"hostile": stdio("hostile", HOSTILE, tmp_path / "h.db")}
    )
    tool = reg.get("echo_meta")
    assert tool is not None
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    ctx = ExecutionContext(
        "run-1", "call-1", "run-1:call-1", Identity(subject="alice"), trace_headers=trace
    )
    meta = json.loads((await tool.run({}, ctx)).output_json)
    assert meta[KEY_META] == "run-1:call-1"
    assert meta["io.callgate/run-id"] == "run-1" and meta["io.callgate/call-id"] == "call-1"
    assert meta["io.callgate/subject"] == "alice"
    assert meta["traceparent"].split("-")[1] == "0af7651916cd43dd8448eb211c80319c"


async def test_a_crash_after_a_write_is_unknown_then_reconciled_and_restarted(
    tmp_path: Path, built: list[Registry]
) -> None:
    db = tmp_path / "h.db"
    reg = _registry(built, hostile_tools(), {"hostile": stdio("hostile", HOSTILE, db)})
    write, plain, echo = reg.get("crash_write"), reg.get("crash_unreconciled"), reg.get("echo_meta")
    assert write is not None and plain is not None and echo is not None
    result = await write.run({"title": "once"}, context())
    assert (result.status, result.attempts) == (CallStatus.UNKNOWN, 1)
    assert "outcome unknown" in result.error_message
    assert rows(db) == [("once", "run-1:call-1")]  # at most one effect
    found = await write.reconcile({"title": "once"}, context())
    assert (found.status, json.loads(found.output_json)) == (
        CallStatus.SUCCEEDED,
        {"title": "once"},
    )
    assert rows(db) == [("once", "run-1:call-1")]  # the look-up sent no write
    missing = await write.reconcile({"title": "x"}, context("never-sent"))
    assert (missing.status, missing.error_code) == (CallStatus.FAILED, "tool_not_applied")
    stays = await plain.reconcile({"title": "x"}, context())
    assert stays.status is CallStatus.UNKNOWN  # no look-up: an operator resolves it
    assert (await echo.run({}, context("call-3"))).status is CallStatus.SUCCEEDED  # restarted


async def test_a_server_that_cannot_start_sent_nothing(
    tmp_path: Path, built: list[Registry]
) -> None:
    spec = StdioServer("gone", (str(tmp_path / "no-such-program"),), {}, None, 5.0)
    reg = _registry(built, [mcp_manifest("w", server="gone", effect="write")], {"gone": spec})
    tool = reg.get("w")
    assert tool is not None
    result = await tool.run({}, context())
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        0,
    )
    assert "nothing was sent" in result.error_message


async def test_a_server_that_crashes_at_start_sent_nothing(
    tmp_path: Path, built: list[Registry]
) -> None:
    spec = StdioServer("dies", (sys.executable, "-c", "raise SystemExit(4)"), {}, None, 5.0)
    reg = _registry(built, [mcp_manifest("w", server="dies", effect="write")], {"dies": spec})
    tool = reg.get("w")
    assert tool is not None
    result = await tool.run({}, context())
    assert (result.status, result.attempts) == (CallStatus.FAILED, 0)


async def test_hostile_answers_fail_their_call_with_a_clear_message(
    tmp_path: Path, built: list[Registry]
) -> None:
    reg = _registry(
        built, hostile_tools(), {"hostile": stdio("hostile", HOSTILE, tmp_path / "h.db")}
    )
    big, deep = reg.get("big"), reg.get("deep")
    assert big is not None and deep is not None
    oversized = await big.run({"size": 1_000_000}, context())
    assert (oversized.status, oversized.error_code) == (CallStatus.FAILED, "output_too_large")
    nested = await deep.run({"depth": 90}, context("call-2"))
    assert (nested.status, nested.error_code) == (CallStatus.FAILED, "output_invalid")
    assert "depth" in nested.error_message or "deep" in nested.error_message


async def test_an_unreadable_message_ends_the_session_at_once(
    tmp_path: Path, built: list[Registry]
) -> None:
    reg = _registry(
        built,
        hostile_tools(timeout_s=30),
        {"hostile": stdio("hostile", HOSTILE, tmp_path / "h.db")},
    )
    garbage, echo = reg.get("garbage"), reg.get("echo_meta")
    assert garbage is not None and echo is not None
    started = time.monotonic()
    result = await garbage.run({}, context())
    if result.status is CallStatus.FAILED:  # the garbage came before the answer
        assert "cannot read" in result.error_message
        assert time.monotonic() - started < 20  # not its 30 s timeout
    after = await echo.run({}, context("call-2"))
    assert after.status is CallStatus.SUCCEEDED  # a new session


async def test_a_hanging_call_times_out_and_stalls_no_other_call(
    tmp_path: Path, built: list[Registry]
) -> None:
    reg = _registry(
        built, hostile_tools(timeout_s=8), {"hostile": stdio("hostile", HOSTILE, tmp_path / "h.db")}
    )
    hang, echo = reg.get("hang"), reg.get("echo_meta")
    assert hang is not None and echo is not None
    assert (await echo.run({}, context("warm"))).status is CallStatus.SUCCEEDED
    hanging = asyncio.create_task(hang.run({}, context()))
    answered = await asyncio.wait_for(echo.run({}, context("call-2")), timeout=6)
    assert answered.status is CallStatus.SUCCEEDED and not hanging.done()
    timed_out = await hanging
    assert (timed_out.status, timed_out.error_code) == (CallStatus.FAILED, "tool_timeout")


async def test_a_restarted_http_server_gets_a_new_session(
    tmp_path: Path, built: list[Registry]
) -> None:
    db = tmp_path / "notes.db"
    first = start_http(NOTES, db)
    port = int(first.url.rsplit(":", 1)[1].split("/")[0])
    reg = _registry(built, notes_tools(), {"notes": first.spec("notes")})
    add = reg.get("add_note")
    assert add is not None
    assert (await add.run({"title": "a", "body": "1"}, context())).status is CallStatus.SUCCEEDED
    first.stop()
    second = start_http(NOTES, db, port)
    try:
        result = await add.run({"title": "b", "body": "2"}, context("call-2"))
        assert result.status is CallStatus.SUCCEEDED, result
        assert [n["title"] for n in notes(db)] == ["a", "b"]
    finally:
        second.stop()


async def test_an_http_server_that_is_down_is_a_failed_read(
    tmp_path: Path, built: list[Registry]
) -> None:
    server = start_http(NOTES, tmp_path / "n.db")
    server.stop()
    reg = _registry(built, notes_tools(), {"notes": server.spec("notes")})
    get = reg.get("get_note")
    assert get is not None
    result = await get.run({"note_id": "x"}, context())
    assert (result.status, result.attempts) == (CallStatus.FAILED, 0)
    assert "nothing was sent" in result.error_message


async def test_an_http_server_gets_the_headers_of_the_servers_file_only(
    tmp_path: Path, built: list[Registry]
) -> None:
    with http_server(HOSTILE, tmp_path / "h.db") as server:
        text = (
            f"servers:\n  hostile: {{url: '{server.url}', "
            "headers_from_env: {Authorization: HOSTILE_AUTH}}\n"
        )
        servers = parse_servers(text, "servers.yaml", {"HOSTILE_AUTH": "Bearer from-the-file"})
        reg = _registry(built, [mcp_manifest("echo_headers", server="hostile")], dict(servers))
        tool = reg.get("echo_headers")
        assert tool is not None
        headers = json.loads((await tool.run({}, context())).output_json)
    assert headers["authorization"] == "Bearer from-the-file"
    assert not any("callgate" in name for name in headers)  # ids travel in _meta only


def test_a_servers_file_with_a_key_given_twice_names_its_line() -> None:
    text = "servers:\n  a: {command: [x]}\n  a: {command: [y]}\n"
    with pytest.raises(ConfigError, match=r"servers.yaml \(line 3\)"):
        parse_servers(text, "servers.yaml", {})
    with pytest.raises(ConfigError, match="servers.b.env: applies to command"):
        parse_servers("servers:\n  b: {url: 'http://h/mcp', env: {A: b}}\n", "servers.yaml", {})
    with pytest.raises(ConfigError, match="servers.c.command: give command"):
        parse_servers("servers:\n  c: {cwd: /tmp}\n", "servers.yaml", {})
