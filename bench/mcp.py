"""`make bench-mcp`: an MCP read through callgate vs the same read straight to the server.

    .venv/bin/python -m bench.mcp [--calls N] [--no-save]

The notes example server (`examples.mcp_tools.server`) runs over streamable HTTP in its own
process; a real `callgate serve --mcp-servers` sidecar (an allow-everything policy, a SQLite
store) calls its `get_note` tool. Each round asks once through callgate (SubmitTurn with one
`get_note` call, one at a time) and once straight to the server (`tools/call` on an SDK client
session of this process), interleaved, so both see the same machine. Prints the latencies and
the ratio and writes them to bench/results/mcp.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.procs import ROOT
from examples.mcp_tools.process import NOTES, HttpProcess, start_http
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess

POLICY = 'package callgate\n\nimport rego.v1\n\ndecision := {"allow": true}\n'
MANIFEST = {
    "name": "get_note",
    "version": "1",
    "effect": "read",
    "input_schema": {
        "type": "object",
        "properties": {"note_id": {"type": "string"}},
        "required": ["note_id"],
    },
    "executor": {"type": "mcp", "server": "notes", "timeout_s": 10},
}
RESULT = ROOT / "bench" / "results" / "mcp.txt"


def _prepared(tmp: Path, url: str) -> tuple[Path, Path, Path]:
    tools, policies = tmp / "tools", tmp / "policies"
    tools.mkdir()
    policies.mkdir()
    (tools / "get_note.json").write_text(json.dumps(MANIFEST))
    (policies / "callgate.rego").write_text(POLICY)
    servers = tmp / "servers.yaml"
    servers.write_text(f"servers:\n  notes: {{url: '{url}'}}\n")
    return tools, policies, servers


def _through(client: GatewayClient, run_id: str, turn: int, note_id: str) -> float:
    started = time.perf_counter()
    outcome = client.submit_calls(
        run_id, f"t{turn}", tool_call(f"c{turn}", "get_note", {"note_id": note_id})
    )
    took = time.perf_counter() - started
    if outcome.results[0].status != pb.CALL_STATUS_SUCCEEDED:
        raise RuntimeError(f"the read through callgate answered {outcome.results[0]}")
    return took


async def _direct(session: ClientSession, note_id: str) -> float:
    started = time.perf_counter()
    result = await session.call_tool("get_note", {"note_id": note_id})
    took = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"the direct read answered {result}")
    return took


def _line(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"{name:<34} median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms"


async def _rounds(server: HttpProcess, sidecar: SidecarProcess, calls: int) -> list[str]:
    async with (
        streamable_http_client(server.url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        added = await session.call_tool("add_note", {"title": "bench", "body": "a note"})
        note_id = str((added.structured_content or {})["note_id"])
        through: list[float] = []
        direct: list[float] = []
        with sidecar.client() as client:
            run_id = f"bench-mcp-{uuid.uuid4().hex[:8]}"
            client.start_run(run_id=run_id)
            for turn in range(calls + 10):  # the first 10 of each warm up
                took = await asyncio.to_thread(_through, client, run_id, turn, note_id)
                if turn >= 10:
                    through.append(took)
                took = await _direct(session, note_id)
                if turn >= 10:
                    direct.append(took)
    ratio = statistics.median(through) / statistics.median(direct)
    return [
        f"MCP read, {calls} one at a time, interleaved (bench/mcp.py)",
        _line("get_note through callgate", through),
        _line("get_note straight to the server", direct),
        f"through callgate / straight: {ratio:.2f}x the median",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = start_http(NOTES, tmp / "notes.db")
        try:
            tools, policies, servers = _prepared(tmp, server.url)
            with SidecarProcess(
                tools=tools,
                policies=policies,
                db=tmp / "callgate.db",
                extra_args=["--insecure-dev-identity", "bench", "--mcp-servers", str(servers)],
            ) as sidecar:
                lines = asyncio.run(_rounds(server, sidecar, args.calls))
        finally:
            server.stop()
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if not args.no_save:
        RESULT.write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
