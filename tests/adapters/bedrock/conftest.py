"""One loopback server for the whole package: closing one waits for serve_forever's poll
interval (0.5 s), so each test borrows the shared server with its queues emptied."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.loopback import LoopbackServer, loopback


@pytest.fixture(scope="package")
def _shared_server() -> Iterator[LoopbackServer]:
    with loopback() as server:
        yield server


@pytest.fixture
def server(_shared_server: LoopbackServer) -> LoopbackServer:
    _shared_server.replies.clear()
    _shared_server.received.clear()
    return _shared_server
