"""The synchronous client: a thin wrapper that runs `AsyncGatewayClient` on a background loop.

Every method hands its coroutine to one event loop that runs on a daemon thread of its own (one
for the process, started on first use) and waits for the answer, so the synchronous and the
asyncio client are one implementation. Streams come back as iterators with `cancel()`.
Code already inside an event loop uses `AsyncGatewayClient` instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from gateway import pb
from gateway.client._aio import DEFAULT_TARGET, AsyncGatewayClient
from gateway.client._retry import DEFAULT_RETRY, RetryPolicy
from gateway.client._streams import StreamEvents
from gateway.tls import ClientTLS

T = TypeVar("T")


class _Background:
    """The process's one event loop for synchronous clients, on a daemon thread."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    @classmethod
    def loop(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="callgate-client", daemon=True
                )
                thread.start()
                cls._loop, cls._thread = loop, thread
            return cls._loop

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, T]) -> T:
        """Run coro on the background loop and wait for it (an interrupt cancels it)."""
        loop = cls.loop()
        if threading.current_thread() is cls._thread:
            coro.close()
            raise RuntimeError(
                "the synchronous client cannot wait on its own event loop; "
                "use AsyncGatewayClient in async code"
            )
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


async def _next(stream: AsyncIterator[T]) -> T:
    return await anext(stream)


