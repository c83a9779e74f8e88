"""callgate's one error tree, and every stable error code.

    CallgateError                 message: what happened and what to do about it
    ├── RequestError              the whole request is refused; `code` is a RequestCode
    │   ├── Unauthenticated       always `unauthenticated`
    │   ├── PermissionDenied      always `permission_denied`
    │   ├── NotFound              `run_not_found`, `approval_not_found`, `call_not_found`,
    │   │                         `quota_not_found`, `tool_not_found`
    │   ├── InvalidRequest        `invalid_argument`, `malformed_response`, `unknown_provider`,
    │   │                         `duplicate_call_id`, `invalid_page_token`, `limit_exceeded`
    │   ├── FailedPrecondition    `already_decided`, `approval_expired`, `not_unknown`
    │   │   ├── RunPaused         always `run_paused`: the run waits (ResumeRun, WatchRun)
    │   │   └── RunFinished       always `run_finished`
    │   ├── TurnConflict          always `turn_conflict`
    │   ├── RunConflict           always `run_conflict`
    │   ├── Unavailable           `shutting_down`, `results_not_recorded`, `unavailable`
    │   │   ├── SidecarUnreachable (clients) no sidecar answered at `target`: what to check
    │   │   └── StoreUnavailable  always `store_unavailable`
    │   │       └── StoreConflict a guarded write found a call changed by someone else
    │   ├── DeadlineExceeded      always `deadline_exceeded`
    │   ├── Unimplemented         always `unimplemented`
    │   └── InternalError         always `internal`: a bug
    ├── ModelError                a model request failed (`kind`, `retryable`): raised by a
    │                             `gateway.loop` model, recorded as the turn's provider error
    ├── LoopError                 the reference loop cannot go on (a run it cannot rebuild)
    │   └── ScriptExhausted       a scripted model was asked for more than its script holds
    └── ConfigError               start-up refused: a bad manifest, policy, file or flag

A request error names its code explicitly (`RequestError(RequestCode.RUN_NOT_FOUND, "...")`):
no class carries a default that a new raise could inherit by accident, except the classes whose
code is "always" one. The gRPC status of each code lives in one table,
`gateway.wire.server.GRPC_STATUS`; the client (`gateway.client`) raises the class of each code
it receives, with `grpc_status` set to the status it came with. Two codes are the client's own,
never sent by a sidecar: `unavailable` (no sidecar answered) and `deadline_exceeded` (none
answered within the call's deadline).

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
    QUOTA_EXCEEDED = "quota_exceeded"
    RESULT_WITHHELD = "result_withheld"  # on a SUCCEEDED call whose result policy withheld
    TOOL_CHANGED = "tool_changed"


class RequestCode(StrEnum):
    """Stable request error codes (`google.rpc.ErrorInfo.reason` of a failed RPC)."""

    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    RUN_NOT_FOUND = "run_not_found"
    APPROVAL_NOT_FOUND = "approval_not_found"
    CALL_NOT_FOUND = "call_not_found"
    QUOTA_NOT_FOUND = "quota_not_found"
    TOOL_NOT_FOUND = "tool_not_found"
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
    UNAVAILABLE = "unavailable"  # the client's own: no sidecar answered
    DEADLINE_EXCEEDED = "deadline_exceeded"  # the client's own: no answer within the deadline


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
        self.grpc_status = ""  # set by the client: the gRPC status name the sidecar answered


class Unauthenticated(RequestError):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.UNAUTHENTICATED, message)


class PermissionDenied(RequestError):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.PERMISSION_DENIED, message)


class NotFound(RequestError):
    """The run, approval or call named does not exist (or not for this caller)."""


class InvalidRequest(RequestError):
    """The request itself is wrong: a field, a provider, a response that is not the
    provider's, a size past a limit. Repeating it unchanged gets the same answer."""


class FailedPrecondition(RequestError):
    """The request does not fit the state it found (an approval already decided or expired,
    a call that is not UNKNOWN)."""


class RunPaused(FailedPrecondition):
    """The run waits for an approval or an unknown outcome: ResumeRun or WatchRun, not a new
    turn."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.RUN_PAUSED, message)


class RunFinished(FailedPrecondition):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.RUN_FINISHED, message)


class TurnConflict(RequestError):
    """This turn ID was submitted before with other content."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.TURN_CONFLICT, message)


class RunConflict(RequestError):
    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.RUN_CONFLICT, message)


class Unavailable(RequestError):
    """Nothing could be done now (no sidecar answered, it is shutting down, its store is
    down); the request may be repeated later."""


class SidecarUnreachable(Unavailable):
    """A client could not reach the sidecar at `target` (nothing listens there, it stopped
    while answering, TLS on one side only): raised by `gateway.client`, with the transport's
    error chained and a message naming what to check."""

    def __init__(self, target: str, message: str) -> None:
        super().__init__(RequestCode.UNAVAILABLE, message)
        self.target = target


class DeadlineExceeded(RequestError):
    """No answer within the call's deadline: the sidecar may still be working on it."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.DEADLINE_EXCEEDED, message)


class Unimplemented(RequestError):
    """The sidecar does not know this RPC (a client built from a newer proto)."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.UNIMPLEMENTED, message)


class InternalError(RequestError):
    """A bug in callgate: no input may cause it."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.INTERNAL, message)


class StoreUnavailable(Unavailable):
    """The run store cannot be used; raised by stores, with the driver's error chained."""

    def __init__(self, message: str) -> None:
        super().__init__(RequestCode.STORE_UNAVAILABLE, message)


class StoreConflict(StoreUnavailable):
    """A guarded call update found the row no longer as expected (another replica moved it
    first); the whole commit was rolled back, so nothing here executes on its strength."""


class ModelError(CallgateError):
    """A model request failed: `kind` is timeout | transport | rate_limit | server | other,
    `retryable` whether asking again may succeed. The loop records it as the turn's provider
    error; callgate answers RETRY_TURN (while the run's retries last) or HANDOFF."""

    def __init__(self, message: str, *, kind: str = "other", retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


class LoopError(CallgateError):
    """The reference loop cannot go on with this run, and says why."""


class ScriptExhausted(LoopError):
    """A scripted model was asked once more than its script holds."""


class ConfigError(CallgateError):
    """Start-up configuration is wrong: names the source (file, field) and the problem."""

    def report(self) -> str:
        """What to print: one line per problem (this message, unless a subclass has more)."""
        return self.message
