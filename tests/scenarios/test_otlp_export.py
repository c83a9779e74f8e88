"""`serve --otlp-endpoint`: a real sidecar process exports its spans with the OpenTelemetry SDK's
OTLP/HTTP exporter to a collector on loopback, which decodes them; the SDK's own OTEL_*
variables are honoured; a collector that is not there never holds up or fails a request; an
OTLP protocol or a propagator callgate cannot honour stops start-up."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import run_serve_expecting_failure
from tests.support.otlp import Collector, otlp_collector
from tests.support.paths import AUTH, POLICIES
from tests.support.scenarios import TRAIN, WEATHER
from tests.support.sidecars import own_sidecar

TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4737"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
BATCH_QUICKLY = {"OTEL_BSP_SCHEDULE_DELAY": "50"}
SUBMIT_TURN = "callgate.v1.ToolGateway/SubmitTurn"


def turn(client: GatewayClient, run_id: str) -> pb.TurnOutcome:
    client.start_run(run_id=run_id)
    return client.submit_calls(
        run_id,
        "turn-1",
        tool_call("c1", "get_train_status", TRAIN),
        tool_call("c2", "get_weather", WEATHER),
    )


def has_turn(collector: Collector) -> bool:
    return any(s.name == SUBMIT_TURN for s in collector.spans())


def test_a_turns_spans_reach_the_collector(
    tmp_path: Path, fresh_travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    run_id = f"otlp-{uuid.uuid4().hex[:8]}"
    env = {
        **BATCH_QUICKLY,
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-collector-key=k-42",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_SERVICE_NAME": "edge-gateway",
    }
    with (
        otlp_collector() as collector,
        own_sidecar(
            tmp_path,
            fresh_travel,
            tools_dir,
            effects_db,
            env=env,
            extra=("--otlp-endpoint", collector.url),
        ) as proc,
    ):
        with GatewayClient(
            proc.target, "alice-demo-token", metadata=[("traceparent", TRACEPARENT)]
        ) as alice:
            assert turn(alice, run_id).next == pb.NEXT_ACTION_CONTINUE
        collector.wait_for(has_turn)
    assert all(
        e.path == "/v1/traces"
        and e.headers["x-collector-key"] == "k-42"
        and e.headers["content-encoding"] == "gzip"
        for e in collector.exports
    )
    names = {
        a.key: a.value.string_value
        for a in collector.exports[0].request.resource_spans[0].resource.attributes
    }
    assert names["service.name"] == "edge-gateway" and names["callgate.engine"] == "embedded"
    spans = [s for s in collector.spans() if s.trace_id.hex() == TRACE_ID]
    (rpc,) = [s for s in spans if s.name == SUBMIT_TURN]
    assert rpc.parent_span_id.hex() == "00f067aa0ba902b7"
    assert sorted(s.name for s in spans) == sorted(
        [
            "callgate.v1.ToolGateway/StartRun",
            SUBMIT_TURN,
            "callgate.judge",
            "callgate.policy",
            "callgate.policy",
            "callgate.plan",
            "callgate.execute",
            "callgate.execute",
            "callgate.tool",
            "callgate.tool",
            "callgate.settle",
        ]
    )
    tools = {s.span_id.hex() for s in spans if s.name == "callgate.tool"}
    sent = [r["traceparent"] for r in fresh_travel.stats()["requests"]]
    assert {p.split("-")[1] for p in sent} == {TRACE_ID}
    assert {p.split("-")[2] for p in sent} == tools
    said = str([s.attributes for s in spans])
    for value in (run_id, "c1", "alice", TRAIN["train_number"], WEATHER["city"]):
        assert value not in said, f"a span says {value!r}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once closed


def test_an_unreachable_collector_holds_up_no_request(
    tmp_path: Path, fresh_travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    env = {**BATCH_QUICKLY, "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}  # seconds, as the SDK reads it
    with own_sidecar(
        tmp_path,
        fresh_travel,
        tools_dir,
        effects_db,
        env=env,
        extra=("--otlp-endpoint", f"http://127.0.0.1:{_closed_port()}"),
    ) as proc:
        with proc.client("alice-demo-token") as alice:
            for i in range(5):  # the exports fail meanwhile, and are retried, on their thread
                out = turn(alice, f"down-{uuid.uuid4().hex[:6]}-{i}")
                assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED] * 2
        assert proc.stop() == 0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ("OTEL_PROPAGATORS", "tracecontext,b3"),
    ],
)
def test_what_callgate_cannot_honour_stops_start_up(
    tmp_path: Path, tools_dir: Path, variable: str, value: str
) -> None:
    code, output = run_serve_expecting_failure(
        [
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools_dir),
            "--policies",
            str(POLICIES),
            "--db",
            str(tmp_path / "cg.db"),
            "--auth",
            str(AUTH),
            "--otlp-endpoint",
            "http://127.0.0.1:4318",
        ],
        env={variable: value},
    )
    assert code != 0 and f"{variable}=" in output, output
