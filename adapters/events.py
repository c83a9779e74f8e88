"""Provider-neutral events and the types adapters exchange with their callers.

`adapters` never imports `gateway`: these plain types are the whole seam. Every event keeps the
provider, API version, model and response ID, plus the original JSON it came from, so what
happened can be reconstructed. Reasoning/thinking items stay inside `original` (they must be
echoed back to the provider) and are never put into `text` or any summary meant for logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    TIMEOUT = "timeout"
    TRANSPORT = "transport"
    RATE_LIMIT = "rate_limit"
    SERVER = "server"
    OTHER = "other"


@dataclass(frozen=True)
class ResponseMeta:
    provider: str
    api_version: str
    model: str = ""
    response_id: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


def fallback_call_id(turn_id: str, index: int) -> str:
    """The call ID of a call its provider gave none (Gemini may omit it): `<turn_id>#<index>`,
    index being the call's 0-based position among the response's calls. Adapters match the
    result of such a call by its `#<index>` suffix."""
    return f"{turn_id}#{index}"


@dataclass(frozen=True)
class NormalizedCall:
    call_id: str  # "" when the provider gave none (Gemini may omit it); the caller assigns one
    name: str
    arguments_json: str  # the complete JSON text (for object-typed providers: its JSON dump)
    arguments: dict[str, Any] | None  # parsed object, None when it does not parse to an object
    original: dict[str, Any] = field(default_factory=dict)  # the provider's own item/block/part

    @property
    def complete(self) -> bool:
        return self.arguments is not None


@dataclass(frozen=True)
class ToolRequestEvent:
    meta: ResponseMeta
    calls: tuple[NormalizedCall, ...]
    original: dict[str, Any] = field(default_factory=dict)  # the whole response
    text: str = ""  # visible assistant text that came with the calls, if any


@dataclass(frozen=True)
class FinalEvent:
    meta: ResponseMeta
    text: str
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RefusalEvent:
    meta: ResponseMeta
    text: str
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class IncompleteEvent:
    meta: ResponseMeta
    reason: str  # the provider's own reason, e.g. "max_output_tokens", "length", "stream_cut"
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PausedEvent:
    meta: ResponseMeta
    reason: str  # e.g. Anthropic "pause_turn"
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderErrorEvent:
    meta: ResponseMeta
    kind: ErrorKind
    message: str
    retryable: bool
    original: dict[str, Any] = field(default_factory=dict)


ProviderEvent = (
    ToolRequestEvent
    | FinalEvent
    | RefusalEvent
    | IncompleteEvent
    | PausedEvent
    | ProviderErrorEvent
)


WITHHELD = "result_withheld"  # the code of a result policy did not let through


@dataclass(frozen=True)
class ToolResult:
    """callgate's result for one call ID, as an adapter needs it to shape the next request."""

    call_id: str
    name: str
    status: str  # "SUCCEEDED" | "REJECTED" | "FAILED" | "UNKNOWN" | "NOT_RUN" | ...
    output_json: str = ""
    error_code: str = ""
    error_message: str = ""

    @property
    def ok(self) -> bool:
        """A result the model is given as the tool's output (a SUCCEEDED call whose result
        policy withheld, `result_withheld`, is shown as an error)."""
        return self.status == "SUCCEEDED" and self.error_code != WITHHELD


@dataclass(frozen=True)
class ToolSpec:
    """What a provider's tool declaration is built from (a callgate manifest)."""

    name: str
    description: str
    input_schema: dict[str, Any]


class AdapterError(Exception):
    """Input an adapter cannot read. `code` is a callgate request error code."""

    def __init__(self, message: str, code: str = "malformed_response") -> None:
        super().__init__(message)
        self.code = code
