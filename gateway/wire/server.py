"""The grpc.aio servicer: thin. Authenticate, decode, call the runner, encode.

Request errors become gRPC statuses here and only here (`GRPC_STATUS`), with the stable code in
`google.rpc.ErrorInfo.reason`. Provider-shaped requests go through `ProviderTurns`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from gateway import pb
from gateway.approvals.desk import ApprovalDesk
from gateway.audit.reader import AuditReader
from gateway.errors import RequestCode, RequestError
from gateway.identity import Authenticator, Credentials
from gateway.model import Identity, rfc3339
from gateway.observe.hooks import NO_SPAN, OFF, TRACE_HEADERS, Observe, Span
from gateway.policy.base import RejectedReload
from gateway.policy.shadow import ShadowStats
from gateway.run.authorize import Authorizer
from gateway.run.listing import RunLister
from gateway.run.pin_desk import PinDesk
from gateway.run.quota_desk import QuotaDesk
from gateway.run.runner import Runner
from gateway.tools import Registry
from gateway.tools.live import LiveRegistry, pinned
from gateway.wire import convert
from gateway.wire.operators import OperatorRpcs
from gateway.wire.provider_turns import ProviderTurnRequest, ProviderTurns

log = logging.getLogger("callgate.server")
T = TypeVar("T")

ERROR_DOMAIN = "callgate"
SERVICE = pb.DESCRIPTOR.services_by_name["ToolGateway"].full_name

_S = grpc.StatusCode
# The gRPC status of every request error code: the one place codes meet statuses.
GRPC_STATUS: dict[RequestCode, grpc.StatusCode] = {
    RequestCode.UNAUTHENTICATED: _S.UNAUTHENTICATED,
    RequestCode.PERMISSION_DENIED: _S.PERMISSION_DENIED,
    RequestCode.RUN_NOT_FOUND: _S.NOT_FOUND,
    RequestCode.APPROVAL_NOT_FOUND: _S.NOT_FOUND,
    RequestCode.CALL_NOT_FOUND: _S.NOT_FOUND,
    RequestCode.QUOTA_NOT_FOUND: _S.NOT_FOUND,
    RequestCode.TOOL_NOT_FOUND: _S.NOT_FOUND,
    RequestCode.RUN_PAUSED: _S.FAILED_PRECONDITION,
    RequestCode.RUN_FINISHED: _S.FAILED_PRECONDITION,
    RequestCode.ALREADY_DECIDED: _S.FAILED_PRECONDITION,
    RequestCode.APPROVAL_EXPIRED: _S.FAILED_PRECONDITION,
    RequestCode.NOT_UNKNOWN: _S.FAILED_PRECONDITION,
    RequestCode.TURN_CONFLICT: _S.ALREADY_EXISTS,
    RequestCode.RUN_CONFLICT: _S.ALREADY_EXISTS,
    RequestCode.UNKNOWN_PROVIDER: _S.INVALID_ARGUMENT,
    RequestCode.MALFORMED_RESPONSE: _S.INVALID_ARGUMENT,
    RequestCode.DUPLICATE_CALL_ID: _S.INVALID_ARGUMENT,
    RequestCode.INVALID_ARGUMENT: _S.INVALID_ARGUMENT,
    RequestCode.INVALID_PAGE_TOKEN: _S.INVALID_ARGUMENT,
    RequestCode.LIMIT_EXCEEDED: _S.INVALID_ARGUMENT,
    RequestCode.UNIMPLEMENTED: _S.UNIMPLEMENTED,
    RequestCode.STORE_UNAVAILABLE: _S.UNAVAILABLE,
    RequestCode.SHUTTING_DOWN: _S.UNAVAILABLE,
    RequestCode.RESULTS_NOT_RECORDED: _S.UNAVAILABLE,
    RequestCode.INTERNAL: _S.INTERNAL,
    # the client's own codes (gateway.client): a sidecar never answers with them
    RequestCode.UNAVAILABLE: _S.UNAVAILABLE,
    RequestCode.DEADLINE_EXCEEDED: _S.DEADLINE_EXCEEDED,
}


@dataclass(frozen=True)
class Undecodable:
    """A request message that did not decode (a string field holding invalid UTF-8, or bytes
    that are not that message); the servicer answers it INVALID_ARGUMENT."""

    type_name: str
    problem: str

    def error(self) -> RequestError:
        return RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"the request is not a valid {self.type_name}: a string field holds "
            f"invalid UTF-8, or the bytes are not that message ({self.problem})",
        )


def _decoder(message: Any) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return message.FromString(data)
        except Exception as exc:  # protobuf's DecodeError (and nothing else, on bytes)
            return Undecodable(message.DESCRIPTOR.full_name, str(exc))

    return decode


_HANDLER_FACTORY = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def add_to_server(servicer: ToolGatewayService, server: grpc.aio.Server) -> None:
    """Register the servicer as the generated `add_ToolGatewayServicer_to_server` does, but
    with request decoders that never fail (an undecodable message reaches the servicer as
    `Undecodable`: gRPC would answer UNKNOWN with no code), and as a generic handler only
    (`GenericOnly`)."""
    service = pb.DESCRIPTOR.services_by_name["ToolGateway"]
    handlers = {}
    for method in service.methods:
        factory: Any = _HANDLER_FACTORY[(method.client_streaming, method.server_streaming)]
        handlers[method.name] = factory(
            getattr(servicer, method.name),
            request_deserializer=_decoder(getattr(pb, method.input_type.name)),
            response_serializer=getattr(pb, method.output_type.name).SerializeToString,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )


class GenericOnly:
    """A grpc.aio server as generated `add_*_to_server` functions see it: their handlers are
    added as generic handlers, never as registered methods. For every RPC, grpc.aio's server
    loop waits (`asyncio.wait`) on one pending request per registered method plus one for the
    generic handlers: with callgate's methods and health's and reflection's, 25 futures each
    given a callback and had it taken back, a tenth of the instructions of an Authorize (3% of
    its CPU time). A generic handler is found by a dict lookup on the method's name."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, _service: str, _handlers: dict[str, Any]) -> None:
        """Not registered (the class says why)."""


