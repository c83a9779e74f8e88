"""A small synchronous client for the sidecar: the demo, the CLI and tests use it.

`error_code(err)` reads the stable code callgate puts in `google.rpc.ErrorInfo.reason`.
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from gateway import pb


def error_code(err: grpc.RpcError) -> str:
    """The stable callgate code of a failed call ("" when it carries none)."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    if status is None:
        return ""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str,
              complete: bool = True) -> pb.ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return pb.ToolCall(call_id=call_id, name=name, arguments_json=text, complete=complete)


class GatewayClient:
    def __init__(self, target: str, token: str = "", *, timeout_s: float = 60.0) -> None:
        self.channel = grpc.insecure_channel(target)
        self.stub = pb.ToolGatewayStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else []
        self.timeout_s = timeout_s

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, name: str, request: Any) -> Any:
        return getattr(self.stub, name)(request, metadata=self.metadata, timeout=self.timeout_s)

    def start_run(self, **fields: Any) -> pb.Run:
        result: pb.Run = self._call("StartRun", pb.StartRunRequest(**fields))
        return result

    def get_run(self, run_id: str) -> pb.Run:
        result: pb.Run = self._call("GetRun", pb.GetRunRequest(run_id=run_id))
        return result

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

    def cancel_run(self, run_id: str) -> pb.Run:
        result: pb.Run = self._call("CancelRun", pb.CancelRunRequest(run_id=run_id))
        return result

    def get_status(self) -> pb.Status:
        result: pb.Status = self._call("GetStatus", pb.GetStatusRequest())
        return result


def policy_status(argv: list[str]) -> int:
    """`callgate policy status [--target] [--token]`: the running sidecar's GetStatus."""
    import argparse
    import os

    p = argparse.ArgumentParser(prog="callgate policy status")
    p.add_argument("--target", default=os.environ.get("CALLGATE_TARGET", "127.0.0.1:50051"))
    p.add_argument("--token", default=os.environ.get("CALLGATE_TOKEN", ""))
    ns = p.parse_args(argv)
    with GatewayClient(ns.target, ns.token) as client:
        try:
            status = client.get_status()
        except grpc.RpcError as err:
            print(f"callgate policy status: {err.code().name} {error_code(err)}: "
                  f"{err.details()}")
            return 1
    print(f"engine:           {status.engine}\npolicy revision:  {status.policy_revision}\n"
          f"loaded at:        {status.policy_loaded_at}\nstore:            {status.store}\n"
          f"tools:            {', '.join(status.tools)}")
    if status.HasField("last_rejected_reload"):
        rejected = status.last_rejected_reload
        where = f"{rejected.file}:{rejected.line}" if rejected.line else rejected.file
        print(f"rejected reload:  at {rejected.at}, still serving the revision above\n"
              f"  {where}\n  {rejected.message}")
    return 0
