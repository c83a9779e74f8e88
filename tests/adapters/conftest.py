"""One loopback server for all adapter tests (stopping a stdlib server waits out its poll
interval), handed to each test with nothing queued or received; a canned reply a test queued
but never had requested fails that test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.loopback import LoopbackServer, loopback


@pytest.fixture(scope="session")
def _shared_server() -> Iterator[LoopbackServer]:
    with loopback() as running:
        yield running


@pytest.fixture
def server(_shared_server: LoopbackServer) -> Iterator[LoopbackServer]:
    _shared_server.received.clear()
    _shared_server.replies.clear()
    yield _shared_server
    leftover = list(_shared_server.replies)
    _shared_server.replies.clear()
    assert not leftover, f"canned replies left unused: {leftover}"
