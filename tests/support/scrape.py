"""Reading a sidecar's `/metrics`: where it serves them (from its log) and the samples."""

from __future__ import annotations

import re
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from gateway.testing import SidecarProcess

SERVING = re.compile(r"serving metrics at (http://\S+/metrics)")


def metrics_url(sidecar: SidecarProcess, timeout_s: float = 30) -> str:
    """The URL the sidecar's log names (it logs it before it is ready)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in list(sidecar.lines):
            found = SERVING.search(line)
            if found:
                return found.group(1)
        assert sidecar.proc is not None and sidecar.proc.poll() is None, sidecar.output
        time.sleep(0.05)
    raise AssertionError(f"no metrics URL in the sidecar's log:\n{sidecar.output}")


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
        return answer.read().decode()


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample by (name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    """A sample's value (0 when absent: a counter never incremented has no child)."""
    return found.get((name, frozenset(labels.items())), 0.0)
