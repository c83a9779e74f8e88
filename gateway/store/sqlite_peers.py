"""Settlement notifications between the processes sharing one SQLite file (`serve --workers`).

A `SettleHub` wakes the watchers of its own process only. `PeerLink` carries what a process
publishes to the others: each binds a unix datagram socket in `<db>-notify/`, named by its pid,
and after a commit sends the keys it published (run IDs, `AUDIT_FEED`) to every other socket
there; what arrives wakes its own watchers (`SettleHub.wake`, never relayed again).

- Keys published in one pass of the event loop leave together: one datagram per peer.
- A peer whose queue is full keeps its keys here, merged with later ones, and gets them on a
  retry shortly after (more than `MAX_PENDING` become "wake everyone"): a wake-up is late under
  load, never lost while both processes live.
- A socket that refuses datagrams and whose process is gone is removed (a worker that was
  killed); at open, every such socket left behind is.
- Sockets are addressed through an open descriptor of the directory (`/proc/self/fd/N/NAME`),
  so a long path to the store never exceeds the 108 bytes of a socket address (Linux).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from pathlib import Path

from gateway.store.notify import SettleHub

log = logging.getLogger("callgate.store")

SUFFIX = "-notify"
WAKE_ALL = "\x00all"  # never a run ID (those are printable), like AUDIT_FEED
MAX_PENDING = 256  # keys kept for one peer before they become WAKE_ALL
MAX_DATAGRAM = 65_000
RETRY_S = (0.005, 0.5)  # first and longest pause before a full peer is tried again


def directory_of(db: Path) -> Path:
    """Where the processes sharing the store `db` keep their sockets."""
    return Path(f"{db}{SUFFIX}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _pid_of(name: str) -> int | None:
    stem = name.removesuffix(".sock")
    return int(stem) if name.endswith(".sock") and stem.isdigit() else None


def encode(keys: set[str]) -> bytes:
    data = json.dumps(sorted(keys)).encode()
    return data if len(data) <= MAX_DATAGRAM else json.dumps([WAKE_ALL]).encode()


def decode(data: bytes) -> list[str]:
    """The keys of a datagram; anything unreadable wakes everyone (never a missed wake-up)."""
    try:
        keys = json.loads(data)
    except ValueError:
        return [WAKE_ALL]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return [WAKE_ALL]
    return keys


class PeerLink:
    """This process's socket among the store's processes; relays what its hub publishes."""

    def __init__(self, directory: Path, hub: SettleHub) -> None:
        self.directory = directory
        self._hub = hub
        self._loop = asyncio.get_running_loop()
        self._name = f"{os.getpid()}.sock"
        self._dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._outgoing: set[str] = set()
        self._pending: dict[str, set[str]] = {}  # peer socket → keys it could not take yet
        self._flush: asyncio.Handle | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._retry_s = RETRY_S[0]
        self._closed = False

    @classmethod
    def open(cls, db: Path, hub: SettleHub) -> PeerLink:
        """Bind this process's socket beside the store and relay the hub's publishes."""
        directory = directory_of(db)
        directory.mkdir(mode=0o700, exist_ok=True)
        link = cls(directory, hub)
        try:
            link._bind()
        except BaseException:
            link.close()
            raise
        hub.relay = link.publish
        return link

    def _address(self, name: str) -> str:
        return f"/proc/self/fd/{self._dirfd}/{name}"

    def _bind(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # a dead process's, with our pid
            os.unlink(self._name, dir_fd=self._dirfd)
        self._sock.bind(self._address(self._name))
        self._loop.add_reader(self._sock.fileno(), self._receive)
        for name in self._peers():
            pid = _pid_of(name)
            if pid is not None and not _alive(pid):
                self._remove(name)

    def _peers(self) -> list[str]:
        return [
            name
            for name in os.listdir(self._dirfd)
            if name != self._name and _pid_of(name) is not None
        ]

    def _remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self._dirfd)
        self._pending.pop(name, None)

    # ------------------------------------------------------------------ sending

    def publish(self, key: str) -> None:
        """Tell the other processes, with whatever else is published in this pass."""
        if self._closed:
            return
        self._outgoing.add(key)
        if self._flush is None:
            self._flush = self._loop.call_soon(self._send_outgoing)

    def _send_outgoing(self) -> None:
        self._flush = None
        keys, self._outgoing = self._outgoing, set()
        for name in self._peers():
            self._send(name, keys)

    def _send(self, name: str, keys: set[str]) -> None:
        keys = keys | self._pending.pop(name, set())
        try:
            self._sock.sendto(encode(keys), self._address(name))
        except BlockingIOError:  # its queue is full: keep the keys, try again soon
            self._pending[name] = keys if len(keys) <= MAX_PENDING else {WAKE_ALL}
            self._retry_later()
        except (ConnectionRefusedError, FileNotFoundError):  # nobody reads it any more
            pid = _pid_of(name)
            if pid is not None and not _alive(pid):
                self._remove(name)
        except OSError as err:
            log.warning("could not notify the worker behind %s: %s", name, err)

    def _retry_later(self) -> None:
        if self._retry is None and not self._closed:
            self._retry = self._loop.call_later(self._retry_s, self._send_pending)
            self._retry_s = min(self._retry_s * 2, RETRY_S[1])

    def _send_pending(self) -> None:
        self._retry = None
        for name in list(self._pending):
            self._send(name, set())
        if not self._pending:
            self._retry_s = RETRY_S[0]

    # ------------------------------------------------------------------ receiving

    def _receive(self) -> None:
        woken: set[str] = set()
        while True:
            try:
                data = self._sock.recv(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                break
            woken.update(decode(data))
        if WAKE_ALL in woken:
            self._hub.publish_all()
            return
        for key in woken:
            self._hub.wake(key)

    def close(self) -> None:
        """Idempotent: stop relaying, remove this process's socket."""
        if self._closed:
            return
        if self._flush is not None:  # what the last commits published still leaves
            self._send_outgoing()
        self._closed = True
        self._hub.relay = None
        for handle in (self._flush, self._retry):
            if handle is not None:
                handle.cancel()
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._name, dir_fd=self._dirfd)
        os.close(self._dirfd)
