"""The asyncio client: one method per RPC of `callgate.v1.ToolGateway`, over the generated stubs.

Every method takes typed fields (the request message's own), sends the caller's bearer token,
holds one deadline per call (`timeout_s`, the client's default unless given), repeats a request
only where that is safe (`gateway.client._retry.RULES`), and raises callgate's exception tree
(`gateway.errors`) for every failure. Streams (`watch_run`, `query_audit`) are async iterators
that reconnect where the RPC allows it; one left early is closed with `aclose()` (or
`contextlib.aclosing`), which cancels its RPC at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
)
from collections.abc import Sequence as SequenceABC
from typing import Any, TypeVar

import grpc
import grpc.aio

from gateway import pb
from gateway.client._errors import from_rpc_error, request_error
from gateway.client._requests import Deadline, continue_after, cut_short
from gateway.client._retry import DEFAULT_RETRY, NEVER, RetryPolicy, retryable
from gateway.client._streams import StreamEvents, stream_messages
from gateway.errors import RequestCode, RequestError
from gateway.tls import ClientTLS

T = TypeVar("T")

# where a sidecar listens unless told otherwise (`serve --listen`, every `--target`)
DEFAULT_TARGET = "127.0.0.1:50051"
# a sidecar that went away is tried again soon, not after gRPC's default of a second or more
_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 1000)]


class AsyncGatewayClient:
    """A client of one sidecar. `target` is HOST:PORT or unix:PATH; `token` is sent as
    `authorization: Bearer <token>`; `tls` connects over TLS (with a client certificate when it
    names one), plaintext without it (the loopback default); `timeout_s` is the deadline of
    every unary call unless the call gives its own (None: no deadline; streams have none
    unless given); `retry` says how often a safe request is repeated; `own_connection` never
    shares a connection with other clients of the process (each then reaches any worker of
    `serve --workers`); `metadata` is sent with every call besides the token (a `traceparent`,
    say). Use it in `async with`, or `await close()`."""

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
        self.target = target
        self.timeout_s = timeout_s
        self.retry = retry
        self._metadata = (*((("authorization", f"Bearer {token}"),) if token else ()), *metadata)
        self._credentials = tls.channel_credentials() if tls is not None else None
        self._options = [
            *_RECONNECT,
            *(tls.channel_options() if tls else []),
            *([("grpc.use_local_subchannel_pool", 1)] if own_connection else []),
        ]
        self._channel: grpc.aio.Channel | None = None
        self._stub_: pb.ToolGatewayStub | None = None

    async def __aenter__(self) -> AsyncGatewayClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._channel is not None:
            channel, self._channel, self._stub_ = self._channel, None, None
            await channel.close()

    @property
    def _stub(self) -> pb.ToolGatewayStub:
        """The stub, its channel made on first use (inside the event loop it belongs to)."""
        if self._stub_ is None:
            self._stub_ = pb.ToolGatewayStub(self._channel_made())
        return self._stub_

    def _channel_made(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = (
                grpc.aio.secure_channel(self.target, self._credentials, options=self._options)
                if self._credentials is not None
                else grpc.aio.insecure_channel(self.target, options=self._options)
            )
        return self._channel

    # ------------------------------------------------------------------ runs and turns

    async def start_run(
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
        """Create a run owned by the caller (repeated on failure only with a `run_id`)."""
        request = pb.StartRunRequest(
            run_id=run_id,
            provider=provider,
            api_version=api_version,
            budget=budget,
            labels=dict(labels or {}),
            conversation_json=conversation_json,
        )
        run: pb.Run = await self._unary(
            self._stub.StartRun, request, timeout_s, repeat=bool(run_id)
        )
        return run

    async def get_run(
        self,
        run_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.Run:
        """The run and one page of its turns and calls: the latest (page_size 0: the
        sidecar's default), or the older ones `page_token` (a `next_page_token`) leads to."""
        request = pb.GetRunRequest(run_id=run_id, page_size=page_size, page_token=page_token)
        run: pb.Run = await self._unary(self._stub.GetRun, request, timeout_s)
        return run

    async def whole_run(
        self, run_id: str, *, page_size: int = 0, timeout_s: float | None = None
    ) -> pb.Run:
        """The run with every turn and call, oldest first, gathered page by page (the summary
        and `conversation_json` are the latest page's). Each answer stays bounded; the result
        is not."""
        pages = [await self.get_run(run_id, page_size=page_size, timeout_s=timeout_s)]
        while pages[-1].next_page_token:
            pages.append(
                await self.get_run(
                    run_id,
                    page_size=page_size,
                    timeout_s=timeout_s,
                    page_token=pages[-1].next_page_token,
                )
            )
        whole = pb.Run()
        whole.CopyFrom(pages[0])
        del whole.turns[:]
        del whole.calls[:]
        for page in reversed(pages):
            whole.turns.extend(page.turns)
            whole.calls.extend(page.calls)
        whole.next_page_token = ""
        return whole

    async def submit_turn(
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
        """One model turn, normalized: exactly one event (tool_request, final, refusal,
        incomplete, paused or provider_error). Answers once every call is settled or paused."""
        events = {
            "tool_request": tool_request,
            "final": final,
            "refusal": refusal,
            "incomplete": incomplete,
            "paused": paused,
            "provider_error": provider_error,
        }
        given = {name: value for name, value in events.items() if value is not None}
        if len(given) > 1:
            raise request_error(
                RequestCode.INVALID_ARGUMENT,
                f"a turn has one event, not {len(given)}: {', '.join(given)}",
            )
        request = pb.SubmitTurnRequest(
            run_id=run_id,
            turn_id=turn_id,
            provider=provider,
            api_version=api_version,
            model=model,
            usage=usage,
            raw_response_json=raw_response_json,
            **given,
        )
        outcome: pb.TurnOutcome = await self._unary(self._stub.SubmitTurn, request, timeout_s)
        return outcome

    async def submit_calls(
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
        """A turn whose event is a tool request with these calls."""
        return await self.submit_turn(
            run_id,
            turn_id,
            tool_request=pb.ToolRequest(calls=calls),
            provider=provider,
            api_version=api_version,
            model=model,
            usage=usage,
            raw_response_json=raw_response_json,
            timeout_s=timeout_s,
        )

    async def submit_provider_response(
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
        """One model turn as the provider's raw response JSON (callgate's adapter reads it).
        `turn_id` is needed where the response carries no ID (Bedrock)."""
        request = pb.SubmitProviderResponseRequest(
            run_id=run_id,
            provider=provider,
            api_version=api_version,
            response_json=response_json,
            turn_id=turn_id,
            model=model,
        )
        outcome: pb.TurnOutcome = await self._unary(
            self._stub.SubmitProviderResponse, request, timeout_s
        )
        return outcome

    async def submit_provider_stream(
        self,
        run_id: str,
        events: StreamEvents,
        *,
        provider: str = "",
        api_version: str = "",
        turn_id: str = "",
        timeout_s: float | None = None,
    ) -> pb.TurnOutcome:
        """One model turn as the provider's raw stream events (JSON texts), forwarded as they
        come; callgate assembles them. Repeated on failure only when `events` is a sequence
        (the same turn again), then also when the stream was cut short by the sidecar's early
        answer (see `cut_short`)."""
        head = pb.ProviderStreamEvent(
            run_id=run_id, provider=provider, api_version=api_version, turn_id=turn_id
        )

        def messages() -> AsyncIterator[pb.ProviderStreamEvent]:
            return stream_messages(head, events)

        again = isinstance(events, SequenceABC)
        outcome: pb.TurnOutcome = await self._unary(
            lambda _req, **kw: self._stub.SubmitProviderStream(messages(), **kw),
            None,
            timeout_s,
            repeat=again,
            cut_short_repeats=again,
        )
        return outcome

    async def resume_run(self, run_id: str, *, timeout_s: float | None = None) -> pb.TurnOutcome:
        """The run's latest turn outcome after recovering what can be recovered (reconciling
        unknown outcomes, finishing settled approvals); safe at any time."""
        outcome: pb.TurnOutcome = await self._unary(
            self._stub.ResumeRun, pb.ResumeRunRequest(run_id=run_id), timeout_s
        )
        return outcome

    async def cancel_run(self, run_id: str, *, timeout_s: float | None = None) -> pb.Run:
        run: pb.Run = await self._unary(
            self._stub.CancelRun, pb.CancelRunRequest(run_id=run_id), timeout_s
        )
        return run

    def watch_run(
        self, run_id: str, *, timeout_s: float | None = None
    ) -> AsyncGenerator[pb.TurnOutcome, None]:
        """The run's current settled outcome, then every later one, until the run is terminal
        (the stream then ends). Reconnects when the sidecar goes away; an outcome equal to the
        last one given is not given twice. No deadline unless `timeout_s`."""
        request = pb.WatchRunRequest(run_id=run_id)
        return self._stream(lambda: request, "WatchRun", timeout_s, lambda _m: False)

    # ------------------------------------------------------------------ tools and decisions

    async def list_tools(
        self, provider: str, *, api_version: str = "", timeout_s: float | None = None
    ) -> pb.ListToolsResponse:
        """The caller's permitted tools, in `tools_json` as that provider's declarations."""
        request = pb.ListToolsRequest(provider=provider, api_version=api_version)
        tools: pb.ListToolsResponse = await self._unary(self._stub.ListTools, request, timeout_s)
        return tools

    async def list_runs(
        self,
        *,
        state: SequenceABC[pb.RunState] = (),
        subject: str = "",
        every_subject: bool = False,
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.ListRunsResponse:
        """One page of runs, newest first: the caller's own unless the policy's
        `may_list_runs` allows another subject's (or every subject's of the tenant)."""
        request = pb.ListRunsRequest(
            state=state,
            subject=subject,
            every_subject=every_subject,
            page_size=page_size,
            page_token=page_token,
        )
        runs: pb.ListRunsResponse = await self._unary(self._stub.ListRuns, request, timeout_s)
        return runs

    async def authorize(
        self, *calls: pb.ToolCall, run_id: str = "", timeout_s: float | None = None
    ) -> pb.AuthorizeResponse:
        """Decide calls without executing them (audited); one decision per call ID."""
        request = pb.AuthorizeRequest(run_id=run_id, calls=calls)
        answer: pb.AuthorizeResponse = await self._unary(self._stub.Authorize, request, timeout_s)
        return answer

    async def list_approvals(
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
        """One page of the approvals the caller may see (every filter given must match)."""
        request = pb.ListApprovalsRequest(
            run_id=run_id,
            status=list(status),
            tool=tool,
            page_size=page_size,
            page_token=page_token,
            approval_id=approval_id,
        )
        page: pb.ListApprovalsResponse = await self._unary(
            self._stub.ListApprovals, request, timeout_s
        )
        return page

    async def decide_approval(
        self, approval_id: str, *, approve: bool, reason: str, timeout_s: float | None = None
    ) -> pb.DecideApprovalResponse:
        """Approve or deny a pending approval; answers it and the decided call's result.
        Never repeated (a repeat would answer already_decided)."""
        request = pb.DecideApprovalRequest(approval_id=approval_id, approve=approve, reason=reason)
        answer: pb.DecideApprovalResponse = await self._unary(
            self._stub.DecideApproval, request, timeout_s, repeat=False
        )
        return answer

    async def resolve_call(
        self,
        run_id: str,
        call_id: str,
        outcome: pb.CallStatus,
        *,
        reason: str,
        output_json: str = "",
        timeout_s: float | None = None,
    ) -> pb.CallResult:
        """Settle an UNKNOWN call as an operator (outcome: pb.CALL_STATUS_SUCCEEDED or
        pb.CALL_STATUS_FAILED). Never repeated (a repeat would answer not_unknown)."""
        request = pb.ResolveCallRequest(
            run_id=run_id, call_id=call_id, outcome=outcome, output_json=output_json, reason=reason
        )
        result: pb.CallResult = await self._unary(
            self._stub.ResolveCall, request, timeout_s, repeat=False
        )
        return result

    # ------------------------------------------------------------------ status and audit

    async def list_quotas(
        self,
        *,
        prefix: str = "",
        page_size: int = 0,
        page_token: str = "",
        timeout_s: float | None = None,
    ) -> pb.ListQuotasResponse:
        """One page of the quota keys starting with `prefix`, with their usage."""
        request = pb.ListQuotasRequest(prefix=prefix, page_size=page_size, page_token=page_token)
        page: pb.ListQuotasResponse = await self._unary(self._stub.ListQuotas, request, timeout_s)
        return page

    async def reset_quota(
        self, key: str, *, reason: str, timeout_s: float | None = None
    ) -> pb.ResetQuotaResponse:
        """Give back every reservation of one quota key (audited with the reason)."""
        done: pb.ResetQuotaResponse = await self._unary(
            self._stub.ResetQuota, pb.ResetQuotaRequest(key=key, reason=reason), timeout_s
        )
        return done

    async def list_tool_pins(
        self, names: Iterable[str] = (), *, timeout_s: float | None = None
    ) -> pb.ListToolPinsResponse:
        """Tools' pins (these tools', or every pinned tool's), each with the changed
        definitions served since."""
        found: pb.ListToolPinsResponse = await self._unary(
            self._stub.ListToolPins, pb.ListToolPinsRequest(names=list(names)), timeout_s
        )
        return found

    async def approve_tool_pin(
        self, name: str, *, reason: str, fingerprint: str = "", timeout_s: float | None = None
    ) -> pb.ApproveToolPinResponse:
        """Pin a tool to its definition `fingerprint` (the newest served: ""), audited with
        the reason."""
        request = pb.ApproveToolPinRequest(name=name, fingerprint=fingerprint, reason=reason)
        done: pb.ApproveToolPinResponse = await self._unary(
            self._stub.ApproveToolPin, request, timeout_s
        )
        return done

    async def get_status(self, *, timeout_s: float | None = None) -> pb.Status:
        status: pb.Status = await self._unary(
            self._stub.GetStatus, pb.GetStatusRequest(), timeout_s
        )
        return status

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
    ) -> AsyncGenerator[pb.AuditRecord, None]:
        """The audit records the caller may read, in seq order; with `follow`, new ones as they
        are committed (until the iteration stops). A broken stream continues after the last
        record received. No deadline unless `timeout_s`."""
        request = pb.QueryAuditRequest(
            run_id=run_id,
            call_id=call_id,
            tool=tool,
            subject=subject,
            verdict=list(verdict),
            status=list(status),
            since=since,
            until=until,
            limit=limit,
            after_seq=after_seq,
            follow=follow,
            tenant=tenant,
            tail=tail,
        )
        return self._stream(
            lambda: request, "QueryAudit", timeout_s, lambda record: continue_after(request, record)
        )

    # ------------------------------------------------------------------ calling

    async def _unary(
        self,
        method: Callable[..., Awaitable[Any]],
        request: Any,
        timeout_s: float | None,
        *,
        repeat: bool = True,
        cut_short_repeats: bool = False,
    ) -> Any:
        deadline = Deadline(self.timeout_s if timeout_s is None else timeout_s)
        waits = (self.retry if repeat else NEVER).waits()
        if not repeat:
            await self._connected(deadline)
        while True:
            try:
                return await method(request, metadata=self._metadata, timeout=deadline.remaining())
            except grpc.RpcError as err:
                error = self._error(err)
                again = retryable(error) or (cut_short_repeats and cut_short(err))
                wait = next(waits, None) if again else None
                if wait is None or not deadline.allows(wait):
                    raise error from err
            await asyncio.sleep(wait)

    def _error(self, err: grpc.RpcError) -> RequestError:
        return from_rpc_error(err, self.target, tls=self._credentials is not None)

    async def _connected(self, deadline: Deadline) -> None:
        """Wait (up to the policy's connect_s and the deadline) until the channel is
        connected, so that a request sent once is not refused only because a sidecar that
        just came back has not been reconnected to yet. Nothing is sent meanwhile."""
        channel = self._channel_made()
        remaining = deadline.remaining()
        limit = self.retry.connect_s if remaining is None else min(remaining, self.retry.connect_s)
        state = channel.get_state(try_to_connect=True)
        try:
            async with asyncio.timeout(limit):
                while state != grpc.ChannelConnectivity.READY:
                    await channel.wait_for_state_change(state)
                    state = channel.get_state(try_to_connect=True)
        except TimeoutError:
            pass  # the call itself fails as unavailable, with gRPC's reason

    async def _stream(
        self,
        request: Callable[[], Any],
        rpc: str,
        timeout_s: float | None,
        seen: Callable[[Any], bool],
    ) -> AsyncGenerator[Any, None]:
        """A server stream that reconnects after a retryable failure (`request()` is asked
        again each time: `seen` may have moved it on past what was received; it answers True
        when nothing more is wanted)."""
        deadline = Deadline(timeout_s)
        waits = self.retry.waits()
        last = None
        while True:
            call = getattr(self._stub, rpc)(
                request(), metadata=self._metadata, timeout=deadline.remaining()
            )
            try:
                async for message in call:
                    waits = self.retry.waits()  # progress: a later failure starts afresh
                    enough = seen(message)
                    if message != last:
                        last = message
                        yield message
                    if enough:
                        return
                return
            except grpc.RpcError as err:
                error: RequestError = self._error(err)
                wait = next(waits, None) if retryable(error) else None
                if wait is None or not deadline.allows(wait):
                    raise error from err
            finally:
                call.cancel()
            await asyncio.sleep(wait)
