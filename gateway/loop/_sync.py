"""The loop for synchronous code: `run_loop` and `resume_loop` run `AgentLoop` to its end (or
its pause) in an event loop of their own, with a client of their own."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.client import DEFAULT_TARGET, AsyncGatewayClient
from gateway.loop._machine import AgentLoop, LoopResult
from gateway.loop._model import Model
from gateway.tls import ClientTLS


def run_loop(
    model: Model,
    conversation: Sequence[Mapping[str, Any]],
    *,
    provider: str,
    target: str = DEFAULT_TARGET,
    token: str = "",
    tls: ClientTLS | None = None,
    run_id: str = "",
    max_turns: int = 10,
    wait_s: float = 0.0,
) -> LoopResult:
    """`AgentLoop(...).run(conversation)` from synchronous code."""

    async def go(loop: AgentLoop) -> LoopResult:
        return await loop.run(conversation, run_id=run_id)

    return asyncio.run(_with_loop(go, model, provider, target, token, tls, max_turns, wait_s))


def resume_loop(
    model: Model,
    run_id: str,
    *,
    provider: str,
    target: str = DEFAULT_TARGET,
    token: str = "",
    tls: ClientTLS | None = None,
    max_turns: int = 10,
    wait_s: float = 0.0,
) -> LoopResult:
    """`AgentLoop(...).resume(run_id)` from synchronous code."""

    async def go(loop: AgentLoop) -> LoopResult:
        return await loop.resume(run_id)

    return asyncio.run(_with_loop(go, model, provider, target, token, tls, max_turns, wait_s))


async def _with_loop(
    go: Any,
    model: Model,
    provider: str,
    target: str,
    token: str,
    tls: ClientTLS | None,
    max_turns: int,
    wait_s: float,
) -> LoopResult:
    async with AsyncGatewayClient(target, token, tls=tls) as client:
        result: LoopResult = await go(
            AgentLoop(client, model, provider=provider, max_turns=max_turns, wait_s=wait_s)
        )
        return result
