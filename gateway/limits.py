"""The size limits of a sidecar: one place for their defaults, the `serve` flag of each, and
the error a caller gets when a request goes over one (docs/operations.md, "Limits").

Limits are checked before work is done: a request over one is refused as a whole
(`INVALID_ARGUMENT limit_exceeded`) before anything is stored or run, except a single call's
arguments (that call is REJECTED `invalid_arguments`, its siblings go on) and a tool's output
(a read is FAILED `output_too_large`; a write, whose effect happened, keeps a marker).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.errors import RequestCode, RequestError
from gateway.jsontext import DEFAULT_MAX_DEPTH

KIB = 1024
MIB = 1024 * KIB
# Policy inputs nest arguments four levels down; the Rego engine refuses nesting over 128.
MAX_JSON_DEPTH_CAP = 100
# Provider JSON (responses, stream events, conversations) wraps arguments in an envelope a few
# levels deep; it is read with this margin, so arguments at the limit are judged as a call
# (REJECTED invalid_arguments when deeper), not refused with the whole turn.
ENVELOPE_DEPTH = 16


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 4 * MIB
    max_json_depth: int = DEFAULT_MAX_DEPTH
    max_arguments_bytes: int = 128 * KIB
    max_calls_per_turn: int = 64
    max_stream_events: int = 10_000
    max_stream_bytes: int = 4 * MIB
    max_labels: int = 64
    max_label_bytes: int = 1 * KIB
    max_conversation_bytes: int = 1 * MIB
    max_output_bytes: int = 128 * KIB
    max_policy_history_bytes: int = 64 * KIB
    max_run_page_turns: int = 500
    max_run_page_bytes: int = 1 * MIB


DEFAULT_LIMITS = Limits()

# flag of each limit, for messages and the CLI
FLAGS = {name: "--" + name.replace("_", "-") for name in Limits.__dataclass_fields__}


def over_limit(what: str, name: str, limit: int) -> RequestError:
    """The request error for `what` (e.g. "the turn has 80 calls") over limit `name`."""
    return RequestError(
        RequestCode.LIMIT_EXCEEDED,
        f"{what}, over the limit of {limit} (callgate serve {FLAGS[name]})",
    )


def utf8_len(text: str) -> int:
    """UTF-8 size of text without encoding it when it is ASCII."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
