"""Prometheus metrics: `serve --metrics-listen HOST:PORT` serves them at `/metrics`.

`PrometheusMetrics` implements `hooks.Metrics` with label children bound ahead: a report looks
its child up by the label values it was given (one dict lookup) and, the first time a
combination is seen, bounds each value to its known set (tool names of the registry, the enums'
values; anything else becomes `(unknown)` or `(other)`), so no value a model or a caller sends
can add a series. In a process of its own the values are plain numbers changed under one lock
per report (`gateway.observe.counting`), written out at a scrape as prometheus_client's own
metrics are. The gauges `callgate_pending_approvals` and `callgate_unknown_outcome_calls`
are read from the store when scraped (`StoreGauges`), so they are right across replicas and
restarts.

With `serve --workers N` the workers write their samples to files in one directory
(`PROMETHEUS_MULTIPROC_DIR`, Prometheus' multiprocess mode, set by the supervisor), and worker
1 serves every worker's samples, summed, together with the store's gauges
(`serving_registry(multiprocess=True)`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from threading import Lock, Thread
from typing import Any, Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from gateway.observe.counting import COUNTER, HISTOGRAM, Family
from gateway.observe.hooks import MULTIPROCESS_ENV, NONE, OTHER, UNKNOWN_TOOL, Metrics

log = logging.getLogger("callgate.metrics")

TOOL_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
FAST_BUCKETS: Final = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    1.0,
    5.0,
)
RPC_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    10.0,
    60.0,
)

VERDICTS: Final = frozenset({"ALLOW", "DENY", "APPROVAL_REQUIRED", "POLICY_ERROR"})
OUTCOMES: Final = frozenset({"SUCCEEDED", "FAILED", "UNKNOWN"})
RELOADS: Final = frozenset({"installed", "unchanged", "rejected"})
ENGINES: Final = frozenset({"embedded", "opa", "shadow"})
STORES: Final = frozenset({"sqlite", "postgresql"})


@dataclass(frozen=True)
class Labels:
    """The values each label may take (anything else is bounded to `(unknown)`/`(other)`)."""

    tools: frozenset[str]
    statuses: frozenset[str]
    codes: frozenset[str]
    next_actions: frozenset[str]
    providers: frozenset[str]
    methods: frozenset[str]
    grpc_codes: frozenset[str]


Bound = Callable[[str], str]


def within(known: frozenset[str], other: str = OTHER) -> Bound:
    def bound(value: str) -> str:
        return value if value in known else other

    return bound


class _Children:
    """A metric's children by label values: bound once, then one lookup."""

    def __init__(self, metric: Any, bounds: tuple[Bound, ...]) -> None:
        self._metric = metric
        self._bounds = bounds
        self._by_values: dict[tuple[str, ...], Any] = {}

    def get(self, values: tuple[str, ...]) -> Any:
        child = self._by_values.get(values)
        if child is None:
            child = self._bind(values)
        return child

    def _bind(self, values: tuple[str, ...]) -> Any:
        bounded = tuple(bound(v) for bound, v in zip(self._bounds, values, strict=True))
        child = self._by_values.get(bounded)
        if child is None:
            child = self._metric.labels(*bounded)
            self._by_values[bounded] = child
        if bounded == values:  # only values in their known sets are remembered as given
            self._by_values[values] = child
        return child


