"""The grpc.aio servicer: thin. Authenticate, decode, call the runner, encode.

Request errors become gRPC statuses here and only here (`STATUS_OF`), with the stable code in
`google.rpc.ErrorInfo.reason`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from adapters import AdapterError, resolve_api_version
from adapters.base import ProviderAdapter
from adapters.events import ProviderEvent
from gateway import convert, providers
from gateway._proto.callgate.v1 import gateway_pb2 as pb
from gateway._proto.callgate.v1 import gateway_pb2_grpc as pb_grpc
from gateway.errors import (
    AlreadyExists,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RequestError,
    StoreUnavailable,
    Unauthenticated,
    Unimplemented,
)
from gateway.identity import Authenticator
from gateway.model import Identity, rfc3339
from gateway.runner import Runner

log = logging.getLogger("callgate.server")
T = TypeVar("T")

ERROR_DOMAIN = "callgate"

STATUS_OF: dict[type[RequestError], tuple[grpc.StatusCode, int]] = {
    Unauthenticated: (grpc.StatusCode.UNAUTHENTICATED, code_pb2.UNAUTHENTICATED),
    PermissionDenied: (grpc.StatusCode.PERMISSION_DENIED, code_pb2.PERMISSION_DENIED),
    NotFound: (grpc.StatusCode.NOT_FOUND, code_pb2.NOT_FOUND),
    FailedPrecondition: (grpc.StatusCode.FAILED_PRECONDITION, code_pb2.FAILED_PRECONDITION),
    AlreadyExists: (grpc.StatusCode.ALREADY_EXISTS, code_pb2.ALREADY_EXISTS),
    InvalidArgument: (grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    Unimplemented: (grpc.StatusCode.UNIMPLEMENTED, code_pb2.UNIMPLEMENTED),
    StoreUnavailable: (grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
}

# RPCs of the contract that this build does not serve yet, and the capability each needs.
NOT_YET: dict[str, str] = {
    "ListApprovals": "the human approval flow",
    "DecideApproval": "the human approval flow",
    "ResolveCall": "operator resolution of unknown outcomes",
    "WatchRun": "run watching",
    "QueryAudit": "audit queries",
}


@dataclass(frozen=True)
class StatusInfo:
    """What GetStatus reports besides the live policy revision."""

    store: str
    version: str


async def abort(context: grpc.aio.ServicerContext[Any, Any], err: RequestError) -> NoReturn:
    grpc_code, rpc_code = STATUS_OF.get(type(err), (grpc.StatusCode.INTERNAL, code_pb2.INTERNAL))
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason=err.code, domain=ERROR_DOMAIN))
    status = rpc_status.to_status(status_pb2.Status(code=rpc_code, message=err.message,
                                                    details=[detail]))
    assert status.code == grpc_code
    await context.abort(status.code, status.details, status.trailing_metadata)
    raise AssertionError("unreachable")  # context.abort raises


class ToolGatewayService(pb_grpc.ToolGatewayServicer):
    def __init__(self, runner: Runner, auth: Authenticator, info: StatusInfo) -> None:
        self.runner = runner
        self.auth = auth
        self.info = info

    async def _guard(self, context: grpc.aio.ServicerContext[Any, Any],
                     fn: Callable[[Identity], Awaitable[T]]) -> T:
        try:
            identity = self.auth.authenticate(context.invocation_metadata())
            return await fn(identity)
        except RequestError as err:
            await abort(context, err)
        except Exception:
            log.exception("internal error")
            await abort(context, Internal("callgate failed on this request; the error is in "
                                          "its log, and ResumeRun shows what was recorded"))

    def _provider(self, provider: str, api_version: str) -> str:
        if not provider:
            return api_version
        try:
            return resolve_api_version(provider, api_version)
        except AdapterError as err:
            raise InvalidArgument(str(err), code=err.code) from err

    # ------------------------------------------------------------------ runs and turns

    async def StartRun(self, request: pb.StartRunRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            version = self._provider(request.provider, request.api_version)
            providers.check_conversation(request.conversation_json)
            params = convert.start_params(request, request.provider, version)
            return convert.run_to(await self.runner.start_run(who, params))
        return await self._guard(context, go)

    async def GetRun(self, request: pb.GetRunRequest,
                     context: grpc.aio.ServicerContext[Any, Any]) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            view = await self.runner.get_run(who, request.run_id)
            run = convert.run_to(view.run, view)
            run.conversation_json = providers.conversation(view)
            return run
        return await self._guard(context, go)

    async def SubmitTurn(self, request: pb.SubmitTurnRequest,
                         context: grpc.aio.ServicerContext[Any, Any]) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            version = self._provider(request.provider, request.api_version)
            turn = convert.turn_input(request, version)
            return convert.outcome_to(await self.runner.submit_turn(who, turn))
        return await self._guard(context, go)

    async def Authorize(self, request: pb.AuthorizeRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.AuthorizeResponse:
        async def go(who: Identity) -> pb.AuthorizeResponse:
            calls = convert.tool_calls(list(request.calls))
            return convert.authorize_to(await self.runner.authorize(who, request.run_id, calls))
        return await self._guard(context, go)

    async def ResumeRun(self, request: pb.ResumeRunRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            return convert.outcome_to(await self.runner.resume_run(who, request.run_id))
        return await self._guard(context, go)

    async def CancelRun(self, request: pb.CancelRunRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.Run:
        async def go(who: Identity) -> pb.Run:
            return convert.run_to(await self.runner.cancel_run(who, request.run_id))
        return await self._guard(context, go)

    async def GetStatus(self, request: pb.GetStatusRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.Status:
        async def go(who: Identity) -> pb.Status:
            policy = self.runner.policy
            return pb.Status(engine=policy.name, policy_revision=policy.revision,
                             policy_loaded_at=rfc3339(policy.loaded_at), store=self.info.store,
                             version=self.info.version,
                             tools=[t.name for t in self.runner.registry.tools()])
        return await self._guard(context, go)

    # ------------------------------------------------------------------ not yet served

    async def _not_yet(self, name: str, context: grpc.aio.ServicerContext[Any, Any]) -> NoReturn:
        async def go(who: Identity) -> NoReturn:
            raise Unimplemented(f"{name} is not available in this build: it needs "
                                f"{NOT_YET[name]}")
        await self._guard(context, go)
        raise AssertionError("unreachable")

    async def SubmitProviderResponse(self, request: pb.SubmitProviderResponseRequest,
                                     context: grpc.aio.ServicerContext[Any, Any]
                                     ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            provider, version, adapter = await self._run_adapter(who, request.run_id,
                                                                 request.provider,
                                                                 request.api_version)
            event = providers.read_response(adapter, request.response_json)
            return await self._submit_event(who, adapter, event, request.run_id,
                                            request.turn_id, provider, version, request.model,
                                            request.response_json)
        return await self._guard(context, go)

    async def SubmitProviderStream(self, request_iterator: AsyncIterator[pb.ProviderStreamEvent],
                                   context: grpc.aio.ServicerContext[Any, Any]
                                   ) -> pb.TurnOutcome:
        async def go(who: Identity) -> pb.TurnOutcome:
            first = await anext(aiter(request_iterator), None)
            if first is None:
                raise InvalidArgument("the stream was empty: the first message names the run",
                                      code="invalid_argument")
            provider, version, adapter = await self._run_adapter(who, first.run_id,
                                                                 first.provider,
                                                                 first.api_version)

            async def texts() -> AsyncIterator[str]:
                if first.event_json:
                    yield first.event_json
                async for msg in request_iterator:
                    yield msg.event_json

            event, received = await providers.assemble_stream(adapter, texts())
            raw = json.dumps(event.original) if event.original else json.dumps(received)
            return await self._submit_event(who, adapter, event, first.run_id, first.turn_id,
                                            provider, version, "", raw)
        return await self._guard(context, go)

    async def _run_adapter(self, who: Identity, run_id: str, provider: str,
                           api_version: str) -> tuple[str, str, ProviderAdapter]:
        run = await self.runner.owned_run(who, run_id)
        provider = provider or run.provider
        if not provider:
            raise InvalidArgument("name the provider (or start the run with one)",
                                  code="unknown_provider")
        version = self._provider(provider, api_version or run.api_version)
        return provider, version, providers.adapter_for(provider)

    async def _submit_event(self, who: Identity, adapter: ProviderAdapter,
                            event: ProviderEvent, run_id: str, turn_id: str, provider: str,
                            version: str, model: str, raw: str) -> pb.TurnOutcome:
        turn_id = providers.turn_id_of(event, turn_id)
        turn = providers.to_turn_input(event, run_id=run_id, turn_id=turn_id, provider=provider,
                                       api_version=version, model=model, raw=raw)
        outcome = await self.runner.submit_turn(who, turn)
        outcome = replace(outcome, provider_input_json=providers.next_input(adapter, event,
                                                                            outcome))
        return convert.outcome_to(outcome)

    async def ListTools(self, request: pb.ListToolsRequest,
                        context: grpc.aio.ServicerContext[Any, Any]) -> pb.ListToolsResponse:
        async def go(who: Identity) -> pb.ListToolsResponse:
            self._provider(request.provider, request.api_version)
            adapter = providers.adapter_for(request.provider)
            offered = self.runner.policy.offer({"action": "offer",
                                                "identity": who.as_input()})
            return pb.ListToolsResponse(tools_json=providers.declarations(
                adapter, self.runner.registry.tools(), offered))
        return await self._guard(context, go)

    async def ListApprovals(self, request: pb.ListApprovalsRequest,
                            context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await self._not_yet("ListApprovals", context)

    async def DecideApproval(self, request: pb.DecideApprovalRequest,
                             context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await self._not_yet("DecideApproval", context)

    async def ResolveCall(self, request: pb.ResolveCallRequest,
                          context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await self._not_yet("ResolveCall", context)

    async def WatchRun(self, request: pb.WatchRunRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await self._not_yet("WatchRun", context)

    async def QueryAudit(self, request: pb.QueryAuditRequest,
                         context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await self._not_yet("QueryAudit", context)
