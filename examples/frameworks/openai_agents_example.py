"""An OpenAI Agents SDK agent whose tools run through callgate, against a running sidecar
(`make run`). Needs OPENAI_API_KEY; never run by the tests (they use a scripted model).

    python -m examples.frameworks.openai_agents_example "Book 4 seats at ws-acme-1 for me" \\
        [--model gpt-5-mini] [--target 127.0.0.1:50051] [--token mia-demo-token] \\
        [--run-id ID] [--state .callgate/agents-state.json] [--wait 300]
    python -m examples.frameworks.openai_agents_example --resume --run-id ID   # later

Mia (a member of acme) may book up to 2 seats for herself; more wait for an owner: the run
stops at the SDK's own interruption, its RunState is saved to --state, and the approval is
printed. Approve it as Olga (`callgate approvals approve APPROVAL_ID --reason ok --token
olga-demo-token`): within --wait seconds the run goes on here, or later with --resume, from
the saved state, in this process or another. The booking happens once either way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, RunResult, RunState

from gateway.client import DEFAULT_TARGET, AsyncGatewayClient
from gateway.frameworks.openai_agents import CallgateRun

INSTRUCTIONS = (
    "You book workshop seats for the signed-in member (participant: mia). Check "
    "availability first; never guess. If a tool answers an error, say so."
)


async def run(ns: argparse.Namespace) -> int:
    state_file = Path(ns.state)
    async with AsyncGatewayClient(ns.target, ns.token) as client:
        gate = CallgateRun(client, ns.run_id)
        agent = gate.guard(
            Agent(name="booker", instructions=INSTRUCTIONS, model=ns.model), await gate.tools()
        )
        config = RunConfig(workflow_name="callgate booking")
        print(f"callgate run {ns.run_id}")
        if ns.resume:
            result: RunResult | None = None
            state: RunState[Any] = await RunState.from_string(
                agent, state_file.read_text(encoding="utf-8")
            )
        else:
            result = await Runner.run(agent, ns.question, run_config=config)
            if not result.interruptions:
                print(result.final_output)
                return 0
            state = result.to_state()
        while pending := await gate.apply_decisions(state):
            state_file.parent.mkdir(parents=True, exist_ok=True)
            state_file.write_text(state.to_string(), encoding="utf-8")
            for waiting in pending:
                print(
                    f"waiting for a person: {waiting['tool']} ({'; '.join(waiting['reasons'])})"
                    f"\n  callgate approvals approve {waiting['approval_id']} --reason ok "
                    "--token olga-demo-token"
                )
            if not await gate.wait_for_decisions(ns.wait):
                print(f"still waiting; resume later with: --resume --run-id {ns.run_id}")
                return 2
        result = await Runner.run(agent, state, run_config=config)
        print(result.final_output)
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="Book 4 seats at ws-acme-1 for me")
    parser.add_argument("--model", default="gpt-5-mini")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--token", default="mia-demo-token")
    parser.add_argument("--run-id", default=f"agents-{uuid.uuid4().hex[:8]}")
    parser.add_argument("--state", default=".callgate/agents-state.json")
    parser.add_argument("--wait", type=float, default=300.0)
    parser.add_argument("--resume", action="store_true", help="go on from the saved state")
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
