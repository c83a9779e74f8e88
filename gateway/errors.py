"""callgate's one error tree, and every stable error code.

    CallgateError                 message: what happened and what to do about it
    ├── RequestError              the whole request is refused; `code` is a RequestCode
    │   ├── Unauthenticated       always `unauthenticated`
    │   ├── PermissionDenied      always `permission_denied`
    │   └── StoreUnavailable      always `store_unavailable`
    │       └── StoreConflict     a guarded write found a call changed by someone else
    ├── SidecarUnreachable        (clients) no sidecar answered at `target`; says what to check
    └── ConfigError               start-up refused: a bad manifest, policy, file or flag

A request error names its code explicitly (`RequestError(RequestCode.RUN_NOT_FOUND, "...")`):
no class carries a default that a new raise could inherit by accident. The gRPC status of each
code lives in one table, `gateway.wire.server.GRPC_STATUS`.

Per-call problems are not exceptions: they are results (`CallRecord.error_code`) with the codes
in `CallCode`.
"""

from __future__ import annotations

from enum import StrEnum


class CallCode(StrEnum):
    """Stable per-call error codes (CallResult.error.code)."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    INCOMPLETE_ARGUMENTS = "incomplete_arguments"
    DUPLICATE_CALL_ID = "duplicate_call_id"
    POLICY_DENIED = "policy_denied"
    POLICY_ERROR = "policy_error"
    APPROVAL_REQUIRED = "approval_required"  # the code a PENDING_APPROVAL call carries
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_CANCELLED = "approval_cancelled"
    APPROVAL_MISMATCH = "approval_mismatch"
    BUDGET_EXHAUSTED = "budget_exhausted"
    HELD_BY_BATCH = "held_by_batch"
    TOOL_ERROR = "tool_error"
    TOOL_TIMEOUT = "tool_timeout"
    TOOL_NOT_APPLIED = "tool_not_applied"
    OUTPUT_INVALID = "output_invalid"
    OUTPUT_TOO_LARGE = "output_too_large"
    OUTCOME_UNKNOWN = "outcome_unknown"  # the code an UNKNOWN call carries
    RESOLVED_BY_OPERATOR = "resolved_by_operator"


class RequestCode(StrEnum):
    """Stable request error codes (`google.rpc.ErrorInfo.reason` of a failed RPC)."""

    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    RUN_NOT_FOUND = "run_not_found"
    APPROVAL_NOT_FOUND = "approval_not_found"
    CALL_NOT_FOUND = "call_not_found"
    RUN_PAUSED = "run_paused"
    RUN_FINISHED = "run_finished"
    ALREADY_DECIDED = "already_decided"
    APPROVAL_EXPIRED = "approval_expired"
    NOT_UNKNOWN = "not_unknown"
    TURN_CONFLICT = "turn_conflict"
    RUN_CONFLICT = "run_conflict"
    UNKNOWN_PROVIDER = "unknown_provider"
    MALFORMED_RESPONSE = "malformed_response"
    DUPLICATE_CALL_ID = "duplicate_call_id"
    INVALID_ARGUMENT = "invalid_argument"
    INVALID_PAGE_TOKEN = "invalid_page_token"
    LIMIT_EXCEEDED = "limit_exceeded"
    UNIMPLEMENTED = "unimplemented"
    STORE_UNAVAILABLE = "store_unavailable"
    SHUTTING_DOWN = "shutting_down"
    RESULTS_NOT_RECORDED = "results_not_recorded"
    INTERNAL = "internal"


class CallgateError(Exception):
    """Root of every error callgate raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RequestError(CallgateError):
    """The whole request is refused with a stable code; the server maps it to a gRPC status."""

    def __init__(self, code: RequestCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class Unauthenticated(RequestError):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.UNAUTHENTICATED, message)


class PermissionDenied(RequestError):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.PERMISSION_DENIED, message)


class StoreUnavailable(RequestError):
    """The run store cannot be used; raised by stores, with the driver's error chained."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.STORE_UNAVAILABLE, message)


class StoreConflict(StoreUnavailable):
    """A guarded call update found the row no longer as expected (another replica moved it
    first); the whole commit was rolled back, so nothing here executes on its strength."""


class SidecarUnreachable(CallgateError):
    """A client could not reach the sidecar at `target` (nothing listens there, it stopped
    while answering, TLS on one side only): raised by `gateway.client`, with the transport's
    error chained and a message naming what to check."""

    def __init__(self, target: str, message: str) -> None:
        super().__init__(message)
        self.target = target


class ConfigError(CallgateError):
    """Start-up configuration is wrong: names the source (file, field) and the problem."""

    def report(self) -> str:
        """What to print: one line per problem (this message, unless a subclass has more)."""
        return self.message
