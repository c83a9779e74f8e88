"""OpenTelemetry traces: `serve --otlp-endpoint URL` exports them over OTLP/HTTP.

One span per RPC (kind SERVER) continues the caller's W3C trace context from its gRPC
metadata (`traceparent`, `tracestate`); the run engine's phases are its children, and each
tool execution is a CLIENT span whose context goes to the tool in the request's own
`traceparent`/`tracestate` headers, so the tool's spans join the trace. Attributes carry tool
names, verdicts, statuses, codes and the policy revision, never arguments, results or tokens;
exceptions are not recorded on spans (their messages may quote what a caller sent), only the
status.

The standard `OTEL_*` variables apply: `OTEL_SERVICE_NAME` (default `callgate`),
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_EXPORTER_OTLP_CERTIFICATE`,
`OTEL_BSP_*`; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` switch
tracing on without the flag, and `OTEL_SDK_DISABLED=true` keeps it off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Final

from opentelemetry import context, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.observe.hooks import Attributes, Span, Tracer

INSTRUMENTATION: Final = "callgate"
TRACE_PATH: Final = "/v1/traces"
_PROPAGATOR: Final = TraceContextTextMapPropagator()


class _Current:
    """A span current while the block runs, ended after it (the SDK's `start_as_current_span`
    without its generator and exception recording: a third cheaper). An exception leaving
    the block marks the span failed with the exception's type only (`errors`)."""

    __slots__ = ("_span", "_token", "_errors")

    def __init__(self, span: trace.Span, errors: bool) -> None:
        self._span = span
        self._errors = errors
        self._token: object = None

    def __enter__(self) -> trace.Span:
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        context.detach(self._token)  # type: ignore[arg-type]
        if kind is not None and self._errors and self._span.is_recording():
            self._span.set_status(Status(StatusCode.ERROR, kind.__name__))
        self._span.end()


class OtelTracer(Tracer):
    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)

    def span(self, name: str, attributes: Attributes | None = None, *,
             client: bool = False) -> AbstractContextManager[Span]:
        return _Current(self._tracer.start_span(
            name, attributes=attributes, kind=SpanKind.CLIENT if client else SpanKind.INTERNAL,
            record_exception=False), errors=True)

    def server_span(self, name: str, carrier: Mapping[str, str],
                    attributes: Attributes | None = None) -> AbstractContextManager[Span]:
        parent = _PROPAGATOR.extract(carrier) if carrier else None
        return _Current(self._tracer.start_span(
            name, context=parent, kind=SpanKind.SERVER, attributes=attributes,
            record_exception=False), errors=False)

    def headers(self) -> Mapping[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    def failed(self, span: Span, description: str) -> None:
        if isinstance(span, trace.Span):
            span.set_status(Status(StatusCode.ERROR, description))

    def shutdown(self) -> None:
        self.provider.shutdown()


def current_ids() -> tuple[str, str] | None:
    """The current span's (trace ID, span ID) in hex, for log lines; None outside a span."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"


def wanted(endpoint: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to trace: an endpoint given (flag or OTEL variable) and the SDK not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(endpoint or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector's base URL (`http://collector:4318`), as
    OTEL_EXPORTER_OTLP_ENDPOINT is read; a URL already ending in /v1/traces is kept."""
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACE_PATH) else base + TRACE_PATH


def provider_with(processor: SpanProcessor,
                  attributes: Mapping[str, str] | None = None) -> TracerProvider:
    """A provider named by OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (default `callgate`),
    sampling as OTEL_TRACES_SAMPLER says, sending spans to processor; `attributes`: what is
    the same for every span of the process (said once per export, not per span)."""
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    resource = Resource.create({**(attributes or {}),
                                **({} if named else {SERVICE_NAME: INSTRUMENTATION})})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(processor)
    return provider


def otlp_tracer(endpoint: str, attributes: Mapping[str, str] | None = None) -> OtelTracer:
    """Spans batched (OTEL_BSP_*) to the OTLP/HTTP endpoint (or the one OTEL_* names)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None)
    return OtelTracer(provider_with(BatchSpanProcessor(exporter), attributes))
