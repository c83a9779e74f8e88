"""What `serve` reports to, from its settings: Prometheus metrics (`--metrics-listen`), traces
(`--otlp-endpoint` or the OTEL_* variables), and the `/metrics` listener with the store's
gauges. Nothing is imported or started for what is off."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Final

import grpc

from adapters import PROVIDERS
from gateway import pb
from gateway.errors import CallCode, ConfigError
from gateway.model import CallStatus, NextAction
from gateway.observe.hooks import MULTIPROCESS_ENV, Metrics, Observe, Tracer
from gateway.service.config import ServeConfig
from gateway.store.base import RunStore
from gateway.version import callgate_version

log = logging.getLogger("callgate.metrics")

SERVICE: Final = pb.DESCRIPTOR.services_by_name["ToolGateway"].full_name

GAUGE_READ_TIMEOUT_S: Final = 5.0


def build_observe(config: ServeConfig, tools: Iterable[str]) -> Observe:
    """Metrics when serving `/metrics` or a worker whose samples another worker serves;
    traces when an OTLP endpoint is named."""
    shared = bool(os.environ.get(MULTIPROCESS_ENV))
    metrics = _prometheus(tools) if config.metrics_listen or shared else Metrics()
    return Observe(metrics=metrics, tracer=_tracer(config))


def _prometheus(tools: Iterable[str]) -> Metrics:
    from gateway.observe.metrics import Labels, PrometheusMetrics, metrics_registry

    service = pb.DESCRIPTOR.services_by_name["ToolGateway"]
    labels = Labels(
        tools=frozenset(tools),
        statuses=frozenset(s.value for s in CallStatus),
        codes=frozenset(c.value for c in CallCode),
        next_actions=frozenset(n.value for n in NextAction),
        providers=frozenset(PROVIDERS),
        methods=frozenset(m.name for m in service.methods),
        grpc_codes=frozenset(c.name for c in grpc.StatusCode),
    )
    return PrometheusMetrics(labels, metrics_registry())


def _tracer(config: ServeConfig) -> Tracer:
    from gateway.observe.sdk import otlp_tracer
    from gateway.observe.tracing import wanted

    if not wanted(config.otlp_endpoint):
        return Tracer()
    return otlp_tracer(
        config.otlp_endpoint,
        {  # (a bad OTEL_* variable: ConfigError)
            "service.version": callgate_version(),
            "callgate.engine": config.engine,
            "rpc.system": "grpc",
            "rpc.service": SERVICE,
        },
    )


class MetricsEndpoint:
    """`/metrics` on --metrics-listen, with the store's gauges read at each scrape."""

    def __init__(self, listen: str, store: RunStore, metrics: Metrics) -> None:
        self.listen = listen
        self.store = store
        self.own = getattr(metrics, "registry", None)  # where this process's metrics are
        self.bound = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None

    def start(self) -> str:
        from gateway.observe.metrics import MetricsServer, StoreGauges, serving_registry

        self._loop = asyncio.get_running_loop()
        registry = serving_registry(self.own, StoreGauges(self._unsettled))
        try:
            self._server = MetricsServer.start(self.listen, registry)
        except OSError as exc:
            raise ConfigError(
                f"--metrics-listen {self.listen}: cannot listen there: {exc}"
            ) from exc
        host = self.listen.rpartition(":")[0]
        self.bound = f"{host}:{self._server.port}"
        log.info("serving metrics at http://%s/metrics", self.bound)
        return self.bound

    def _unsettled(self) -> tuple[int, int] | None:
        """(On the listener's thread.) The store's counts, asked on the event loop."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self.store.unsettled(), self._loop)
        try:
            return future.result(GAUGE_READ_TIMEOUT_S)
        except (FutureTimeout, Exception) as exc:
            future.cancel()
            log.warning("the store's gauges could not be read for /metrics: %s", type(exc).__name__)
            return None

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