@dataclass(frozen=True)
class StatusInfo:
    """What GetStatus reports besides the live policy revision."""

    store: str
    version: str
    # Why the newest policy files are not serving, if they were rejected.
    rejected_reload: Callable[[], RejectedReload | None] = lambda: None
    # Shadow mode's comparison counts (None in other modes).
    shadow: Callable[[], ShadowStats | None] = lambda: None


def _tools_status(status: pb.Status, registry: Registry) -> None:
    """The tool set serving, and why the newest manifests are not, if they were rejected."""
    status.tools_revision = registry.revision
    if isinstance(registry, LiveRegistry):
        status.tools_loaded_at = rfc3339(registry.loaded_at)
        rejected = registry.last_rejected
        if rejected is not None:
            status.last_rejected_tools_reload.CopyFrom(convert.rejected_reload_to(rejected))


def credentials_of(
    context: grpc.aio.ServicerContext[Any, Any], *, certificate: bool
) -> Credentials:
    """What the caller presented: its authorization metadata and, when `certificate` (the
    authenticator identifies callers by client certificate), the certificate the TLS listener
    verified (gRPC's auth context has it only when client certificates are on; reading that
    context costs about as much as the metadata, so it is not read when nothing uses it)."""
    authorization = ""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            authorization = value.decode() if isinstance(value, bytes) else value
    if not certificate:
        return Credentials(authorization=authorization)
    certs = (context.auth_context() or {}).get("x509_pem_cert") or [b""]
    return Credentials(authorization=authorization, peer_certificate=certs[0])


INTERNAL = RequestError(
    RequestCode.INTERNAL,
    "callgate failed on this request; the error is in "
    "its log, and ResumeRun shows what was recorded",
)


def trace_carrier(context: grpc.aio.ServicerContext[Any, Any]) -> dict[str, str]:
    """The caller's W3C trace context, from its metadata."""
    return {
        key: value
        for key, value in context.invocation_metadata() or ()
        if key in TRACE_HEADERS and isinstance(value, str)
    }


