"""callgate's one error tree.

    CallgateError                      code: a stable lower_snake string (DESIGN §4)
    ├── RequestError                   the whole request is refused (a gRPC status)
    │   ├── Unauthenticated            unauthenticated
    │   ├── PermissionDenied           permission_denied
    │   ├── NotFound                   run_not_found, approval_not_found, call_not_found
    │   ├── FailedPrecondition         run_paused, run_finished, already_decided, ...
    │   ├── AlreadyExists              turn_conflict, run_conflict
    │   ├── InvalidArgument            unknown_provider, malformed_response, duplicate_call_id, ...
    │   ├── Unimplemented              unimplemented
    │   ├── StoreUnavailable           store_unavailable (nothing executed)
    │   └── Internal                   internal (a defect; logged)
    └── ConfigError                    start-up refused: a bad manifest, policy or flag

Per-call problems are not exceptions: they are results (`CallOutcome.error`) with the codes in
`CallCode`. The mapping of request errors to gRPC status codes lives in `gateway/server.py`
alone.
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
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_CANCELLED = "approval_cancelled"
    BUDGET_EXHAUSTED = "budget_exhausted"
    HELD_BY_BATCH = "held_by_batch"
    TOOL_ERROR = "tool_error"
    TOOL_TIMEOUT = "tool_timeout"
    TOOL_NOT_APPLIED = "tool_not_applied"
    OUTPUT_INVALID = "output_invalid"
    OUTCOME_UNKNOWN = "outcome_unknown"
    RESOLVED_BY_OPERATOR = "resolved_by_operator"
    STORE_UNAVAILABLE = "store_unavailable"
    RUN_CANCELLED = "run_cancelled"


class CallgateError(Exception):
    """Root of every error callgate raises on purpose."""

    code: str = "internal"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class RequestError(CallgateError):
    """The whole request is refused; the server maps the class to a gRPC status."""


class Unauthenticated(RequestError):
    code = "unauthenticated"


class PermissionDenied(RequestError):
    code = "permission_denied"


class NotFound(RequestError):
    code = "run_not_found"


class FailedPrecondition(RequestError):
    code = "run_paused"


class AlreadyExists(RequestError):
    code = "turn_conflict"


class InvalidArgument(RequestError):
    code = "invalid_argument"


class Unimplemented(RequestError):
    code = "unimplemented"


class StoreUnavailable(RequestError):
    code = "store_unavailable"


class Internal(RequestError):
    code = "internal"


class ConfigError(CallgateError):
    """Start-up configuration is wrong: names the source (file, field) and the problem."""

    code = "config_error"
