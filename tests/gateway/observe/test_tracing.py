"""callgate's spans: W3C trace context and baggage read and written, sampling, propagators, and
the OTLP/HTTP export (the SDK's exporter) a collector on loopback receives, decoded with the
OTLP protobuf definitions."""

from __future__ import annotations

import time

import pytest

from gateway.errors import ConfigError
from gateway.observe.sdk import check_protocol, otlp_tracer, resource
from gateway.observe.tracing import (
    LeanSpan,
    LeanTracer,
    Propagation,
    Sampler,
    parent_of,
    traces_url,
)
from tests.support.otlp import otlp_collector

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
    with (
        tracer.server_span("rpc", carrier, {"rpc.method": "M"}),
        tracer.span("tool", client=True) as tool,
    ):
        sent = dict(tracer.headers())
    assert isinstance(tool, LeanSpan)
    assert sent == {"traceparent": f"00-{TRACE}-{tool.span_id:016x}-01", "tracestate": "v=1"}
    child, rpc = kept.spans
    assert (rpc.name, f"{rpc.parent_id:016x}", f"{rpc.trace_id:032x}") == ("rpc", PARENT, TRACE)
    assert child.parent_id == rpc.span_id and child.kind == 3 and rpc.kind == 2


def test_an_unsampled_trace_is_forwarded_unsampled_and_not_kept() -> None:
    kept = Kept()
    tracer = LeanTracer(kept, Sampler(1.0))
    with (
        tracer.server_span("rpc", {"traceparent": f"00-{TRACE}-{PARENT}-00"}),
        tracer.span("tool", client=True),
    ):
        assert tracer.headers()["traceparent"].endswith("-00")
    assert kept.spans == [] and tracer.headers() == {}


@pytest.mark.parametrize(
    "traceparent",
    [
        "",
        "junk",
        f"00-{'0' * 32}-{PARENT}-01",
        f"00-{TRACE}-{'0' * 16}-01",
        f"ff-{TRACE}-{PARENT}-01",
        f"00-{TRACE[:-1]}-{PARENT}-01",
        "00-" + "z" * 32 + f"-{PARENT}-01",
    ],
)
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
    ratio = Sampler.of(
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}
    )
    assert ratio == Sampler(0.25, True) and ratio.sampled(1, parent=False) is False
    assert ratio.sampled(1, None) and not ratio.sampled(2**63, None)
    for bad in (
        {"OTEL_TRACES_SAMPLER": "sometimes"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
    ):
        with pytest.raises(ConfigError):
            Sampler.of(bad)


def test_baggage_is_passed_on_and_the_propagators_say_what_is() -> None:
    carrier = {"traceparent": f"00-{TRACE}-{PARENT}-01", "baggage": "tenant.tier=gold"}
    both = LeanTracer(Kept())
    with both.server_span("rpc", carrier), both.span("tool", client=True):
        assert both.headers()["baggage"] == "tenant.tier=gold"
        assert TRACE in both.headers()["traceparent"]
    only_baggage = LeanTracer(Kept(), propagation=Propagation.of({"OTEL_PROPAGATORS": "baggage"}))
    with only_baggage.server_span("rpc", carrier) as rpc, only_baggage.span("tool"):
        assert dict(only_baggage.headers()) == {"baggage": "tenant.tier=gold"}
    assert isinstance(rpc, LeanSpan) and f"{rpc.trace_id:032x}" != TRACE  # a trace of its own
    with LeanTracer(Kept()).server_span("rpc", {"baggage": "x=\n" + "y" * 9000}) as rpc:
        assert isinstance(rpc, LeanSpan) and rpc.baggage == ""  # not printable, too long


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", Propagation(True, True)),
        ("tracecontext, baggage", Propagation(True, True)),
        ("tracecontext", Propagation(True, False)),
        ("none", Propagation(False, False)),
    ],
)
def test_otel_propagators(value: str, expected: Propagation) -> None:
    assert Propagation.of({"OTEL_PROPAGATORS": value}) == expected


