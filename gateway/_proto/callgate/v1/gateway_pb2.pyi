from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CallStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_STATUS_UNSPECIFIED: _ClassVar[CallStatus]
    CALL_STATUS_SUCCEEDED: _ClassVar[CallStatus]
    CALL_STATUS_REJECTED: _ClassVar[CallStatus]
    CALL_STATUS_FAILED: _ClassVar[CallStatus]
    CALL_STATUS_UNKNOWN: _ClassVar[CallStatus]
    CALL_STATUS_PENDING_APPROVAL: _ClassVar[CallStatus]
    CALL_STATUS_HELD: _ClassVar[CallStatus]
    CALL_STATUS_EXECUTING: _ClassVar[CallStatus]
    CALL_STATUS_NOT_RUN: _ClassVar[CallStatus]

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERDICT_UNSPECIFIED: _ClassVar[Verdict]
    VERDICT_ALLOW: _ClassVar[Verdict]
    VERDICT_DENY: _ClassVar[Verdict]
    VERDICT_APPROVAL_REQUIRED: _ClassVar[Verdict]

class NextAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NEXT_ACTION_UNSPECIFIED: _ClassVar[NextAction]
    NEXT_ACTION_CONTINUE: _ClassVar[NextAction]
    NEXT_ACTION_DONE: _ClassVar[NextAction]
    NEXT_ACTION_RETRY_TURN: _ClassVar[NextAction]
    NEXT_ACTION_PAUSED_FOR_APPROVAL: _ClassVar[NextAction]
    NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME: _ClassVar[NextAction]
    NEXT_ACTION_HANDOFF: _ClassVar[NextAction]
    NEXT_ACTION_BUDGET_EXHAUSTED: _ClassVar[NextAction]

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_ACTIVE: _ClassVar[RunState]
    RUN_STATE_PAUSED_FOR_APPROVAL: _ClassVar[RunState]
    RUN_STATE_PAUSED_UNKNOWN_OUTCOME: _ClassVar[RunState]
    RUN_STATE_COMPLETED: _ClassVar[RunState]
    RUN_STATE_HANDED_OFF: _ClassVar[RunState]
    RUN_STATE_BUDGET_EXHAUSTED: _ClassVar[RunState]
    RUN_STATE_CANCELLED: _ClassVar[RunState]

class ApprovalStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_STATUS_UNSPECIFIED: _ClassVar[ApprovalStatus]
    APPROVAL_STATUS_PENDING: _ClassVar[ApprovalStatus]
    APPROVAL_STATUS_APPROVED: _ClassVar[ApprovalStatus]
    APPROVAL_STATUS_DENIED: _ClassVar[ApprovalStatus]
    APPROVAL_STATUS_EXPIRED: _ClassVar[ApprovalStatus]
    APPROVAL_STATUS_CANCELLED: _ClassVar[ApprovalStatus]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_TOOL_REQUEST: _ClassVar[EventKind]
    EVENT_KIND_FINAL: _ClassVar[EventKind]
    EVENT_KIND_REFUSAL: _ClassVar[EventKind]
    EVENT_KIND_INCOMPLETE: _ClassVar[EventKind]
    EVENT_KIND_PAUSED: _ClassVar[EventKind]
    EVENT_KIND_PROVIDER_ERROR: _ClassVar[EventKind]
