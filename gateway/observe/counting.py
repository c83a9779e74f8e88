"""Counters and histograms kept as plain numbers, written out at a scrape exactly as
prometheus_client writes its own.

prometheus_client's `Counter.inc` and `Histogram.observe` take a lock per value they change
(a histogram: its sum and its bucket) and check, on every call, that the metric may be
observed; reporting one Authorize that way cost about 5% of the request's instructions. Here
each child is a number (a counter) or a list of bucket counts and a sum (a histogram), changed
without a lock of its own: the caller holds one lock (`Family.lock`, shared by the families of
one `PrometheusMetrics`) for the whole report, and a scrape reads under it.

A family is a prometheus_client `Collector`: registered in a `CollectorRegistry`, it yields
the samples prometheus_client's own metric of the same name, kind, labels and buckets would
(`_total` and `_created` of a counter; `_bucket` with its cumulative `le` counts, `_count`,
`_sum` and `_created` of a histogram), so `/metrics` reads the same. In Prometheus'
multiprocess mode (`serve --workers`) values must go to the shared files, and
`gateway.observe.metrics` uses prometheus_client's own metrics instead.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Iterator
from threading import Lock
from typing import Final

from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

COUNTER: Final = "counter"
HISTOGRAM: Final = "histogram"


class CounterChild:
    __slots__ = ("value", "created")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self) -> None:
        self.value += 1.0


class HistogramChild:
    __slots__ = ("bounds", "counts", "sum", "created")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds  # ascending, the last +Inf
        self.counts = [0] * len(bounds)  # each bucket's own count (not cumulative)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.sum += amount
        if amount <= math.inf:  # NaN falls in no bucket, as with prometheus_client
            self.counts[bisect_left(self.bounds, amount)] += 1


Child = CounterChild | HistogramChild


class Family(Collector):
    """One metric and its children by label values (`labels`, as prometheus_client's)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: tuple[str, ...],
        kind: str,
        lock: Lock,
        buckets: tuple[float, ...] = (),
    ) -> None:
        self.kind = kind
        # a counter's family is named without `_total` (its samples carry it), as in
        # prometheus_client
        self.name = name.removesuffix("_total") if kind == COUNTER else name
        self.documentation = documentation
        self.labelnames = labelnames
        self.lock = lock
        self.bounds = (*sorted(buckets), math.inf) if kind == HISTOGRAM else ()
        self._children: dict[tuple[str, ...], Child] = {}
        if not labelnames:  # an unlabelled metric has its one series from the start
            self._children[()] = self._new_child()

    def labels(self, *values: str) -> Child:
        key = tuple(str(v) for v in values)
        if len(key) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected {len(self.labelnames)} label values")
        with self.lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = self._new_child()
        return child

    def inc(self) -> None:
        """An unlabelled counter's increment (the caller holds `lock`)."""
        child = self._children[()]
        assert isinstance(child, CounterChild)
        child.inc()

    def _new_child(self) -> Child:
        return CounterChild() if self.kind == COUNTER else HistogramChild(self.bounds)

    def describe(self) -> Iterator[Metric]:
        yield Metric(self.name, self.documentation, self.kind)

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, self.kind)
        with self.lock:
            children = [(key, _copy(child)) for key, child in self._children.items()]
        for key, child in children:
            labels = dict(zip(self.labelnames, key, strict=True))
            if isinstance(child, CounterChild):
                metric.add_sample(self.name + "_total", labels, child.value)
            else:
                self._histogram_samples(metric, labels, child)
            metric.add_sample(self.name + "_created", labels, child.created)
        yield metric

    def _histogram_samples(
        self, metric: Metric, labels: dict[str, str], child: HistogramChild
    ) -> None:
        total = 0
        for bound, count in zip(child.bounds, child.counts, strict=True):
            total += count
            le = {**labels, "le": floatToGoString(bound)}
            metric.add_sample(self.name + "_bucket", le, float(total))
        metric.add_sample(self.name + "_count", labels, float(total))
        metric.add_sample(self.name + "_sum", labels, child.sum)


def _copy(child: Child) -> Child:
    """A child's numbers as they are now (read under the lock, written out after it)."""
    if isinstance(child, CounterChild):
        counter = CounterChild()
        counter.value, counter.created = child.value, child.created
        return counter
    histogram = HistogramChild(child.bounds)
    histogram.counts, histogram.sum = list(child.counts), child.sum
    histogram.created = child.created
    return histogram
