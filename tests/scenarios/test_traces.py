"""Traces: the sidecar in this test's event loop with the OpenTelemetry SDK's in-memory
exporter. One span per RPC continuing the caller's `traceparent`, the phases as its children,
each tool execution a client span whose context the HTTP tool received; no argument value in
any span."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import tool_call
from gateway.observe.hooks import Observe
from gateway.observe.sdk import sdk_tracer
from gateway.service.app import Sidecar
from gateway.service.config import ServeConfig
from tests.support.paths import AUTH, POLICIES
from tests.support.scenarios import TRAIN, WEATHER

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"
BAGGAGE = "deployment.tier=canary-zq"  # the caller's, passed on to tools, on no span
ARGUMENT_VALUES = [
    TRAIN["train_number"],
    TRAIN["date"],
    WEATHER["city"],
    "alice-demo-token",
    "canary-zq",
]


def caller(token: str = "alice-demo-token") -> list[tuple[str, str]]:
    return [
        ("authorization", f"Bearer {token}"),
        ("traceparent", f"00-{TRACE_ID}-{CALLER_SPAN}-01"),
        ("tracestate", "vendor=x1"),
        ("baggage", BAGGAGE),
    ]


@pytest.fixture
async def traced(
    tmp_path: Path, tools_dir: Path, travel: TravelService, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Sidecar, InMemorySpanExporter]]:
    monkeypatch.setenv("CALLGATE_TRAVEL_URL", travel.url)
    exporter = InMemorySpanExporter()
    observe = Observe(tracer=sdk_tracer(exporter))
    sidecar = Sidecar(
        ServeConfig(
            listen="127.0.0.1:0",
            tools=tools_dir,
            policies=POLICIES,
            db=str(tmp_path / "cg.db"),
            auth=AUTH,
        ),
        observe=observe,
    )
    await sidecar.start()
    yield sidecar, exporter
    await sidecar.stop(0)


async def finished(exporter: InMemorySpanExporter, *rpcs: str) -> tuple[ReadableSpan, ...]:
    """The spans finished once the RPCs' own spans have: a caller can have its answer a moment
    before the servicer's span ends (within a bounded wait)."""
    deadline = time.monotonic() + 10
    while True:
        spans = exporter.get_finished_spans()
        names = [s.name.rsplit("/", 1)[-1] for s in spans if s.kind == SpanKind.SERVER]
        if all(names.count(rpc) >= rpcs.count(rpc) for rpc in rpcs):
            return spans
        assert time.monotonic() < deadline, f"RPC spans finished: {names}"
        await asyncio.sleep(0.01)


def tree(spans: tuple[ReadableSpan, ...]) -> dict[str, list[list[str]]]:
    """Span name → for each span of that name, the names of its children (sorted)."""
    children: dict[int, list[str]] = {s.context.span_id: [] for s in spans}
    for s in spans:
        if s.parent is not None and s.parent.span_id in children:
            children[s.parent.span_id].append(s.name)
    found: dict[str, list[list[str]]] = {}
    for s in spans:
        found.setdefault(s.name, []).append(sorted(children[s.context.span_id]))
    return found


def everything_said(spans: tuple[ReadableSpan, ...]) -> str:
    return json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [e.name for e in s.events],
                "status": s.status.description,
            }
            for s in spans
        ],
        default=str,
    )


async def test_a_turn_is_one_trace_continuing_the_callers(
    traced: tuple[Sidecar, InMemorySpanExporter], fresh_travel: TravelService
) -> None:
    sidecar, exporter = traced
    async with grpc.aio.insecure_channel(sidecar.bound) as channel:
        stub = pb.ToolGatewayStub(channel)
        await stub.StartRun(pb.StartRunRequest(run_id="tr1"), metadata=caller())
        exporter.clear()
        out = await stub.SubmitTurn(
            pb.SubmitTurnRequest(
                run_id="tr1",
                turn_id="t1",
                tool_request=pb.ToolRequest(
                    calls=[
                        tool_call("c1", "get_train_status", TRAIN),
                        tool_call("c2", "get_weather", WEATHER),
                    ]
                ),
            ),
            metadata=caller(),
        )
    assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED] * 2
    spans = await finished(exporter, "SubmitTurn")
    assert {f"{s.context.trace_id:032x}" for s in spans} == {TRACE_ID}
    (rpc,) = [s for s in spans if s.kind == SpanKind.SERVER]
    assert rpc.name == "callgate.v1.ToolGateway/SubmitTurn"
    assert rpc.parent is not None and f"{rpc.parent.span_id:016x}" == CALLER_SPAN
    assert rpc.attributes is not None and rpc.attributes["rpc.grpc.status_code"] == 0
    assert tree(spans) == {
        rpc.name: [
            [
                "callgate.execute",
                "callgate.execute",
                "callgate.judge",
                "callgate.plan",
                "callgate.settle",
            ]
        ],
        "callgate.judge": [["callgate.policy", "callgate.policy"]],
        "callgate.plan": [[]],
        "callgate.policy": [[], []],
        "callgate.execute": [["callgate.tool"]] * 2,
        "callgate.tool": [[], []],
        "callgate.settle": [[]],
    }
    policies = [s for s in spans if s.name == "callgate.policy"]
    assert {s.attributes["callgate.tool"] for s in policies if s.attributes} == {
        "get_train_status",
        "get_weather",
    }
    assert all(
        s.attributes
        and s.attributes["callgate.verdict"] == "ALLOW"
        and s.attributes["callgate.policy_revision"]
        for s in policies
    )
    tools = {s.context.span_id: s for s in spans if s.name == "callgate.tool"}
    assert all(s.kind == SpanKind.CLIENT for s in tools.values())
    # the tool service got each call's own tool span as its parent, in the caller's trace
    requests = fresh_travel.stats()["requests"]
    assert [r["baggage"] for r in requests] == [BAGGAGE, BAGGAGE]
    sent = [r["traceparent"] for r in requests]
    assert len(sent) == 2
    for traceparent in sent:
        _, trace_id, parent, _ = traceparent.split("-")
        assert trace_id == TRACE_ID and int(parent, 16) in tools
    said = everything_said(spans)
    for value in ARGUMENT_VALUES:
        assert value not in said, f"a span says {value!r}"


