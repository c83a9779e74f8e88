"""`callgate serve` with the OpenTelemetry SDK's own Tracer in place of callgate's spans, for the
`observe` part's comparison row (`python -m bench.sdk_tracer serve ...`, as `callgate serve`).

The same span tree and attributes, the same batch processor and OTLP/HTTP exporter; only the
span objects differ: the SDK's `TracerProvider` spans, made current through the SDK's context,
with the SDK's sampler (OTEL_TRACES_SAMPLER) and W3C propagator.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from types import TracebackType

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.observe import sdk
from gateway.observe.hooks import Attributes, Span, Tracer
from gateway.observe.tracing import INSTRUMENTATION, traces_url

_PROPAGATOR = TraceContextTextMapPropagator()


class _Current:
    """The SDK span current while the block runs, ended after it."""

    def __init__(self, span: trace.Span, errors: bool) -> None:
        self._span = span
        self._errors = errors
        self._token: object = None

    def __enter__(self) -> trace.Span:
        self._token = context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        context.detach(self._token)  # type: ignore[arg-type]
        if kind is not None and self._errors:
            self._span.set_status(Status(StatusCode.ERROR, kind.__name__))
        self._span.end()


class SdkTracer(Tracer):
    enabled = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer(INSTRUMENTATION)

    def span(
        self, name: str, attributes: Attributes | None = None, *, client: bool = False
    ) -> AbstractContextManager[Span]:
        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        made = self._tracer.start_span(
            name, attributes=attributes, kind=kind, record_exception=False
        )
        return _Current(made, errors=True)

    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        parent = _PROPAGATOR.extract(carrier) if carrier else None
        made = self._tracer.start_span(
            name,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
        )
        return _Current(made, errors=False)

    def headers(self) -> Mapping[str, str]:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    def failed(self, span: Span, description: str) -> None:
        if isinstance(span, trace.Span):
            span.set_status(Status(StatusCode.ERROR, description))

    def shutdown(self) -> None:
        self.provider.shutdown()


def sdk_otlp_tracer(endpoint: str, attributes: Mapping[str, str] | None = None) -> Tracer:
    """`gateway.observe.sdk.otlp_tracer`, with the SDK's spans."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(resource=sdk.resource(attributes))
    exporter = OTLPSpanExporter(endpoint=traces_url(endpoint) if endpoint else None)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return SdkTracer(provider)


def main() -> None:
    from gateway.cli.main import main as callgate

    sdk.otlp_tracer = sdk_otlp_tracer  # type: ignore[assignment]
    sys.exit(callgate(sys.argv[1:]))


if __name__ == "__main__":
    main()
