"""A small synchronous client for the sidecar: the demo, the CLI and tests use it.

`error_code(err)` reads the stable code callgate puts in `google.rpc.ErrorInfo.reason`. A
sidecar that cannot be reached is `Unreachable`: callgate's `SidecarUnreachable` (with a
message naming the target and what to check) and still the `grpc.RpcError` it was. Every other
refusal is the `grpc.RpcError` the sidecar answered, its code read with `error_code`.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import pb
from gateway.errors import SidecarUnreachable
from gateway.tls import ClientTLS

# where a sidecar listens unless told otherwise (`serve --listen`, every `--target`)
DEFAULT_TARGET = "127.0.0.1:50051"


def error_code(err: grpc.RpcError) -> str:
    """The stable callgate code of a failed call ("" when it carries none)."""
    status = rpc_status.from_call(err)
    if status is None:
        return ""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


class Unreachable(SidecarUnreachable, grpc.RpcError):
    """No sidecar answered (UNAVAILABLE without a callgate code): callgate's error, and still
    the gRPC error, so code that catches `grpc.RpcError` and reads `code()` keeps working."""

    def __init__(self, target: str, err: grpc.RpcError, *, tls: bool) -> None:
        self.rpc = err
        detail = str(err.details() or "no answer")
        tls_hint = ("; with TLS, that it listens with TLS and --tls-ca trusts its certificate"
                    if tls else "; if it listens with TLS, connect with --tls (or --tls-ca)")
        super().__init__(target, f"cannot reach the sidecar at {target}: {detail}: check "
                         "that --target (CALLGATE_TARGET) names the address `callgate serve` "
                         f"listens on and that it is running{tls_hint}")

    def code(self) -> grpc.StatusCode:
        return self.rpc.code()

    def details(self) -> str | None:
        return self.rpc.details()

    def trailing_metadata(self) -> Any:
        return self.rpc.trailing_metadata()

    def initial_metadata(self) -> Any:
        return self.rpc.initial_metadata()


def unreachable(err: grpc.RpcError) -> bool:
    """Whether a failed call means no sidecar answered (not one that refused with a code)."""
    return (err.code() == grpc.StatusCode.UNAVAILABLE
            and not error_code(err))


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str, *,
              partial: bool = False) -> pb.ToolCall:
    """A ToolCall; `partial` marks a fragment (never executed). It also sets the deprecated
    `complete` for a call that is not partial, which sidecars older than `partial` require."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return pb.ToolCall(call_id=call_id, name=name, arguments_json=text, partial=partial,
                       complete=not partial)


