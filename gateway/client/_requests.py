"""What a request is made of besides its fields: a proposed tool call, the deadline its
attempts share, and how a stream's request moves on (or knows the sidecar had answered)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import grpc
import grpc.aio

from gateway import pb
from gateway.client._errors import error_code


def tool_call(
    call_id: str, name: str, arguments: Mapping[str, Any] | str, *, partial: bool = False
) -> pb.ToolCall:
    """One proposed call; `arguments` is the model's JSON text, or an object to write as JSON.
    `partial` marks a fragment (never executed). It also sets the deprecated `complete` for a
    call that is not partial, which sidecars older than `partial` require."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return pb.ToolCall(
        call_id=call_id, name=name, arguments_json=text, partial=partial, complete=not partial
    )


class Deadline:
    """One call's deadline, shared by its attempts (None: no deadline)."""

    def __init__(self, timeout_s: float | None) -> None:
        self.at = None if timeout_s is None else time.monotonic() + timeout_s

    def remaining(self) -> float | None:
        return None if self.at is None else max(self.at - time.monotonic(), 0.001)

    def allows(self, wait_s: float) -> bool:
        return self.at is None or time.monotonic() + wait_s < self.at


def cut_short(err: grpc.RpcError) -> bool:
    """Whether a stream's write failed because the sidecar had already answered (it refused
    an event before the stream's end): grpc.aio then reports INTERNAL from its core instead of
    the sidecar's status. The turn was not submitted, so sending the same stream again gets
    the sidecar's own answer."""
    return (
        err.code() == grpc.StatusCode.INTERNAL
        and not error_code(err)
        and "Internal error from Core" in (err.details() or "")
    )


def continue_after(request: pb.QueryAuditRequest, record: pb.AuditRecord) -> bool:
    """After a record arrives, a reconnection asks only for what comes after it, and for as
    many fewer; True once the limit is reached."""
    request.after_seq = record.seq
    request.tail = 0
    if request.limit:
        request.limit -= 1
        return request.limit == 0
    return False
