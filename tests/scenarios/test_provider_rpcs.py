"""Raw provider responses and streams through the gateway: SubmitProviderResponse,
SubmitProviderStream, ListTools and the provider-shaped conversation on GetRun."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code
from tests.support.paths import ROOT, Connect
from tests.support.provider_turns import USER, submit_raw
from tests.support.scenarios import TRAIN, WEATHER


def anthropic_tool_use(msg_id: str = "msg_01") -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_train", "name": "get_train_status", "input": TRAIN},
            {"type": "tool_use", "id": "toolu_weather", "name": "get_weather", "input": WEATHER},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 40},
    }


def anthropic_final(msg_id: str = "msg_02") -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "ICE123 is on time; Berlin is mild."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 200, "output_tokens": 20},
    }


def test_anthropic_round_trip_and_conversation(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages", conversation_json=json.dumps(USER))
    out = submit_raw(c, run_id, anthropic_tool_use())
    assert out.turn_id == "msg_01" and out.next == pb.NEXT_ACTION_CONTINUE
    assert [(r.call_id, r.status) for r in out.results] == [
        ("toolu_train", pb.CALL_STATUS_SUCCEEDED),
        ("toolu_weather", pb.CALL_STATUS_SUCCEEDED),
    ]
    assistant, user = json.loads(out.provider_input_json)
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert user["role"] == "user"
    blocks = {b["tool_use_id"]: b for b in user["content"]}
    assert list(blocks) == ["toolu_train", "toolu_weather"]
    assert "ICE123" in json.dumps(blocks["toolu_train"]["content"])
    assert "Berlin" in json.dumps(blocks["toolu_weather"]["content"])
    assert not blocks["toolu_train"].get("is_error")
    run = c.get_run(run_id)
    assert run.usage_total.input_tokens == 120 and run.turns[0].raw_response_json
    conversation = json.loads(run.conversation_json)
    assert conversation == [*USER, assistant, user]
    done = submit_raw(c, run_id, anthropic_final())
    assert done.next == pb.NEXT_ACTION_DONE and done.provider_input_json == ""
    final_conv = json.loads(c.get_run(run_id).conversation_json)
    assert final_conv[:3] == conversation and final_conv[-1]["role"] == "assistant"


def test_rejected_call_is_answered_with_an_error_result(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    response = anthropic_tool_use()
    response["content"][1]["input"] = {"train_number": "TGV9", "date": "2026-12-01"}
    out = submit_raw(c, run_id, response)
    assert {r.call_id: r.error.code for r in out.results} == {
        "toolu_train": "policy_denied",
        "toolu_weather": "",
    }
    _, user = json.loads(out.provider_input_json)
    blocks = {b["tool_use_id"]: b for b in user["content"]}
    assert blocks["toolu_train"]["is_error"] is True
    assert "policy_denied" in json.dumps(blocks["toolu_train"]["content"])
    assert fresh_travel.stats()["train_status"] == 0


def test_resubmitting_the_same_raw_response_executes_nothing(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    first = submit_raw(c, run_id, anthropic_tool_use())
    again = submit_raw(c, run_id, anthropic_tool_use())
    assert again == first
    assert fresh_travel.stats()["train_status"] == 1


def test_truncated_anthropic_response_runs_nothing(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    response = anthropic_tool_use()
    response["stop_reason"] = "max_tokens"
    out = submit_raw(c, run_id, response)
    assert out.next == pb.NEXT_ACTION_RETRY_TURN and list(out.results) == []
    assert fresh_travel.stats()["train_status"] == 0 and fresh_travel.stats()["weather"] == 0


def anthropic_stream(cut_before_stop: bool = False) -> Iterator[dict[str, Any]]:
    yield {
        "type": "message_start",
        "message": {
            "id": "msg_s1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 1},
        },
    }
    yield {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {}},
    }
    args = json.dumps(WEATHER)
    for part in (args[:7], args[7:19], args[19:]):
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": part},
        }
    yield {"type": "content_block_stop", "index": 0}
    if cut_before_stop:
        return
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 30},
    }
    yield {"type": "message_stop"}


def stream_submit(
    c: GatewayClient, run_id: str, events: Iterator[dict[str, Any]], **first: Any
) -> pb.TurnOutcome:
    return c.submit_provider_stream(
        run_id, (json.dumps(event) for event in events), timeout_s=30, **first
    )


def test_anthropic_stream_is_assembled_by_the_gateway(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    out = stream_submit(c, run_id, anthropic_stream())
    assert out.turn_id == "msg_s1" and out.next == pb.NEXT_ACTION_CONTINUE
    (res,) = out.results
    assert res.call_id == "toolu_w" and res.status == pb.CALL_STATUS_SUCCEEDED
    assert json.loads(res.output_json)["city"] == "Berlin"
    assert fresh_travel.stats()["weather"] == 1


def test_cut_stream_never_executes(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    out = stream_submit(c, run_id, anthropic_stream(cut_before_stop=True), turn_id="cut-1")
    assert out.next == pb.NEXT_ACTION_RETRY_TURN and list(out.results) == []
    assert fresh_travel.stats()["weather"] == 0


def test_gemini_calls_without_ids_get_turn_scoped_ids(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="google.gemini")
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "get_train_status", "args": TRAIN}},
                        {"functionCall": {"name": "get_weather", "args": WEATHER}},
                    ],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "responseId": "gem-1",
        "modelVersion": "gemini-2.5-flash",
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }
    out = submit_raw(c, run_id, response)
    assert [r.call_id for r in out.results] == ["gem-1#0", "gem-1#1"]
    assert all(r.status == pb.CALL_STATUS_SUCCEEDED for r in out.results)
    model, user = json.loads(out.provider_input_json)
    assert model["role"] == "model" and user["role"] == "user"
    names = [p["functionResponse"]["name"] for p in user["parts"]]
    assert names == ["get_train_status", "get_weather"]
    assert user["parts"][0]["functionResponse"]["response"]["train_number"] == "ICE123"


def test_bedrock_needs_the_request_turn_id(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="aws.bedrock_converse")
    response = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": WEATHER}}
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 100},
    }
    with pytest.raises(RequestError) as err:
        submit_raw(c, run_id, response)
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    out = submit_raw(c, run_id, response, turn_id="bedrock-turn-1")
    assert out.turn_id == "bedrock-turn-1"
    assert out.results[0].call_id == "tooluse_1"
    assert out.results[0].status == pb.CALL_STATUS_SUCCEEDED
    _, user = json.loads(out.provider_input_json)
    assert user["content"][0]["toolResult"]["toolUseId"] == "tooluse_1"
    assert user["content"][0]["toolResult"]["status"] == "success"


@pytest.mark.parametrize("body", ["{not json", "[1, 2]", json.dumps({"id": "x"})])
def test_malformed_responses_are_invalid(connect: Connect, run_id: str, body: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    with pytest.raises(RequestError) as err:
        submit_raw(c, run_id, body)
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    assert error_code(err.value) == "malformed_response"
    assert c.get_run(run_id).turns_used == 0


def test_list_tools_offers_the_callers_tools_in_the_providers_shape(connect: Connect) -> None:
    alice = connect("bob-demo-token")  # a traveler, and nothing else
    resp = alice.list_tools("anthropic.messages", timeout_s=10)
    tools = json.loads(resp.tools_json)
    assert sorted(t["name"] for t in tools) == ["get_train_status", "get_weather"]
    assert all("input_schema" in t for t in tools)
    bedrock = alice.list_tools("aws.bedrock_converse", timeout_s=10)
    assert {t["toolSpec"]["name"] for t in json.loads(bedrock.tools_json)} == {
        "get_train_status",
        "get_weather",
    }
    tester = connect("tina-demo-token")  # the "*" role: every registered tool
    every = json.loads(tester.list_tools("anthropic.messages", timeout_s=10).tools_json)
    assert "book_ticket" in {t["name"] for t in every}
    with pytest.raises(RequestError) as err:
        alice.list_tools("nope", timeout_s=10)
    assert error_code(err.value) == "unknown_provider"


RECORDINGS = ROOT / "tests" / "adapters" / "fixtures" / "openai_chat"  # real recordings


def responses_tool_call() -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1764450000,
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_train",
                "name": "get_train_status",
                "arguments": json.dumps(TRAIN),
                "status": "completed",
            },
            {
                "type": "function_call",
                "id": "fc_2",
                "call_id": "call_weather",
                "name": "get_weather",
                "arguments": json.dumps(WEATHER),
                "status": "completed",
            },
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 30,
            "output_tokens": 12,
            "total_tokens": 42,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def test_openai_responses_round_trip(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="openai.responses")
    out = submit_raw(c, run_id, responses_tool_call())
    assert out.turn_id == "resp_1" and out.next == pb.NEXT_ACTION_CONTINUE
    items = json.loads(out.provider_input_json)
    assert [(i["type"], i["call_id"]) for i in items] == [
        ("function_call_output", "call_train"),
        ("function_call_output", "call_weather"),
    ]
    assert json.loads(items[0]["output"])["train_number"] == "ICE123"
    assert json.loads(items[1]["output"])["city"] == "Berlin"


def test_real_chat_stream_recording_answers_every_call_id(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    """A recorded Chat Completions stream, forwarded event by event as a loop would."""
    lines = (RECORDINGS / "chat_parallel_tools.sse").read_text().splitlines()
    payloads = [ln.removeprefix("data: ") for ln in lines if ln.startswith("data: ")]
    events = [json.loads(p) if p != "[DONE]" else {"_sentinel": "[DONE]"} for p in payloads]
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="openai.chat_completions")
    out = stream_submit(c, run_id, iter(events))
    assert out.turn_id.startswith("chatcmpl-") and len(out.results) >= 2
    assert {r.error.code for r in out.results} == {"unknown_tool"}  # not tools of this gateway
    assistant, *tool_msgs = json.loads(out.provider_input_json)
    assert assistant["role"] == "assistant"
    assert [m["tool_call_id"] for m in tool_msgs] == [r.call_id for r in out.results]
    assert [t["id"] for t in assistant["tool_calls"]] == [r.call_id for r in out.results]


FIXTURES = ROOT / "tests" / "adapters" / "fixtures"


@pytest.mark.parametrize(
    "provider,fixture,expected",
    [
        (
            "openai.responses",
            "openai_responses/incomplete_max_tokens.json",
            pb.NEXT_ACTION_RETRY_TURN,
        ),
        ("openai.responses", "openai_responses/refusal.json", pb.NEXT_ACTION_HANDOFF),
        ("openai.responses", "openai_responses/final_text.json", pb.NEXT_ACTION_DONE),
        ("openai.chat_completions", "openai_chat/length.json", pb.NEXT_ACTION_RETRY_TURN),
        ("openai.chat_completions", "openai_chat/content_filter.json", pb.NEXT_ACTION_HANDOFF),
        ("anthropic.messages", "anthropic/message_pause_turn.json", pb.NEXT_ACTION_CONTINUE),
        ("anthropic.messages", "anthropic/error_overloaded.json", pb.NEXT_ACTION_RETRY_TURN),
        (
            "anthropic.messages",
            "anthropic/message_max_tokens_tool_use.json",
            pb.NEXT_ACTION_RETRY_TURN,
        ),
        ("google.gemini", "gemini/prompt_blocked.json", pb.NEXT_ACTION_HANDOFF),
        ("google.gemini", "gemini/max_tokens.json", pb.NEXT_ACTION_RETRY_TURN),
        ("aws.bedrock_converse", "bedrock/guardrail_intervened.json", pb.NEXT_ACTION_HANDOFF),
        ("aws.bedrock_converse", "bedrock/final_text.json", pb.NEXT_ACTION_DONE),
    ],
)
def test_provider_stop_states_map_to_next_actions(
    connect: Connect,
    run_id: str,
    provider: str,
    fixture: str,
    expected: int,
    fresh_travel: TravelService,
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider=provider)
    out = submit_raw(c, run_id, (FIXTURES / fixture).read_text(), turn_id="t-fixture")
    assert out.next == expected and list(out.results) == []
    assert (out.provider_input_json != "") == (expected == pb.NEXT_ACTION_CONTINUE)
    assert sum(fresh_travel.stats()[k] for k in ("train_status", "weather")) == 0


def test_real_chat_refusal_recording_hands_off(connect: Connect, run_id: str) -> None:
    lines = (RECORDINGS / "chat_refusal.sse").read_text().splitlines()
    payloads = [ln.removeprefix("data: ") for ln in lines if ln.startswith("data: ")]
    events = [json.loads(p) for p in payloads if p != "[DONE]"]
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="openai.chat_completions")
    out = stream_submit(c, run_id, iter(events))
    assert out.next == pb.NEXT_ACTION_HANDOFF and out.run_state == pb.RUN_STATE_HANDED_OFF
