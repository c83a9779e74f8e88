"""What callgate reports, as the layers see it, and the defaults that report nothing.

`Metrics` and `Tracer` are the interfaces the layers call; their own methods do nothing (metrics
or tracing off). `gateway.observe.metrics.PrometheusMetrics` and
`gateway.observe.tracing.LeanTracer` are the implementations `serve` installs when asked.
Values passed as labels are bounded by the implementation (a tool name the registry does not
know becomes `(unknown)`), so callers pass what they have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Final, Protocol

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = Mapping[str, AttributeValue]

UNKNOWN_TOOL: Final = "(unknown)"  # the tool label of a name no manifest declares
OTHER: Final = "(other)"  # any other label value outside its known set
NONE: Final = "none"  # the code label of a result without an error code
MULTIPROCESS_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"  # workers' shared samples (metrics)
# the W3C trace context and baggage, read from a caller's metadata (OTEL_PROPAGATORS)
TRACE_HEADERS: Final = frozenset({"traceparent", "tracestate", "baggage"})


class Metrics:
    """Counters and timings; this base records nothing (metrics off)."""

    enabled = False

    def decision(self, verdict: str, tool: str, engine: str, seconds: float) -> None:
        """A `decision` evaluated: its verdict (`POLICY_ERROR` when it failed closed)."""

    def call_result(self, status: str, code: str, tool: str) -> None:
        """A call's result committed: a terminal status, or UNKNOWN."""

    def tool_run(self, tool: str, outcome: str, seconds: float) -> None:
        """A tool executed (or looked up): the status it answered and how long it took."""

    def store_commit(self, store: str, seconds: float) -> None:
        """A write transaction of the run store, as long as its caller waited for it."""

    def turn(self, next_action: str, provider: str) -> None:
        """A turn settled with this NextAction."""

    def policy_reload(self, result: str) -> None:
        """A reload of `--policies`: installed, unchanged or rejected."""

    def tools_reload(self, result: str) -> None:
        """A reload of `--tools`: installed, unchanged or rejected."""

    def shadow_disagreement(self) -> None:
        """Shadow mode: OPA answered an evaluation otherwise than the embedded engine."""

    def quota_rejected(self, tool: str) -> None:
        """A call REJECTED `quota_exceeded` (in a turn or by Authorize)."""

    def rpc(self, method: str, code: str, seconds: float) -> None:
        """A ToolGateway RPC answered with this gRPC status code."""


class Span(Protocol):
    def set_attribute(self, key: str, value: AttributeValue) -> None: ...


class _NoSpan:
    def set_attribute(self, key: str, value: AttributeValue) -> None:
        return None


NO_SPAN: Final = _NoSpan()
_NO_SPAN_CONTEXT: Final = nullcontext(NO_SPAN)
_NO_HEADERS: Final[Mapping[str, str]] = {}


class Tracer:
    """Spans of the current request; this base makes none (tracing off)."""

    enabled = False

    def span(
        self, name: str, attributes: Attributes | None = None, *, client: bool = False
    ) -> AbstractContextManager[Span]:
        """A child of the current span, current while the block runs; `client`: a request
        to another service (a tool)."""
        return _NO_SPAN_CONTEXT

    def server_span(
        self, name: str, carrier: Mapping[str, str], attributes: Attributes | None = None
    ) -> AbstractContextManager[Span]:
        """The span of one RPC, continuing the caller's W3C trace context (`traceparent`,
        `tracestate` in carrier, and its `baggage`) when it sent one."""
        return _NO_SPAN_CONTEXT

    def headers(self) -> Mapping[str, str]:
        """The current span's W3C trace context (and the caller's baggage) as request
        headers (none when off)."""
        return _NO_HEADERS

    def failed(self, span: Span, description: str) -> None:
        """Mark span as ended in error (description: a stable code, never a message)."""

    def shutdown(self) -> None:
        """Send the spans still batched; none are made afterwards."""


@dataclass(frozen=True)
class Observe:
    """What a component reports to: metrics and spans."""

    metrics: Metrics = field(default_factory=Metrics)
    tracer: Tracer = field(default_factory=Tracer)

    @property
    def enabled(self) -> bool:
        return self.metrics.enabled or self.tracer.enabled


OFF: Final = Observe()
