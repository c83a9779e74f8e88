"""An OTLP/HTTP collector on loopback: decodes every trace export it receives
(`ExportTraceServiceRequest`, gzip or not) and keeps it with the request's headers."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span


@dataclass(frozen=True)
class Export:
    path: str
    headers: dict[str, str]  # names in lower case
    request: ExportTraceServiceRequest

    def spans(self) -> list[Span]:
        return [
            span for rs in self.request.resource_spans for ss in rs.scope_spans for span in ss.spans
        ]


@dataclass
class Collector:
    url: str
    exports: list[Export] = field(default_factory=list)

    def spans(self) -> list[Span]:
        return [span for export in list(self.exports) for span in export.spans()]

    def wait_for(self, enough: Callable[[Collector], bool], timeout_s: float = 20.0) -> None:
        """Until enough(self) holds; AssertionError after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while not enough(self):
            assert time.monotonic() < deadline, f"the collector got {len(self.exports)} exports"
            time.sleep(0.02)


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        collector: Collector = self.server.collector  # type: ignore[attr-defined]
        collector.exports.append(
            Export(
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                ExportTraceServiceRequest.FromString(body),
            )
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def otlp_collector() -> Iterator[Collector]:
    """A collector listening on 127.0.0.1 (its base URL, as `--otlp-endpoint` takes it)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    collector = Collector(f"http://127.0.0.1:{server.server_port}")
    server.collector = collector  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
