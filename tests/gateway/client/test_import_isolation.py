"""The client and the loop need grpcio, grpcio-status and protobuf only: staged as the
`callgate-client` distribution (scripts/build_client.py) and run in an interpreter where every
other package (and every sidecar module of `gateway`) fails to import, they import and drive a
run against a real sidecar."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from gateway.testing import SidecarProcess
from tests.support.paths import ROOT
from tests.support.wire_responses import WIRES, Call

# Installed into the child before anything else: an import of anything but the standard
# library, the client's three distributions and the client's own modules fails.
GUARD = textwrap.dedent("""
    import importlib.abc
    import sys

    # grpcio (and its own dependency typing-extensions), grpcio-status, protobuf
    THIRD_PARTY = {"grpc", "typing_extensions", "grpc_status", "google.protobuf", "google.rpc",
                   "google._upb"}
    OURS = {"gateway.pb", "gateway._proto", "gateway.errors", "gateway.tls", "gateway.client",
            "gateway.loop", "adapters"}
    SIDECAR_STDLIB = {"sqlite3"}

    def within(name, allowed):
        return any(name == a or name.startswith(a + ".") for a in allowed)

    class Guard(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names and top not in SIDECAR_STDLIB:
                return None
            if name in ("google", "gateway") or within(name, THIRD_PARTY | OURS):
                return None
            raise ImportError(f"{name} is not for a client")

    sys.meta_path.insert(0, Guard())
""")

CLIENT_ROUND_TRIP = textwrap.dedent("""
    import json, sys
    from gateway import pb
    from gateway.client import GatewayClient, NotFound, tool_call
    from gateway.loop import ScriptedModel, run_loop

    target, run_id, script = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with GatewayClient(target, "bob-demo-token") as c:  # a traveler, and nothing else
        c.start_run(run_id, provider="anthropic.messages")
        out = c.submit_calls(run_id, "t1", tool_call("c1", "get_weather",
                                                     {"city": "Berlin", "date": "2026-12-01"}))
        tools = json.loads(c.list_tools("anthropic.messages").tools_json)
        watch = c.watch_run(run_id)
        first = next(watch)
        watch.cancel()
        try:
            c.get_run("no-such-run")
            missing = ""
        except NotFound as err:
            missing = err.code.value
    loop = run_loop(ScriptedModel(script), [{"role": "user", "content": "Weather in Berlin?"}],
                    provider="anthropic.messages", target=target, token="bob-demo-token",
                    run_id=run_id + "-loop")
    with GatewayClient(target, "bob-demo-token") as c:
        ran = [(r.call_id, r.execution_count) for r in c.get_run(loop.run_id).calls]
    print(json.dumps({"status": pb.CallStatus.Name(out.results[0].status),
                      "tools": sorted(t["name"] for t in tools), "watched": first.turn_id,
                      "missing": missing, "loop": loop.status.value,
                      "ran": ran}))
""")


def run_guarded(code: str, *args: str, path: Path = ROOT) -> str:
    """Run code in a fresh interpreter that finds only `path`'s modules of ours."""
    done = subprocess.run(
        [sys.executable, "-c", GUARD + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path,
        env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_guard_blocks_what_the_sidecar_needs() -> None:
    out = run_guarded(
        textwrap.dedent("""
        for name in ("yaml", "pydantic", "gateway.store", "gateway.model", "sqlite3",
                     "google.genai", "gateway.run"):
            try:
                __import__(name)
                print("imported", name)
            except ImportError:
                pass
    """)
    )
    assert "imported" not in out


def test_the_client_distribution_works_with_nothing_but_its_own_dependencies(
    sidecar: SidecarProcess, run_id: str, tmp_path: Path
) -> None:
    staged = importlib.import_module("scripts.build_client").stage(tmp_path)
    wire = WIRES["anthropic.messages"]
    script = [
        wire.calls(
            "msg_1", [Call("toolu_1", "get_weather", {"city": "Berlin", "date": "2026-12-01"})]
        ),
        wire.final("msg_2", "Mild in Berlin."),
    ]
    out = run_guarded(CLIENT_ROUND_TRIP, sidecar.target, run_id, json.dumps(script), path=staged)
    assert json.loads(out) == {
        "status": "CALL_STATUS_SUCCEEDED",
        "tools": ["get_train_status", "get_weather"],
        "watched": "t1",
        "missing": "run_not_found",
        "loop": "completed",
        "ran": [["toolu_1", 1]],
    }


def test_the_client_distribution_declares_the_three_dependencies_only() -> None:
    build = importlib.import_module("scripts.build_client")
    assert [d.split(">")[0] for d in build.requirements()] == [
        "grpcio",
        "grpcio-status",
        "protobuf",
    ]


def test_the_client_distribution_carries_the_frameworks_behind_their_extras(tmp_path: Path) -> None:
    staged = importlib.import_module("scripts.build_client").stage(tmp_path)
    project = tomllib.loads((staged / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (staged / "gateway" / "frameworks" / "langgraph.py").exists()
    assert project["optional-dependencies"]["agents"] == ["openai-agents>=0.20"]
    assert "langgraph-checkpoint-sqlite>=3.0" in project["optional-dependencies"]["langgraph"]
    assert not any("agents" in d or "langgraph" in d for d in project["dependencies"])