class PrometheusMetrics(Metrics):
    enabled = True

    def __init__(
        self, labels: Labels, registry: CollectorRegistry | None, *, counting: bool | None = None
    ) -> None:
        """`registry`: where the metrics are registered (None: Prometheus' multiprocess
        files). `counting`: keep the values as `gateway.observe.counting` families (the default
        when there is a registry and no multiprocess directory) rather than prometheus_client's
        metrics."""
        self.registry = registry
        self._lock = Lock()  # held by every report (and by a scrape of counting families)
        self._counting = (
            registry is not None and not multiprocess_dir() if counting is None else counting
        )
        self._define_calls(labels)
        self._define_serving(labels)

    def _counter(self, name: str, doc: str, *names: str) -> Any:
        if self._counting:
            return self._registered(Family(name, doc, names, COUNTER, self._lock))
        return Counter(name, doc, names, registry=self.registry)

    def _histogram(self, name: str, doc: str, buckets: tuple[float, ...], *names: str) -> Any:
        if self._counting:
            return self._registered(Family(name, doc, names, HISTOGRAM, self._lock, buckets))
        return Histogram(name, doc, names, registry=self.registry, buckets=buckets)

    def _registered(self, family: Family) -> Family:
        if self.registry is not None:
            self.registry.register(family)
        return family

    def _define_calls(self, labels: Labels) -> None:
        """What the calls did: decisions, results, executions."""
        counter, histogram = self._counter, self._histogram
        tool = within(labels.tools, UNKNOWN_TOOL)
        code = within(labels.codes | {NONE})
        self._decisions = _Children(
            counter(
                "callgate_decisions_total",
                "Policy decisions, by verdict (POLICY_ERROR: failed closed)",
                "verdict",
                "tool",
                "engine",
            ),
            (within(VERDICTS), tool, within(ENGINES)),
        )
        self._results = _Children(
            counter(
                "callgate_call_results_total",
                "Call results committed (terminal, or UNKNOWN), by status and error code",
                "status",
                "code",
                "tool",
            ),
            (within(labels.statuses), code, tool),
        )
        self._tools = _Children(
            histogram(
                "callgate_tool_duration_seconds",
                "Tool executions and look-ups, by the status they answered",
                TOOL_BUCKETS,
                "tool",
                "outcome",
            ),
            (tool, within(OUTCOMES)),
        )
        self._define_timings(labels)

    def _define_timings(self, labels: Labels) -> None:
        """How long evaluations and commits took; turns settled; quota rejections."""
        counter, histogram = self._counter, self._histogram
        tool = within(labels.tools, UNKNOWN_TOOL)
        self._evals = _Children(
            histogram(
                "callgate_policy_eval_duration_seconds",
                "Evaluations of the policy's decision",
                FAST_BUCKETS,
                "engine",
            ),
            (within(ENGINES),),
        )
        self._commits = _Children(
            histogram(
                "callgate_store_commit_duration_seconds",
                "Write transactions of the run store, as long as their callers waited",
                FAST_BUCKETS,
                "store",
            ),
            (within(STORES),),
        )
        self._turns = _Children(
            counter(
                "callgate_turns_total",
                "Turns settled, by NextAction and provider",
                "next_action",
                "provider",
            ),
            (within(labels.next_actions), within(labels.providers | {NONE})),
        )
        self._quotas = _Children(
            counter(
                "callgate_quota_rejections_total",
                "Calls rejected quota_exceeded (turns and Authorize)",
                "tool",
            ),
            (tool,),
        )

    def _define_serving(self, labels: Labels) -> None:
        """What the process did: reloads, shadow comparisons, RPCs answered."""
        counter, histogram = self._counter, self._histogram
        self._reloads = _Children(
            counter("callgate_policy_reloads_total", "Reloads of --policies, by result", "result"),
            (within(RELOADS),),
        )
        self._tools_reloads = _Children(
            counter("callgate_tools_reloads_total", "Reloads of --tools, by result", "result"),
            (within(RELOADS),),
        )
        self._shadow = counter(
            "callgate_shadow_disagreements_total", "Shadow mode: evaluations OPA answered otherwise"
        )
        method = within(labels.methods)
        self._handled = _Children(
            counter(
                "callgate_grpc_server_handled_total",
                "ToolGateway RPCs answered, by method and gRPC status code",
                "method",
                "code",
            ),
            (method, within(labels.grpc_codes)),
        )
        self._handling = _Children(
            histogram(
                "callgate_grpc_server_handling_seconds",
                "Time to answer a ToolGateway RPC (a server stream: until it ended)",
                RPC_BUCKETS,
                "method",
            ),
            (method,),
        )

    # Each report finds its children first (binding one may take the lock), then changes them
    # under the lock.

    def decision(self, verdict: str, tool: str, engine: str, seconds: float) -> None:
        decided, timed = self._decisions.get((verdict, tool, engine)), self._evals.get((engine,))
        with self._lock:
            decided.inc()
            timed.observe(seconds)

    def call_result(self, status: str, code: str, tool: str) -> None:
        child = self._results.get((status, code or NONE, tool))
        with self._lock:
            child.inc()

    def tool_run(self, tool: str, outcome: str, seconds: float) -> None:
        child = self._tools.get((tool, outcome))
        with self._lock:
            child.observe(seconds)

    def store_commit(self, store: str, seconds: float) -> None:
        child = self._commits.get((store,))
        with self._lock:
            child.observe(seconds)

    def turn(self, next_action: str, provider: str) -> None:
        child = self._turns.get((next_action, provider or NONE))
        with self._lock:
            child.inc()

    def policy_reload(self, result: str) -> None:
        child = self._reloads.get((result,))
        with self._lock:
            child.inc()

    def tools_reload(self, result: str) -> None:
        child = self._tools_reloads.get((result,))
        with self._lock:
            child.inc()

    def shadow_disagreement(self) -> None:
        with self._lock:
            self._shadow.inc()

    def quota_rejected(self, tool: str) -> None:
        child = self._quotas.get((tool,))
        with self._lock:
            child.inc()

    def rpc(self, method: str, code: str, seconds: float) -> None:
        handled, handling = self._handled.get((method, code)), self._handling.get((method,))
        with self._lock:
            handled.inc()
            handling.observe(seconds)


