"""The OTLP request callgate's exporter sends for its spans is the one the SDK's encoder builds
for the same spans made `ReadableSpan`s, byte for byte; its own path (not the SDK encoder's)
is the one callgate's spans take, through the SDK's batch processor to a collector."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

import gateway.observe.otlp as otlp
from gateway.observe.otlp import NotPlain, OtlpSpanExporter, encode_lean
from gateway.observe.readable import TraceStates, readable
from gateway.observe.sdk import otlp_tracer, resource
from gateway.observe.tracing import CLIENT, INTERNAL, SERVER, LeanSpan
from tests.support.otlp import otlp_collector

RESOURCES = [
    resource({"rpc.system": "grpc", "service.version": "1.2.3"}),
    Resource({"service.name": "other", "zone": "eu-1"}, "https://opentelemetry.io/schemas/1.21.0"),
]
SCOPE = InstrumentationScope("callgate")

texts = st.text(max_size=12)
scalars = st.one_of(
    texts,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
)
odd = st.one_of(  # what the SDK encodes its own way (or drops, and logs): left to it
    st.integers(min_value=2**63, max_value=2**70),
    st.binary(max_size=4),
    st.none(),
    st.dictionaries(texts, scalars, max_size=2),
    st.lists(st.lists(scalars, max_size=2), min_size=1, max_size=2),
)
plain_values = st.one_of(scalars, st.lists(scalars, max_size=3), st.tuples(texts, texts))
ids = st.integers(min_value=1, max_value=2**64 - 1)
states = st.sampled_from(["", "v=1", "a=b,c=d", "a=1, b=2", "a=1,,b=2", "bad state", " k = v "])


@st.composite
def lean_spans(draw: Any, values: Any = plain_values) -> LeanSpan:
    span = object.__new__(LeanSpan)  # (its constructor draws the span's ID at random)
    span.name = draw(texts)
    span.trace_id = draw(st.integers(min_value=1, max_value=2**128 - 1))
    span.span_id = draw(ids)
    span.parent_id = draw(st.one_of(st.just(0), ids))
    span.kind = draw(st.sampled_from([INTERNAL, SERVER, CLIENT]))
    span.sampled, span.baggage = True, ""
    span.trace_state = draw(states)
    span.attributes = draw(st.dictionaries(texts, values, max_size=4))
    span.start_ns = draw(st.integers(min_value=0, max_value=2**63 - 1))
    span.end_ns = draw(st.integers(min_value=span.start_ns, max_value=2**63 - 1))
    span.error = draw(st.sampled_from([None, "", "unauthenticated", "TimeoutError"]))
    return span


def sdk_bytes(spans: list[LeanSpan], resource: Resource) -> bytes:
    made = [readable(s, resource, SCOPE, TraceStates()) for s in spans]
    return sdk_encode_spans(made).SerializePartialToString()


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lean_spans(), max_size=6), st.sampled_from(RESOURCES))
def test_the_request_is_the_sdk_encoders_byte_for_byte(
    batch: list[LeanSpan], resource: Resource
) -> None:
    ours = encode_lean(batch, resource, SCOPE, TraceStates())
    assert ours.SerializePartialToString() == sdk_bytes(batch, resource)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lean_spans(st.one_of(plain_values, odd)), min_size=1, max_size=4))
def test_a_batch_the_sdk_encodes_its_own_way_goes_through_its_encoder(
    batch: list[LeanSpan],
) -> None:
    exporter = OtlpSpanExporter(RESOURCES[0], endpoint="http://127.0.0.1:9/v1/traces")
    assert exporter.encode(batch).SerializePartialToString() == sdk_bytes(batch, RESOURCES[0])


def test_a_value_the_in_place_path_does_not_write_is_left_to_the_sdk() -> None:
    span = LeanSpan("x", 1, 0, INTERNAL, True, "", {"raw": b"\x00"})
    with pytest.raises(NotPlain):
        encode_lean([span], RESOURCES[0], SCOPE, TraceStates())


def callgate_trace() -> list[LeanSpan]:
    rpc = LeanSpan("rpc", random.getrandbits(128), 0x00F067AA0BA902B7, SERVER, True, "v=1", {})
    tool = LeanSpan(
        "callgate.tool", rpc.trace_id, rpc.span_id, CLIENT, True, "v=1", {"callgate.calls": 2}
    )
    rpc.error = "unauthenticated"
    return [tool, rpc]


def test_callgates_spans_keep_their_parents_flags_and_status() -> None:
    request = encode_lean(callgate_trace(), RESOURCES[0], SCOPE, TraceStates())
    (rs,) = request.resource_spans
    tool, rpc = rs.scope_spans[0].spans
    assert rpc.flags == 0x300 and tool.flags == 0x100  # a remote parent, a local one
    assert rpc.parent_span_id.hex() == "00f067aa0ba902b7" and tool.parent_span_id == rpc.span_id
    assert rpc.status.code == 2 and rpc.status.message == "unauthenticated"
    assert (rpc.kind, tool.kind, rpc.trace_state) == (2, 3, "v=1")


def test_the_exporter_sends_the_in_place_request(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real = otlp.encode_lean

    def counted(spans: Any, *rest: Any) -> Any:
        built.append(len(spans))
        return real(spans, *rest)

    monkeypatch.setattr(otlp, "encode_lean", counted)
    with otlp_collector() as collector:
        tracer = otlp_tracer(collector.url)
        exporter = tracer.sink.processor.span_exporter  # type: ignore[attr-defined]
        assert isinstance(exporter, OtlpSpanExporter)
        with tracer.server_span("rpc", {}), tracer.span("callgate.policy", {"callgate.tool": "t"}):
            pass
        tracer.shutdown()
    assert built == [2]
    assert [s.name for s in collector.spans()] == ["callgate.policy", "rpc"]


def test_a_refused_export_is_a_failure_not_an_exception() -> None:
    exporter = OtlpSpanExporter(RESOURCES[0], endpoint="http://127.0.0.1:9/v1/traces", timeout=1)
    assert exporter.export(callgate_trace()).name == "FAILURE"
    exporter.shutdown()
    assert exporter.export(callgate_trace()).name == "FAILURE"  # shut down: the SDK's answer
