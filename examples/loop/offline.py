"""The reference loop with a scripted model: recorded Anthropic responses replayed against a
running sidecar (`make run`), no API key needed.

    python -m examples.loop.offline [--target 127.0.0.1:50051] [--token alice-demo-token]

The model asks for the train's status and the weather; callgate decides and runs both reads and
answers each result under its call ID; the model's recorded final answer ends the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gateway.client import DEFAULT_TARGET
from gateway.loop import ScriptedModel, run_loop

RECORDED = Path(__file__).resolve().parent / "recorded"
QUESTION = [
    {
        "role": "user",
        "content": "Is ICE123 on time on 2026-12-01, and how is the weather in Berlin?",
    }
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--token", default="alice-demo-token")
    parser.add_argument("--run-id", default="")
    ns = parser.parse_args(argv)
    model = ScriptedModel.from_files(*sorted(RECORDED.glob("*.json")))
    result = run_loop(
        model,
        QUESTION,
        provider="anthropic.messages",
        target=ns.target,
        token=ns.token,
        run_id=ns.run_id,
    )
    told = model.requests[-1].conversation[-1]["content"]  # the results the model was given
    for block in told:
        print(f"{block['tool_use_id']}: {block['content']}")
    answer = json.loads(result.response_json)["content"][0]["text"]
    print(f"{result.status.value}: {answer}")
    return 0 if result.status.value == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
