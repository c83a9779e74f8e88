"""callgate's client: every RPC of the sidecar, typed, with callgate's own errors.

    AsyncGatewayClient   the asyncio client (grpc.aio): one method per RPC
    GatewayClient        the same, synchronous: a thin wrapper running the asyncio client
    RetryPolicy          how often a request that is safe to repeat is repeated
    tool_call            one proposed call (`pb.ToolCall`) from a name and arguments
    error_code           the stable code of an error (callgate's, or a raw `grpc.RpcError`'s)

Every failure is raised as callgate's exception tree (`gateway.errors`, re-exported here):
`RunPaused`, `TurnConflict`, `NotFound`, `InvalidRequest`, `Unauthenticated`, ... each with its
stable `code` and the gRPC status it came with (`grpc_status`). The client needs grpcio,
grpcio-status and protobuf only (`pip install 'callgate[client]'`). Reference: docs/client.md.
"""

from gateway.client._aio import DEFAULT_TARGET, AsyncGatewayClient
from gateway.client._errors import error_code
from gateway.client._requests import tool_call
from gateway.client._retry import RULES, RetryPolicy
from gateway.client._sync import GatewayClient, Stream
from gateway.errors import (
    CallgateError,
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
    StoreUnavailable,
    TurnConflict,
    Unauthenticated,
    Unavailable,
    Unimplemented,
)

__all__ = [
    "DEFAULT_TARGET",
    "RULES",
    "AsyncGatewayClient",
    "CallgateError",
    "DeadlineExceeded",
    "FailedPrecondition",
    "GatewayClient",
    "InternalError",
    "InvalidRequest",
    "NotFound",
    "PermissionDenied",
    "RequestCode",
    "RequestError",
    "RetryPolicy",
    "RunConflict",
    "RunFinished",
    "RunPaused",
    "StoreUnavailable",
    "Stream",
    "TurnConflict",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "error_code",
    "tool_call",
]
