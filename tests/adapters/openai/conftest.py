"""One loopback server for the package (stopping one costs ~0.5 s of `serve_forever` polling),
handed to each test empty."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.loopback import LoopbackServer, loopback


@pytest.fixture(scope="package")
def _shared_server() -> Iterator[LoopbackServer]:
    with loopback() as server:
        yield server


@pytest.fixture
def server(_shared_server: LoopbackServer) -> Iterator[LoopbackServer]:
    _shared_server.received.clear()
    _shared_server.replies.clear()
    yield _shared_server
    assert not _shared_server.replies, "a canned reply was never requested"
