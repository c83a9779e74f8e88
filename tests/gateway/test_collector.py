"""Start-up runs without the cyclic collector's full collections, and leaves its thresholds
as it found them."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gateway.service.collector import young_collections_only


@pytest.fixture(autouse=True)
def _restore_thresholds() -> Iterator[None]:
    was = gc.get_threshold()
    yield
    gc.set_threshold(*was)


def test_young_collections_but_no_full_one_inside() -> None:
    gc.set_threshold(700, 10, 10)
    full: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    gc.callbacks.append(seen)
    try:
        with young_collections_only():
            kept = [[i] for i in range(3 * len(gc.get_objects()))]  # what start-up keeps
            cycles: list[list[object]] = [[] for _ in range(2_000)]  # the cycles it drops
            for c in cycles:
                c.append(c)
            del cycles
            young = gc.get_count()
            assert gc.get_threshold()[:2] == (700, 10) and young[0] < 700
            del kept
    finally:
        gc.callbacks.remove(seen)
    assert not full


def test_thresholds_back_after_a_failed_start() -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), young_collections_only():
        raise RuntimeError("the start failed")
    assert gc.get_threshold() == (700, 10, 10)
