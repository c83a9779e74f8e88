"""OPA asked directly: the floor a policy decision over REST sets, beside callgate's Authorize.

The issue's comparison is a p50: callgate answering an Authorize against a live OPA 1.9
answering the same decision itself. `decision_input` captures the input callgate's judge hands
the policy for the benchmark's Authorize call (the real runner, in this process, on the
default bundle), and `opa_rest_call` POSTs it to OPA's Data API as the OPA engine does (`POST
/v1/data/callgate/decision?strict-builtin-errors=true`, body `{"input": ...}`, a kept-alive
connection per request in flight), with a date of its own each request, as the new-argument
Authorize sends. The bundle is the one the OPA-engine sidecar pushed into that OPA.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from bench.inproc import ALICE, TRAIN, in_process, sqlite_opener
from bench.load import Call
from bench.workloads import UnexpectedAnswer, fresh_date
from gateway.executors.http1 import Http1Client
from gateway.model import Decision, ToolCall, Verdict
from gateway.policy.decision import decision_from_value
from gateway.policy.embedded import EmbeddedEngine, input_json
from gateway.policy.reload import ReloadingEngine
from gateway.run.authorize import Authorizer

OPA_REST = "OPA REST, the same decision, new date each request"
DECISION_PATH = "/v1/data/callgate/decision?strict-builtin-errors=true"
# the captured call's date: before any date `fresh_date` makes, so it names the argument alone
CAPTURED_DATE = "1999-12-31"


class _Recording(ReloadingEngine):
    """The embedded engine, keeping the text of every decision input it is asked."""

    def __init__(self, first: EmbeddedEngine) -> None:
        super().__init__(first)
        self.asked: list[str] = []

    async def decide(self, input: dict[str, Any]) -> Decision:
        self.asked.append(input_json(input))
        return await super().decide(input)


async def decision_input() -> str:
    """The JSON text of the input callgate's policy gets for the benchmark's Authorize (alice,
    get_train_status, train ICE123) with the date CAPTURED_DATE."""
    with tempfile.TemporaryDirectory(prefix="callgate-bench-input-") as tmp:
        opener = sqlite_opener(Path(tmp) / "input.db")
        async with in_process(opener, "http://127.0.0.1:9", _Recording) as proc:
            args = json.dumps({**TRAIN, "date": CAPTURED_DATE})
            (found,) = await Authorizer(proc.runner).authorize(
                ALICE, "", [ToolCall("c1", "get_train_status", args)]
            )
            policy = proc.runner.policy
        assert isinstance(policy, _Recording)
        if found.decision.verdict != Verdict.ALLOW or len(policy.asked) != 1:
            raise RuntimeError(f"capturing the policy input: {found} after {policy.asked}")
        (text,) = policy.asked
    if text.count(f'"{CAPTURED_DATE}"') != 1:
        raise RuntimeError("the captured policy input holds the call's date more than once")
    return text


def opa_rest_call(client: Http1Client, opa_url: str, input_text: str) -> Call:
    """The decision asked of OPA over REST, a new date each request; the answer must ALLOW."""
    url = opa_url + DECISION_PATH
    before, after = f'{{"input":{input_text}}}'.split(f'"{CAPTURED_DATE}"')
    headers = {"Content-Type": "application/json"}

    async def call(worker: int, seq: int) -> None:
        body = f'{before}"{fresh_date(worker, seq)}"{after}'.encode()
        answer = await client.request(
            "POST", url, headers=headers, body=body, max_body_bytes=1 << 20, on_sent=lambda: None
        )
        if answer.status != 200:
            raise UnexpectedAnswer("OPA", f"HTTP {answer.status}: {answer.body[:300]!r}")
        result = json.loads(answer.body).get("result")
        if decision_from_value(result, "").verdict != Verdict.ALLOW:
            raise UnexpectedAnswer("OPA", f"decision {str(result)[:300]}")

    return call
