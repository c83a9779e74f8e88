"""Sending finished spans to a collector over OTLP/HTTP (protobuf), in batches, from a thread
of its own: never on a request's path.

The OTEL_* variables of the exporter and the batch processor apply, as the OpenTelemetry
specification names them: `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`, `..._TIMEOUT` (ms),
`..._COMPRESSION` (`gzip`), `..._CERTIFICATE`, `..._CLIENT_CERTIFICATE`, `..._CLIENT_KEY`;
`OTEL_BSP_SCHEDULE_DELAY` (ms), `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
A full queue drops spans (counted, logged once a minute at most), never blocks a request.
"""

from __future__ import annotations

import gzip
import http.client
import logging
import os
import ssl
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage

from gateway.errors import ConfigError

log = logging.getLogger("callgate.tracing")

SCOPE: Final = "callgate"
STATUS_ERROR: Final = 2  # OTLP Status.STATUS_CODE_ERROR
WARN_EVERY_S: Final = 60.0


class Finished(Protocol):
    """What a sink is given of a span (`gateway.observe.tracing.LeanSpan` has these)."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: str | None
    trace_state: str


def _env(name: str, environ: Mapping[str, str], default: str = "") -> str:
    """OTEL_EXPORTER_OTLP_TRACES_<name>, else OTEL_EXPORTER_OTLP_<name>."""
    return (environ.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
            or environ.get(f"OTEL_EXPORTER_OTLP_{name}") or default)


def number(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name}={raw!r}: expected a whole number, 1 or more")
    return int(raw)


def pairs(text: str, name: str) -> dict[str, str]:
    """`k=v,k2=v2` (values percent-decoded), as OTEL_* headers and resource attributes are."""
    found: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{name}: {item!r} is not key=value")
        found[unquote(key.strip())] = unquote(value.strip())
    return found


@dataclass(frozen=True)
class ExportSettings:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    gzip: bool = False
    context: ssl.SSLContext | None = None
    delay_s: float = 5.0
    queue: int = 2048
    batch: int = 512

    @classmethod
    def of(cls, url: str, environ: Mapping[str, str] = os.environ) -> ExportSettings:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"OTLP endpoint {url!r}: expected an http:// or https:// URL")
        compression = _env("COMPRESSION", environ, "none").lower()
        if compression not in ("gzip", "none"):
            raise ConfigError(f"OTEL_EXPORTER_OTLP_COMPRESSION={compression!r}: expected "
                              "gzip or none")
        return cls(url=url, headers=pairs(_env("HEADERS", environ), "OTEL_EXPORTER_OTLP_HEADERS"),
                   timeout_s=number(environ, "OTEL_EXPORTER_OTLP_TIMEOUT", 10_000) / 1000,
                   gzip=compression == "gzip", context=_tls(parts.scheme, environ),
                   delay_s=number(environ, "OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000,
                   queue=number(environ, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
                   batch=number(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512))


def _tls(scheme: str, environ: Mapping[str, str]) -> ssl.SSLContext | None:
    if scheme != "https":
        return None
    try:
        context = ssl.create_default_context(cafile=_env("CERTIFICATE", environ) or None)
        cert = _env("CLIENT_CERTIFICATE", environ)
        if cert:
            context.load_cert_chain(cert, _env("CLIENT_KEY", environ) or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_CERTIFICATE / CLIENT_CERTIFICATE: {exc}") from None
    return context


def _value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


# Attribute pairs repeat from span to span (a tool's name, a verdict, the policy revision):
# their messages are kept, which halves a span's encoding. Not those unique to one span.
_KEPT_PAIRS: Final = 4096
UNIQUE_KEYS: Final = frozenset({"callgate.call_id"})
_pairs: dict[tuple[str, Any], KeyValue] = {}  # (the exporting thread's only)


def key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    found = []
    for k, v in attributes.items():
        simple = isinstance(v, str | bool | int | float)
        kv = _pairs.get((k, v)) if simple else None
        if kv is None:
            kv = KeyValue(key=k, value=_value(v))
            if simple and k not in UNIQUE_KEYS:
                if len(_pairs) >= _KEPT_PAIRS:
                    _pairs.clear()
                _pairs[(k, v)] = kv
        found.append(kv)
    return found


def _message(s: Finished) -> SpanMessage:
    return SpanMessage(
        trace_id=s.trace_id.to_bytes(16, "big"), span_id=s.span_id.to_bytes(8, "big"),
        parent_span_id=s.parent_id.to_bytes(8, "big") if s.parent_id else b"",
        trace_state=s.trace_state, name=s.name, kind=s.kind,  # type: ignore[arg-type]
        start_time_unix_nano=s.start_ns, end_time_unix_nano=s.end_ns,
        attributes=key_values(s.attributes),
        status=Status(code=STATUS_ERROR, message=s.error) if s.error is not None  # type: ignore[arg-type]
        else None)


def encode(spans: Sequence[Finished], resource: Mapping[str, str]) -> bytes:
    """An ExportTraceServiceRequest of the spans, serialized."""
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=Resource(attributes=key_values(resource)),
        scope_spans=[ScopeSpans(scope=InstrumentationScope(name=SCOPE),
                                spans=[_message(s) for s in spans])])])
    return request.SerializeToString()


class OtlpSink:
    """Finished spans queued; a thread sends them in batches (at most `batch`, at least every
    `delay_s`, sooner when a batch is full)."""

    def __init__(self, settings: ExportSettings, resource: Mapping[str, str]) -> None:
        self.settings = settings
        self.resource = dict(resource)
        self.dropped = 0
        self.sent = 0
        self._queue: deque[Finished] = deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._warned = 0.0
        self._conn: http.client.HTTPConnection | None = None
        self._thread = threading.Thread(target=self._run, name="callgate-otlp", daemon=True)
        self._thread.start()

    def add(self, span: Finished) -> None:
        """(On the request's thread: an append, and a wake-up when a batch is full.)"""
        queue = self._queue
        if len(queue) >= self.settings.queue:
            self.dropped += 1
            return
        queue.append(span)
        if len(queue) == self.settings.batch:
            with self._wake:
                self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                if not self._stopping and len(self._queue) < self.settings.batch:
                    self._wake.wait(self.settings.delay_s)
                stopping = self._stopping
            self._flush()
            if stopping:
                return

    def _flush(self) -> None:
        while self._queue:
            batch = [self._queue.popleft()
                     for _ in range(min(self.settings.batch, len(self._queue)))]
            self._post(encode(batch, self.resource), len(batch))

    def _post(self, body: bytes, count: int) -> None:
        s = self.settings
        headers = {**s.headers, "Content-Type": "application/x-protobuf"}
        if s.gzip:
            body, headers["Content-Encoding"] = gzip.compress(body), "gzip"
        try:
            conn = self._connection()
            parts = urlsplit(s.url)
            conn.request("POST", parts.path or "/", body=body, headers=headers)
            answer = conn.getresponse()
            answer.read()
            if answer.status >= 300:
                self._warn(f"the collector answered HTTP {answer.status}", count)
            else:
                self.sent += count
        except (OSError, http.client.HTTPException) as exc:
            self._conn = None
            self._warn(f"{type(exc).__name__}: {exc}", count)

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            parts = urlsplit(self.settings.url)
            self._conn = (http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=self.settings.timeout_s,
                context=self.settings.context) if parts.scheme == "https"
                else http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                timeout=self.settings.timeout_s))
        return self._conn

    def _warn(self, problem: str, count: int) -> None:
        self.dropped += count
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY_S:
            self._warned = now
            log.warning("traces not exported to %s: %s (%d spans dropped so far)",
                        self.settings.url, problem, self.dropped)

    def shutdown(self) -> None:
        """Send what is queued (within the export timeout), then stop the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(self.settings.timeout_s + 1)
