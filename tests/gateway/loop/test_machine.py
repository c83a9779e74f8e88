"""The reference loop's machine against a real sidecar: failed model requests are recorded and
retried or handed off, budgets end it, a pause is waited on with WatchRun, a run is resumed from
callgate alone, and the conversation it builds turn by turn is the one callgate rebuilds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import AsyncGatewayClient
from gateway.loop import (
    TRANSITIONS,
    AgentLoop,
    LoopStatus,
    ModelError,
    ModelRequest,
    ScriptedModel,
    ScriptExhausted,
    Step,
)
from gateway.testing import SidecarProcess
from tests.support.scenarios import TRAIN
from tests.support.wire_responses import PROVIDERS, WIRES, Call

ANTHROPIC = WIRES["anthropic.messages"]
TRAIN_CALL = Call("call_train", "get_train_status", TRAIN)
USER = [ANTHROPIC.user("Is ICE123 on time?")]


@pytest.fixture
async def alice(sidecar: SidecarProcess) -> AsyncIterator[AsyncGatewayClient]:
    async with AsyncGatewayClient(sidecar.target, "alice-demo-token", timeout_s=30) as client:
        yield client


def anthropic_loop(
    client: AsyncGatewayClient, script: list[object], **options: object
) -> tuple[AgentLoop, ScriptedModel]:
    model = ScriptedModel(script)  # type: ignore[arg-type]
    return AgentLoop(client, model, provider="anthropic.messages", **options), model  # type: ignore[arg-type]


class Announcing(ScriptedModel):
    """A scripted model that says when it was first asked."""

    def __init__(self, script: list[object]) -> None:
        super().__init__(script)  # type: ignore[arg-type]
        self.asked = asyncio.Event()

    async def respond(self, request: ModelRequest) -> str:
        self.asked.set()
        return await super().respond(request)


def test_every_step_but_stop_leads_somewhere_and_stop_nowhere() -> None:
    assert set(TRANSITIONS) == set(Step)
    assert TRANSITIONS[Step.STOP] == frozenset()
    assert all(TRANSITIONS[s] for s in Step if s is not Step.STOP)
    assert Step.ASK in TRANSITIONS[Step.DECIDE]  # the only way back to the model


async def test_a_failed_model_request_is_recorded_and_asked_again(
    alice: AsyncGatewayClient, run_id: str, fresh_travel: TravelService
) -> None:
    loop, model = anthropic_loop(
        alice,
        [
            ModelError("429 from the provider", kind="rate_limit", retryable=True),
            ANTHROPIC.calls("msg_1", [TRAIN_CALL]),
            ANTHROPIC.final("msg_2", "On time."),
        ],
    )
    result = await loop.run(USER, run_id=run_id)
    assert result.status == LoopStatus.COMPLETED and len(model.requests) == 3
    turns = (await alice.get_run(run_id)).turns
    assert [(t.event, t.next) for t in turns] == [
        (pb.EVENT_KIND_PROVIDER_ERROR, pb.NEXT_ACTION_RETRY_TURN),
        (pb.EVENT_KIND_TOOL_REQUEST, pb.NEXT_ACTION_CONTINUE),
        (pb.EVENT_KIND_FINAL, pb.NEXT_ACTION_DONE),
    ]
    assert list(model.requests[0].conversation) == list(model.requests[1].conversation) == USER
    assert fresh_travel.stats()["train_status"] == 1


async def test_a_model_request_that_cannot_succeed_hands_off_with_its_reason(
    alice: AsyncGatewayClient, run_id: str
) -> None:
    loop, model = anthropic_loop(alice, [ModelError("invalid API key", kind="other")])
    result = await loop.run(USER, run_id=run_id)
    assert result.status == LoopStatus.HANDED_OFF and "invalid API key" in result.reason
    assert len(model.requests) == 1


async def test_the_turn_budget_ends_the_run_and_the_model_is_asked_no_more(
    alice: AsyncGatewayClient, run_id: str, fresh_travel: TravelService
) -> None:
    calls = [
        ANTHROPIC.calls(f"msg_{i}", [Call(f"c{i}", "get_train_status", TRAIN)]) for i in range(5)
    ]
    loop, model = anthropic_loop(alice, calls, max_turns=2)
    result = await loop.run(USER, run_id=run_id)
    assert result.status == LoopStatus.BUDGET_EXHAUSTED
    assert len(model.requests) == 2 and fresh_travel.stats()["train_status"] == 2


async def test_a_model_repeating_one_response_is_stopped_by_the_loops_own_budget(
    alice: AsyncGatewayClient, run_id: str
) -> None:
    """callgate answers a resubmitted turn from the store without counting it: only the loop's
    own count of model requests stops a model that keeps answering the same cut response."""
    cut = ANTHROPIC.truncated("msg_same", TRAIN_CALL)
    loop, model = anthropic_loop(alice, [cut] * 10, max_turns=3, max_retries=10)
    result = await loop.run(USER, run_id=run_id)
    assert result.status == LoopStatus.HANDED_OFF and "turn budget" in result.reason
    assert len(model.requests) == 3


async def test_a_pause_is_waited_on_and_the_run_goes_on_once_decided(
    sidecar: SidecarProcess, run_id: str, fresh_workshop: WorkshopService
) -> None:
    seat = Call("w1", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": 3})
    async with (
        AsyncGatewayClient(sidecar.target, "mia-demo-token") as mia,
        AsyncGatewayClient(sidecar.target, "olga-demo-token") as olga,
    ):
        model = Announcing([ANTHROPIC.calls("msg_1", [seat]), ANTHROPIC.final("msg_2", "Ok.")])
        loop = AgentLoop(mia, model, provider="anthropic.messages", wait_s=60)
        running = asyncio.create_task(loop.run(USER, run_id=run_id))
        await model.asked.wait()  # the run exists once the model is asked
        async for outcome in mia.watch_run(run_id):  # the owner decides once it waits
            if outcome.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL:
                (pending,) = [r for r in outcome.results if r.approval_id]
                break
        await olga.decide_approval(pending.approval_id, approve=True, reason="fine")
        result = await asyncio.wait_for(running, 60)
    assert result.status == LoopStatus.COMPLETED and len(model.requests) == 2
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1


async def test_a_pause_not_settled_in_time_is_handed_back(
    sidecar: SidecarProcess, run_id: str, fresh_workshop: WorkshopService
) -> None:
    seat = Call("w1", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": 3})
    async with AsyncGatewayClient(sidecar.target, "mia-demo-token") as mia:
        loop, model = anthropic_loop(mia, [ANTHROPIC.calls("msg_1", [seat])], wait_s=0.2)
        result = await loop.run(USER, run_id=run_id)
    assert result.status == LoopStatus.PAUSED_FOR_APPROVAL and result.paused
    assert result.outcome.results[0].status == pb.CALL_STATUS_PENDING_APPROVAL
    assert fresh_workshop.reservations() == []


async def test_resuming_a_finished_run_asks_nothing(alice: AsyncGatewayClient, run_id: str) -> None:
    loop, _ = anthropic_loop(alice, [ANTHROPIC.final("msg_1", "Hello.")])
    assert (await loop.run(USER, run_id=run_id)).status == LoopStatus.COMPLETED
    again, model = anthropic_loop(alice, [])
    for result in (await again.resume(run_id), await again.run(USER, run_id=run_id)):
        assert result.status == LoopStatus.COMPLETED
    assert model.requests == []


async def test_a_loop_that_asks_past_its_script_fails_loudly(
    alice: AsyncGatewayClient, run_id: str
) -> None:
    loop, _ = anthropic_loop(alice, [ANTHROPIC.calls("msg_1", [TRAIN_CALL])])
    with pytest.raises(ScriptExhausted):
        await loop.run(USER, run_id=run_id)
    assert (await alice.get_run(run_id)).state == pb.RUN_STATE_ACTIVE  # resumable


async def test_resuming_after_a_recorded_model_failure_keeps_the_conversation(
    alice: AsyncGatewayClient, run_id: str, fresh_travel: TravelService
) -> None:
    """A turn the loop recorded itself (no raw response) leaves the conversation callgate
    rebuilds as it was: a loop that restarts after it goes on."""
    loop, _ = anthropic_loop(
        alice,
        [
            ANTHROPIC.calls("msg_1", [TRAIN_CALL]),
            ModelError("timed out", kind="timeout", retryable=True),
        ],
    )
    with pytest.raises(ScriptExhausted):  # the process "dies" when asked a third time
        await loop.run(USER, run_id=run_id)
    resumed, model = anthropic_loop(alice, [ANTHROPIC.final("msg_2", "On time.")])
    assert (await resumed.resume(run_id)).status == LoopStatus.COMPLETED
    (asked,) = model.requests
    assert [m["role"] for m in asked.conversation] == ["user", "assistant", "user"]
    assert fresh_travel.stats()["train_status"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_conversation_built_turn_by_turn_is_the_one_callgate_rebuilds(
    alice: AsyncGatewayClient, run_id: str, provider: str, fresh_travel: TravelService
) -> None:
    wire = WIRES[provider]
    model = ScriptedModel(
        [
            wire.calls("r1", [TRAIN_CALL]),
            wire.calls(
                "r2", [Call("call_2", "get_weather", {"city": "Berlin", "date": "2026-12-01"})]
            ),
        ]
    )
    loop = AgentLoop(alice, model, provider=provider)
    with pytest.raises(ScriptExhausted):  # stops as it asks a third time
        await loop.run([wire.user("Trains and weather?")], run_id=run_id)
    run = await alice.get_run(run_id)
    built = list(model.requests[-1].conversation)
    assert len(built) > 1 and '"ICE123' in json.dumps(built)
    # the loop's conversation after turn 2 is callgate's, turn for turn
    resumed = ScriptedModel([wire.final("r3", "Done.")])
    assert (
        await AgentLoop(alice, resumed, provider=provider).resume(run_id)
    ).status == LoopStatus.COMPLETED
    assert list(resumed.requests[0].conversation) == built
    assert json.loads(run.conversation_json) == built


async def test_running_a_begun_run_again_goes_on_with_it(
    alice: AsyncGatewayClient, run_id: str, fresh_travel: TravelService
) -> None:
    first, _ = anthropic_loop(alice, [ANTHROPIC.calls("msg_1", [TRAIN_CALL])])
    with pytest.raises(ScriptExhausted):
        await first.run(USER, run_id=run_id)
    again, model = anthropic_loop(alice, [ANTHROPIC.final("msg_2", "On time.")])
    assert (await again.run(USER, run_id=run_id)).status == LoopStatus.COMPLETED
    (asked,) = model.requests  # with the first turn's results, not from the start
    assert [m["role"] for m in asked.conversation] == ["user", "assistant", "user"]
    assert fresh_travel.stats()["train_status"] == 1


async def test_an_unknown_outcome_is_looked_up_again_while_the_loop_waits(
    sidecar: SidecarProcess, run_id: str, fresh_workshop: WorkshopService
) -> None:
    """The workshop accepts the booking, hangs up and books it a little later: the loop keeps
    asking callgate to look it up (never to send it again) and goes on once it is found."""
    fresh_workshop.control(reserve_seat={"apply_late": True, "apply_after_s": 1.0, "times": 1})
    seat = Call("w1", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": 1})
    async with AsyncGatewayClient(sidecar.target, "mia-demo-token") as mia:
        loop, model = anthropic_loop(
            mia, [ANTHROPIC.calls("msg_1", [seat]), ANTHROPIC.final("msg_2", "Booked.")], wait_s=60
        )
        result = await loop.run(USER, run_id=run_id)
        (call,) = (await mia.get_run(run_id)).calls
    assert result.status == LoopStatus.COMPLETED and len(model.requests) == 2
    assert (call.status, call.execution_count) == (pb.CALL_STATUS_SUCCEEDED, 1)
    assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1
    assert fresh_workshop.stats()["reserve_seat"] == 1 and fresh_workshop.stats()["lookup"] >= 2
