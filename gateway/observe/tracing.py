"""Traces: `serve --otlp-endpoint URL` exports them over OTLP/HTTP.

One span per RPC (kind SERVER) continues the caller's W3C trace context from its gRPC
metadata (`traceparent`, `tracestate`, and `baggage`); the run engine's phases are its
children, and each tool execution is a CLIENT span whose context goes to the tool in the
request's own `traceparent`/`tracestate` (and `baggage`) headers, so the tool's spans join the
trace. Attributes carry tool names, verdicts, statuses, codes and the policy revision, never
arguments, results, tokens or identifiers of runs, calls or callers; exceptions are not
recorded on spans (their messages may quote what a caller sent), only their type as the
error status.

Spans are callgate's own small records (`LeanSpan`: ids, times, a dict of attributes), made
current through a context variable and handed, finished, to a sink: `gateway.observe.sdk`
turns them into the OpenTelemetry SDK's `ReadableSpan`s for an SDK span processor (the
batch processor and OTLP/HTTP exporter of the SDK in `serve`, the in-memory exporter in the
tests). The SDK's own Tracer costs about twice as much CPU per span, which puts a request
traced with it well over its cost target (bench/README.md, part `observe`); these records,
with the `ReadableSpan` made of them, cost a few µs each on the request's path.

Read here: `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio`,
`parentbased_always_on` — the default —, `parentbased_always_off`, `parentbased_traceidratio`),
`OTEL_TRACES_SAMPLER_ARG` and `OTEL_PROPAGATORS` (`tracecontext`, `baggage`, `none`; the
default `tracecontext,baggage`); `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
`OTEL_EXPORTER_OTLP_ENDPOINT` switch tracing on without the flag, and `OTEL_SDK_DISABLED=true`
keeps it off. The SDK reads the rest itself (`gateway.observe.sdk`).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Protocol

from gateway.errors import ConfigError
from gateway.observe.hooks import Attributes, AttributeValue, Span, Tracer

INSTRUMENTATION: Final = "callgate"
TRACE_PATH: Final = "/v1/traces"
INTERNAL, SERVER, CLIENT = 1, 2, 3  # OTLP span kinds
_TRACEPARENT: Final = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_MAX_TRACESTATE: Final = 512
_MAX_BAGGAGE: Final = 8192  # W3C Baggage: a header of at most 8192 bytes
PROPAGATORS: Final = ("tracecontext", "baggage")  # what OTEL_PROPAGATORS may name (or none)


class LeanSpan:
    __slots__ = (
        "name",
        "trace_id",
        "span_id",
        "parent_id",
        "kind",
        "start_ns",
        "end_ns",
        "attributes",
        "error",
        "trace_state",
        "baggage",
        "sampled",
    )

    def __init__(
        self,
        name: str,
        trace_id: int,
        parent_id: int,
        kind: int,
        sampled: bool,
        trace_state: str,
        attributes: Attributes | None,
        baggage: str = "",
    ) -> None:
        self.name = name
        self.trace_id = trace_id
        self.span_id = random.getrandbits(64) or 1
        self.parent_id = parent_id
        self.kind = kind
        self.sampled = sampled
        self.trace_state = trace_state
        self.baggage = baggage
        self.attributes: dict[str, Any] = dict(attributes) if attributes and sampled else {}
        self.error: str | None = None
        self.start_ns = time.time_ns()
        self.end_ns = 0

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        if self.sampled:
            self.attributes[key] = value

    @property
    def context(self) -> _Context:
        """What an SDK span processor reads of a span before it queues it: a sink is handed
        sampled spans only."""
        return _SAMPLED_CONTEXT


class _Flags:
    __slots__ = ()
    sampled: Final = True


class _Context:
    __slots__ = ()
    trace_flags: Final = _Flags()


_SAMPLED_CONTEXT: Final = _Context()


_CURRENT: ContextVar[LeanSpan | None] = ContextVar("callgate_span", default=None)


class Sink(Protocol):
    def add(self, span: LeanSpan) -> None: ...

    def shutdown(self) -> None: ...


class _Current:
    """The span current while the block runs, finished and handed to the sink after it; an
    exception leaving the block marks it failed with the exception's type (`errors`)."""

    __slots__ = ("_span", "_sink", "_errors", "_token")

    def __init__(self, span: LeanSpan, sink: Sink, errors: bool) -> None:
        self._span = span
        self._sink = sink
        self._errors = errors
        self._token: Token[LeanSpan | None] | None = None

    def __enter__(self) -> LeanSpan:
        self._token = _CURRENT.set(self._span)
        return self._span

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._token is not None
        _CURRENT.reset(self._token)
        span = self._span
        if span.sampled:
            span.end_ns = time.time_ns()
            if kind is not None and self._errors and span.error is None:
                span.error = kind.__name__
            self._sink.add(span)


@dataclass(frozen=True)
class Sampler:
    """Whether a trace is recorded: a root by `root` (always, never, or by trace-ID ratio),
    a continued one by its parent's flag unless not `parent_based`."""

    root: float  # the share of root traces sampled: 1.0 always, 0.0 never
    parent_based: bool = True

    def sampled(self, trace_id: int, parent: bool | None) -> bool:
        if parent is not None and self.parent_based:
            return parent
        if self.root >= 1.0:
            return True
        return (trace_id & 0xFFFFFFFFFFFFFFFF) < int(self.root * 2**64)

    @classmethod
    def of(cls, environ: Mapping[str, str] = os.environ) -> Sampler:
        name = environ.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
        based = name.startswith("parentbased_")
        kind = name.removeprefix("parentbased_")
        if kind in ("always_on", "always_off"):
            return cls(1.0 if kind == "always_on" else 0.0, based)
        if kind != "traceidratio":
            raise ConfigError(
                f"OTEL_TRACES_SAMPLER={name!r}: expected always_on, always_off, "
                "traceidratio or parentbased_ one of them"
            )
        raw = environ.get("OTEL_TRACES_SAMPLER_ARG", "1.0")
        try:
            ratio = float(raw)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={raw!r}: expected a ratio from 0 to 1")
        return cls(ratio, based)


