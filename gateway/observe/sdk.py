"""callgate's finished spans handed to the OpenTelemetry SDK through an SDK `SpanProcessor`: in
`serve`, the SDK's `BatchSpanProcessor` in front of its OTLP/HTTP `OTLPSpanExporter`
(`otlp_tracer`; the spans go to them as they are, and the request body is built in place, to
the same bytes: `gateway.observe.otlp`); in the tests, or wherever a deployment wants, any
other SDK exporter, as the SDK's own `ReadableSpan`s (`sdk_tracer`: its in-memory exporter,
one export per span).

The SDK reads its own variables: the exporter's `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`,
`_HEADERS`, `_TIMEOUT`, `_COMPRESSION`, `_CERTIFICATE`, `_CLIENT_CERTIFICATE`, `_CLIENT_KEY`;
the batch processor's `OTEL_BSP_SCHEDULE_DELAY`, `_MAX_QUEUE_SIZE`, `_MAX_EXPORT_BATCH_SIZE`,
`_EXPORT_TIMEOUT`; the resource's `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`.
`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` may only say `http/protobuf`: the SDK's gRPC exporter is
not installed, and it has no `http/json` one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from gateway.errors import ConfigError
from gateway.observe.readable import TraceStates, readable
from gateway.observe.tracing import (
    INSTRUMENTATION,
    LeanSpan,
    LeanTracer,
    Propagation,
    Sampler,
    traces_url,
)

PROTOCOL: Final = "http/protobuf"
_PROTOCOL_VARIABLES: Final = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")


class SdkSink:
    """Each finished span, as a `ReadableSpan`, to an SDK span processor's `on_end`."""

    def __init__(self, processor: SpanProcessor, resource: Resource) -> None:
        self.processor = processor
        self.resource = resource
        self.scope = InstrumentationScope(INSTRUMENTATION)
        self._states = TraceStates()

    def add(self, span: LeanSpan) -> None:
        self.processor.on_end(self.readable(span))

    def readable(self, span: LeanSpan) -> ReadableSpan:
        return readable(span, self.resource, self.scope, self._states)

    def shutdown(self) -> None:
        self.processor.shutdown()


class _Resource(Resource):
    """The SDK's `Resource`, its hash computed once: the OTLP encoder hashes every span's
    resource to group the spans of an export, and the SDK hashes a resource by writing its
    attributes as JSON (about a fifth of the encoding of callgate's spans). A resource does
    not change once made."""

    def __init__(self, attributes: Mapping[str, str], schema_url: str | None = None) -> None:
        super().__init__(dict(attributes), schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


def resource(attributes: Mapping[str, str] | None = None) -> Resource:
    """The process's resource: `attributes` (named `callgate` unless they say otherwise), with
    OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them, as the SDK reads them."""
    own = Resource({SERVICE_NAME: INSTRUMENTATION, **(attributes or {})})
    merged = own.merge(OTELResourceDetector().detect())
    return _Resource({k: str(v) for k, v in merged.attributes.items()}, merged.schema_url)


def check_protocol(environ: Mapping[str, str] = os.environ) -> None:
    """Refuse an OTLP protocol other than http/protobuf (a ConfigError naming the variable)."""
    for name in _PROTOCOL_VARIABLES:
        value = environ.get(name, "").strip()
        if value and value.lower() != PROTOCOL:
            raise ConfigError(
                f"{name}={value!r}: callgate exports traces with OTLP over HTTP as protobuf "
                f"only; set it to {PROTOCOL} (or leave it unset) and point the endpoint at "
                "the collector's OTLP/HTTP port (4318)"
            )
        if value:
            return  # the traces variable, when set, decides


def sdk_tracer(
    exporter: SpanExporter,
    attributes: Mapping[str, str] | None = None,
    sampler: Sampler | None = None,
) -> LeanTracer:
    """A tracer whose spans go to an SDK exporter one by one (sampling as
    OTEL_TRACES_SAMPLER says)."""
    return LeanTracer(
        SdkSink(SimpleSpanProcessor(exporter), resource(attributes)),
        sampler or Sampler.of(),
        Propagation.of(),
    )


def otlp_tracer(endpoint: str, attributes: Mapping[str, str] | None = None) -> LeanTracer:
    """Spans batched by the SDK's BatchSpanProcessor to its OTLPSpanExporter (as
    gateway.observe.otlp hands them over and encodes them): at the flag's
    collector (`endpoint` + /v1/traces), else where OTEL_EXPORTER_OTLP_* say. A bad OTEL_*
    variable callgate reads is a ConfigError."""
    from gateway.observe.otlp import LeanSink, OtlpSpanExporter

    check_protocol()
    sampler, propagation = Sampler.of(), Propagation.of()
    exporter = OtlpSpanExporter(
        resource(attributes), endpoint=traces_url(endpoint) if endpoint else None
    )
    try:
        processor = BatchSpanProcessor(exporter)
    except ValueError as exc:  # OTEL_BSP_* out of range
        raise ConfigError(f"OTEL_BSP_*: {exc}") from None
    return LeanTracer(LeanSink(processor), sampler, propagation)