# ---------------------------------------------------------------------------- serving


class StoreGauges(Collector):
    """`callgate_pending_approvals` and `callgate_unknown_outcome_calls`, read from the store
    at each scrape (`read`: the two counts, or None when the store could not answer: then the
    gauges are left out of that scrape)."""

    def __init__(self, read: Callable[[], tuple[int, int] | None]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        found = self._read()
        if found is None:
            return
        pending, unknown = found
        yield GaugeMetricFamily(
            "callgate_pending_approvals",
            "Approvals waiting for a person (PENDING), in the store",
            value=pending,
        )
        yield GaugeMetricFamily(
            "callgate_unknown_outcome_calls",
            "Calls whose outcome is UNKNOWN, in the store",
            value=unknown,
        )

    def describe(self) -> Iterable[Metric]:
        return ()


def multiprocess_dir() -> str:
    """The directory of `serve --workers`' samples; "" in a process of its own."""
    return os.environ.get(MULTIPROCESS_ENV, "")


def serving_registry(own: CollectorRegistry | None, gauges: StoreGauges) -> CollectorRegistry:
    """What `/metrics` answers: this process's metrics (registered in own) and its runtime's,
    or, with workers, every worker's; plus the store's gauges."""
    shared = multiprocess_dir()
    registry = own if own is not None and not shared else CollectorRegistry()
    if shared:
        MultiProcessCollector(registry, shared)
    else:
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        registry.register(GC_COLLECTOR)
    registry.register(gauges)
    return registry


def metrics_registry() -> CollectorRegistry | None:
    """Where this process's metrics are registered: a registry of its own, or none with
    workers (their samples go to the shared directory; `serving_registry` reads them)."""
    return None if multiprocess_dir() else CollectorRegistry()


class MetricsServer:
    """The `/metrics` HTTP listener (a thread of the Prometheus client)."""

    def __init__(self, server: WSGIServer, thread: Thread) -> None:
        self._server = server
        self._thread = thread
        self.port = server.server_port

    @classmethod
    def start(cls, listen: str, registry: CollectorRegistry) -> MetricsServer:
        host, _, port = listen.rpartition(":")
        server, thread = start_http_server(int(port), host.strip("[]"), registry)
        return cls(server, thread)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