@dataclass(frozen=True)
class Propagation:
    """Which W3C headers are read from a caller and sent to tools (`OTEL_PROPAGATORS`)."""

    trace_context: bool = True  # traceparent, tracestate
    baggage: bool = True

    @classmethod
    def of(cls, environ: Mapping[str, str] = os.environ) -> Propagation:
        raw = environ.get("OTEL_PROPAGATORS", "")
        names = {name.strip().lower() for name in raw.split(",") if name.strip()}
        if not names:
            return cls()
        if names == {"none"}:
            return cls(False, False)
        unknown = sorted(names - set(PROPAGATORS))
        if unknown:
            raise ConfigError(
                f"OTEL_PROPAGATORS={raw!r}: callgate propagates tracecontext and baggage "
                f"(or none), not {', '.join(unknown)}; name only those it supports"
            )
        return cls("tracecontext" in names, "baggage" in names)


def parent_of(carrier: Mapping[str, str]) -> tuple[int, int, bool, str] | None:
    """(trace ID, span ID, sampled, tracestate) of a valid W3C traceparent, else None."""
    found = _TRACEPARENT.match(carrier.get("traceparent", "").strip().lower())
    if found is None or found.group(1) == "ff":
        return None
    trace_id, span_id = int(found.group(2), 16), int(found.group(3), 16)
    if not trace_id or not span_id:
        return None
    state = carrier.get("tracestate", "")
    state = state if len(state) <= _MAX_TRACESTATE and state.isprintable() else ""
    return trace_id, span_id, bool(int(found.group(4), 16) & 1), state


def baggage_of(carrier: Mapping[str, str]) -> str:
    """The caller's W3C `baggage` header, passed on as it came; dropped when over 8192
    characters or not printable. (Never a span attribute: it is the caller's.)"""
    found = carrier.get("baggage", "")
    return found if len(found) <= _MAX_BAGGAGE and found.isprintable() else ""


class LeanTracer(Tracer):
    enabled = True

    def __init__(
        self, sink: Sink, sampler: Sampler = Sampler(1.0), propagation: Propagation = Propagation()
    ) -> None:
        self.sink = sink
        self.sampler = sampler
        self.propagation = propagation

    def span(
        self, name: str, attributes: Attributes | None = None, *, client: bool = False
    ) -> AbstractContextManager[Span]:
        parent = _CURRENT.get()
        kind = CLIENT if client else INTERNAL
        if parent is None:
            trace_id = random.getrandbits(128) or 1
            span = LeanSpan(
                name, trace_id, 0, kind, self.sampler.sampled(trace_id, None), "", attributes
            )
        else:
            span = LeanSpan(
                name,
                parent.trace_id,
                parent.span_id,
                kind,
                parent.sampled,
                parent.trace_state,
                attributes,
                parent.baggage,
            )
        return _Current(span, self.sink, errors=True)

    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        way = self.propagation
        remote = parent_of(carrier) if carrier and way.trace_context else None
        baggage = baggage_of(carrier) if carrier and way.baggage else ""
        if remote is None:
            trace_id = random.getrandbits(128) or 1
            span = LeanSpan(
                name,
                trace_id,
                0,
                SERVER,
                self.sampler.sampled(trace_id, None),
                "",
                attributes,
                baggage,
            )
        else:
            trace_id, parent_id, sampled, state = remote
            span = LeanSpan(
                name,
                trace_id,
                parent_id,
                SERVER,
                self.sampler.sampled(trace_id, sampled),
                state,
                attributes,
                baggage,
            )
        return _Current(span, self.sink, errors=False)

    def headers(self) -> Mapping[str, str]:
        span = _CURRENT.get()
        if span is None:
            return {}
        found = {}
        if self.propagation.trace_context:
            flags = "01" if span.sampled else "00"
            found["traceparent"] = f"00-{span.trace_id:032x}-{span.span_id:016x}-{flags}"
            if span.trace_state:
                found["tracestate"] = span.trace_state
        if span.baggage:
            found["baggage"] = span.baggage
        return found

    def failed(self, span: Span, description: str) -> None:
        if isinstance(span, LeanSpan):
            span.error = description

    def shutdown(self) -> None:
        self.sink.shutdown()


def current_ids() -> tuple[str, str] | None:
    """The current span's (trace ID, span ID) in hex, for log lines; None outside a span."""
    span = _CURRENT.get()
    if span is None:
        return None
    return f"{span.trace_id:032x}", f"{span.span_id:016x}"


def wanted(endpoint: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to trace: an endpoint given (flag or OTEL variable) and the SDK not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        endpoint
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def traces_url(endpoint: str) -> str:
    """The flag's collector base URL (`http://collector:4318`) with /v1/traces added (kept
    when already there), as the SDK adds it to OTEL_EXPORTER_OTLP_ENDPOINT."""
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACE_PATH) else base + TRACE_PATH