@pytest.mark.parametrize("value", ["b3", "tracecontext,jaeger", "none,baggage"])
def test_otel_propagators_callgate_cannot_honour_stop_start_up(value: str) -> None:
    with pytest.raises(ConfigError, match="OTEL_PROPAGATORS"):
        Propagation.of({"OTEL_PROPAGATORS": value})


@pytest.mark.parametrize(
    ("variables", "refused"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            },
            None,
        ),  # the traces variable decides
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "HTTP/protobuf"}, None),
    ],
)
def test_only_otlp_over_http_protobuf(variables: dict[str, str], refused: str | None) -> None:
    if refused is None:
        check_protocol(variables)
        return
    with pytest.raises(ConfigError, match=f"{refused}=.*http/protobuf"):
        check_protocol(variables)


def test_where_spans_go_and_what_the_process_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    assert traces_url("http://c:4318") == "http://c:4318/v1/traces"
    assert traces_url("http://c:4318/v1/traces/") == "http://c:4318/v1/traces"
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert resource({"a": "1"}).attributes == {"service.name": "callgate", "a": "1"}
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=gw,zone=eu%2D1")
    assert dict(resource({}).attributes) == {"service.name": "gw", "zone": "eu-1"}
    monkeypatch.setenv("OTEL_SERVICE_NAME", "edge")
    assert resource({}).attributes["service.name"] == "edge"
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096")  # over the queue's 2048
    with pytest.raises(ConfigError, match="OTEL_BSP"):
        otlp_tracer("http://127.0.0.1:9")


def test_the_sdks_exporter_sends_what_the_otel_variables_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant-key=k1,authorization=Basic%20eA")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "edge-gw")
    with otlp_collector() as collector:
        tracer = otlp_tracer(collector.url, {"rpc.system": "grpc"})
        with tracer.server_span(
            "rpc", {"traceparent": f"00-{TRACE}-{PARENT}-01"}, {"rpc.method": "Authorize"}
        ) as rpc:
            with tracer.span("callgate.policy", {"callgate.tool": "t"}) as policy:
                policy.set_attribute("callgate.verdict", "DENY")
            tracer.failed(rpc, "unauthenticated")
        tracer.shutdown()  # sends what is batched
    (export,) = collector.exports
    assert export.path == "/v1/traces"
    assert export.headers["content-encoding"] == "gzip"
    assert export.headers["x-tenant-key"] == "k1" and export.headers["authorization"] == "Basic eA"
    (resource_spans,) = export.request.resource_spans
    named = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert named["service.name"] == "edge-gw" and named["rpc.system"] == "grpc"
    policy_msg, rpc_msg = export.spans()
    assert rpc_msg.trace_id.hex() == TRACE and rpc_msg.parent_span_id.hex() == PARENT
    assert policy_msg.parent_span_id == rpc_msg.span_id and policy_msg.name == "callgate.policy"
    assert {a.key: a.value.string_value for a in policy_msg.attributes} == {
        "callgate.tool": "t",
        "callgate.verdict": "DENY",
    }
    assert rpc_msg.status.code == 2 and rpc_msg.status.message == "unauthenticated"
    assert rpc_msg.kind == 2 and rpc_msg.end_time_unix_nano >= rpc_msg.start_time_unix_nano


def test_a_collector_that_is_down_costs_the_spans_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # seconds, as the SDK reads it
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    tracer = otlp_tracer("http://127.0.0.1:9")  # nothing listens on port 9
    start = time.monotonic()
    for _ in range(3):
        with tracer.server_span("rpc", {}), tracer.span("x"):
            pass
    assert time.monotonic() - start < 1.0  # waiting, one span would take the 1-s timeout
    tracer.shutdown()  # within the export timeout, and no exception


@pytest.mark.parametrize(
    ("variable", "suffix", "path"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "", "/v1/traces"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/custom/traces", "/custom/traces"),
    ],
)
def test_without_the_flag_the_sdk_finds_the_collector_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, variable: str, suffix: str, path: str
) -> None:
    with otlp_collector() as collector:
        monkeypatch.setenv(variable, collector.url + suffix)
        tracer = otlp_tracer("")
        with tracer.span("x"):
            pass
        tracer.shutdown()
    assert [e.path for e in collector.exports] == [path]
