"""Hostile values through every field a caller or a model fills, over real gRPC.

Each case checks the answer (a stable code, never INTERNAL), that nothing invalid executed
(read from the travel service), and that the run still accepts a valid turn afterwards.
"""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, error_code, tool_call
from tests.support.paths import Connect
from tests.support.refusals import assert_refused, assert_run_usable, rpc_error, submit_stream
from tests.support.scenarios import WEATHER

LONE = "\ud800"


def submit_raw(c: GatewayClient, run_id: str, text: str, **fields: Any) -> pb.TurnOutcome:
    return c.submit_provider_response(run_id, text, timeout_s=30, **fields)


ERROR_BODIES: dict[str, dict[str, Any]] = {
    "openai.responses": {"error": {"message": LONE, "code": "server_error"}},
    "openai.chat_completions": {"error": {"message": LONE, "code": "server_error"}},
    "anthropic.messages": {"type": "error", "error": {"type": "api_error", "message": LONE}},
    "google.gemini": {"error": {"code": 500, "message": LONE, "status": "INTERNAL"}},
    "aws.bedrock_converse": {"Error": {"Code": "ThrottlingException", "Message": LONE}},
}


@pytest.mark.parametrize("provider", sorted(ERROR_BODIES))
def test_lone_surrogate_in_a_provider_error_is_malformed_and_the_run_goes_on(
    connect: Connect, run_id: str, provider: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider=provider)
    err = rpc_error(submit_raw, c, run_id, json.dumps(ERROR_BODIES[provider]), turn_id="t-err")
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert "surrogate" in (err.message or "")
    assert_run_usable(c, run_id)


