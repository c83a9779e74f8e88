"""The wire contract: health, reflection, error details, idempotent runs, every RPC served."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from gateway import pb
from gateway.client import RequestError, error_code, tool_call
from gateway.service.app import _add_health_and_reflection
from gateway.testing import SidecarProcess
from gateway.wire.server import ToolGatewayService, add_to_server
from tests.support.paths import Connect
from tests.support.scenarios import TRAIN, WEATHER

# Every RPC of the contract; none of them may answer UNIMPLEMENTED.
IMPLEMENTED = {
    "StartRun",
    "GetRun",
    "ListRuns",
    "SubmitTurn",
    "Authorize",
    "ResumeRun",
    "CancelRun",
    "SubmitProviderResponse",
    "SubmitProviderStream",
    "ListTools",
    "GetStatus",
    "ResolveCall",
    "WatchRun",
    "ListApprovals",
    "DecideApproval",
    "QueryAudit",
    "ListQuotas",
    "ResetQuota",
    "ListToolPins",
    "ApproveToolPin",
}


class _Recorder:
    """A grpc.aio server's two ways of adding handlers, recorded."""

    def __init__(self) -> None:
        self.generic: list[str] = []
        self.registered: list[str] = []

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self.generic.extend(h.service_name() for h in handlers)  # type: ignore[attr-defined]

    def add_registered_method_handlers(self, service: str, handlers: dict[str, object]) -> None:
        self.registered.append(service)


def test_every_service_is_added_as_a_generic_handler_only() -> None:
    # grpc.aio waits on one pending request per registered method for every RPC
    recorder = _Recorder()
    servicer = SimpleNamespace(**{name: lambda *_: None for name in IMPLEMENTED})
    add_to_server(cast(ToolGatewayService, servicer), cast(grpc.aio.Server, recorder))
    _add_health_and_reflection(cast(grpc.aio.Server, recorder), health.aio.HealthServicer())
    assert recorder.generic == [
        "callgate.v1.ToolGateway",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    ]
    assert recorder.registered == []


def test_every_rpc_of_the_contract_is_served() -> None:
    service = pb.DESCRIPTOR.services_by_name["ToolGateway"]
    assert {m.name for m in service.methods} == IMPLEMENTED


def invoke_empty(target: str, rpc: str) -> grpc.RpcError | None:
    """Call rpc with an empty request as alice; answers the error, if any."""
    method = pb.DESCRIPTOR.services_by_name["ToolGateway"].methods_by_name[rpc]
    req_cls = getattr(pb, method.input_type.name)
    path = f"/callgate.v1.ToolGateway/{rpc}"
    md = [("authorization", "Bearer alice-demo-token")]
    ser = req_cls.SerializeToString
    with grpc.insecure_channel(target) as ch:
        try:
            if method.client_streaming:
                ch.stream_unary(path, request_serializer=ser)(
                    iter([req_cls()]), metadata=md, timeout=10
                )
            elif method.server_streaming:
                list(
                    ch.unary_stream(path, request_serializer=ser)(
                        req_cls(), metadata=md, timeout=10
                    )
                )
            else:
                ch.unary_unary(path, request_serializer=ser)(req_cls(), metadata=md, timeout=10)
        except grpc.RpcError as err:
            return err
    return None


@pytest.mark.parametrize("rpc", sorted(IMPLEMENTED))
def test_implemented_rpcs_do_not_answer_unimplemented(sidecar: SidecarProcess, rpc: str) -> None:
    err = invoke_empty(sidecar.target, rpc)
    assert err is None or err.code() != grpc.StatusCode.UNIMPLEMENTED


def test_health_overall_and_per_component_without_token(sidecar: SidecarProcess) -> None:
    with grpc.insecure_channel(sidecar.target) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        for service in ("", "callgate.v1.ToolGateway", "callgate.policy", "callgate.store"):
            resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING, service


def test_reflection_lists_the_service_without_token(sidecar: SidecarProcess) -> None:
    with grpc.insecure_channel(sidecar.target) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        req = reflection_pb2.ServerReflectionRequest(list_services="")
        (resp,) = list(stub.ServerReflectionInfo(iter([req]), timeout=10))
    names = {s.name for s in resp.list_services_response.service}
    assert "callgate.v1.ToolGateway" in names and "grpc.health.v1.Health" in names


