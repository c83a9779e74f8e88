"""A loop in a process of its own, for the test that kills it: it runs the reference loop with
a scripted model until the model is asked once more than the script holds, prints the
conversation of that request (`{"asking": [...]}`) and blocks there until it is killed.

    python -m tests.support.loop_child TARGET TOKEN PROVIDER RUN_ID CONVERSATION SCRIPT
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from gateway.client import AsyncGatewayClient
from gateway.loop import AgentLoop, ModelRequest, ScriptedModel


class BlockingModel:
    """The script, then a request it announces and never answers."""

    def __init__(self, script: list[Any]) -> None:
        self.scripted = ScriptedModel(script)

    async def respond(self, request: ModelRequest) -> str:
        if self.scripted.remaining:
            return await self.scripted.respond(request)
        print(json.dumps({"asking": list(request.conversation)}), flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the parent kills this process
        raise SystemExit("the parent was to kill this process")


async def main(
    target: str, token: str, provider: str, run_id: str, conversation: str, script: str
) -> None:
    async with AsyncGatewayClient(target, token) as client:
        loop = AgentLoop(client, BlockingModel(json.loads(script)), provider=provider)
        await loop.run(json.loads(conversation), run_id=run_id)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