async def _close(stream: AsyncIterator[T]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


class Stream(Generic[T]):
    """A server stream as an iterator; `cancel()` (from any thread) ends it: an iteration
    waiting for the next message then stops."""

    def __init__(self, stream: AsyncIterator[T]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._pending: concurrent.futures.Future[T] | None = None
        self._cancelled = False

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        with self._lock:
            if self._cancelled:
                raise StopIteration
            self._pending = asyncio.run_coroutine_threadsafe(
                _next(self._stream), _Background.loop()
            )
            pending = self._pending
        try:
            return pending.result()
        except (StopAsyncIteration, concurrent.futures.CancelledError):
            raise StopIteration from None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            pending, self._pending = self._pending, None
        if pending is not None and not pending.done():
            pending.cancel()  # the stream ends where it waits, cancelling its RPC
            return
        asyncio.run_coroutine_threadsafe(_close(self._stream), _Background.loop())


class GatewayClient:
    """The synchronous client of one sidecar: the same methods, arguments and errors as
    `AsyncGatewayClient` (whose documentation holds), answering directly. Use it in `with`,
    or `close()` it."""

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        token: str = "",
        *,
        tls: ClientTLS | None = None,
        timeout_s: float | None = 60.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        own_connection: bool = False,
        metadata: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.aio = AsyncGatewayClient(
            target,
            token,
            tls=tls,
            timeout_s=timeout_s,
            retry=retry,
            own_connection=own_connection,
            metadata=metadata,
        )
        self.target = target

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        _Background.run(self.aio.close())

    def start_run(
        self,
        run_id: str = "",
        *,
        provider: str = "",
        api_version: str = "",
        budget: pb.Budget | None = None,
        labels: Mapping[str, str] | None = None,
        conversation_json: str = "",
        timeout_s: float | None = None,
    ) -> pb.Run:
        return _Background.run(
            self.aio.start_run(
                run_id,
                provider=provider,
                api_version=api_version,
                budget=budget,
                labels=labels,
                conversation_json=conversation_json,
                timeout_s=timeout_s,
            )
        )

    def get_run(
        self,
        run_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.Run:
        return _Background.run(
            self.aio.get_run(
                run_id, page_size=page_size, page_token=page_token, timeout_s=timeout_s
            )
        )

    def whole_run(
        self, run_id: str, *, page_size: int = 0, timeout_s: float | None = None
    ) -> pb.Run:
        return _Background.run(self.aio.whole_run(run_id, page_size=page_size, timeout_s=timeout_s))

    def submit_turn(
        self,
        run_id: str,
        turn_id: str,
        *,
        tool_request: pb.ToolRequest | None = None,
        final: pb.FinalAnswer | None = None,
        refusal: pb.Refusal | None = None,
        incomplete: pb.Incomplete | None = None,
        paused: pb.Paused | None = None,
        provider_error: pb.ProviderError | None = None,
        provider: str = "",
        api_version: str = "",
        model: str = "",
        usage: pb.Usage | None = None,
        raw_response_json: str = "",
        timeout_s: float | None = None,
    ) -> pb.TurnOutcome:
        return _Background.run(
            self.aio.submit_turn(
                run_id,
                turn_id,
                tool_request=tool_request,
                final=final,
                refusal=refusal,
                incomplete=incomplete,
                paused=paused,
                provider_error=provider_error,
                provider=provider,
                api_version=api_version,
                model=model,
                usage=usage,
                raw_response_json=raw_response_json,
                timeout_s=timeout_s,
            )
        )

    def submit_calls(
        self,
        run_id: str,
        turn_id: str,
        *calls: pb.ToolCall,
        provider: str = "",
        api_version: str = "",
        model: str = "",
        usage: pb.Usage | None = None,
        raw_response_json: str = "",
        timeout_s: float | None = None,
    ) -> pb.TurnOutcome:
        return _Background.run(
            self.aio.submit_calls(
                run_id,
                turn_id,
                *calls,
                provider=provider,
                api_version=api_version,
                model=model,
                usage=usage,
                raw_response_json=raw_response_json,
                timeout_s=timeout_s,
            )
        )

    def submit_provider_response(
        self,
        run_id: str,
        response_json: str,
        *,
        provider: str = "",
        api_version: str = "",
        turn_id: str = "",
        model: str = "",
        timeout_s: float | None = None,
    ) -> pb.TurnOutcome:
        return _Background.run(
            self.aio.submit_provider_response(
                run_id,
                response_json,
                provider=provider,
                api_version=api_version,
                turn_id=turn_id,
                model=model,
                timeout_s=timeout_s,
            )
        )

    def submit_provider_stream(
        self,
        run_id: str,
        events: StreamEvents,
        *,
        provider: str = "",
        api_version: str = "",
        turn_id: str = "",
        timeout_s: float | None = None,
    ) -> pb.TurnOutcome:
        return _Background.run(
            self.aio.submit_provider_stream(
                run_id,
                events,
                provider=provider,
                api_version=api_version,
                turn_id=turn_id,
                timeout_s=timeout_s,
            )
        )

    def resume_run(self, run_id: str, *, timeout_s: float | None = None) -> pb.TurnOutcome:
        return _Background.run(self.aio.resume_run(run_id, timeout_s=timeout_s))

    def cancel_run(self, run_id: str, *, timeout_s: float | None = None) -> pb.Run:
        return _Background.run(self.aio.cancel_run(run_id, timeout_s=timeout_s))

    def watch_run(self, run_id: str, *, timeout_s: float | None = None) -> Stream[pb.TurnOutcome]:
        return Stream(self.aio.watch_run(run_id, timeout_s=timeout_s))

    def list_tools(
        self, provider: str, *, api_version: str = "", timeout_s: float | None = None
    ) -> pb.ListToolsResponse:
        return _Background.run(
            self.aio.list_tools(provider, api_version=api_version, timeout_s=timeout_s)
        )

    def list_runs(
        self,
        *,
        state: Sequence[pb.RunState] = (),
        subject: str = "",
        every_subject: bool = False,
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.ListRunsResponse:
        return _Background.run(
            self.aio.list_runs(
                state=state,
                subject=subject,
                every_subject=every_subject,
                page_size=page_size,
                page_token=page_token,
                timeout_s=timeout_s,
            )
        )

    def authorize(
        self, *calls: pb.ToolCall, run_id: str = "", timeout_s: float | None = None
    ) -> pb.AuthorizeResponse:
        return _Background.run(self.aio.authorize(*calls, run_id=run_id, timeout_s=timeout_s))

    def list_approvals(
        self,
        *,
        run_id: str = "",
        status: Iterable[pb.ApprovalStatus] = (),
        tool: str = "",
        page_size: int = 0,
        page_token: str = "",
        approval_id: str = "",
        timeout_s: float | None = None,
    ) -> pb.ListApprovalsResponse:
        return _Background.run(
            self.aio.list_approvals(
                run_id=run_id,
                status=status,
                tool=tool,
                page_size=page_size,
                page_token=page_token,
                approval_id=approval_id,
                timeout_s=timeout_s,
            )
        )

    def decide_approval(
        self, approval_id: str, *, approve: bool, reason: str, timeout_s: float | None = None
    ) -> pb.DecideApprovalResponse:
        return _Background.run(
            self.aio.decide_approval(
                approval_id, approve=approve, reason=reason, timeout_s=timeout_s
            )
        )

    def resolve_call(
        self,
        run_id: str,
        call_id: str,
        outcome: pb.CallStatus,
        *,
        reason: str,
        output_json: str = "",
        timeout_s: float | None = None,
    ) -> pb.CallResult:
        return _Background.run(
            self.aio.resolve_call(
                run_id,
                call_id,
                outcome,
                reason=reason,
                output_json=output_json,
                timeout_s=timeout_s,
            )
        )

    def list_quotas(
        self,
        *,
        prefix: str = "",
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.ListQuotasResponse:
        return _Background.run(
            self.aio.list_quotas(
                prefix=prefix, page_size=page_size, page_token=page_token, timeout_s=timeout_s
            )
        )

    def reset_quota(
        self, key: str, *, reason: str, timeout_s: float | None = None
    ) -> pb.ResetQuotaResponse:
        return _Background.run(self.aio.reset_quota(key, reason=reason, timeout_s=timeout_s))

    def list_tool_pins(
        self, names: Iterable[str] = (), *, timeout_s: float | None = None
    ) -> pb.ListToolPinsResponse:
        return _Background.run(self.aio.list_tool_pins(names, timeout_s=timeout_s))

    def approve_tool_pin(
        self, name: str, *, reason: str, fingerprint: str = "", timeout_s: float | None = None
    ) -> pb.ApproveToolPinResponse:
        return _Background.run(
            self.aio.approve_tool_pin(
                name, reason=reason, fingerprint=fingerprint, timeout_s=timeout_s
            )
        )

    def get_status(self, *, timeout_s: float | None = None) -> pb.Status:
        return _Background.run(self.aio.get_status(timeout_s=timeout_s))

    def query_audit(
        self,
        *,
        run_id: str = "",
        call_id: str = "",
        tool: str = "",
        subject: str = "",
        verdict: Iterable[pb.Verdict] = (),
        status: Iterable[pb.CallStatus] = (),
        since: str = "",
        until: str = "",
        limit: int = 0,
        after_seq: int = 0,
        follow: bool = False,
        tenant: str | None = None,
        tail: int = 0,
        timeout_s: float | None = None,
    ) -> Stream[pb.AuditRecord]:
        return Stream(
            self.aio.query_audit(
                run_id=run_id,
                call_id=call_id,
                tool=tool,
                subject=subject,
                verdict=verdict,
                status=status,
                since=since,
                until=until,
                limit=limit,
                after_seq=after_seq,
                follow=follow,
                tenant=tenant,
                tail=tail,
                timeout_s=timeout_s,
            )
        )
