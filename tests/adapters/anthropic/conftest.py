from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.loopback import LoopbackServer, loopback


@pytest.fixture(scope="module")
def _module_server() -> Iterator[LoopbackServer]:
    # one server per module: stopping a stdlib server waits out its 0.5 s poll interval
    with loopback() as running:
        yield running


@pytest.fixture
def server(_module_server: LoopbackServer) -> Iterator[LoopbackServer]:
    """The loopback server, with nothing queued or received when a test starts."""
    _module_server.received.clear()
    yield _module_server
    leftover = list(_module_server.replies)
    _module_server.replies.clear()
    assert not leftover, f"canned replies left unused: {leftover}"
