"""A finished `LeanSpan` as the OpenTelemetry SDK's `ReadableSpan`: what an SDK span processor or
exporter other than callgate's own OTLP path is handed (gateway.observe.sdk), and what that
path hands the SDK's encoder when a span holds what it does not write itself
(gateway.observe.otlp)."""

from __future__ import annotations

from typing import Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from gateway.observe.tracing import SERVER, LeanSpan

_KINDS: Final = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
_UNSET: Final = Status(StatusCode.UNSET)
_STATES_KEPT: Final = 256


class TraceStates:
    """A trace's `tracestate` header parsed once (the last 256 headers seen)."""

    def __init__(self) -> None:
        self._known: dict[str, TraceState] = {}

    def get(self, header: str) -> TraceState | None:
        if not header:
            return None
        state = self._known.get(header)
        if state is None:
            if len(self._known) >= _STATES_KEPT:
                self._known.clear()
            state = self._known[header] = TraceState.from_header([header])
        return state


def readable(
    span: LeanSpan, resource: Resource, scope: InstrumentationScope, states: TraceStates
) -> ReadableSpan:
    """A finished span as the SDK's `ReadableSpan`."""
    context = SpanContext(
        span.trace_id,
        span.span_id,
        is_remote=False,
        trace_flags=_SAMPLED,
        trace_state=states.get(span.trace_state),
    )
    # (a server span's parent is the caller's: the only parent from another process)
    parent = (
        SpanContext(span.trace_id, span.parent_id, is_remote=span.kind == SERVER)
        if span.parent_id
        else None
    )
    status = Status(StatusCode.ERROR, span.error) if span.error is not None else _UNSET
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=span.attributes,
        kind=_KINDS[span.kind],
        status=status,
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=scope,
    )