CALL_STATUS_UNSPECIFIED: CallStatus
CALL_STATUS_SUCCEEDED: CallStatus
CALL_STATUS_REJECTED: CallStatus
CALL_STATUS_FAILED: CallStatus
CALL_STATUS_UNKNOWN: CallStatus
CALL_STATUS_PENDING_APPROVAL: CallStatus
CALL_STATUS_HELD: CallStatus
CALL_STATUS_EXECUTING: CallStatus
CALL_STATUS_NOT_RUN: CallStatus
VERDICT_UNSPECIFIED: Verdict
VERDICT_ALLOW: Verdict
VERDICT_DENY: Verdict
VERDICT_APPROVAL_REQUIRED: Verdict
NEXT_ACTION_UNSPECIFIED: NextAction
NEXT_ACTION_CONTINUE: NextAction
NEXT_ACTION_DONE: NextAction
NEXT_ACTION_RETRY_TURN: NextAction
NEXT_ACTION_PAUSED_FOR_APPROVAL: NextAction
NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME: NextAction
NEXT_ACTION_HANDOFF: NextAction
NEXT_ACTION_BUDGET_EXHAUSTED: NextAction
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_ACTIVE: RunState
RUN_STATE_PAUSED_FOR_APPROVAL: RunState
RUN_STATE_PAUSED_UNKNOWN_OUTCOME: RunState
RUN_STATE_COMPLETED: RunState
RUN_STATE_HANDED_OFF: RunState
RUN_STATE_BUDGET_EXHAUSTED: RunState
RUN_STATE_CANCELLED: RunState
APPROVAL_STATUS_UNSPECIFIED: ApprovalStatus
APPROVAL_STATUS_PENDING: ApprovalStatus
APPROVAL_STATUS_APPROVED: ApprovalStatus
APPROVAL_STATUS_DENIED: ApprovalStatus
APPROVAL_STATUS_EXPIRED: ApprovalStatus
APPROVAL_STATUS_CANCELLED: ApprovalStatus
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_TOOL_REQUEST: EventKind
EVENT_KIND_FINAL: EventKind
EVENT_KIND_REFUSAL: EventKind
EVENT_KIND_INCOMPLETE: EventKind
EVENT_KIND_PAUSED: EventKind
EVENT_KIND_PROVIDER_ERROR: EventKind

