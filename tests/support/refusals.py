"""Asserting that a request was refused with its code, and that the run stays usable after."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from gateway import pb
from gateway.client import GatewayClient, error_code, tool_call
from tests.support.scenarios import WEATHER


def rpc_error(fn: Any, *args: Any, **kwargs: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert isinstance(err, grpc.RpcError)
    return err


def assert_refused(err: grpc.RpcError, status: grpc.StatusCode, code: str) -> None:
    assert (err.code(), error_code(err)) == (status, code), err.details()


def assert_run_usable(c: GatewayClient, run_id: str, turn_id: str = "valid-after") -> None:
    """The run answers ResumeRun and GetRun, then runs a valid read."""
    c.resume_run(run_id)
    c.get_run(run_id)
    out = c.submit_calls(run_id, turn_id, tool_call(f"{turn_id}-c", "get_weather", WEATHER))
    assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED], out
    assert out.next == pb.NEXT_ACTION_CONTINUE
    c.get_run(run_id)


def submit_stream(c: GatewayClient, run_id: str, texts: list[str], **first: Any
                  ) -> pb.TurnOutcome:
    def messages() -> Iterator[pb.ProviderStreamEvent]:
        for i, text in enumerate(texts):
            head = {"run_id": run_id, **first} if i == 0 else {}
            yield pb.ProviderStreamEvent(event_json=text, **head)
    result: pb.TurnOutcome = c.stub.SubmitProviderStream(messages(), metadata=c.metadata,
                                                         timeout=30)
    return result
