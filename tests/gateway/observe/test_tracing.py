"""callgate's spans: W3C trace context read and written, sampling, and the OTLP/HTTP export a
collector receives (decoded here with the OTLP protobuf definitions)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from gateway.errors import ConfigError
from gateway.observe.otlp import ExportSettings, OtlpSink
from gateway.observe.tracing import LeanSpan, LeanTracer, Sampler, parent_of, resource, traces_url
from tests.support.otlp import otlp_sink

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class Kept:
    def __init__(self) -> None:
        self.spans: list[LeanSpan] = []

    def add(self, span: LeanSpan) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        return None


def test_a_callers_trace_is_continued_and_forwarded() -> None:
    kept = Kept()
    tracer = LeanTracer(kept, Sampler(0.0))  # roots never sampled: the caller's flag decides
    carrier = {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "v=1"}
    with tracer.server_span("rpc", carrier, {"rpc.method": "M"}), \
            tracer.span("tool", client=True) as tool:
        sent = dict(tracer.headers())
    assert isinstance(tool, LeanSpan)
    assert sent == {"traceparent": f"00-{TRACE}-{tool.span_id:016x}-01", "tracestate": "v=1"}
    child, rpc = kept.spans
    assert (rpc.name, f"{rpc.parent_id:016x}", f"{rpc.trace_id:032x}") == ("rpc", PARENT, TRACE)
    assert child.parent_id == rpc.span_id and child.kind == 3 and rpc.kind == 2


def test_an_unsampled_trace_is_forwarded_unsampled_and_not_kept() -> None:
    kept = Kept()
    tracer = LeanTracer(kept, Sampler(1.0))
    with tracer.server_span("rpc", {"traceparent": f"00-{TRACE}-{PARENT}-00"}), \
            tracer.span("tool", client=True):
        assert tracer.headers()["traceparent"].endswith("-00")
    assert kept.spans == [] and tracer.headers() == {}


@pytest.mark.parametrize("traceparent", [
    "", "junk", f"00-{'0' * 32}-{PARENT}-01", f"00-{TRACE}-{'0' * 16}-01",
    f"ff-{TRACE}-{PARENT}-01", f"00-{TRACE[:-1]}-{PARENT}-01", "00-" + "z" * 32 + f"-{PARENT}-01"])
def test_a_bad_traceparent_starts_a_new_trace(traceparent: str) -> None:
    assert parent_of({"traceparent": traceparent}) is None
    kept = Kept()
    with LeanTracer(kept).server_span("rpc", {"traceparent": traceparent}):
        pass
    (rpc,) = kept.spans
    assert rpc.parent_id == 0 and f"{rpc.trace_id:032x}" != TRACE


def test_a_tracestate_that_is_too_long_is_dropped() -> None:
    found = parent_of({"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "a=" + "x" * 600})
    assert found is not None and found[3] == ""


def test_samplers_from_the_environment() -> None:
    assert Sampler.of({}) == Sampler(1.0, True)
    assert Sampler.of({"OTEL_TRACES_SAMPLER": "always_off"}) == Sampler(0.0, False)
    ratio = Sampler.of({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
                        "OTEL_TRACES_SAMPLER_ARG": "0.25"})
    assert ratio == Sampler(0.25, True) and ratio.sampled(1, parent=False) is False
    assert ratio.sampled(1, None) and not ratio.sampled(2**63, None)
    for bad in ({"OTEL_TRACES_SAMPLER": "sometimes"},
                {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}):
        with pytest.raises(ConfigError):
            Sampler.of(bad)


def test_where_spans_go_and_what_the_process_is_called() -> None:
    assert traces_url("http://c:4318", {}) == "http://c:4318/v1/traces"
    assert traces_url("http://c:4318/v1/traces/", {}) == "http://c:4318/v1/traces"
    assert traces_url("", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}) == "http://t/x"
    assert traces_url("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b"}) == "http://b/v1/traces"
    assert resource({"a": "1"}, {})["service.name"] == "callgate"
    named = resource({}, {"OTEL_RESOURCE_ATTRIBUTES": "service.name=gw,zone=eu%2D1"})
    assert named == {"service.name": "gw", "zone": "eu-1"}
    with pytest.raises(ConfigError, match="OTEL_BSP_MAX_QUEUE_SIZE"):
        ExportSettings.of("http://c/v1/traces", {"OTEL_BSP_MAX_QUEUE_SIZE": "-3"})


def test_the_collector_receives_the_spans_as_otlp() -> None:
    with otlp_sink() as (url, received):
        settings = ExportSettings.of(url + "/v1/traces", {"OTEL_EXPORTER_OTLP_HEADERS": "k=v"})
        tracer = LeanTracer(OtlpSink(settings, {"service.name": "callgate"}))
        with tracer.server_span("rpc", {"traceparent": f"00-{TRACE}-{PARENT}-01"},
                                {"rpc.method": "Authorize"}) as rpc:
            with tracer.span("callgate.policy", {"callgate.tool": "t"}) as policy:
                policy.set_attribute("callgate.verdict", "DENY")
            tracer.failed(rpc, "unauthenticated")
        tracer.shutdown()
    (body,) = received
    request = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = request.resource_spans
    assert {a.key: a.value.string_value for a in resource_spans.resource.attributes} == {
        "service.name": "callgate"}
    (scope,) = resource_spans.scope_spans
    policy_msg, rpc_msg = scope.spans
    assert rpc_msg.trace_id.hex() == TRACE and rpc_msg.parent_span_id.hex() == PARENT
    assert policy_msg.parent_span_id == rpc_msg.span_id and policy_msg.name == "callgate.policy"
    assert {a.key: a.value.string_value for a in policy_msg.attributes} == {
        "callgate.tool": "t", "callgate.verdict": "DENY"}
    assert rpc_msg.status.code == 2 and rpc_msg.status.message == "unauthenticated"
    assert rpc_msg.kind == 2 and rpc_msg.end_time_unix_nano >= rpc_msg.start_time_unix_nano


def test_a_collector_that_is_down_costs_the_spans_only() -> None:
    settings = ExportSettings.of("http://127.0.0.1:9/v1/traces",  # nothing listens on port 9
                                 {"OTEL_EXPORTER_OTLP_TIMEOUT": "500"})
    sink = OtlpSink(settings, {})
    tracer = LeanTracer(sink)
    for _ in range(3):
        with tracer.span("x"):
            pass
    tracer.shutdown()
    assert sink.sent == 0 and sink.dropped == 3