def test_start_run_is_idempotent_and_conflicts_on_other_parameters(
    connect: Connect, run_id: str
) -> None:
    c = connect("alice-demo-token")
    first = c.start_run(run_id=run_id, budget=pb.Budget(max_turns=3), labels={"a": "b"})
    again = c.start_run(run_id=run_id, budget=pb.Budget(max_turns=3), labels={"a": "b"})
    assert again.run_id == first.run_id == run_id and again.created_at == first.created_at
    assert first.subject == "alice" and first.tenant == "acme"
    with pytest.raises(RequestError) as err:
        c.start_run(run_id=run_id, budget=pb.Budget(max_turns=4))
    assert err.value.grpc_status == "ALREADY_EXISTS"
    assert error_code(err.value) == "run_conflict"


def test_start_run_generates_an_id(connect: Connect) -> None:
    run = connect("alice-demo-token").start_run()
    assert run.run_id.startswith("run_") and run.state == pb.RUN_STATE_ACTIVE


def test_unknown_provider_is_invalid(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    for kwargs in ({"provider": "acme.llm"}, {"provider": "openai.responses", "api_version": "v9"}):
        with pytest.raises(RequestError) as err:
            c.start_run(run_id=run_id, **kwargs)
        assert err.value.grpc_status == "INVALID_ARGUMENT"
        assert error_code(err.value) == "unknown_provider"


def test_turn_for_another_provider_is_invalid(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id, provider="anthropic.messages")
    with pytest.raises(RequestError) as err:
        c.submit_turn(
            run_id=run_id, turn_id="t1", provider="openai.responses", final=pb.FinalAnswer(text="x")
        )
    assert error_code(err.value) == "unknown_provider"


def test_turn_without_event_is_invalid(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    with pytest.raises(RequestError) as err:
        c.submit_turn(run_id=run_id, turn_id="t1")
    assert err.value.grpc_status == "INVALID_ARGUMENT"


def test_authorize_decides_without_executing(connect: Connect, fresh_travel: object) -> None:
    c = connect("alice-demo-token")
    resp = c.authorize(
        tool_call("a", "get_train_status", TRAIN),
        tool_call("b", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"}),
        tool_call("c", "nope", {}),
        tool_call("d", "get_weather", "{"),
    )
    d = {x.call_id: x for x in resp.decisions}
    assert d["a"].decision.verdict == pb.VERDICT_ALLOW and not d["a"].error.code
    assert d["b"].decision.verdict == pb.VERDICT_DENY and d["b"].error.code == "policy_denied"
    assert d["c"].error.code == "unknown_tool"
    assert d["d"].error.code == "incomplete_arguments"
    assert fresh_travel.stats()["train_status"] == 0  # type: ignore[attr-defined]


def test_get_status(connect: Connect) -> None:
    status = connect("alice-demo-token").get_status()
    assert status.engine == "embedded" and status.policy_revision and status.store == "sqlite"
    assert "get_weather" in status.tools


def test_cancel_run_stops_further_turns(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    c.start_run(run_id=run_id)
    c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER))
    assert c.cancel_run(run_id).state == pb.RUN_STATE_CANCELLED
    assert c.cancel_run(run_id).state == pb.RUN_STATE_CANCELLED
    with pytest.raises(RequestError) as err:
        c.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="x"))
    assert error_code(err.value) == "run_finished"


def test_oversized_or_unprintable_ids_are_invalid(connect: Connect, run_id: str) -> None:
    c = connect("alice-demo-token")
    with pytest.raises(RequestError) as err:
        c.start_run(run_id="r" * 300)
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    c.start_run(run_id=run_id)
    for turn_id, call_id in (("t\n1", "c1"), ("t1", "c" * 257)):
        with pytest.raises(RequestError) as err:
            c.submit_calls(run_id, turn_id, tool_call(call_id, "get_weather", WEATHER))
        assert err.value.grpc_status == "INVALID_ARGUMENT"
    assert c.get_run(run_id).turns_used == 0