class GatewayClient:
    """`target` is HOST:PORT or unix:PATH; `tls` connects over TLS (plaintext without it, the
    loopback default), presenting a client certificate when it names one."""

    def __init__(self, target: str, token: str = "", *, timeout_s: float = 60.0,
                 tls: ClientTLS | None = None, own_connection: bool = False) -> None:
        # own_connection: never share a connection with other clients of this process (each
        # client then reaches any of the workers of `serve --workers`)
        options = [("grpc.use_local_subchannel_pool", 1)] if own_connection else []
        self.channel = (grpc.secure_channel(target, tls.channel_credentials(),
                                            options=[*tls.channel_options(), *options])
                        if tls is not None else grpc.insecure_channel(target, options=options))
        self.stub = pb.ToolGatewayStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else []
        self.timeout_s = timeout_s
        self.target = target
        self._tls = tls is not None

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, name: str, request: Any) -> Any:
        try:
            return getattr(self.stub, name)(request, metadata=self.metadata,
                                            timeout=self.timeout_s)
        except grpc.RpcError as err:
            if unreachable(err):
                raise Unreachable(self.target, err, tls=self._tls) from err
            raise

    def start_run(self, **fields: Any) -> pb.Run:
        result: pb.Run = self._call("StartRun", pb.StartRunRequest(**fields))
        return result

    def get_run(self, run_id: str, *, page_size: int = 0, page_token: str = "") -> pb.Run:
        """The run and one page of its turns and their calls: the latest ones (page_size 0:
        the sidecar's default, 50), or the older ones `page_token` (the previous answer's
        `next_page_token`) leads to."""
        result: pb.Run = self._call("GetRun", pb.GetRunRequest(
            run_id=run_id, page_size=page_size, page_token=page_token))
        return result

    def list_runs(self, **fields: Any) -> pb.ListRunsResponse:
        """One page of runs, newest first (fields of ListRunsRequest: state, page_size,
        page_token, subject, every_subject); the caller's own unless the policy allows more."""
        result: pb.ListRunsResponse = self._call("ListRuns", pb.ListRunsRequest(**fields))
        return result

    def list_tools(self, provider: str = "openai.responses",
                   api_version: str = "") -> pb.ListToolsResponse:
        """The caller's permitted tools: `tools` as the manifests describe them, `tools_json`
        as that provider's declarations."""
        result: pb.ListToolsResponse = self._call("ListTools", pb.ListToolsRequest(
            provider=provider, api_version=api_version))
        return result

    def whole_run(self, run_id: str, *, page_size: int = 0) -> pb.Run:
        """The run with every turn and call, oldest first, gathered page by page (the
        summary is the latest page's). Each answer stays bounded; the result is not."""
        pages = [self.get_run(run_id, page_size=page_size)]
        while pages[-1].next_page_token:
            pages.append(self.get_run(run_id, page_size=page_size,
                                      page_token=pages[-1].next_page_token))
        whole = pb.Run()
        whole.CopyFrom(pages[0])
        del whole.turns[:]
        del whole.calls[:]
        for page in reversed(pages):
            whole.turns.extend(page.turns)
            whole.calls.extend(page.calls)
        whole.next_page_token = ""
        return whole

    def submit_turn(self, **fields: Any) -> pb.TurnOutcome:
        result: pb.TurnOutcome = self._call("SubmitTurn", pb.SubmitTurnRequest(**fields))
        return result

    def submit_calls(self, run_id: str, turn_id: str, *calls: pb.ToolCall,
                     **fields: Any) -> pb.TurnOutcome:
        return self.submit_turn(run_id=run_id, turn_id=turn_id,
                                tool_request=pb.ToolRequest(calls=list(calls)), **fields)

    def authorize(self, *calls: pb.ToolCall, run_id: str = "") -> pb.AuthorizeResponse:
        result: pb.AuthorizeResponse = self._call(
            "Authorize", pb.AuthorizeRequest(run_id=run_id, calls=list(calls)))
        return result

    def resume_run(self, run_id: str) -> pb.TurnOutcome:
        result: pb.TurnOutcome = self._call("ResumeRun", pb.ResumeRunRequest(run_id=run_id))
        return result

    def resolve_call(self, run_id: str, call_id: str, outcome: pb.CallStatus, *, reason: str,
                     output_json: str = "") -> pb.CallResult:
        """Settle an UNKNOWN call as an operator (outcome: pb.CALL_STATUS_SUCCEEDED/FAILED)."""
        result: pb.CallResult = self._call("ResolveCall", pb.ResolveCallRequest(
            run_id=run_id, call_id=call_id, outcome=outcome, output_json=output_json,
            reason=reason))
        return result

    def list_approvals(self, **fields: Any) -> pb.ListApprovalsResponse:
        """One page of the approvals the caller may see (fields of ListApprovalsRequest)."""
        result: pb.ListApprovalsResponse = self._call("ListApprovals",
                                                      pb.ListApprovalsRequest(**fields))
        return result

    def decide_approval(self, approval_id: str, *, approve: bool,
                        reason: str) -> pb.DecideApprovalResponse:
        """Approve or deny a pending approval; answers it and the decided call's result."""
        result: pb.DecideApprovalResponse = self._call("DecideApproval", pb.DecideApprovalRequest(
            approval_id=approval_id, approve=approve, reason=reason))
        return result

    def watch_run(self, run_id: str, timeout_s: float | None = None) -> Any:
        """The WatchRun stream: iterate it for TurnOutcomes; `.cancel()` stops watching."""
        return self.stub.WatchRun(pb.WatchRunRequest(run_id=run_id), metadata=self.metadata,
                                  timeout=timeout_s)

    def query_audit(self, timeout_s: float | None = None, **fields: Any) -> Any:
        """The QueryAudit stream (fields of QueryAuditRequest): iterate it for AuditRecords;
        `.cancel()` stops it. Without follow it ends by itself; `timeout_s` bounds it."""
        return self.stub.QueryAudit(pb.QueryAuditRequest(**fields), metadata=self.metadata,
                                    timeout=timeout_s)

    def cancel_run(self, run_id: str) -> pb.Run:
        result: pb.Run = self._call("CancelRun", pb.CancelRunRequest(run_id=run_id))
        return result

    def get_status(self) -> pb.Status:
        result: pb.Status = self._call("GetStatus", pb.GetStatusRequest())
        return result

