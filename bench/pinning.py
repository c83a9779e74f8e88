"""`--pin-cores`: every server the benchmark measures on one core, the benchmark's own client
and the tool service on the others.

Without it the scheduler places each process's threads where it likes, and on this 2-core
machine two identical sidecars measured in the same minutes differed by up to 11% of server
CPU per request, persistently within a run: more than the 5-10% the pair targets judge. With
it, the sidecar being measured has the same core to itself in every round (the others of its
part are idle then), as a sidecar limited to one CPU would in a deployment.
"""

from __future__ import annotations

import os
from contextlib import suppress

from gateway.testing import SidecarProcess

_HAVE = sorted(os.sched_getaffinity(0))  # the cores this benchmark may use, before it pins itself


def cores() -> tuple[set[int], set[int]]:
    """(the servers' core, the client's and tools' cores); both all cores when there is one."""
    if len(_HAVE) < 2:
        return set(_HAVE), set(_HAVE)
    return {_HAVE[-1]}, set(_HAVE[:-1])


def pin(pid: int, on: set[int]) -> None:
    """Every thread of process `pid` (threads it starts later inherit the mask)."""
    with suppress(FileNotFoundError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with suppress(ProcessLookupError, PermissionError):
                os.sched_setaffinity(int(tid), on)


class PinnedSidecar(SidecarProcess):
    def start(self) -> SidecarProcess:
        started = super().start()
        assert self.proc is not None
        pin(self.proc.pid, cores()[0])
        return started
