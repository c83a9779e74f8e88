"""Whether a file-backed store can still persist what it is given.

A store file that was deleted or replaced keeps accepting writes into the old, unlinked file,
and everything is gone after a restart; a filesystem that is (nearly) full fails part-way
through a turn. `FileHealth` answers, cheaply enough to ask before every write transaction:
the path still names the file that was opened (same device and inode), and its filesystem
keeps at least `min_free_bytes` free. A store refuses writes while it answers a problem, and
its health check reports it.
"""

from __future__ import annotations

import os
from pathlib import Path


class FileHealth:
    def __init__(self, path: Path, min_free_bytes: int) -> None:
        self.path = path
        self.min_free_bytes = min_free_bytes
        self._identity: tuple[int, int] | None = None

    def opened(self) -> None:
        """Remember the file the store has just opened."""
        st = os.stat(self.path)
        self._identity = (st.st_dev, st.st_ino)

    def problem(self) -> str:
        """ "" when the store can persist; else what stops it, for a person to act on."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return (
                f"the store file {self.path} was deleted; restart callgate to open a new "
                "store (what was recorded since start-up is in the deleted file only)"
            )
        except OSError as exc:
            return f"the store file {self.path} cannot be checked: {exc}"
        if self._identity is not None and (st.st_dev, st.st_ino) != self._identity:
            return (
                f"the store file {self.path} was replaced by another file; restart "
                "callgate to open it"
            )
        return self._space_problem()

    def _space_problem(self) -> str:
        try:
            fs = os.statvfs(self.path.parent)
        except OSError as exc:
            return f"the store's filesystem cannot be checked: {exc}"
        free = fs.f_bavail * fs.f_frsize
        if free < self.min_free_bytes:
            return (
                f"the store's filesystem has {free} bytes free, below the "
                f"{self.min_free_bytes} it must keep (callgate serve --db-min-free-bytes); "
                "free some space"
            )
        return ""
