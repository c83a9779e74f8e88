"""The relay of settlements between the workers sharing a SQLite file, against real sockets.

The other worker is played by a plain unix datagram socket bound in the store's `-notify`
directory under the name of a live pid (this test's parent), read or left unread on purpose.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gateway.store.notify import SettleHub
from gateway.store.sqlite_peers import WAKE_ALL, PeerLink, decode, directory_of


@contextmanager
def other_worker(db: Path) -> Iterator[socket.socket]:
    directory = directory_of(db)
    directory.mkdir(exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(directory / f"{os.getppid()}.sock"))  # a pid that lives
    sock.setblocking(False)
    try:
        yield sock
    finally:
        sock.close()


def received(sock: socket.socket) -> set[str]:
    keys: set[str] = set()
    while True:
        try:
            keys.update(json.loads(sock.recv(65_536)))
        except BlockingIOError:
            return keys


async def test_keys_published_while_the_peer_is_full_arrive_later(tmp_path: Path) -> None:
    db = tmp_path / "short.db"
    with other_worker(db) as peer:
        hub = SettleHub()
        link = PeerLink.open(db, hub)
        try:
            sent = [f"run-{i}" for i in range(200)]
            for key in sent:  # one datagram per pass of the loop: its queue fills up
                hub.publish(key)
                await asyncio.sleep(0)
            keys = received(peer)
            assert len(keys) < len(sent)  # some had to wait
            for _ in range(200):
                await asyncio.sleep(0.01)
                keys |= received(peer)
                if keys >= set(sent) or WAKE_ALL in keys:
                    break
            assert keys >= set(sent) or WAKE_ALL in keys
        finally:
            link.close()
    assert f"{os.getpid()}.sock" not in os.listdir(directory_of(db))  # closed: removed


async def test_what_a_peer_sends_wakes_the_watchers_here_and_nothing_is_relayed_back(
    tmp_path: Path,
) -> None:
    db = tmp_path / "x.db"
    with other_worker(db) as peer:
        hub = SettleHub()
        link = PeerLink.open(db, hub)
        try:
            async with hub.subscribe("run-1") as sub:
                peer.sendto(
                    json.dumps(["run-1"]).encode(), str(directory_of(db) / f"{os.getpid()}.sock")
                )
                await asyncio.wait_for(sub.wait(), 10)
            assert received(peer) == set()  # woken here only
        finally:
            link.close()


async def test_a_dead_workers_socket_is_removed(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    directory = directory_of(db)
    directory.mkdir()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = directory / f"{gone.stdout.strip()}.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(stale))  # left behind, as by a worker killed with SIGKILL
    link = PeerLink.open(db, SettleHub())
    try:
        assert not stale.exists()
        assert os.listdir(directory) == [f"{os.getpid()}.sock"]
    finally:
        link.close()


def test_an_unreadable_datagram_wakes_everyone() -> None:
    assert decode(b"\xff") == [WAKE_ALL]
    assert decode(b'{"a": 1}') == [WAKE_ALL]
    assert decode(b'["r1", "r2"]') == ["r1", "r2"]
