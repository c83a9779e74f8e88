"""The reference loop with an OpenAI model through the official `openai` SDK (Responses API),
against a running sidecar (`make run`). Needs OPENAI_API_KEY; never run by the tests.

    python -m examples.loop.openai_responses "Is ICE123 on time on 2026-12-01?" \\
        [--model gpt-5-mini] [--target 127.0.0.1:50051] [--token alice-demo-token]

The whole conversation is sent every turn (the response's output items, then callgate's
function_call_output items); with `store=True` a loop could send `previous_response_id` and
callgate's items alone instead.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import openai

from gateway.client import DEFAULT_TARGET, AsyncGatewayClient
from gateway.loop import AgentLoop, LoopResult, ModelError, ModelRequest

INSTRUCTIONS = "You help travellers. Use the tools to look things up; never guess."


class OpenAIResponsesModel:
    """A `gateway.loop.Model` over `client.responses.create`: input items and tool
    declarations as callgate has them, the raw response JSON back."""

    def __init__(self, client: openai.AsyncOpenAI, model: str) -> None:
        self.client = client
        self.model = model

    async def respond(self, request: ModelRequest) -> str:
        try:
            response = await self.client.responses.create(
                model=self.model,
                instructions=INSTRUCTIONS,
                store=False,
                include=["reasoning.encrypted_content"],  # reasoning items resent each turn
                input=list(request.conversation),  # type: ignore[arg-type]
                tools=list(request.tools),
            )  # type: ignore[arg-type]
        except openai.RateLimitError as err:
            raise ModelError(str(err), kind="rate_limit", retryable=True) from err
        except openai.APITimeoutError as err:
            raise ModelError(str(err), kind="timeout", retryable=True) from err
        except openai.APIConnectionError as err:
            raise ModelError(str(err), kind="transport", retryable=True) from err
        except openai.InternalServerError as err:
            raise ModelError(str(err), kind="server", retryable=True) from err
        except openai.APIStatusError as err:
            raise ModelError(str(err), kind="other", retryable=False) from err
        return response.to_json()


async def ask(question: str, model: str, target: str, token: str) -> LoopResult:
    async with AsyncGatewayClient(target, token) as client:
        loop = AgentLoop(
            client,
            OpenAIResponsesModel(openai.AsyncOpenAI(), model),
            provider="openai.responses",
            max_turns=8,
            wait_s=300,
        )
        return await loop.run([{"role": "user", "content": question}])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--model", default="gpt-5-mini")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--token", default="alice-demo-token")
    ns = parser.parse_args(argv)
    result = asyncio.run(ask(ns.question, ns.model, ns.target, ns.token))
    print(f"{result.status.value} ({result.reason}); run {result.run_id}")
    if result.response_json:
        print(openai.types.responses.Response.model_validate_json(result.response_json).output_text)
    return 0 if result.status.value == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
