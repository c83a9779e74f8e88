"""The loop examples: the offline one runs against a real sidecar; the SDK ones (which need an
API key and are never run here) at least import and fit the loop's Model protocol."""

from __future__ import annotations

import subprocess
import sys

import anthropic
import openai

from examples.loop.anthropic_messages import ClaudeModel
from examples.loop.openai_responses import OpenAIResponsesModel
from examples.travel.service import TravelService
from gateway.loop import Model
from gateway.testing import SidecarProcess
from tests.support.paths import ROOT


def test_the_offline_loop_answers_from_recorded_responses(
    sidecar: SidecarProcess, fresh_travel: TravelService, run_id: str
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "examples.loop.offline",
            "--target",
            sidecar.target,
            "--token",
            "alice-demo-token",
            "--run-id",
            run_id,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith('toolu_01Train: {"train_number": "ICE123"')
    assert lines[1].startswith('toolu_01Weather: {"city": "Berlin"')
    assert lines[2] == "completed: ICE123 runs on time on 1 December, and Berlin will be mild."
    assert fresh_travel.stats()["train_status"] == 1 and fresh_travel.stats()["weather"] == 1


def test_the_sdk_models_are_loop_models() -> None:
    models: list[Model] = [
        ClaudeModel(anthropic.AsyncAnthropic(api_key="unused"), "claude-sonnet-4-5"),
        OpenAIResponsesModel(openai.AsyncOpenAI(api_key="unused"), "gpt-5-mini"),
    ]
    assert all(callable(m.respond) for m in models)