class Budget(_message.Message):
    __slots__ = ("max_turns", "max_tool_calls", "max_total_tokens", "max_retries")
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    max_turns: int
    max_tool_calls: int
    max_total_tokens: int
    max_retries: int
    def __init__(self, max_turns: _Optional[int] = ..., max_tool_calls: _Optional[int] = ..., max_total_tokens: _Optional[int] = ..., max_retries: _Optional[int] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Decision(_message.Message):
    __slots__ = ("verdict", "reasons", "policy_revision", "quotas", "tools_revision")
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    POLICY_REVISION_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_REVISION_FIELD_NUMBER: _ClassVar[int]
    verdict: Verdict
    reasons: _containers.RepeatedScalarFieldContainer[str]
    policy_revision: str
    quotas: _containers.RepeatedCompositeFieldContainer[Quota]
    tools_revision: str
    def __init__(self, verdict: _Optional[_Union[Verdict, str]] = ..., reasons: _Optional[_Iterable[str]] = ..., policy_revision: _Optional[str] = ..., quotas: _Optional[_Iterable[_Union[Quota, _Mapping]]] = ..., tools_revision: _Optional[str] = ...) -> None: ...

class Quota(_message.Message):
    __slots__ = ("key", "limit", "window_s", "cost")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_S_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    key: str
    limit: float
    window_s: int
    cost: float
    def __init__(self, key: _Optional[str] = ..., limit: _Optional[float] = ..., window_s: _Optional[int] = ..., cost: _Optional[float] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("call_id", "name", "arguments_json", "complete", "partial")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    name: str
    arguments_json: str
    complete: bool
    partial: bool
    def __init__(self, call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., complete: _Optional[bool] = ..., partial: _Optional[bool] = ...) -> None: ...

class CallResult(_message.Message):
    __slots__ = ("call_id", "tool", "status", "output_json", "error", "decision", "execution_count", "approval_id")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    status: CallStatus
    output_json: str
    error: Error
    decision: Decision
    execution_count: int
    approval_id: str
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., status: _Optional[_Union[CallStatus, str]] = ..., output_json: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ..., execution_count: _Optional[int] = ..., approval_id: _Optional[str] = ...) -> None: ...

class CallRecord(_message.Message):
    __slots__ = ("call_id", "turn_id", "tool", "tool_version", "status", "arguments_sha256", "decision", "output_json", "error", "execution_count", "approval_id", "created_at", "decided_at", "started_at", "finished_at", "arguments_json", "resolved_by", "resolved_at", "resolution_reason")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TOOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_SHA256_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_BY_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_AT_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    turn_id: str
    tool: str
    tool_version: str
    status: CallStatus
    arguments_sha256: str
    decision: Decision
    output_json: str
    error: Error
    execution_count: int
    approval_id: str
    created_at: str
    decided_at: str
    started_at: str
    finished_at: str
    arguments_json: str
    resolved_by: str
    resolved_at: str
    resolution_reason: str
    def __init__(self, call_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., tool: _Optional[str] = ..., tool_version: _Optional[str] = ..., status: _Optional[_Union[CallStatus, str]] = ..., arguments_sha256: _Optional[str] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ..., output_json: _Optional[str] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., execution_count: _Optional[int] = ..., approval_id: _Optional[str] = ..., created_at: _Optional[str] = ..., decided_at: _Optional[str] = ..., started_at: _Optional[str] = ..., finished_at: _Optional[str] = ..., arguments_json: _Optional[str] = ..., resolved_by: _Optional[str] = ..., resolved_at: _Optional[str] = ..., resolution_reason: _Optional[str] = ...) -> None: ...

class TurnRecord(_message.Message):
    __slots__ = ("turn_id", "provider", "api_version", "model", "event", "next", "usage", "raw_response_json", "created_at", "reason")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    RAW_RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    provider: str
    api_version: str
    model: str
    event: EventKind
    next: NextAction
    usage: Usage
    raw_response_json: str
    created_at: str
    reason: str
    def __init__(self, turn_id: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., model: _Optional[str] = ..., event: _Optional[_Union[EventKind, str]] = ..., next: _Optional[_Union[NextAction, str]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., raw_response_json: _Optional[str] = ..., created_at: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("run_id", "state", "subject", "tenant", "turns_used", "tool_calls_used", "usage_total", "budget", "calls", "turns", "pause_reason", "provider", "api_version", "labels", "created_at", "updated_at", "retries_in_row", "conversation_json", "next_page_token", "turn_count")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TURNS_USED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_USED_FIELD_NUMBER: _ClassVar[int]
    USAGE_TOTAL_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_REASON_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    RETRIES_IN_ROW_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_JSON_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    state: RunState
    subject: str
    tenant: str
    turns_used: int
    tool_calls_used: int
    usage_total: Usage
    budget: Budget
    calls: _containers.RepeatedCompositeFieldContainer[CallRecord]
    turns: _containers.RepeatedCompositeFieldContainer[TurnRecord]
    pause_reason: str
    provider: str
    api_version: str
    labels: _containers.ScalarMap[str, str]
    created_at: str
    updated_at: str
    retries_in_row: int
    conversation_json: str
    next_page_token: str
    turn_count: int
    def __init__(self, run_id: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., subject: _Optional[str] = ..., tenant: _Optional[str] = ..., turns_used: _Optional[int] = ..., tool_calls_used: _Optional[int] = ..., usage_total: _Optional[_Union[Usage, _Mapping]] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., calls: _Optional[_Iterable[_Union[CallRecord, _Mapping]]] = ..., turns: _Optional[_Iterable[_Union[TurnRecord, _Mapping]]] = ..., pause_reason: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., created_at: _Optional[str] = ..., updated_at: _Optional[str] = ..., retries_in_row: _Optional[int] = ..., conversation_json: _Optional[str] = ..., next_page_token: _Optional[str] = ..., turn_count: _Optional[int] = ...) -> None: ...

class TurnOutcome(_message.Message):
    __slots__ = ("run_id", "turn_id", "next", "results", "reason", "run_state", "provider_input_json")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_STATE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    turn_id: str
    next: NextAction
    results: _containers.RepeatedCompositeFieldContainer[CallResult]
    reason: str
    run_state: RunState
    provider_input_json: str
    def __init__(self, run_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., next: _Optional[_Union[NextAction, str]] = ..., results: _Optional[_Iterable[_Union[CallResult, _Mapping]]] = ..., reason: _Optional[str] = ..., run_state: _Optional[_Union[RunState, str]] = ..., provider_input_json: _Optional[str] = ...) -> None: ...

class StartRunRequest(_message.Message):
    __slots__ = ("run_id", "provider", "api_version", "budget", "labels", "conversation_json")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    CONVERSATION_JSON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    provider: str
    api_version: str
    budget: Budget
    labels: _containers.ScalarMap[str, str]
    conversation_json: str
    def __init__(self, run_id: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., conversation_json: _Optional[str] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("state", "page_size", "page_token", "subject", "every_subject")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    EVERY_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    state: _containers.RepeatedScalarFieldContainer[RunState]
    page_size: int
    page_token: str
    subject: str
    every_subject: bool
    def __init__(self, state: _Optional[_Iterable[_Union[RunState, str]]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., subject: _Optional[str] = ..., every_subject: _Optional[bool] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs", "next_page_token")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    next_page_token: str
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetRunRequest(_message.Message):
    __slots__ = ("run_id", "page_size", "page_token")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    page_size: int
    page_token: str
    def __init__(self, run_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ToolRequest(_message.Message):
    __slots__ = ("calls",)
    CALLS_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    def __init__(self, calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ...) -> None: ...

class FinalAnswer(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class Refusal(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class Incomplete(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class Paused(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ProviderError(_message.Message):
    __slots__ = ("kind", "message", "retryable")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    message: str
    retryable: bool
    def __init__(self, kind: _Optional[str] = ..., message: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class SubmitTurnRequest(_message.Message):
    __slots__ = ("run_id", "turn_id", "provider", "api_version", "model", "tool_request", "final", "refusal", "incomplete", "paused", "provider_error", "usage", "raw_response_json")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOOL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    INCOMPLETE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    RAW_RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    turn_id: str
    provider: str
    api_version: str
    model: str
    tool_request: ToolRequest
    final: FinalAnswer
    refusal: Refusal
    incomplete: Incomplete
    paused: Paused
    provider_error: ProviderError
    usage: Usage
    raw_response_json: str
    def __init__(self, run_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., model: _Optional[str] = ..., tool_request: _Optional[_Union[ToolRequest, _Mapping]] = ..., final: _Optional[_Union[FinalAnswer, _Mapping]] = ..., refusal: _Optional[_Union[Refusal, _Mapping]] = ..., incomplete: _Optional[_Union[Incomplete, _Mapping]] = ..., paused: _Optional[_Union[Paused, _Mapping]] = ..., provider_error: _Optional[_Union[ProviderError, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., raw_response_json: _Optional[str] = ...) -> None: ...

class SubmitProviderResponseRequest(_message.Message):
    __slots__ = ("run_id", "provider", "api_version", "response_json", "turn_id", "model")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_JSON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    provider: str
    api_version: str
    response_json: str
    turn_id: str
    model: str
    def __init__(self, run_id: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., response_json: _Optional[str] = ..., turn_id: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class ProviderStreamEvent(_message.Message):
    __slots__ = ("run_id", "provider", "api_version", "turn_id", "event_json")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_JSON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    provider: str
    api_version: str
    turn_id: str
    event_json: str
    def __init__(self, run_id: _Optional[str] = ..., provider: _Optional[str] = ..., api_version: _Optional[str] = ..., turn_id: _Optional[str] = ..., event_json: _Optional[str] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("provider", "api_version")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    provider: str
    api_version: str
    def __init__(self, provider: _Optional[str] = ..., api_version: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools_json", "tools")
    TOOLS_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools_json: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolSummary]
    def __init__(self, tools_json: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ToolSummary, _Mapping]]] = ...) -> None: ...

class ToolSummary(_message.Message):
    __slots__ = ("name", "version", "effect", "description", "input_schema_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    effect: str
    description: str
    input_schema_json: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., effect: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ...) -> None: ...

class AuthorizeRequest(_message.Message):
    __slots__ = ("run_id", "calls")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    def __init__(self, run_id: _Optional[str] = ..., calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ...) -> None: ...

class CallDecision(_message.Message):
    __slots__ = ("call_id", "decision", "error")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    decision: Decision
    error: Error
    def __init__(self, call_id: _Optional[str] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class AuthorizeResponse(_message.Message):
    __slots__ = ("decisions",)
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    decisions: _containers.RepeatedCompositeFieldContainer[CallDecision]
    def __init__(self, decisions: _Optional[_Iterable[_Union[CallDecision, _Mapping]]] = ...) -> None: ...

class Approval(_message.Message):
    __slots__ = ("approval_id", "run_id", "call_id", "tool", "tool_version", "arguments_json", "arguments_sha256", "status", "requested_by", "decided_by", "created_at", "expires_at", "reason", "turn_id", "decided_at", "tenant", "requester_roles", "policy_reasons", "caller_may_decide")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TOOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_SHA256_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_ROLES_FIELD_NUMBER: _ClassVar[int]
    POLICY_REASONS_FIELD_NUMBER: _ClassVar[int]
    CALLER_MAY_DECIDE_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    run_id: str
    call_id: str
    tool: str
    tool_version: str
    arguments_json: str
    arguments_sha256: str
    status: ApprovalStatus
    requested_by: str
    decided_by: str
    created_at: str
    expires_at: str
    reason: str
    turn_id: str
    decided_at: str
    tenant: str
    requester_roles: _containers.RepeatedScalarFieldContainer[str]
    policy_reasons: _containers.RepeatedScalarFieldContainer[str]
    caller_may_decide: bool
    def __init__(self, approval_id: _Optional[str] = ..., run_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., tool_version: _Optional[str] = ..., arguments_json: _Optional[str] = ..., arguments_sha256: _Optional[str] = ..., status: _Optional[_Union[ApprovalStatus, str]] = ..., requested_by: _Optional[str] = ..., decided_by: _Optional[str] = ..., created_at: _Optional[str] = ..., expires_at: _Optional[str] = ..., reason: _Optional[str] = ..., turn_id: _Optional[str] = ..., decided_at: _Optional[str] = ..., tenant: _Optional[str] = ..., requester_roles: _Optional[_Iterable[str]] = ..., policy_reasons: _Optional[_Iterable[str]] = ..., caller_may_decide: _Optional[bool] = ...) -> None: ...

class ListApprovalsRequest(_message.Message):
    __slots__ = ("run_id", "status", "tool", "page_size", "page_token", "approval_id")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    status: _containers.RepeatedScalarFieldContainer[ApprovalStatus]
    tool: str
    page_size: int
    page_token: str
    approval_id: str
    def __init__(self, run_id: _Optional[str] = ..., status: _Optional[_Iterable[_Union[ApprovalStatus, str]]] = ..., tool: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., approval_id: _Optional[str] = ...) -> None: ...

class ListApprovalsResponse(_message.Message):
    __slots__ = ("approvals", "next_page_token")
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[Approval]
    next_page_token: str
    def __init__(self, approvals: _Optional[_Iterable[_Union[Approval, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DecideApprovalRequest(_message.Message):
    __slots__ = ("approval_id", "approve", "reason")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    approve: bool
    reason: str
    def __init__(self, approval_id: _Optional[str] = ..., approve: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class DecideApprovalResponse(_message.Message):
    __slots__ = ("approval", "result")
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    result: CallResult
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ..., result: _Optional[_Union[CallResult, _Mapping]] = ...) -> None: ...

class ResolveCallRequest(_message.Message):
    __slots__ = ("run_id", "call_id", "outcome", "output_json", "reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    call_id: str
    outcome: CallStatus
    output_json: str
    reason: str
    def __init__(self, run_id: _Optional[str] = ..., call_id: _Optional[str] = ..., outcome: _Optional[_Union[CallStatus, str]] = ..., output_json: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ResumeRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class WatchRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class CancelRunRequest(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RejectedReload(_message.Message):
    __slots__ = ("file", "line", "message", "at", "column", "problems")
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    file: str
    line: int
    message: str
    at: str
    column: int
    problems: _containers.RepeatedCompositeFieldContainer[PolicyProblem]
    def __init__(self, file: _Optional[str] = ..., line: _Optional[int] = ..., message: _Optional[str] = ..., at: _Optional[str] = ..., column: _Optional[int] = ..., problems: _Optional[_Iterable[_Union[PolicyProblem, _Mapping]]] = ...) -> None: ...

class PolicyProblem(_message.Message):
    __slots__ = ("file", "line", "column", "message")
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    file: str
    line: int
    column: int
    message: str
    def __init__(self, file: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("engine", "policy_revision", "policy_loaded_at", "last_rejected_reload", "store", "version", "tools", "shadow", "tools_revision", "tools_loaded_at", "last_rejected_tools_reload")
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    POLICY_REVISION_FIELD_NUMBER: _ClassVar[int]
    POLICY_LOADED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_REJECTED_RELOAD_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SHADOW_FIELD_NUMBER: _ClassVar[int]
    TOOLS_REVISION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_LOADED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_REJECTED_TOOLS_RELOAD_FIELD_NUMBER: _ClassVar[int]
    engine: str
    policy_revision: str
    policy_loaded_at: str
    last_rejected_reload: RejectedReload
    store: str
    version: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    shadow: ShadowStatus
    tools_revision: str
    tools_loaded_at: str
    last_rejected_tools_reload: RejectedReload
    def __init__(self, engine: _Optional[str] = ..., policy_revision: _Optional[str] = ..., policy_loaded_at: _Optional[str] = ..., last_rejected_reload: _Optional[_Union[RejectedReload, _Mapping]] = ..., store: _Optional[str] = ..., version: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., shadow: _Optional[_Union[ShadowStatus, _Mapping]] = ..., tools_revision: _Optional[str] = ..., tools_loaded_at: _Optional[str] = ..., last_rejected_tools_reload: _Optional[_Union[RejectedReload, _Mapping]] = ...) -> None: ...

class ShadowStatus(_message.Message):
    __slots__ = ("compared", "disagreed", "dropped", "failed", "opa_revision", "opa_reachable")
    COMPARED_FIELD_NUMBER: _ClassVar[int]
    DISAGREED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    OPA_REVISION_FIELD_NUMBER: _ClassVar[int]
    OPA_REACHABLE_FIELD_NUMBER: _ClassVar[int]
    compared: int
    disagreed: int
    dropped: int
    failed: int
    opa_revision: str
    opa_reachable: bool
    def __init__(self, compared: _Optional[int] = ..., disagreed: _Optional[int] = ..., dropped: _Optional[int] = ..., failed: _Optional[int] = ..., opa_revision: _Optional[str] = ..., opa_reachable: _Optional[bool] = ...) -> None: ...

class QueryAuditRequest(_message.Message):
    __slots__ = ("run_id", "call_id", "tool", "subject", "verdict", "status", "since", "until", "limit", "after_seq", "follow", "tenant", "tail")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    call_id: str
    tool: str
    subject: str
    verdict: _containers.RepeatedScalarFieldContainer[Verdict]
    status: _containers.RepeatedScalarFieldContainer[CallStatus]
    since: str
    until: str
    limit: int
    after_seq: int
    follow: bool
    tenant: str
    tail: int
    def __init__(self, run_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., subject: _Optional[str] = ..., verdict: _Optional[_Iterable[_Union[Verdict, str]]] = ..., status: _Optional[_Iterable[_Union[CallStatus, str]]] = ..., since: _Optional[str] = ..., until: _Optional[str] = ..., limit: _Optional[int] = ..., after_seq: _Optional[int] = ..., follow: _Optional[bool] = ..., tenant: _Optional[str] = ..., tail: _Optional[int] = ...) -> None: ...

class AuditRecord(_message.Message):
    __slots__ = ("seq", "time", "kind", "run_id", "turn_id", "call_id", "provider", "tool", "tool_version", "subject", "tenant", "arguments_summary_json", "arguments_sha256", "decision", "status", "error_code", "execution_count", "policy_revision", "prev_hash", "hash", "actor", "actor_tenant", "approval_id", "message", "detail_json", "input_sha256", "key_id", "seal", "approval_status")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TOOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_SUMMARY_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_SHA256_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    POLICY_REVISION_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    ACTOR_TENANT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_SHA256_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SEAL_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_STATUS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: str
    kind: str
    run_id: str
    turn_id: str
    call_id: str
    provider: str
    tool: str
    tool_version: str
    subject: str
    tenant: str
    arguments_summary_json: str
    arguments_sha256: str
    decision: Decision
    status: CallStatus
    error_code: str
    execution_count: int
    policy_revision: str
    prev_hash: str
    hash: str
    actor: str
    actor_tenant: str
    approval_id: str
    message: str
    detail_json: str
    input_sha256: str
    key_id: str
    seal: str
    approval_status: ApprovalStatus
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[str] = ..., kind: _Optional[str] = ..., run_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., provider: _Optional[str] = ..., tool: _Optional[str] = ..., tool_version: _Optional[str] = ..., subject: _Optional[str] = ..., tenant: _Optional[str] = ..., arguments_summary_json: _Optional[str] = ..., arguments_sha256: _Optional[str] = ..., decision: _Optional[_Union[Decision, _Mapping]] = ..., status: _Optional[_Union[CallStatus, str]] = ..., error_code: _Optional[str] = ..., execution_count: _Optional[int] = ..., policy_revision: _Optional[str] = ..., prev_hash: _Optional[str] = ..., hash: _Optional[str] = ..., actor: _Optional[str] = ..., actor_tenant: _Optional[str] = ..., approval_id: _Optional[str] = ..., message: _Optional[str] = ..., detail_json: _Optional[str] = ..., input_sha256: _Optional[str] = ..., key_id: _Optional[str] = ..., seal: _Optional[str] = ..., approval_status: _Optional[_Union[ApprovalStatus, str]] = ...) -> None: ...

class ListQuotasRequest(_message.Message):
    __slots__ = ("prefix", "page_size", "page_token")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    page_size: int
    page_token: str
    def __init__(self, prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class QuotaUsage(_message.Message):
    __slots__ = ("key", "used", "limit", "window_s", "reservations", "updated_at")
    KEY_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WINDOW_S_FIELD_NUMBER: _ClassVar[int]
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    key: str
    used: float
    limit: float
    window_s: int
    reservations: int
    updated_at: str
    def __init__(self, key: _Optional[str] = ..., used: _Optional[float] = ..., limit: _Optional[float] = ..., window_s: _Optional[int] = ..., reservations: _Optional[int] = ..., updated_at: _Optional[str] = ...) -> None: ...

class ListQuotasResponse(_message.Message):
    __slots__ = ("quotas", "next_page_token")
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    quotas: _containers.RepeatedCompositeFieldContainer[QuotaUsage]
    next_page_token: str
    def __init__(self, quotas: _Optional[_Iterable[_Union[QuotaUsage, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ResetQuotaRequest(_message.Message):
    __slots__ = ("key", "reason")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    key: str
    reason: str
    def __init__(self, key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ResetQuotaResponse(_message.Message):
    __slots__ = ("key", "removed")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    key: str
    removed: int
    def __init__(self, key: _Optional[str] = ..., removed: _Optional[int] = ...) -> None: ...

class ListToolPinsRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class ToolDefinitionChange(_message.Message):
    __slots__ = ("fingerprint", "first_seen_at", "fields", "diff")
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    fingerprint: str
    first_seen_at: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    diff: str
    def __init__(self, fingerprint: _Optional[str] = ..., first_seen_at: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ..., diff: _Optional[str] = ...) -> None: ...

class ToolPin(_message.Message):
    __slots__ = ("name", "fingerprint", "pinned_at", "pinned_by", "reason", "changed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    PINNED_AT_FIELD_NUMBER: _ClassVar[int]
    PINNED_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    name: str
    fingerprint: str
    pinned_at: str
    pinned_by: str
    reason: str
    changed: _containers.RepeatedCompositeFieldContainer[ToolDefinitionChange]
    def __init__(self, name: _Optional[str] = ..., fingerprint: _Optional[str] = ..., pinned_at: _Optional[str] = ..., pinned_by: _Optional[str] = ..., reason: _Optional[str] = ..., changed: _Optional[_Iterable[_Union[ToolDefinitionChange, _Mapping]]] = ...) -> None: ...

class ListToolPinsResponse(_message.Message):
    __slots__ = ("pins",)
    PINS_FIELD_NUMBER: _ClassVar[int]
    pins: _containers.RepeatedCompositeFieldContainer[ToolPin]
    def __init__(self, pins: _Optional[_Iterable[_Union[ToolPin, _Mapping]]] = ...) -> None: ...

class ApproveToolPinRequest(_message.Message):
    __slots__ = ("name", "fingerprint", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    fingerprint: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., fingerprint: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ApproveToolPinResponse(_message.Message):
    __slots__ = ("pin", "previous_fingerprint")
    PIN_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    pin: ToolPin
    previous_fingerprint: str
    def __init__(self, pin: _Optional[_Union[ToolPin, _Mapping]] = ..., previous_fingerprint: _Optional[str] = ...) -> None: ...
