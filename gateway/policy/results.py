"""What a `result` evaluation answers, as the runner sees it: pure mapping, no engine.

The optional `result` rule is asked about a call's result before it is handed on
(docs/policies.md, "Policy over results"). Its value is `{"deliver": bool, "redact": [JSON
pointers], "reasons": [strings]}`; undefined means "deliver as is" (`None` here). Anything
malformed, and any failed evaluation, withholds the result (fail closed), with a reason that
says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from gateway.policy.decision import UNDEFINED, type_name

MAX_POINTERS: Final = 256  # redactions one result may carry
MAX_POINTER_CHARS: Final = 1024
MAX_REASONS: Final = 32
MAX_REASON_CHARS: Final = 1024


@dataclass(frozen=True)
class ResultVerdict:
    """A parsed `result` answer. `error` is set when the answer could not be used (then
    `deliver` is False and `reasons` says why, starting `policy_error:`)."""

    deliver: bool
    redact: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    error: str = ""


def withheld_for_error(message: str) -> ResultVerdict:
    """The fail-closed answer: withhold, saying what went wrong."""
    return ResultVerdict(deliver=False, reasons=(f"policy_error: {message}",), error=message)


class _Malformed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def result_verdict(value: Any) -> ResultVerdict | None:
    """Map a `result` value to a verdict; None when undefined (deliver as is); anything
    malformed → withheld with a `policy_error:` reason."""
    if value is UNDEFINED or value is None:
        return None
    try:
        return _parse(value)
    except _Malformed as exc:
        return withheld_for_error(exc.message)


def _parse(value: Any) -> ResultVerdict:
    if not isinstance(value, dict):
        raise _Malformed(f"result is not an object ({type_name(value)})")
    unknown = sorted(set(value) - {"deliver", "redact", "reasons"})
    if unknown:
        raise _Malformed(f"result has unknown key(s): {', '.join(map(str, unknown))[:200]}")
    deliver = value.get("deliver", UNDEFINED)
    if not isinstance(deliver, bool):
        raise _Malformed(f"result.deliver is not a boolean ({type_name(deliver)})")
    redact = _strings(value, "redact", MAX_POINTERS, MAX_POINTER_CHARS)
    for pointer in redact:
        problem = pointer_problem(pointer)
        if problem:
            raise _Malformed(f"result.redact has {pointer[:80]!r}, not a JSON pointer: {problem}")
    reasons = _strings(value, "reasons", MAX_REASONS, MAX_REASON_CHARS)
    return ResultVerdict(deliver=deliver, redact=tuple(dict.fromkeys(redact)), reasons=reasons)


def _strings(value: dict[str, Any], key: str, most: int, longest: int) -> tuple[str, ...]:
    items = value.get(key, [])
    if isinstance(items, set | frozenset):
        items = sorted(items, key=str)
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise _Malformed(f"result.{key} is not a list of strings")
    if len(items) > most:
        raise _Malformed(f"result.{key} has {len(items)} items, over the limit of {most}")
    long = next((i for i in items if len(i) > longest), None)
    if long is not None:
        raise _Malformed(
            f"result.{key} has an item of {len(long)} characters, over the limit of {longest}"
        )
    return tuple(items)


def pointer_problem(pointer: str) -> str:
    """ "" when pointer is an RFC 6901 JSON pointer, else what is wrong with it."""
    if pointer and not pointer.startswith("/"):
        return "it must be empty or start with '/'"
    rest = pointer.replace("~0", "").replace("~1", "")
    if "~" in rest:
        return "'~' must be followed by 0 or 1"
    return ""


def pointer_tokens(pointer: str) -> list[str]:
    """The reference tokens of a valid pointer, unescaped (RFC 6901 section 4)."""
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