@pytest.mark.parametrize("field", ["model", "status_reason"])
def test_lone_surrogate_in_a_reason_or_model_is_malformed(
    connect: Connect, run_id: str, field: str
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="openai.responses")
    body: dict[str, Any] = {
        "id": "resp_x",
        "status": "incomplete",
        "model": "gpt",
        "output": [],
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    if field == "model":
        body["model"] = LONE
    else:
        body["incomplete_details"]["reason"] = LONE
    err = rpc_error(submit_raw, c, run_id, json.dumps(body))
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert_run_usable(c, run_id)


def test_lone_surrogate_as_tool_name_or_argument_is_refused(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="google.gemini")
    for part in (
        {"functionCall": {"name": LONE, "args": {}}},
        {"functionCall": {"name": "get_weather", "args": {"city": LONE}}},
    ):
        body = {
            "responseId": "r1",
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
        }
        err = rpc_error(submit_raw, c, run_id, json.dumps(body))
        assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert fresh_travel.stats()["weather"] == 0
    assert_run_usable(c, run_id)


def nested(depth: int) -> str:
    return '{"city": ' + "[" * depth + "]" * depth + ', "date": "2026-12-01"}'


@pytest.mark.parametrize(
    "arguments, rule",
    [
        ('{"city": NaN, "date": "2026-12-01"}', "NaN"),
        ('{"city": Infinity, "date": "2026-12-01"}', "Infinity"),
        ('{"city": 1e400, "date": "2026-12-01"}', "range"),
        ('{"city": ' + "9" * 400 + ', "date": "2026-12-01"}', "integer"),
        ('{"city": "\\ud800", "date": "2026-12-01"}', "surrogate"),
        (nested(130), "deeper"),
        (nested(5000), "deeper"),
        ('{"city": "Berlin", "city": "Paris", "date": "2026-12-01"}', "duplicate"),
    ],
)
def test_arguments_breaking_a_json_rule_are_rejected_and_do_not_poison_the_run(
    connect: Connect, run_id: str, fresh_travel: TravelService, arguments: str, rule: str
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    out = c.submit_calls(run_id, "t-bad", tool_call("bad", "get_weather", arguments))
    (res,) = out.results
    assert res.status == pb.CALL_STATUS_REJECTED
    assert res.error.code == "invalid_arguments", res.error
    assert rule in res.error.message
    assert fresh_travel.stats()["weather"] == 0
    for turn in range(3):  # later decisions read the run's earlier calls: none is poisoned
        assert_run_usable(c, run_id, f"t-ok-{turn}")
    assert fresh_travel.stats()["weather"] == 3


def test_duplicate_keys_never_execute(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    args = '{"train_number": "bad!", "train_number": "ICE123", "date": "2026-12-01"}'
    (res,) = c.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", args)).results
    assert (res.status, res.error.code) == (pb.CALL_STATUS_REJECTED, "invalid_arguments")
    assert "duplicate" in res.error.message
    assert fresh_travel.stats()["train_status"] == 0
    (decision,) = c.authorize(tool_call("c2", "get_train_status", args)).decisions
    assert decision.error.code == "invalid_arguments"


def test_a_too_deep_conversation_is_refused_at_start(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    conv = "[" + "[" * 700 + "]" * 700 + "]"
    err = rpc_error(
        c.start_run, run_id=run_id, provider="anthropic.messages", conversation_json=conv
    )
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert "deeper" in (err.message or "")


def test_raw_response_json_of_a_turn_is_checked(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages", conversation_json="[]")
    deep = "[" * 100_000 + "]" * 100_000
    err = rpc_error(
        c.submit_turn,
        run_id=run_id,
        turn_id="t1",
        raw_response_json=deep,
        final=pb.FinalAnswer(text="done"),
    )
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert_run_usable(c, run_id)


def test_a_raw_response_naming_other_call_ids_leaves_get_run_working(
    connect: Connect, run_id: str, fresh_travel: TravelService
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages", conversation_json="[]")
    raw = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "tool_use", "id": "toolu_other", "name": "get_weather", "input": WEATHER}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    c.submit_calls(
        run_id, "t1", tool_call("mine", "get_weather", WEATHER), raw_response_json=json.dumps(raw)
    )
    run = c.get_run(run_id)
    assert [r.call_id for r in run.calls] == ["mine"]
    assert run.conversation_json == ""  # cannot be rebuilt from that raw response
    assert_run_usable(c, run_id)


def test_huge_usage_in_a_raw_response_is_malformed(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="google.gemini")
    text = (
        '{"responseId": "r1", "candidates": [{"content": {"role": "model", "parts": '
        '[{"text": "hi"}]}, "finishReason": "STOP"}], "usageMetadata": '
        '{"promptTokenCount": 100000000000000000000}}'
    )
    err = rpc_error(submit_raw, c, run_id, text)
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert_run_usable(c, run_id)


def test_usage_near_the_integer_limit_never_overflows_the_store(
    connect: Connect, run_id: str
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    err = rpc_error(
        c.submit_turn,
        run_id=run_id,
        turn_id="t1",
        usage=pb.Usage(input_tokens=2**63 - 1),
        paused=pb.Paused(reason="x"),
    )
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    big = 2**53 - 1
    for i in range(3):
        c.submit_turn(
            run_id=run_id,
            turn_id=f"p{i}",
            usage=pb.Usage(input_tokens=big),
            paused=pb.Paused(reason="x"),
        )
    run = c.get_run(run_id)
    assert run.usage_total.input_tokens == 3 * big
    assert_run_usable(c, run_id)


def test_negative_budgets_and_usage_are_refused(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    err = rpc_error(c.start_run, run_id=run_id, budget=pb.Budget(max_tool_calls=-1))
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    assert "max_tool_calls" in (err.message or "")
    c.start_run(run_id=run_id, budget=pb.Budget(max_total_tokens=100))
    err = rpc_error(
        c.submit_turn,
        run_id=run_id,
        turn_id="t1",
        usage=pb.Usage(input_tokens=-1000),
        final=pb.FinalAnswer(text="x"),
    )
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument")
    text = json.dumps(
        {
            "responseId": "r1",
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": -5},
        }
    )
    err = rpc_error(submit_raw, c, run_id, text, provider="google.gemini")
    assert err.grpc_status == "INVALID_ARGUMENT", err.message
    assert c.get_run(run_id).usage_total.input_tokens == 0


@pytest.mark.parametrize(
    "ids, code",
    [
        (["", "b"], "invalid_argument"),
        (["a", "a"], "duplicate_call_id"),
        (["x" * 257], "invalid_argument"),
        (["bad\x07id"], "invalid_argument"),
    ],
)
def test_authorize_checks_call_ids_like_submit_turn(
    connect: Connect, ids: list[str], code: str
) -> None:
    c = connect("alice-demo-token")
    err = rpc_error(c.authorize, *[tool_call(i, "get_weather", WEATHER) for i in ids])
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, code)


RESPONSES = [
    ("openai.responses", {"id": "r", "status": "completed", "output": [{"type": {}}]}),
    (
        "openai.responses",
        {
            "id": "r",
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": []}]}],
        },
    ),
    (
        "openai.chat_completions",
        {
            "id": "c",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [{"type": "function", "id": "x", "function": []}],
                    },
                }
            ],
        },
    ),
    (
        "anthropic.messages",
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "x",
            "content": [{"type": "tool_use", "id": 5, "name": "n", "input": {}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    ),
    (
        "google.gemini",
        {
            "responseId": "r",
            "candidates": [
                {
                    "content": {"parts": [{"functionCall": {"name": "", "args": {}}}]},
                    "finishReason": "STOP",
                }
            ],
        },
    ),
    ("google.gemini", {"responseId": "r", "candidates": [{"finishReason": []}]}),
    (
        "aws.bedrock_converse",
        {
            "stopReason": "tool_use",
            "output": {
                "message": {"content": [{"toolUse": {"toolUseId": "t", "name": {}, "input": {}}}]}
            },
        },
    ),
]


@pytest.mark.parametrize("provider, body", RESPONSES)
def test_wrongly_typed_responses_are_malformed(
    connect: Connect, run_id: str, provider: str, body: dict[str, Any]
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider=provider)
    err = rpc_error(submit_raw, c, run_id, json.dumps(body), turn_id="t-m")
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert_run_usable(c, run_id)


STREAMS = [
    ("openai.responses", [{"type": "response.completed", "response": {}}]),
    (
        "openai.chat_completions",
        [{"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": True}}]}],
    ),
    (
        "openai.chat_completions",
        [
            {
                "id": "c",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
                    }
                ],
            },
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ],
    ),
    (
        "anthropic.messages",
        [
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "model": "x",
                    "content": [],
                    "usage": None,
                },
            },
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": None},
            {"type": "message_stop"},
        ],
    ),
    (
        "google.gemini",
        [
            {
                "responseId": "r",
                "candidates": [
                    {
                        "content": {"parts": [{"functionCall": {"name": "", "args": {}}}]},
                        "finishReason": "STOP",
                    }
                ],
            }
        ],
    ),
    (
        "aws.bedrock_converse",
        [{"messageStop": {"stopReason": "end_turn"}}, {"metadata": {"usage": {"inputTokens": -5}}}],
    ),
]


