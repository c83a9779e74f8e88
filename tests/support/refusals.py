"""Asserting that a request was refused with its code, and that the run stays usable after."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from tests.support.scenarios import WEATHER


def rpc_error(fn: Any, *args: Any, **kwargs: Any) -> RequestError:
    with pytest.raises(RequestError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert isinstance(err, RequestError)
    return err


def assert_refused(err: RequestError, status: grpc.StatusCode, code: str) -> None:
    assert (err.grpc_status, error_code(err)) == (status.name, code), err.message


def assert_run_usable(c: GatewayClient, run_id: str, turn_id: str = "valid-after") -> None:
    """The run answers ResumeRun and GetRun, then runs a valid read."""
    c.resume_run(run_id)
    c.get_run(run_id)
    out = c.submit_calls(run_id, turn_id, tool_call(f"{turn_id}-c", "get_weather", WEATHER))
    assert [r.status for r in out.results] == [pb.CALL_STATUS_SUCCEEDED], out
    assert out.next == pb.NEXT_ACTION_CONTINUE
    c.get_run(run_id)


def submit_stream(c: GatewayClient, run_id: str, texts: list[str], **first: Any) -> pb.TurnOutcome:
    return c.submit_provider_stream(run_id, texts, timeout_s=30, **first)
