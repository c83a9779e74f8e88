"""The benchmark's command line and how it finds a supervisor's worker processes."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from bench.procs import cpu_seconds, descendants, tree_cpu_seconds
from bench.run import PARTS, _workers_of, parts

# a process that starts a child which starts a grandchild, prints their pids, and waits for
# its stdin to close (each waits for its own stdin, so closing the first ends all three)
WAIT = "import sys; sys.stdin.read()"
SPAWN = (
    "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {code!r}], "
    "stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True); "
    "print(p.pid, p.stdout.readline().strip() if {nested} else '', flush=True); "
    "sys.stdin.read(); p.stdin.close(); p.wait()"
)


def test_the_workers_are_a_supervisors_descendants() -> None:
    child_code = SPAWN.format(code=WAIT, nested=False)
    with subprocess.Popen(
        [sys.executable, "-c", SPAWN.format(code=child_code, nested=True)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as parent:
        assert parent.stdin is not None and parent.stdout is not None
        try:
            child, grandchild = (int(p) for p in parent.stdout.readline().split())
            assert sorted(descendants(parent.pid)) == sorted([child, grandchild])
            assert sorted(_workers_of(parent.pid)) == sorted([child, grandchild])
            assert _workers_of(grandchild) == [grandchild]  # no children: the process itself
            together = sum(cpu_seconds(p) for p in (parent.pid, child, grandchild))
            assert tree_cpu_seconds(parent.pid) >= together * 0.99
        finally:
            parent.stdin.close()
            parent.wait(timeout=30)


def test_only_takes_known_parts() -> None:
    assert parts("main,counts") == ("main", "counts")
    assert parts(" tools , data ") == ("tools", "data")
    assert set(PARTS) == {
        "main",
        "counts",
        "pages",
        "long",
        "tools",
        "data",
        "workers",
        "observe",
        "quotas",
        "results",
    }
    with pytest.raises(argparse.ArgumentTypeError, match="unknown part"):
        parts("main,mian")
    with pytest.raises(argparse.ArgumentTypeError):
        parts(",")