@pytest.mark.parametrize("provider, events", STREAMS)
def test_streams_that_cannot_be_assembled_are_malformed(
    connect: Connect, run_id: str, provider: str, events: list[dict[str, Any]]
) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider=provider)
    err = rpc_error(submit_stream, c, run_id, [json.dumps(e) for e in events], turn_id="t-s")
    assert_refused(err, grpc.StatusCode.INVALID_ARGUMENT, "malformed_response")
    assert_run_usable(c, run_id)


def test_invalid_utf8_in_a_string_field_is_invalid_argument(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    good = pb.GetRunRequest(run_id=run_id).SerializeToString()
    bad = good.replace(run_id.encode(), b"\xff\xfe" + run_id.encode()[2:])
    # bytes no client would send: straight onto a channel of the test's own
    with grpc.insecure_channel(c.target) as channel, pytest.raises(grpc.RpcError) as info:
        channel.unary_unary("/callgate.v1.ToolGateway/GetRun")(
            bad, metadata=[("authorization", "Bearer alice-demo-token")], timeout=10
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_code(info.value) == "invalid_argument"
    assert "UTF-8" in (info.value.details() or "")


@pytest.mark.parametrize("provider", ["anthropic.messages", "aws.bedrock_converse"])
def test_duplicate_keys_in_streamed_arguments_never_execute(
    connect: Connect, run_id: str, provider: str, fresh_travel: TravelService
) -> None:
    args = '{"city": "Berlin", "city": "Paris", "date": "2026-12-01"}'
    if provider == "anthropic.messages":
        events: list[dict[str, Any]] = [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_d",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 1, "output_tokens": 0},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_d",
                    "name": "get_weather",
                    "input": {},
                },
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": args},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
    else:
        events = [
            {"messageStart": {"role": "assistant"}},
            {
                "contentBlockStart": {
                    "contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "toolu_d", "name": "get_weather"}},
                }
            },
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": args}}}},
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "tool_use"}},
        ]
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider=provider)
    out = submit_stream(c, run_id, [json.dumps(e) for e in events], turn_id="t-dup")
    (res,) = out.results
    assert (res.status, res.error.code) == (pb.CALL_STATUS_REJECTED, "invalid_arguments")
    assert "duplicate" in res.error.message
    assert fresh_travel.stats()["weather"] == 0


@pytest.mark.parametrize("depth, code", [(63, "invalid_arguments"), (70, "invalid_arguments")])
def test_deep_arguments_inside_a_response_reject_the_call_not_the_turn(
    connect: Connect, run_id: str, depth: int, code: str
) -> None:
    """The envelope a provider wraps arguments in does not count against --max-json-depth:
    the arguments are judged by it, as a call (schema or depth), and the turn goes on."""
    city: Any = "Berlin"
    for _ in range(depth - 1):
        city = [city]
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    body = {
        "id": "msg_deep",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_deep",
                "name": "get_weather",
                "input": {"city": city, "date": "2026-12-01"},
            }
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    (res,) = submit_raw(c, run_id, json.dumps(body)).results
    assert (res.status, res.error.code) == (pb.CALL_STATUS_REJECTED, code)
    if depth > 64:
        assert "deeper than 64" in res.error.message
    assert_run_usable(c, run_id)