async def test_authorize_and_a_refusal(traced: tuple[Sidecar, InMemorySpanExporter]) -> None:
    sidecar, exporter = traced
    async with grpc.aio.insecure_channel(sidecar.bound) as channel:
        stub = pb.ToolGatewayStub(channel)
        answer = await stub.Authorize(
            pb.AuthorizeRequest(calls=[tool_call("c1", "get_train_status", TRAIN)]),
            metadata=caller(),
        )
        assert answer.decisions[0].decision.verdict == pb.VERDICT_ALLOW
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetStatus(pb.GetStatusRequest(), metadata=caller("nobody-token"))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    spans = await finished(exporter, "Authorize", "GetStatus")
    assert tree(spans)["callgate.v1.ToolGateway/Authorize"] == [["callgate.policy"]]
    (status,) = [s for s in spans if s.name.endswith("/GetStatus")]
    assert (
        status.attributes is not None
        and status.attributes["callgate.code"] == "unauthenticated"
        and status.attributes["rpc.grpc.status_code"] == 16
    )
    assert not status.status.is_ok and status.status.description == "unauthenticated"
    assert "nobody-token" not in everything_said(spans)


async def test_the_server_streams_have_spans_too(
    traced: tuple[Sidecar, InMemorySpanExporter],
) -> None:
    sidecar, exporter = traced
    async with grpc.aio.insecure_channel(sidecar.bound) as channel:
        stub = pb.ToolGatewayStub(channel)
        await stub.StartRun(pb.StartRunRequest(run_id="ws1"), metadata=caller())
        await stub.SubmitTurn(
            pb.SubmitTurnRequest(run_id="ws1", turn_id="t1", final=pb.FinalAnswer(text="done")),
            metadata=caller(),
        )
        await stub.Authorize(
            pb.AuthorizeRequest(
                calls=[  # a record for QueryAudit
                    tool_call("a1", "get_train_status", TRAIN)
                ]
            ),
            metadata=caller(),
        )
        exporter.clear()
        watched = [
            m async for m in stub.WatchRun(pb.WatchRunRequest(run_id="ws1"), metadata=caller())
        ]
        records = [r async for r in stub.QueryAudit(pb.QueryAuditRequest(), metadata=caller())]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            _ = [
                m
                async for m in stub.WatchRun(
                    pb.WatchRunRequest(run_id="ws1"), metadata=caller("nobody-token")
                )
            ]
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert len(watched) == 1 and records
    spans = await finished(exporter, "WatchRun", "QueryAudit", "WatchRun")
    by_name = {s.name: s for s in spans if s.name.endswith("/QueryAudit")}
    watch_ok, watch_refused = [s for s in spans if s.name.endswith("/WatchRun")]
    audit = by_name["callgate.v1.ToolGateway/QueryAudit"]
    for span, sent in ((watch_ok, 1), (audit, len(records))):
        assert span.kind == SpanKind.SERVER and span.parent is not None
        assert f"{span.context.trace_id:032x}" == TRACE_ID
        assert span.attributes is not None and span.attributes["callgate.messages_sent"] == sent
        assert span.attributes["rpc.grpc.status_code"] == 0 and span.status.is_ok
    assert watch_refused.attributes is not None
    assert watch_refused.attributes["callgate.code"] == "unauthenticated"
    assert watch_refused.status.description == "unauthenticated"
    assert "ws1" not in everything_said(spans)
