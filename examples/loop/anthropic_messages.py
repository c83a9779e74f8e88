"""The reference loop with Claude through the official `anthropic` SDK, against a running
sidecar (`make run`). Needs ANTHROPIC_API_KEY; never run by the tests.

    python -m examples.loop.anthropic_messages "Is ICE123 on time on 2026-12-01?" \\
        [--model claude-sonnet-4-5] [--target 127.0.0.1:50051] [--token alice-demo-token]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import anthropic

from gateway.client import DEFAULT_TARGET, AsyncGatewayClient
from gateway.loop import AgentLoop, LoopResult, ModelError, ModelRequest

SYSTEM = "You help travellers. Use the tools to look things up; never guess a train's status."


class ClaudeModel:
    """A `gateway.loop.Model`: the conversation and tools go to the Messages API unchanged;
    the raw response JSON comes back. Failed requests become `ModelError`s, which callgate
    records (and retries while the run's retry budget lasts)."""

    def __init__(self, client: anthropic.AsyncAnthropic, model: str) -> None:
        self.client = client
        self.model = model

    async def respond(self, request: ModelRequest) -> str:
        try:
            message = await self.client.messages.create(
                model=self.model,
                max_tokens=2048,
                system=SYSTEM,
                messages=list(request.conversation),  # type: ignore[arg-type]
                tools=list(request.tools),
            )  # type: ignore[arg-type]
        except anthropic.RateLimitError as err:
            raise ModelError(str(err), kind="rate_limit", retryable=True) from err
        except anthropic.APITimeoutError as err:
            raise ModelError(str(err), kind="timeout", retryable=True) from err
        except anthropic.APIConnectionError as err:
            raise ModelError(str(err), kind="transport", retryable=True) from err
        except anthropic.InternalServerError as err:
            raise ModelError(str(err), kind="server", retryable=True) from err
        except anthropic.APIStatusError as err:
            raise ModelError(str(err), kind="other", retryable=False) from err
        return message.to_json()


async def ask(question: str, model: str, target: str, token: str) -> LoopResult:
    async with AsyncGatewayClient(target, token) as client:
        loop = AgentLoop(
            client,
            ClaudeModel(anthropic.AsyncAnthropic(), model),
            provider="anthropic.messages",
            max_turns=8,
            wait_s=300,
        )
        return await loop.run([{"role": "user", "content": question}])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--token", default="alice-demo-token")
    ns = parser.parse_args(argv)
    result = asyncio.run(ask(ns.question, ns.model, ns.target, ns.token))
    print(f"{result.status.value} ({result.reason}); run {result.run_id}")
    if result.response_json:
        print(anthropic.types.Message.model_validate_json(result.response_json).content)
    return 0 if result.status.value == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
