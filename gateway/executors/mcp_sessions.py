"""Sessions with MCP servers (official `mcp` SDK), one per server, shared by its tools.

A session starts on first use, is reused by every call (calls run concurrently on it: one
server that hangs stalls only its own calls), and is started again on the next call once it
has died: a stdio process that exited, an HTTP session the server dropped, a message callgate
could not read (the session is closed at once, so calls waiting on it end instead of waiting
for their timeout). Each session lives in a task of its own on the loop that started it, since
the SDK's transports must be entered and left in one task; `McpSessions.aclose` ends them.

A session lists the server's tools (`tools/list`, every page) as it starts and again whenever
the server says its list changed (`notifications/tools/list_changed`); a tool's entry in the
latest listing is part of its definition (`gateway.pins`), so a server that changes a tool
under callgate is noticed.

Whether a call's request reached the transport is recorded exactly (`Sent`): the SDK hands a
request to the transport's write stream in the caller's own task, and the stream this module
gives the SDK marks the caller's `Sent` once it took the message. A request never handed over
(the session could not start, or had closed before) was not sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from gateway.executors.mcp_servers import HttpServer, ServerSpec, StartFailed
from gateway.executors.results import error_text
from gateway.version import callgate_version

log = logging.getLogger("callgate.mcp")

CLOSE_TIMEOUT_S = 10.0
CLIENT_NAME = "callgate"
MAX_LIST_PAGES = 100  # of one tools/list: a server that pages on and on is not listed

Listing = dict[str, dict[str, Any]]  # tool name → its tools/list entry (JSON, no `_meta`)


class Sent:
    """Set once a request of the caller's task was handed to the transport."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


_SENDING: ContextVar[Sent | None] = ContextVar("callgate_mcp_sending", default=None)


@contextlib.contextmanager
def sending(mark: Sent) -> Any:
    token = _SENDING.set(mark)
    try:
        yield mark
    finally:
        _SENDING.reset(token)


class _MarkingWriter:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        mark = _SENDING.get()
        try:
            await self._inner.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise  # not taken
        except BaseException:
            if mark is not None:  # a cancelled send may still have handed the item over
                mark.sent = True
            raise
        if mark is not None:
            mark.sent = True

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _MarkingWriter:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _WatchedReader:
    """The transport's read stream; `ended` is set when it ends (the server went away)."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    def __aiter__(self) -> _WatchedReader:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReader:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def _transport(spec: ServerSpec, max_event_bytes: int) -> AsyncIterator[Any]:
    if isinstance(spec, HttpServer):
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=dict(spec.headers), timeout=timeout) as client,
            streamable_http_client(
                spec.url, http_client=client, max_sse_event_size=max_event_bytes
            ) as streams,
        ):
            yield streams
        return
    params = StdioServerParameters(
        command=spec.command[0], args=list(spec.command[1:]), env=dict(spec.env), cwd=spec.cwd
    )
    async with stdio_client(params) as streams:
        yield streams


def _first(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line for why a session failed (the first cause inside an exception group)."""
    exc = _first(exc)
    return f"{type(exc).__name__}: {error_text(exc)}"


async def list_tools(session: ClientSession) -> Listing:
    """The server's tools/list, every page, each entry as JSON without its `_meta`."""
    found: Listing = {}
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            entry = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            entry.pop("_meta", None)
            found[tool.name] = entry
        cursor = page.next_cursor
        if not cursor:
            return found
    raise ValueError(f"its tools/list has more than {MAX_LIST_PAGES} pages")