class RpcOutcome:
    """The gRPC status an observed RPC ended with, and its request code."""

    def __init__(self) -> None:
        self.status = grpc.StatusCode.OK
        self.code = ""

    def failed(self, err: RequestError) -> None:
        self.status, self.code = GRPC_STATUS[err.code], err.code.value


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: RequestError) -> NoReturn:
    grpc_code = GRPC_STATUS[err.code]
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=err.code.value, domain=ERROR_DOMAIN))
    status = rpc_status.to_status(
        status_pb2.Status(code=grpc_code.value[0], message=err.message, details=[detail])
    )
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("unreachable")  # context.abort raises


class ToolGatewayService(OperatorRpcs, pb.ToolGatewayServicer):
    """Every RPC: authenticate, decode the request, call the runner, encode the answer."""

    def __init__(
        self,
        runner: Runner,
        desk: ApprovalDesk,
        auth: Authenticator,
        info: StatusInfo,
        observe: Observe = OFF,
    ) -> None:
        self.runner = runner
        self.observe = observe
        self.authorizer = Authorizer(runner)
        self.lister = RunLister(runner.store, runner.policy)
        self.turns = ProviderTurns(runner)
        self.desk = desk
        self.audit = AuditReader(runner.store, runner.policy)
        self.quotas = QuotaDesk(runner.store, runner.policy, runner.clock)
        self.pins = PinDesk(runner.store, runner.policy, runner.clock, runner.pins)
        self.auth = auth
        self.info = info

    def _credentials(self, context: grpc.aio.ServicerContext[Any, Any]) -> Credentials:
        return credentials_of(context, certificate=self.auth.wants_client_certificates)

    async def _call(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], Awaitable[T]],
        request: Any = None,
    ) -> T:
        if not self.observe.enabled:
            return await self._answer(context, fn, request)
        if not self.observe.tracer.enabled:
            return await self._counted(method, context, fn, request)
        return await self._observed(method, context, fn, request)

    async def _counted(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], Awaitable[T]],
        request: Any,
        span: Span | None = None,
    ) -> T:
        """`_answer`, timed and counted by the status it ends with, which the RPC's span
        (when tracing) is told too."""
        outcome = RpcOutcome()
        start = perf_counter()
        try:
            return await self._answer(context, fn, request, outcome)
        except asyncio.CancelledError:
            outcome.status = grpc.StatusCode.CANCELLED
            raise
        finally:
            if span is not None:
                self._ended(span, outcome)
            # `_name_`: the member's name without the `name` property's descriptor call
            self.observe.metrics.rpc(method, outcome.status._name_, perf_counter() - start)

    async def _answer(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], Awaitable[T]],
        request: Any = None,
        outcome: RpcOutcome | None = None,
    ) -> T:
        try:
            identity = await self.auth.authenticate(self._credentials(context))
            if isinstance(request, Undecodable):
                raise request.error()
            with pinned(self.runner.registry):  # one tool set for the whole request
                return await fn(identity)
        except RequestError as err:
            failure = err
        except Exception:
            log.exception("internal error")
            failure = INTERNAL
        if outcome is not None:
            outcome.failed(failure)
        await abort(context, failure)

    async def _observed(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], Awaitable[T]],
        request: Any,
    ) -> T:
        """`_counted` in the RPC's span (continuing the caller's trace)."""
        with self.observe.tracer.server_span(
            f"{SERVICE}/{method}", trace_carrier(context), {"rpc.method": method}
        ) as span:
            return await self._counted(method, context, fn, request, span)

    async def _call_stream(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], AsyncIterator[T]],
        request: Any = None,
    ) -> AsyncIterator[T]:
        """`_call` for a server stream: every message of fn, or the error it ends with (in
        the RPC's span when tracing, which lasts until the stream ends; counted then)."""
        tracer = self.observe.tracer
        if not tracer.enabled:
            async for message in self._stream(method, context, fn, request, NO_SPAN):
                yield message
            return
        with tracer.server_span(
            f"{SERVICE}/{method}", trace_carrier(context), {"rpc.method": method}
        ) as span:
            async for message in self._stream(method, context, fn, request, span):
                yield message

    async def _stream(
        self,
        method: str,
        context: grpc.aio.ServicerContext[Any, Any],
        fn: Callable[[Identity], AsyncIterator[T]],
        request: Any,
        span: Span,
    ) -> AsyncIterator[T]:
        outcome = RpcOutcome()
        start = perf_counter()
        sent = 0
        try:
            identity = await self.auth.authenticate(self._credentials(context))
            if isinstance(request, Undecodable):
                raise request.error()
            async for message in fn(identity):
                sent += 1
                yield message
        except RequestError as err:
            outcome.failed(err)
            await abort(context, err)
        except asyncio.CancelledError:
            outcome.status = grpc.StatusCode.CANCELLED
            raise
        except Exception:
            log.exception("internal error")
            outcome.failed(INTERNAL)
            await abort(context, INTERNAL)
        finally:
            if self.observe.tracer.enabled:
                span.set_attribute("callgate.messages_sent", sent)
                self._ended(span, outcome)
            self.observe.metrics.rpc(method, outcome.status.name, perf_counter() - start)

    def _ended(self, span: Span, outcome: RpcOutcome) -> None:
        """What an RPC's span says of how it ended: its gRPC status and request code."""
        span.set_attribute("rpc.grpc.status_code", outcome.status.value[0])
        if outcome.code:
            span.set_attribute("callgate.code", outcome.code)
            self.observe.tracer.failed(span, outcome.code)

    # ------------------------------------------------------------------ runs and turns

    async def StartRun(
        self, request: pb.StartRunRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            run = await self.turns.start_run(who, convert.start_params(request))
            return convert.run_to(run)

        return await self._call("StartRun", context, go, request)

    async def GetRun(
        self, request: pb.GetRunRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            page, conversation = await self.turns.get_run(
                who, request.run_id, page_size=request.page_size, page_token=request.page_token
            )
            return convert.run_page_to(page, conversation)

        return await self._call("GetRun", context, go, request)

    async def ListRuns(
        self, request: pb.ListRunsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListRunsResponse:
        async def go(who: Identity) -> pb.ListRunsResponse:
            page = await self.lister.list_page(who, convert.runs_request(request))
            return pb.ListRunsResponse(
                runs=[convert.run_to(r) for r in page.runs], next_page_token=page.next_page_token
            )

        return await self._call("ListRuns", context, go, request)

    async def SubmitTurn(
        self, request: pb.SubmitTurnRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            turn = convert.turn_input(request)
            return convert.outcome_to(await self.turns.submit_turn(who, turn))

        return await self._call("SubmitTurn", context, go, request)

    async def SubmitProviderResponse(
        self, request: pb.SubmitProviderResponseRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            req = ProviderTurnRequest(
                run_id=request.run_id,
                provider=request.provider,
                api_version=request.api_version,
                turn_id=request.turn_id,
                model=request.model,
            )
            outcome = await self.turns.submit_response(who, req, request.response_json)
            return convert.outcome_to(outcome)

        return await self._call("SubmitProviderResponse", context, go, request)

    async def SubmitProviderStream(
        self,
        request_iterator: AsyncIterator[pb.ProviderStreamEvent],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            first = await anext(aiter(request_iterator), None)
            if first is None:
                raise RequestError(
                    RequestCode.INVALID_ARGUMENT,
                    "the stream was empty: the first message names the run",
                )
            if isinstance(first, Undecodable):
                raise first.error()

            async def texts() -> AsyncIterator[str]:
                if first.event_json:
                    yield first.event_json
                async for msg in request_iterator:
                    if isinstance(msg, Undecodable):
                        raise msg.error()
                    yield msg.event_json

            req = ProviderTurnRequest(
                run_id=first.run_id,
                provider=first.provider,
                api_version=first.api_version,
                turn_id=first.turn_id,
            )
            return convert.outcome_to(await self.turns.submit_stream(who, req, texts()))

        return await self._call("SubmitProviderStream", context, go)

    async def ListTools(
        self, request: pb.ListToolsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListToolsResponse:
        async def go(who: Identity) -> pb.ListToolsResponse:
            declared, tools = await self.turns.list_tools(
                who, request.provider, request.api_version
            )
            return pb.ListToolsResponse(
                tools_json=declared, tools=[convert.tool_summary(t) for t in tools]
            )

        return await self._call("ListTools", context, go, request)

    async def Authorize(
        self, request: pb.AuthorizeRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.AuthorizeResponse:
        async def go(who: Identity) -> pb.AuthorizeResponse:
            calls = convert.tool_calls(list(request.calls))
            return convert.authorize_to(await self.authorizer.authorize(who, request.run_id, calls))

        return await self._call("Authorize", context, go, request)

    async def ResumeRun(
        self, request: pb.ResumeRunRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            return convert.outcome_to(await self.turns.resume_run(who, request.run_id))

        return await self._call("ResumeRun", context, go, request)

    async def ResolveCall(
        self, request: pb.ResolveCallRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.CallResult:
        async def go(who: Identity) -> pb.CallResult:
            result = await self.runner.resolve_call(who, convert.resolve_request(request))
            return convert.call_result_to(result)

        return await self._call("ResolveCall", context, go, request)

    async def WatchRun(
        self, request: pb.WatchRunRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnOutcome]:
        async def go(who: Identity) -> AsyncIterator[pb.TurnOutcome]:
            async for outcome in self.turns.watch_run(who, request.run_id):
                yield convert.outcome_to(outcome)

        async for message in self._call_stream("WatchRun", context, go, request):
            yield message

    async def ListApprovals(
        self, request: pb.ListApprovalsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListApprovalsResponse:
        async def go(who: Identity) -> pb.ListApprovalsResponse:
            page = await self.desk.list_page(who, convert.list_request(request))
            return convert.approvals_to(page)

        return await self._call("ListApprovals", context, go, request)

    async def DecideApproval(
        self, request: pb.DecideApprovalRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DecideApprovalResponse:
        async def go(who: Identity) -> pb.DecideApprovalResponse:
            approval, result = await self.runner.decide_approval(
                who, convert.decide_request(request)
            )
            return pb.DecideApprovalResponse(
                approval=convert.approval_to(approval), result=convert.call_result_to(result)
            )

        return await self._call("DecideApproval", context, go, request)

    async def CancelRun(
        self, request: pb.CancelRunRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            return convert.run_to(await self.runner.cancel_run(who, request.run_id))

        return await self._call("CancelRun", context, go, request)

    async def GetStatus(
        self, request: pb.GetStatusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Status:
        async def go(who: Identity) -> pb.Status:
            policy = self.runner.policy
            status = pb.Status(
                engine=policy.name,
                policy_revision=policy.revision,
                policy_loaded_at=rfc3339(policy.loaded_at),
                store=self.info.store,
                version=self.info.version,
                tools=[t.name for t in self.runner.registry.tools()],
            )
            rejected = self.info.rejected_reload()
            if rejected is not None:
                status.last_rejected_reload.CopyFrom(convert.rejected_reload_to(rejected))
            _tools_status(status, self.runner.registry)
            shadow = self.info.shadow()
            if shadow is not None:
                status.shadow.CopyFrom(
                    pb.ShadowStatus(
                        compared=shadow.compared,
                        disagreed=shadow.disagreed,
                        dropped=shadow.dropped,
                        failed=shadow.failed,
                        opa_revision=shadow.opa_revision,
                        opa_reachable=shadow.opa_reachable,
                    )
                )
            return status

        return await self._call("GetStatus", context, go, request)

    # ------------------------------------------------------------------ audit

    async def QueryAudit(
        self, request: pb.QueryAuditRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.AuditRecord]:
        async def go(who: Identity) -> AsyncIterator[pb.AuditRecord]:
            async for record in self.audit.stream(who, convert.audit_query(request)):
                yield convert.audit_record_to(record)

        async for message in self._call_stream("QueryAudit", context, go):
            yield message
