"""The sidecar's CPU by kind of thread: read from /proc per thread, reported per request."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from bench.load import Phase
from bench.procs import thread_cpu
from bench.report import Scenario, thread_table
from gateway.threadname import name_os_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="read from /proc")
def test_a_named_store_thread_is_counted_as_the_store() -> None:
    before = thread_cpu(os.getpid())
    worked, done = threading.Event(), threading.Event()

    def store_work() -> None:
        name_os_thread("callgate-sqlite")
        end = time.thread_time() + 0.2
        while time.thread_time() < end:  # CPU, not waiting
            pass
        worked.set()
        done.wait()

    t = threading.Thread(target=store_work)
    t.start()
    try:
        assert worked.wait(30)
        after = thread_cpu(os.getpid())  # read while the thread still exists
    finally:
        done.set()
        t.join()
    assert after["store"] - before["store"] >= 0.15
    assert set(after) == {"event loop", "store", "other Python", "native"}


def test_the_table_gives_each_kind_per_request_and_skips_what_was_not_measured() -> None:
    phase = Phase(latencies_s=[0.001] * 1000, elapsed_s=1.0)
    measured = Scenario(
        "Authorize",
        phase,
        1.0,
        0.0,
        threads_cpu_s={"event loop": 0.6, "store": 0.25, "other Python": 0.0, "native": 0.15},
    )
    unmeasured = Scenario("in-process", phase, 1.0, 0.0)
    lines = thread_table([measured, unmeasured])
    assert lines[0].split() == ["scenario", "event", "loop", "store", "native"]
    assert lines[2].split() == ["Authorize", "600", "250", "150"]
    assert len(lines) == 3
    assert thread_table([unmeasured]) == []
