"""A registry whose tool set can be replaced while the sidecar serves (`--tools` reloads).

`LiveRegistry` is the Registry the runner, the judge and the listings hold: every lookup reads
the snapshot serving now, an immutable `Registry`. `install` swaps a new snapshot in (one
reference assignment); `reject` records why a changed directory was refused while the last
good set keeps serving.

One snapshot per request: `pinned(registry)` fixes the snapshot for the code run inside it (a
context variable, so tasks started inside inherit it). The gRPC server pins it around each
request, so a turn sees one tool set from its first lookup to its last, even when a reload
lands in the middle. Work not started by a request (approval expiry) reads the set serving
when it looks.

A replaced snapshot is not closed at once: calls in flight may still be using its executors'
HTTP connections. Replaced snapshots are closed when the registry is (at shutdown).
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.model import now_utc
from gateway.tools.redaction import Masked
from gateway.tools.registry import Registry, Tool

_PINNED: contextvars.ContextVar[Registry | None] = contextvars.ContextVar(
    "callgate_tools_pinned", default=None
)


@dataclass(frozen=True)
class ToolsProblem:
    """One problem of a refused tool set: the file, the line when known, and the message
    (`file: field: what`)."""

    file: str
    line: int | None
    column: int | None
    message: str


@dataclass(frozen=True)
class RejectedTools:
    """Why the newest `--tools` files are not serving: the first problem and every one."""

    file: str
    line: int | None
    message: str
    at: datetime
    column: int | None = None
    problems: tuple[ToolsProblem, ...] = ()

    @classmethod
    def of(cls, text: str, directory: str) -> RejectedTools:
        """From a ConfigError's text (one problem a line, each starting with its file)."""
        problems = tuple(_problem(line, directory) for line in text.splitlines() if line)
        if not problems:
            problems = (ToolsProblem(directory, None, None, text or "rejected"),)
        first = problems[0]
        return cls(first.file, first.line, first.message, now_utc(), first.column, problems)


def _problem(line: str, directory: str) -> ToolsProblem:
    """`path: field: message` → its file and, for a YAML or JSON syntax error, the line and
    column the parser named."""
    head, sep, _rest = line.partition(": ")
    file = head if sep and ("/" in head or "." in head) else directory
    found = _PLACE.search(line)
    if found is None:
        return ToolsProblem(file, None, None, line)
    column = found.group(2)
    return ToolsProblem(file, int(found.group(1)), int(column) if column else None, line)


_PLACE = re.compile(r"\bline (\d+)(?:, column (\d+))?")


class LiveRegistry(Registry):
    """A Registry delegating every lookup to the snapshot serving (or pinned) now."""

    def __init__(self, first: Registry) -> None:
        super().__init__((), audit_key=first.audit_key)
        self._serving = first
        self._loaded_at = now_utc()
        self._rejected: RejectedTools | None = None
        self._retired: list[Registry] = []

    # -- reloads ------------------------------------------------------------------------------

    @property
    def serving(self) -> Registry:
        return self._serving

    @property
    def current(self) -> Registry:
        """The snapshot pinned for this request, else the one serving."""
        return _PINNED.get() or self._serving

    @property
    def loaded_at(self) -> datetime:
        return self._loaded_at

    @property
    def last_rejected(self) -> RejectedTools | None:
        return self._rejected

    def install(self, snapshot: Registry) -> None:
        """Serve snapshot from the next lookup on; clears a recorded rejection."""
        self._retired.append(self._serving)
        self._serving = snapshot
        self._loaded_at = now_utc()
        self._rejected = None

    def reject(self, rejection: RejectedTools) -> None:
        self._rejected = rejection

    def accept_unchanged(self) -> None:
        self._rejected = None

    # -- Registry -----------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        return self.current.revision

    def masked_text(self, tool_name: str, arguments_json: str) -> Masked | None:
        return self.current.masked_text(tool_name, arguments_json)

    def masked(
        self, tool_name: str, args: dict[str, Any] | None, *, own: bool = False
    ) -> Masked | None:
        return self.current.masked(tool_name, args, own=own)

    def get(self, name: str) -> Tool | None:
        return self.current.get(name)

    def tools(self) -> list[Tool]:
        return self.current.tools()

    def __contains__(self, name: object) -> bool:
        return name in self.current

    def __len__(self) -> int:
        return len(self.current)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.current)

    async def aclose(self) -> None:
        for snapshot in (*self._retired, self._serving):
            await snapshot.aclose()
        self._retired.clear()
        await super().aclose()


@contextlib.contextmanager
def pinned(registry: Registry) -> Iterator[None]:
    """Inside, a LiveRegistry answers from the snapshot serving on entry."""
    if not isinstance(registry, LiveRegistry):
        yield
        return
    token = _PINNED.set(registry.serving)
    try:
        yield
    finally:
        _PINNED.reset(token)
