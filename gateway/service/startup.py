"""What start-up checks before it commits to anything, and what it takes back when it fails.

- `check_listen_free`: a HOST:PORT somebody listens on (or a unix socket somebody answers on)
  is refused before gRPC is asked to bind it, in one line naming `--listen` and its variable.
  gRPC would log its own error line first (from its C core, on standard error), and for a unix
  socket it would silently unlink the other listener's socket and take the path over.
- `NewFiles`: the files a start-up may create (the SQLite store and its companions, the audit
  key) that did not exist before it; `remove()` deletes exactly those when start-up fails, so
  a refused start leaves the directory as it found it. What existed before is never touched.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from gateway.errors import ConfigError
from gateway.store import sqlite_path

# what a SQLite store creates beside its file (journal, WAL, locks, the workers' sockets)
STORE_COMPANIONS = ("-wal", "-shm", "-journal", "-runs.lock", "-write.lock", "-notify")


def in_use_error(listen: str) -> ConfigError:
    return ConfigError(
        f"--listen {listen}: the address is in use (another callgate, or another "
        "program, listens there): stop it, or choose another --listen "
        "(CALLGATE_LISTEN)"
    )


def check_listen_free(listen: str) -> None:
    """ConfigError when something already listens at the address (port 0 never does)."""
    if listen.startswith("unix:"):
        if _unix_answers(listen.removeprefix("unix:")):
            raise in_use_error(listen)
        return
    host, _, port = listen.rpartition(":")
    if int(port) == 0:
        return
    try:
        addresses = socket.getaddrinfo(
            host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError:
        return  # a name that does not resolve: gRPC says so itself
    for family, kind, proto, _, address in addresses:
        if _taken(family, kind, proto, address):
            raise in_use_error(listen)


def _taken(family: int, kind: int, proto: int, address: tuple[object, ...]) -> bool:
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not taken
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _unix_answers(path: str) -> bool:
    try:
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return False
    except OSError:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False  # a stale socket file: gRPC replaces it
    return True


@dataclass(frozen=True)
class NewFiles:
    """The paths start-up may create that were not there before it began."""

    paths: tuple[Path, ...]

    @classmethod
    def before_start(cls, db: str, audit_key: Path | None) -> NewFiles:
        candidates: list[Path] = [audit_key] if audit_key is not None else []
        store = sqlite_path(db)
        if store is not None:
            candidates += [store, *(Path(f"{store}{suffix}") for suffix in STORE_COMPANIONS)]
        return cls(tuple(p for p in candidates if not os.path.lexists(p)))

    def remove(self) -> None:
        """Delete what start-up created of these (best effort: a failed start must still end
        with its own message)."""
        for path in self.paths:
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            except OSError:
                pass
