"""An MCP tools/call sees one tool set from its first lookup to its last, as a gRPC request
does: a manifest reload landing in the middle of a call does not let its result skip the
result rule (the swapped-in set no longer has the tool)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.mcp_gateway.calls import McpGateway
from gateway.run.runner import Runner
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry
from gateway.tools.live import LiveRegistry
from tests.gateway.run import tools
from tests.support.harness import ALICE, FakeClock, ScriptedPolicy

SWAP: dict[str, Any] = {
    "name": "swap_tools",
    "version": "1",
    "effect": "read",
    "input_schema": {"type": "object"},
    "executor": {"type": "python", "function": "tests.gateway.run.tools:swap_tools"},
}
OTHER = dict(SWAP, name="something_else")


async def test_a_reload_during_a_call_does_not_skip_the_result_rule(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "runs.db")
    live = LiveRegistry(Registry.from_manifests([SWAP]))
    policy = ScriptedPolicy(result_value={"deliver": False, "reasons": ["not for the model"]})
    runner = Runner(store=store, registry=live, policy=policy, clock=FakeClock())
    tools.RELOADING[:] = [live, Registry.from_manifests([OTHER])]
    try:
        answer = await McpGateway(runner).call_tool(ALICE, "mcp-r1", "swap_tools", {})
        assert answer.is_error
        assert "result_withheld" in str(answer.content) and "swapped" not in str(answer.content)
        assert live.get("swap_tools") is None  # the reload did land
    finally:
        tools.RELOADING.clear()
        await live.aclose()
        await store.close()
