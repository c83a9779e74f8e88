"""The client's errors and retries: every stable code raises its own class, an answer without a
code still raises one (never swallowed), only safe requests are repeated and only for failures
that mean nothing was done, and every attempt shares the call's one deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from gateway import pb
from gateway.client import (
    AsyncGatewayClient,
    DeadlineExceeded,
    FailedPrecondition,
    InternalError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RequestCode,
    RequestError,
    RetryPolicy,
    RunConflict,
    RunFinished,
    RunPaused,
    StoreUnavailable,
    TurnConflict,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    error_code,
    tool_call,
)
from gateway.client._errors import from_rpc_error, request_error

C = RequestCode
CLASS_OF: dict[RequestCode, type[RequestError]] = {
    C.UNAUTHENTICATED: Unauthenticated,
    C.PERMISSION_DENIED: PermissionDenied,
    C.RUN_NOT_FOUND: NotFound,
    C.APPROVAL_NOT_FOUND: NotFound,
    C.CALL_NOT_FOUND: NotFound,
    C.QUOTA_NOT_FOUND: NotFound,
    C.TOOL_NOT_FOUND: NotFound,
    C.RUN_PAUSED: RunPaused,
    C.RUN_FINISHED: RunFinished,
    C.ALREADY_DECIDED: FailedPrecondition,
    C.APPROVAL_EXPIRED: FailedPrecondition,
    C.NOT_UNKNOWN: FailedPrecondition,
    C.TURN_CONFLICT: TurnConflict,
    C.RUN_CONFLICT: RunConflict,
    C.UNKNOWN_PROVIDER: InvalidRequest,
    C.MALFORMED_RESPONSE: InvalidRequest,
    C.DUPLICATE_CALL_ID: InvalidRequest,
    C.INVALID_ARGUMENT: InvalidRequest,
    C.INVALID_PAGE_TOKEN: InvalidRequest,
    C.LIMIT_EXCEEDED: InvalidRequest,
    C.UNIMPLEMENTED: Unimplemented,
    C.STORE_UNAVAILABLE: StoreUnavailable,
    C.SHUTTING_DOWN: Unavailable,
    C.RESULTS_NOT_RECORDED: Unavailable,
    C.INTERNAL: InternalError,
    C.UNAVAILABLE: Unavailable,
    C.DEADLINE_EXCEEDED: DeadlineExceeded,
}


class FakeRpcError(grpc.RpcError):
    """A failed call as grpc.aio raises it: a status, details and trailing metadata."""

    def __init__(self, status: grpc.StatusCode, details: str = "boom", reason: str = "") -> None:
        self._status, self._details = status, details
        self._trailers: tuple[tuple[str, Any], ...] = ()
        if reason:
            info = error_details_pb2.ErrorInfo(reason=reason, domain="callgate")
            packed = status_pb2.Status(code=status.value[0], message=details)
            packed.details.add().Pack(info)
            self._trailers = (("grpc-status-details-bin", packed.SerializeToString()),)

    def code(self) -> grpc.StatusCode:
        return self._status

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._trailers


def test_every_code_raises_its_own_class() -> None:
    assert set(CLASS_OF) == set(RequestCode)
    for code, cls in CLASS_OF.items():
        err = request_error(code, "what happened", "SOME_STATUS")
        assert type(err) is cls and err.code == code and err.message == "what happened"
        assert err.grpc_status == "SOME_STATUS" and error_code(err) == code.value


def test_the_sidecars_code_and_status_reach_the_caller() -> None:
    err = from_rpc_error(
        FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "waits for w1", reason="run_paused")
    )
    assert isinstance(err, RunPaused) and isinstance(err, FailedPrecondition)
    assert (err.code, err.grpc_status, err.message) == (
        C.RUN_PAUSED,
        "FAILED_PRECONDITION",
        "waits for w1",
    )


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (grpc.StatusCode.UNAVAILABLE, Unavailable, C.UNAVAILABLE),
        (grpc.StatusCode.DEADLINE_EXCEEDED, DeadlineExceeded, C.DEADLINE_EXCEEDED),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, InvalidRequest, C.LIMIT_EXCEEDED),
        (grpc.StatusCode.UNAUTHENTICATED, Unauthenticated, C.UNAUTHENTICATED),
        (grpc.StatusCode.DATA_LOSS, InternalError, C.INTERNAL),
    ],
)
def test_an_answer_without_a_code_raises_the_class_its_status_stands_for(
    status: grpc.StatusCode, cls: type[RequestError], code: RequestCode
) -> None:
    err = from_rpc_error(FakeRpcError(status, "from a proxy"))
    assert isinstance(err, cls) and err.code == code and err.grpc_status == status.name
    assert "from a proxy" in err.message


def test_a_code_this_client_does_not_know_keeps_its_name_in_the_message() -> None:
    err = from_rpc_error(
        FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "newer", reason="run_frozen")
    )
    assert isinstance(err, InternalError) and "run_frozen" in err.message


def test_garbage_status_details_are_no_code() -> None:
    raw = FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT)
    raw._trailers = (("grpc-status-details-bin", b"\xff\x00not a status"),)
    assert from_rpc_error(raw).code == C.INVALID_ARGUMENT and error_code(raw) == ""


class FakeStub:
    """Every RPC fails with `error` for its first `fail` attempts (each one counted), then
    answers."""

    def __init__(self, error: FakeRpcError, fail: int = 1000) -> None:
        self.error, self.fail = error, fail
        self.calls: list[tuple[str, float | None]] = []

    def __getattr__(self, rpc: str) -> Callable[..., Any]:
        async def method(request: Any, *, metadata: Any, timeout: float | None) -> Any:
            self.calls.append((rpc, timeout))
            if len(self.calls) <= self.fail:
                raise self.error
            return pb.TurnOutcome(turn_id="t1") if rpc == "SubmitTurn" else pb.Run()

        return method


class ReadyChannel:
    """A channel that is connected (what a request sent once waits for)."""

    def get_state(self, try_to_connect: bool = False) -> grpc.ChannelConnectivity:
        return grpc.ChannelConnectivity.READY

    async def close(self) -> None:
        pass


def client_with(stub: FakeStub, attempts: int = 4) -> AsyncGatewayClient:
    client = AsyncGatewayClient(
        "127.0.0.1:1",
        "t",
        timeout_s=30,
        retry=RetryPolicy(attempts=attempts, first_backoff_s=0.001),
    )
    client._stub_ = stub  # type: ignore[assignment]
    client._channel = ReadyChannel()  # type: ignore[assignment]
    return client


UNAVAILABLE = FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connection refused")


async def test_a_turn_is_repeated_until_it_gets_through() -> None:
    stub = FakeStub(UNAVAILABLE, fail=2)
    out = await client_with(stub).submit_calls("r1", "t1", tool_call("c1", "get_weather", {}))
    assert out.turn_id == "t1" and [rpc for rpc, _ in stub.calls] == ["SubmitTurn"] * 3


async def test_repeats_stop_at_the_policys_attempts() -> None:
    stub = FakeStub(UNAVAILABLE)
    with pytest.raises(Unavailable) as err:
        await client_with(stub, attempts=3).resume_run("r1")
    assert len(stub.calls) == 3 and err.value.__cause__ is UNAVAILABLE


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.decide_approval("apr_1", approve=True, reason="ok"),
        lambda c: c.resolve_call("r1", "c1", pb.CALL_STATUS_SUCCEEDED, reason="checked"),
        lambda c: c.start_run(),  # without a run_id, each attempt would create a run
    ],
)
async def test_what_is_not_safe_to_repeat_is_tried_once(
    call: Callable[[AsyncGatewayClient], Any],
) -> None:
    stub = FakeStub(UNAVAILABLE)
    with pytest.raises(Unavailable):
        await call(client_with(stub))
    assert len(stub.calls) == 1


async def test_a_refusal_is_never_repeated() -> None:
    stub = FakeStub(
        FakeRpcError(grpc.StatusCode.ALREADY_EXISTS, "other content", reason="turn_conflict")
    )
    with pytest.raises(TurnConflict):
        await client_with(stub).submit_turn("r1", "t1", final=pb.FinalAnswer(text="x"))
    assert len(stub.calls) == 1


async def test_a_run_id_makes_start_run_safe_to_repeat() -> None:
    stub = FakeStub(UNAVAILABLE, fail=1)
    await client_with(stub).start_run("r1")
    assert len(stub.calls) == 2


async def test_every_attempt_shares_the_calls_deadline() -> None:
    stub = FakeStub(UNAVAILABLE)
    client = client_with(stub, attempts=3)
    with pytest.raises(Unavailable):
        await client.get_run("r1", timeout_s=5)
    timeouts = [t for _, t in stub.calls]
    assert timeouts[0] is not None and timeouts[0] <= 5
    assert all(
        later is not None and later <= earlier
        for earlier, later in zip(timeouts, timeouts[1:], strict=False)
    )


async def test_a_turn_with_two_events_is_refused_before_it_is_sent() -> None:
    stub = FakeStub(UNAVAILABLE)
    with pytest.raises(InvalidRequest) as err:
        await client_with(stub).submit_turn(
            "r1", "t1", final=pb.FinalAnswer(text="a"), refusal=pb.Refusal(text="b")
        )
    assert "final, refusal" in err.value.message and stub.calls == []


async def test_a_request_sent_once_waits_for_a_connection_only_so_long() -> None:
    """Nothing listens: DecideApproval waits connect_s for a connection, then is refused as
    unavailable (never sent, so never repeated)."""
    async with AsyncGatewayClient("127.0.0.1:1", "t", retry=RetryPolicy(connect_s=0.2)) as c:
        with pytest.raises(Unavailable) as err:
            await asyncio.wait_for(c.decide_approval("apr_1", approve=True, reason="x"), 20)
    assert err.value.code == C.UNAVAILABLE and "unavailable" in err.value.message


CUT_SHORT = FakeRpcError(grpc.StatusCode.INTERNAL, "Internal error from Core")


async def test_a_stream_cut_short_by_the_sidecars_answer_is_sent_again_when_it_can_be() -> None:
    """grpc.aio reports a write after the sidecar's early answer as INTERNAL, hiding that
    answer: a stream the client holds whole is sent again to hear it; a live one is not."""
    stub = FakeStub(CUT_SHORT, fail=1)
    out = await client_with(stub).submit_provider_stream("r1", ["{}", "{}"])
    assert len(stub.calls) == 2 and out == pb.Run()
    live = FakeStub(CUT_SHORT, fail=1)
    with pytest.raises(InternalError):
        await client_with(live).submit_provider_stream("r1", iter(["{}", "{}"]))
    assert len(live.calls) == 1
