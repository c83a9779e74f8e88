"""Failed RPCs as callgate's exception tree: the one place the client reads a gRPC error.

The sidecar puts the stable code in the status details (`google.rpc.ErrorInfo.reason`); each
code raises its own class (`gateway.errors`), with the gRPC status name in `grpc_status` and the
error chained as the cause. A status without a code (the transport, a proxy, gRPC's own limits)
raises the class the status stands for; nothing is swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from gateway.errors import (
    DeadlineExceeded,
    FailedPrecondition,
    InternalError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RequestCode,
    RequestError,
    RunConflict,
    RunFinished,
    RunPaused,
    SidecarUnreachable,
    StoreUnavailable,
    TurnConflict,
    Unauthenticated,
    Unavailable,
    Unimplemented,
)

_C = RequestCode
_ONE_CODE: dict[RequestCode, Callable[[str], RequestError]] = {
    _C.UNAUTHENTICATED: Unauthenticated,
    _C.PERMISSION_DENIED: PermissionDenied,
    _C.RUN_PAUSED: RunPaused,
    _C.RUN_FINISHED: RunFinished,
    _C.TURN_CONFLICT: TurnConflict,
    _C.RUN_CONFLICT: RunConflict,
    _C.STORE_UNAVAILABLE: StoreUnavailable,
    _C.DEADLINE_EXCEEDED: DeadlineExceeded,
    _C.UNIMPLEMENTED: Unimplemented,
    _C.INTERNAL: InternalError,
}
_FAMILY: dict[RequestCode, type[RequestError]] = {
    **dict.fromkeys(
        (
            _C.RUN_NOT_FOUND,
            _C.APPROVAL_NOT_FOUND,
            _C.CALL_NOT_FOUND,
            _C.QUOTA_NOT_FOUND,
            _C.TOOL_NOT_FOUND,
        ),
        NotFound,
    ),
    **dict.fromkeys(
        (
            _C.UNKNOWN_PROVIDER,
            _C.MALFORMED_RESPONSE,
            _C.DUPLICATE_CALL_ID,
            _C.INVALID_ARGUMENT,
            _C.INVALID_PAGE_TOKEN,
            _C.LIMIT_EXCEEDED,
        ),
        InvalidRequest,
    ),
    **dict.fromkeys((_C.ALREADY_DECIDED, _C.APPROVAL_EXPIRED, _C.NOT_UNKNOWN), FailedPrecondition),
    **dict.fromkeys((_C.SHUTTING_DOWN, _C.RESULTS_NOT_RECORDED, _C.UNAVAILABLE), Unavailable),
}
_S = grpc.StatusCode
# what a status without a callgate code stands for (anything else: INTERNAL)
_BY_STATUS: dict[grpc.StatusCode, RequestCode] = {
    _S.UNAVAILABLE: _C.UNAVAILABLE,
    _S.DEADLINE_EXCEEDED: _C.DEADLINE_EXCEEDED,
    _S.UNAUTHENTICATED: _C.UNAUTHENTICATED,
    _S.PERMISSION_DENIED: _C.PERMISSION_DENIED,
    _S.INVALID_ARGUMENT: _C.INVALID_ARGUMENT,
    _S.RESOURCE_EXHAUSTED: _C.LIMIT_EXCEEDED,
    _S.UNIMPLEMENTED: _C.UNIMPLEMENTED,
}
_DETAILS_KEY = "grpc-status-details-bin"


def error_code(err: BaseException) -> str:
    """The stable callgate code of a failed call: of an error this client raised, or of a
    `grpc.RpcError` from a stub used directly ("" when it carries none)."""
    if isinstance(err, RequestError):
        return err.code.value
    if isinstance(err, grpc.RpcError):
        return _reason(_trailers(err))
    return ""


def request_error(code: RequestCode, message: str, status: str = "") -> RequestError:
    """The exception of one stable code."""
    one = _ONE_CODE.get(code)
    err = one(message) if one is not None else _FAMILY.get(code, RequestError)(code, message)
    err.grpc_status = status
    return err


def from_rpc_error(err: grpc.RpcError, target: str = "", *, tls: bool = False) -> RequestError:
    """The callgate exception of a failed RPC (raise it `from err`); a sidecar that cannot be
    reached at `target` is `SidecarUnreachable`, saying what to check."""
    status = _status_of(err)
    details = _details_of(err)
    reason = _reason(_trailers(err))
    try:
        code = RequestCode(reason) if reason else _BY_STATUS[status]
    except (ValueError, KeyError):
        code = _BY_STATUS.get(status, _C.INTERNAL)
        details = f"{details} ({status.name}{' ' + reason if reason else ''})"
    if not reason and code == _C.UNAVAILABLE:
        return unreachable(target, details, tls=tls, status=status.name)
    elif not reason and code == _C.DEADLINE_EXCEEDED:
        details = f"no answer within the deadline: {details}"
    return request_error(code, details, status.name)


def unreachable(
    target: str, details: str, *, tls: bool, status: str = "UNAVAILABLE"
) -> SidecarUnreachable:
    """No sidecar answered at `target`: what to check, for a command line and a program alike."""
    tls_hint = (
        "; with TLS, that it listens with TLS and --tls-ca trusts its certificate"
        if tls
        else "; if it listens with TLS, connect with --tls (or --tls-ca)"
    )
    where = f" at {target}" if target else ""
    err = SidecarUnreachable(
        target,
        f"cannot reach the sidecar{where}: {details} (unavailable): "
        "check that "
        "--target (CALLGATE_TARGET) names the address `callgate serve` "
        f"listens on and that it is running{tls_hint}",
    )
    err.grpc_status = status
    return err


def _status_of(err: grpc.RpcError) -> grpc.StatusCode:
    code = getattr(err, "code", None)
    value = code() if callable(code) else None
    return value if isinstance(value, grpc.StatusCode) else grpc.StatusCode.UNKNOWN


def _details_of(err: grpc.RpcError) -> str:
    details = getattr(err, "details", None)
    value = details() if callable(details) else None
    return str(value) if value else "no details"


def _trailers(err: grpc.RpcError) -> Iterable[Any]:
    trailing = getattr(err, "trailing_metadata", None)
    value = trailing() if callable(trailing) else None
    return value or ()


def _reason(trailers: Iterable[Any]) -> str:
    for key, value in trailers:
        if key != _DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except DecodeError:
            return ""
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return str(info.reason)
    return ""
