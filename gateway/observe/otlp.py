"""The OTLP/HTTP export of callgate's spans: the SDK's `BatchSpanProcessor` (its queue, thread
and `OTEL_BSP_*` variables) in front of the SDK's `OTLPSpanExporter` (its transport, retries,
headers, compression, size limit and `OTEL_EXPORTER_OTLP_*` variables), with the request body
built here.

Two costs of the SDK's own path are cut, both measured on a sidecar's two-read SubmitTurn (10
spans): on the event loop, each finished span was rebuilt as an SDK `ReadableSpan` (with two
`SpanContext`s and a `Status`) only to be read back field by field on the exporter's thread;
there, the SDK's encoder builds every span, attribute and status as a message of its own and
hands it to its parent's constructor, which copies it (about 16 µs a span). Here callgate's
`LeanSpan`s go to the processor as they are (`LeanSink`) and `encode_lean` fills the one
`ExportTraceServiceRequest` in place (`add()` on its repeated fields), about a third of the
time. The bytes are the SDK's own: `tests/gateway/observe/test_otlp.py` compares them with
the SDK encoder's for the same spans made `ReadableSpan`s. A span with anything this encoder
does not write as the SDK does (a value of another type, an integer beyond 64 bits) sends
its batch through the SDK's encoder whole, as `ReadableSpan`s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry.exporter.otlp.proto.common._internal import (
    _encode_instrumentation_scope,
    _encode_resource,
)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import (
    encode_spans as sdk_encode_spans,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import SpanFlags
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import StatusCode, TraceState

from gateway.observe.readable import TraceStates, readable
from gateway.observe.tracing import INSTRUMENTATION, SERVER, LeanSpan

log = logging.getLogger("callgate.observe")

_HAS_IS_REMOTE: Final = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
_IS_REMOTE: Final = SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
_ERROR: Final = StatusCode.ERROR.value
_INT64: Final = (-(2**63), 2**63 - 1)


class NotPlain(Exception):
    """A span this encoder leaves to the SDK's."""


class LeanSink:
    """Each finished span to an SDK span processor's `on_end` as the `LeanSpan` it is; the
    processor's exporter must be an `OtlpSpanExporter`, which knows them."""

    def __init__(self, processor: SpanProcessor) -> None:
        self.processor = processor

    def add(self, span: LeanSpan) -> None:
        self.processor.on_end(span)  # type: ignore[arg-type]

    def shutdown(self) -> None:
        self.processor.shutdown()


class OtlpSpanExporter(OTLPSpanExporter):
    """The SDK's OTLP/HTTP span exporter, for `LeanSpan`s of one resource (and `ReadableSpan`s,
    through the SDK's own `export`). With an SDK whose exporter is built otherwise than this
    one knows, the spans are made `ReadableSpan`s and handed to the SDK's own `export`."""

    def __init__(self, resource: Resource, **options: Any) -> None:
        super().__init__(**options)
        self.resource = resource
        self.scope = InstrumentationScope(INSTRUMENTATION)
        self._states = TraceStates()

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        lean = [s for s in spans if isinstance(s, LeanSpan)]
        client = getattr(self, "_client", None)
        metrics = getattr(self, "_metrics", None)
        if len(lean) != len(spans):
            made = [self.readable(s) if isinstance(s, LeanSpan) else s for s in spans]
            return super().export(made)
        if self._shutdown or client is None or metrics is None:
            return super().export([self.readable(s) for s in lean])
        with metrics.export_operation(len(spans)) as result:
            try:
                body = self.encode(lean).SerializePartialToString()
            except Exception as error:  # as the SDK's export: a failed export, not a crash
                log.error("Failed to encode span batch: %s", error)
                result.error = error
                return SpanExportResult.FAILURE
            limit = getattr(self, "_max_request_size", 0)
            if limit > 0 and len(body) > limit:
                log.warning("dropping a span batch of %d bytes (limit %d)", len(body), limit)
                result.error = ValueError(f"span batch of {len(body)} bytes over {limit}")
                return SpanExportResult.FAILURE
            sent = client.export(body)
            if not sent.success:
                result.error = sent.error
                if sent.status_code is not None:
                    result.error_attrs = {"http.response.status_code": sent.status_code}
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def encode(self, spans: Sequence[LeanSpan]) -> ExportTraceServiceRequest:
        """The request the SDK's encoder builds for these spans made `ReadableSpan`s."""
        try:
            return encode_lean(spans, self.resource, self.scope, self._states)
        except NotPlain:
            return sdk_encode_spans([self.readable(s) for s in spans])

    def readable(self, span: LeanSpan) -> ReadableSpan:
        return readable(span, self.resource, self.scope, self._states)


def encode_lean(
    spans: Sequence[LeanSpan],
    resource: Resource,
    scope: InstrumentationScope,
    states: TraceStates,
) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if not spans:
        return request
    resource_spans = request.resource_spans.add()
    resource_spans.resource.SetInParent()
    resource_spans.resource.CopyFrom(_encode_resource(resource))
    if resource.schema_url:
        resource_spans.schema_url = resource.schema_url
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.SetInParent()
    scope_spans.scope.CopyFrom(_encode_instrumentation_scope(scope))
    if scope.schema_url:
        scope_spans.schema_url = scope.schema_url
    add = scope_spans.spans.add
    for span in spans:
        _fill(add(), span, states)
    return request


def _fill(out: Any, span: LeanSpan, states: TraceStates) -> None:
    out.trace_id = span.trace_id.to_bytes(16, "big")
    out.span_id = span.span_id.to_bytes(8, "big")
    if span.trace_state:
        state = states.get(span.trace_state)
        if state:
            out.trace_state = _trace_state_text(state)
    if span.parent_id:
        out.parent_span_id = span.parent_id.to_bytes(8, "big")
        out.flags = _HAS_IS_REMOTE | _IS_REMOTE if span.kind == SERVER else _HAS_IS_REMOTE
    else:
        out.flags = _HAS_IS_REMOTE
    out.name = span.name
    out.kind = span.kind  # callgate's kinds are OTLP's numbers
    if span.start_ns:
        out.start_time_unix_nano = span.start_ns
    if span.end_ns:
        out.end_time_unix_nano = span.end_ns
    if span.attributes:
        attributes = out.attributes
        for key, value in span.attributes.items():
            entry = attributes.add()
            entry.key = key
            _value(entry.value, value)
    status = out.status
    status.SetInParent()
    if span.error is not None:
        status.code = _ERROR
        if span.error:
            status.message = span.error


def _trace_state_text(state: TraceState) -> str:
    return ",".join(f"{key}={value}" for key, value in state.items())


def _value(out: Any, value: Any) -> None:
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise NotPlain
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, list | tuple):
        array = out.array_value
        array.SetInParent()
        for item in value:
            if isinstance(item, list | tuple):
                raise NotPlain
            _value(array.values.add(), item)
    else:
        raise NotPlain
