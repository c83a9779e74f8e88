"""Finished spans handed to an OpenTelemetry SDK `SpanExporter` (its in-memory exporter in the
tests, or any other exporter a deployment wants), as the SDK's own `ReadableSpan`s, one export
per span as the SDK's simple processor would."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gateway.observe.tracing import INSTRUMENTATION, LeanSpan, LeanTracer, Sampler, resource

_KINDS = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}


class SdkSink:
    def __init__(self, exporter: SpanExporter, attributes: Mapping[str, str]) -> None:
        self.exporter = exporter
        self.resource = Resource(dict(attributes))
        self.scope = InstrumentationScope(INSTRUMENTATION)

    def add(self, span: LeanSpan) -> None:
        self.exporter.export([self.readable(span)])

    def readable(self, span: LeanSpan) -> ReadableSpan:
        state = TraceState.from_header([span.trace_state]) if span.trace_state else None
        context = SpanContext(span.trace_id, span.span_id, is_remote=False,
                              trace_flags=TraceFlags(TraceFlags.SAMPLED), trace_state=state)
        parent = (SpanContext(span.trace_id, span.parent_id, is_remote=False)
                  if span.parent_id else None)
        status = (Status(StatusCode.ERROR, span.error) if span.error is not None
                  else Status(StatusCode.UNSET))
        return ReadableSpan(name=span.name, context=context, parent=parent,
                            resource=self.resource, attributes=span.attributes,
                            kind=_KINDS[span.kind], status=status, start_time=span.start_ns,
                            end_time=span.end_ns, instrumentation_scope=self.scope)

    def shutdown(self) -> None:
        self.exporter.shutdown()


def sdk_tracer(exporter: SpanExporter, attributes: Mapping[str, str] | None = None,
               sampler: Sampler | None = None) -> LeanTracer:
    """A tracer whose spans go to an SDK exporter (sampling as OTEL_TRACES_SAMPLER says)."""
    return LeanTracer(SdkSink(exporter, resource(attributes)), sampler or Sampler.of())
