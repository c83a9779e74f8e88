"""Start-up runs with the cyclic collector off, and leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

from gateway.service.app import collector_paused


@pytest.fixture(autouse=True)
def _restore_collector() -> object:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_off_inside_and_on_again_after() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_a_failed_start() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the start failed")
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    with collector_paused(), collector_paused():
        pass
    assert not gc.isenabled()