class Connection:
    """One session with one server, run by a task of its own."""

    def __init__(self, spec: ServerSpec, max_event_bytes: int) -> None:
        self.spec = spec
        self.session: ClientSession | None = None
        self.problem = ""  # why it ended, when it ended on its own
        self.ready = asyncio.Event()  # set once started, or once it could not start
        self.stop = asyncio.Event()
        self.dead = False
        self.listing: Listing | None = None  # the latest tools/list (None: none could be had)
        self.listing_problem = ""
        self._relisting: asyncio.Task[None] | None = None
        self._listings = 0  # tools/list requests made, to keep only the latest answer
        self._max_event_bytes = max_event_bytes
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{spec.name}")

    @property
    def ending(self) -> bool:
        """Ended, or ending: no new request should go to it."""
        return self.dead or self.stop.is_set()

    async def _own(self) -> None:
        ended = asyncio.Event()
        watch = asyncio.get_running_loop().create_task(self._stop_when(ended))
        try:
            async with (
                _transport(self.spec, self._max_event_bytes) as (read, write),
                ClientSession(
                    _WatchedReader(read, ended),
                    _MarkingWriter(write),
                    message_handler=self._on_message,
                    client_info=types.Implementation(name=CLIENT_NAME, version=callgate_version()),
                ) as session,
            ):
                with anyio.fail_after(self.spec.start_timeout_s):
                    await session.initialize()
                    await self._list(session)
                self.session = session
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:
            if isinstance(_first(exc), TimeoutError) and self.session is None:
                limit = self.spec.start_timeout_s
                self.problem = self.problem or f"no answer to initialize within {limit:g} s"
            self.problem = self.problem or describe(exc)
        finally:
            watch.cancel()
            if self._relisting is not None:
                self._relisting.cancel()
            if ended.is_set() and not self.problem:
                self.problem = "the server closed the connection"
            self.dead = True
            self.session = None
            self.ready.set()
            if self.problem:
                log.warning("MCP server %s: session ended: %s", self.spec.name, self.problem)

    async def _stop_when(self, ended: asyncio.Event) -> None:
        await ended.wait()
        self.stop.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a message the SDK could not read
            self.problem = self.problem or (
                f"the server sent a message callgate cannot read ({describe(message)}); "
                "its session was closed"
            )
            self.stop.set()
        elif isinstance(message, types.ToolListChangedNotification) and self.session:
            log.info("MCP server %s: its tool list changed; listing it again", self.spec.name)
            self._relisting = asyncio.get_running_loop().create_task(self._relist(self.session))

    async def _list(self, session: ClientSession) -> None:
        """Read the server's tools/list into `listing` (a later request's answer wins)."""
        self._listings += 1
        mine = self._listings
        try:
            found: Listing | None = await list_tools(session)
            problem = ""
        except Exception as exc:  # an error answer, a page the SDK cannot read, a timeout
            found, problem = None, describe(exc)
        if mine == self._listings:
            self.listing, self.listing_problem = found, problem

    async def _relist(self, session: ClientSession) -> None:
        try:
            with anyio.fail_after(self.spec.start_timeout_s):
                await self._list(session)
        except TimeoutError:
            self.listing = None
            self.listing_problem = f"no answer to tools/list within {self.spec.start_timeout_s:g} s"

    async def entry(self, tool: str) -> dict[str, Any] | None:
        """The tool's entry in the server's latest tools/list (None: it lists no such tool),
        after any listing under way; raises StartFailed when the server's list could not be
        read."""
        relisting = self._relisting
        if relisting is not None and not relisting.done():
            await asyncio.wait([relisting])  # never cancels it, nor raises its cancellation
        if self.listing is None:
            raise StartFailed(
                f"MCP server {self.spec.name!r} did not list its tools: "
                f"{self.listing_problem or 'no answer'}"
            )
        return self.listing.get(tool)

    async def close(self) -> None:
        self.stop.set()
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await asyncio.shield(self._task)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class ServerLink:
    """The current session with one server, started (again) when a call needs it."""

    def __init__(self, spec: ServerSpec, max_event_bytes: int) -> None:
        self.spec = spec
        self.name = spec.name
        self._max_event_bytes = max_event_bytes
        self._current: Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False

    async def connection(self) -> Connection:
        """A started session; raises StartFailed (nothing was sent)."""
        if self._closed:
            raise StartFailed("callgate is shutting down")
        conn = self._current
        if conn is None or conn.ending:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                conn = self._current
                if conn is None or conn.ending:
                    conn = self._current = Connection(self.spec, self._max_event_bytes)
        await conn.ready.wait()
        if conn.session is None:
            raise StartFailed(
                f"could not start a session with MCP server {self.name!r}: "
                f"{conn.problem or 'it ended'}"
            )
        return conn

    def drop(self, conn: Connection, problem: str) -> None:
        """End conn (the server answered that it no longer knows it)."""
        conn.problem = conn.problem or problem
        conn.stop.set()

    async def aclose(self) -> None:
        self._closed = True
        conn, self._current = self._current, None
        if conn is not None:
            await conn.close()


class McpSessions:
    """The servers of one servers file and their sessions; owned by the registry."""

    def __init__(
        self,
        servers: Mapping[str, ServerSpec] | None = None,
        *,
        max_event_bytes: int = 4 * 1024 * 1024,
        source: str = "",
    ) -> None:
        self.source = source  # the servers file, for messages
        self._links = {
            name: ServerLink(spec, max_event_bytes) for name, spec in (servers or {}).items()
        }

    def names(self) -> list[str]:
        return sorted(self._links)

    def link(self, name: str) -> ServerLink | None:
        return self._links.get(name)

    async def aclose(self) -> None:
        await asyncio.gather(*(link.aclose() for link in self._links.values()))
