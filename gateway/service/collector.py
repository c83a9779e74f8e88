"""The cyclic garbage collector around a sidecar's start-up and while it serves."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# young-generation collections every this many allocations while serving (the default is 700)
GC_THRESHOLD = 10_000
NO_FULL_COLLECTIONS = 2**31 - 1  # young collections between two full ones: never


@contextlib.contextmanager
def young_collections_only() -> Iterator[None]:
    """The cyclic collector's full collections off meanwhile (thresholds as they were after).
    Start-up allocates what stays for the process's life (manifests, compiled schemas,
    policies and their data): while that grows, each full collection scans all of it again,
    which was a third of the time loading 10,000 manifests took. The young generations are
    still collected, so the short-lived cycles a load makes (compiled validators) do not pile
    up; `tune_for_serving` makes the one full collection when it is all there."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], NO_FULL_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def tune_for_serving() -> None:
    """What start-up loaded (modules, compiled schemas and policies) stays for the process's
    life: freeze it out of the cyclic collector's scans, and collect the young generation
    every few thousand allocations rather than every 700 (requests make many short-lived
    objects; few of them form cycles)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, 20, 20)
