"""Plain domain types shared by the runner, policy, store and executors.

Protobuf stops at `gateway/wire/server.py`; everything below it speaks these types. The call
lifecycle (docs/architecture.md) lives here as an enum plus the one table of allowed transitions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

MAX_COUNT = 2**63 - 1  # the largest counter the stores (and int64 fields) hold


class CallStatus(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    REJECTED = "REJECTED"
    FAILED = "FAILED"
    UNKNOWN = "UNKNOWN"
    PENDING_APPROVAL = "PENDING_APPROVAL"
    HELD = "HELD"
    EXECUTING = "EXECUTING"
    NOT_RUN = "NOT_RUN"
    # a call accepted into a turn, not yet decided (never leaves the runner)
    PROPOSED = "PROPOSED"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset(
    {CallStatus.SUCCEEDED, CallStatus.REJECTED, CallStatus.FAILED, CallStatus.NOT_RUN}
)

# What may follow each status (docs/architecture.md). PROPOSED is the runner's entry state.
TRANSITIONS: dict[CallStatus, frozenset[CallStatus]] = {
    CallStatus.PROPOSED: frozenset(
        {
            CallStatus.REJECTED,
            CallStatus.PENDING_APPROVAL,
            CallStatus.HELD,
            CallStatus.EXECUTING,
            CallStatus.NOT_RUN,
        }
    ),
    CallStatus.PENDING_APPROVAL: frozenset(
        {CallStatus.EXECUTING, CallStatus.HELD, CallStatus.REJECTED, CallStatus.NOT_RUN}
    ),
    CallStatus.HELD: frozenset({CallStatus.EXECUTING, CallStatus.NOT_RUN}),
    CallStatus.EXECUTING: frozenset({CallStatus.SUCCEEDED, CallStatus.FAILED, CallStatus.UNKNOWN}),
    CallStatus.UNKNOWN: frozenset({CallStatus.SUCCEEDED, CallStatus.FAILED}),
    CallStatus.SUCCEEDED: frozenset(),
    CallStatus.REJECTED: frozenset(),
    CallStatus.FAILED: frozenset(),
    CallStatus.NOT_RUN: frozenset(),
}


class IllegalTransition(RuntimeError):
    """A programming error: the runner tried a transition the call lifecycle forbids."""


def check_transition(old: CallStatus, new: CallStatus) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"call status {old} may not become {new}")


class Verdict(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    ALLOW = "ALLOW"
    DENY = "DENY"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"


class NextAction(StrEnum):
    CONTINUE = "CONTINUE"
    DONE = "DONE"
    RETRY_TURN = "RETRY_TURN"
    PAUSED_FOR_APPROVAL = "PAUSED_FOR_APPROVAL"
    PAUSED_UNKNOWN_OUTCOME = "PAUSED_UNKNOWN_OUTCOME"
    HANDOFF = "HANDOFF"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"


class RunState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED_FOR_APPROVAL = "PAUSED_FOR_APPROVAL"
    PAUSED_UNKNOWN_OUTCOME = "PAUSED_UNKNOWN_OUTCOME"
    COMPLETED = "COMPLETED"
    HANDED_OFF = "HANDED_OFF"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in (
            RunState.COMPLETED,
            RunState.HANDED_OFF,
            RunState.BUDGET_EXHAUSTED,
            RunState.CANCELLED,
        )

    @property
    def paused(self) -> bool:
        return self in (RunState.PAUSED_FOR_APPROVAL, RunState.PAUSED_UNKNOWN_OUTCOME)


class ApprovalStatus(StrEnum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    DENIED = "DENIED"
    EXPIRED = "EXPIRED"
    CANCELLED = "CANCELLED"


class EventKind(StrEnum):
    TOOL_REQUEST = "TOOL_REQUEST"
    FINAL = "FINAL"
    REFUSAL = "REFUSAL"
    INCOMPLETE = "INCOMPLETE"
    PAUSED = "PAUSED"
    PROVIDER_ERROR = "PROVIDER_ERROR"


class Effect(StrEnum):
    READ = "read"
    WRITE = "write"


def now_utc() -> datetime:
    return datetime.now(UTC)


def rfc3339(t: datetime | None) -> str:
    return "" if t is None else t.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Identity:
    subject: str
    tenant: str = ""
    roles: tuple[str, ...] = ()
    claims: dict[str, Any] = field(default_factory=dict)

    def as_input(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "tenant": self.tenant,
            "roles": list(self.roles),
            "claims": dict(self.claims),
        }


@dataclass(frozen=True)
class Budget:
    max_turns: int = 0
    max_tool_calls: int = 0
    max_total_tokens: int = 0
    max_retries: int = 0

    @property
    def retries_allowed(self) -> int:
        return self.max_retries or 2


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        """Saturating at the largest count a store keeps (2^63 − 1): never an overflow."""
        return Usage(
            min(self.input_tokens + other.input_tokens, MAX_COUNT),
            min(self.output_tokens + other.output_tokens, MAX_COUNT),
        )


@dataclass(frozen=True)
class Quota:
    """What a call costs against one key: at most `limit` in any `window_s` seconds."""

    key: str
    limit: float
    window_s: int
    cost: float


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    policy_revision: str = ""
    approval_ttl_s: int | None = None
    error: str = ""  # set when the decision is a fail-closed policy_error
    input_sha256: str = ""  # sha256 of the exact input JSON the policy evaluated (replay key)
    quotas: tuple[Quota, ...] = ()  # reserved when the decision commits (an allowing one)
    tools_revision: str = ""  # the --tools set the call was judged against (Registry.revision)
    tool_fingerprint: str = ""  # the tool's definition the call was judged under (gateway.pins)

    @property
    def is_policy_error(self) -> bool:
        return bool(self.error)


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing reads: one tenant's, of one subject (None: every subject of the
    tenant), in one of these states (empty: any)."""

    tenant: str
    subject: str | None
    states: tuple[RunState, ...] = ()


@dataclass(frozen=True)
class ToolCall:
    """A proposed call. `complete` False: the call is known to be a fragment (marked `partial`
    on the wire, or cut off in a provider's response) and is rejected without being read."""

    call_id: str
    name: str
    arguments_json: str
    complete: bool = True


@dataclass(frozen=True)
class TurnEvent:
    """One model turn, normalized: exactly one kind with its payload."""

    kind: EventKind
    calls: tuple[ToolCall, ...] = ()
    text: str = ""  # final / refusal text, incomplete / paused reason, provider error message
    error_kind: str = ""
    retryable: bool = False

    def detail(self) -> EventDetail:
        return EventDetail(self.text, self.error_kind, self.retryable)


@dataclass(frozen=True)
class EventDetail:
    """What a turn's event said besides its calls (kept with the turn record)."""

    text: str = ""
    error_kind: str = ""
    retryable: bool = False


@dataclass(frozen=True)
class TurnInput:
    run_id: str
    turn_id: str
    event: TurnEvent
    provider: str = ""
    api_version: str = ""
    model: str = ""
    usage: Usage = Usage()
    raw_response_json: str = ""

    def content_hash(self) -> str:
        """What identifies a re-submission of the same turn (same ID, same content)."""
        body = {
            "event": self.event.kind.value,
            "calls": [[c.call_id, c.name, c.arguments_json, c.complete] for c in self.event.calls],
            "text": self.event.text,
            "error_kind": self.event.error_kind,
            "retryable": self.event.retryable,
            "provider": self.provider,
            "api_version": self.api_version,
            "model": self.model,
            "usage": [self.usage.input_tokens, self.usage.output_tokens],
            "raw": self.raw_response_json,
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class CallRecord:
    """Everything callgate knows about one call ID; the store's row."""

    run_id: str
    turn_id: str
    call_id: str
    index: int  # position in the model's list
    tool: str
    status: CallStatus
    arguments_json: str
    tool_version: str = ""
    effect: str = ""
    arguments_sha256: str = ""
    decision: Decision | None = None
    output_json: str = ""
    error_code: str = ""
    error_message: str = ""
    execution_count: int = 0
    approval_id: str = ""
    idempotency_key: str = ""
    created_at: datetime | None = None
    decided_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # set when an operator resolved the call (ResolveCall): who, when and why
    resolved_by: str = ""
    resolved_at: datetime | None = None
    resolution_reason: str = ""

    def moved(self, status: CallStatus, **changes: Any) -> CallRecord:
        """This record in a new status; raises IllegalTransition when the lifecycle forbids it."""
        check_transition(self.status, status)
        return revised(self, status=status, **changes)


@dataclass(frozen=True)
class TurnRecord:
    run_id: str
    turn_id: str
    seq: int
    event: EventKind
    content_hash: str
    provider: str = ""
    api_version: str = ""
    model: str = ""
    usage: Usage = Usage()
    raw_response_json: str = ""
    detail: EventDetail = EventDetail()
    next: NextAction | None = None  # None until the turn's outcome is decided
    reason: str = ""
    created_at: datetime | None = None


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    state: RunState
    subject: str
    tenant: str
    provider: str = ""
    api_version: str = ""
    budget: Budget = Budget()
    labels: dict[str, str] = field(default_factory=dict)
    conversation_json: str = ""
    params_hash: str = ""
    turns_used: int = 0
    tool_calls_used: int = 0
    retries_in_row: int = 0
    usage_total: Usage = Usage()
    pause_reason: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # the owner's roles as of the run's latest accepted turn (never claims: they are not
    # stored); the identity a run is driven with when someone else's action settles its turn
    roles: tuple[str, ...] = ()

    @property
    def owner(self) -> Identity:
        """The run's owner as recorded: subject, tenant and roles (claims are never stored)."""
        return Identity(self.subject, self.tenant, self.roles)


# How long an approval stays open when the policy's decision gives no approval_ttl_s (the
# default of `serve --approval-ttl`).
DEFAULT_APPROVAL_TTL_S = 3600


@dataclass(frozen=True)
class ApprovalRecord:
    """A person's approval of one call, bound to its tool version and arguments hash.

    The requester (`requested_by`, `tenant`, `requester_roles`) and the approver
    (`decided_by`, `decided_by_tenant`, `decided_by_roles`) are kept as identities without
    claims: enough to ask `may_approve` and to re-check the call with `input.approval`."""

    approval_id: str
    run_id: str
    turn_id: str
    call_id: str
    tool: str
    tool_version: str
    arguments_json: str
    arguments_sha256: str
    status: ApprovalStatus
    requested_by: str
    tenant: str
    created_at: datetime
    expires_at: datetime | None
    decided_by: str = ""
    decided_at: datetime | None = None
    reason: str = ""
    requester_roles: tuple[str, ...] = ()
    decided_by_tenant: str = ""
    decided_by_roles: tuple[str, ...] = ()
    policy_reasons: tuple[str, ...] = ()  # why the policy asked for a person
    tool_fingerprint: str = ""  # the tool's definition the approval covers ("": older ones)

    @property
    def requester(self) -> Identity:
        return Identity(self.requested_by, self.tenant, self.requester_roles)

    @property
    def approver(self) -> Identity:
        return Identity(self.decided_by, self.decided_by_tenant, self.decided_by_roles)

    def due(self, now: datetime) -> bool:
        """Still pending at or after its expiry time."""
        return (
            self.status == ApprovalStatus.PENDING
            and self.expires_at is not None
            and now >= self.expires_at
        )


@dataclass(frozen=True)
class ApprovalFilter:
    """Which approvals a listing asks for (empty fields match everything)."""

    run_id: str = ""
    statuses: tuple[ApprovalStatus, ...] = ()
    tool: str = ""
    approval_id: str = ""


@dataclass(frozen=True)
class CallResult:
    call_id: str
    tool: str
    status: CallStatus
    output_json: str = ""
    error_code: str = ""
    error_message: str = ""
    decision: Decision | None = None
    execution_count: int = 0
    approval_id: str = ""

    @classmethod
    def of(cls, rec: CallRecord) -> CallResult:
        return cls(
            call_id=rec.call_id,
            tool=rec.tool,
            status=rec.status,
            output_json=rec.output_json,
            error_code=rec.error_code,
            error_message=rec.error_message,
            decision=rec.decision,
            execution_count=rec.execution_count,
            approval_id=rec.approval_id,
        )


@dataclass(frozen=True)
class TurnOutcome:
    run_id: str
    turn_id: str
    next: NextAction
    run_state: RunState
    results: tuple[CallResult, ...] = ()
    reason: str = ""
    provider_input_json: str = ""


@dataclass(frozen=True)
class RunView:
    """A run with its turns and calls, as GetRun answers it."""

    run: RunRecord
    turns: tuple[TurnRecord, ...]
    calls: tuple[CallRecord, ...]


@dataclass(frozen=True)
class RunPage:
    """A run with one page of its turns, read at one moment: `view` holds the run, the
    page's turns (oldest first) and their calls. Turns are numbered 1, 2, ... (`seq`) with no
    gaps, so `turn_count` is the latest turn's number; `older` says whether turns before the
    page's first one exist (the next page of a caller paging backwards)."""

    view: RunView
    turn_count: int
    older: bool

    @property
    def first_seq(self) -> int:
        """The seq of the page's oldest turn (0 for an empty page)."""
        return self.view.turns[0].seq if self.view.turns else 0

    @property
    def whole(self) -> bool:
        """Whether the page holds every turn of the run."""
        return not self.older and len(self.view.turns) == self.turn_count


@dataclass(frozen=True)
class RunSnapshot:
    """A run with its latest turn and that turn's calls, read at one moment."""

    run: RunRecord
    turn: TurnRecord | None
    calls: tuple[CallRecord, ...]


@dataclass(frozen=True, slots=True)
class PastCall:
    """What a decision may know of an earlier call of the run (the policy input's
    `run.calls`): a narrow read of its record."""

    turn_id: str
    call_id: str
    tool: str
    effect: str
    status: CallStatus
    arguments_json: str


@dataclass(frozen=True)
class TurnContext:
    """What accepting a turn reads of its run, at one moment: the run, the turn with the
    submitted ID (if it was submitted before), the run's last turn, which of the submitted call
    IDs earlier turns already used, and the run's most recent calls (oldest first)."""

    run: RunRecord
    turn: TurnRecord | None
    last: TurnRecord | None
    used: frozenset[str]
    recent: tuple[PastCall, ...]


# ------------------------------------------------------------------ copying frozen records
# `dataclasses.replace` builds the new record by calling `__init__` with every field, and a
# frozen dataclass's `__init__` sets each field through `object.__setattr__`: about 6 µs for a
# call record's 25 fields, a dozen times a turn. A record that has no `__post_init__` (nothing
# that checks or derives a field) is fully described by its fields, so a copy of its attributes
# with the changes applied is the same record, at a sixth of the cost.

R = TypeVar("R")

_FIELDS: dict[type, frozenset[str]] = {}


def revised(record: R, /, **changes: Any) -> R:
    """`dataclasses.replace(record, **changes)` for a frozen dataclass without `__post_init__`
    and without slots; TypeError for any other class, or for a change that names no field
    `__init__` takes (as `replace` raises)."""
    cls = type(record)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = _settable(cls)
    if not names.issuperset(changes):
        unknown = sorted(set(changes) - names)
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r} to change")
    new = object.__new__(cls)
    state = new.__dict__
    state.update(record.__dict__)
    state.update(changes)
    return new


def _settable(cls: type) -> frozenset[str]:
    params = getattr(cls, "__dataclass_params__", None)
    if (
        params is None
        or not params.frozen
        or hasattr(cls, "__post_init__")
        or "__slots__" in cls.__dict__
    ):
        raise TypeError(
            f"revised() copies frozen dataclasses without __post_init__ or slots; "
            f"{cls.__name__} is not one (use dataclasses.replace)"
        )
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)
