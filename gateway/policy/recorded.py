"""Recorded decision inputs, read back from what `serve --log-decision-inputs` wrote.

One line of a file is one of:

- the logged record itself, `{"input_sha256", "policy_revision", "verdict", "reasons",
  "approval_ttl_s"?, "input"}` (older lines lack `reasons`; an export may keep only `input`
  and `input_sha256`, or only `input`);
- a text log line of the logger `callgate.decision_input` (`... INFO callgate.decision_input:
  {...}`, also with a worker's `[tag]`), or a JSON log line (`serve --log-format json`) whose
  `logger` is `callgate.decision_input` and whose `message` is the record;
- a log line of another callgate logger, text or JSON: `Skipped`, counted, not an error (the
  whole log of a sidecar may be given);
- a blank line: ignored.

Anything else is a `BadLine` naming why, never an exception: not JSON, not an object, no
`input` object, a verdict that is not one, an `input_sha256` the input does not hash to (a line
edited or cut short), a line of some other program's log.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gateway.jsontext import JsonTextError, read_object
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import Verdict
from gateway.policy.decision import type_name
from gateway.policy.embedded import input_json

INPUTS_LOGGER = "callgate.decision_input"

# `configure_logging`'s text format: time, level, [tag,] logger, message
_TEXT_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ (?:\[[^\]]*\] )?(?P<logger>[\w.]+): "
)
_VERDICTS = {v.value: v for v in Verdict if v is not Verdict.UNSPECIFIED}
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Recorded:
    """A decision input as it was logged, with what was decided when it is known."""

    line: int
    input: dict[str, Any]
    input_sha256: str
    policy_revision: str = ""
    verdict: Verdict | None = None  # None: the line does not say
    reasons: tuple[str, ...] | None = None  # None: not recorded (older lines)
    approval_ttl_s: int | None = None

    @property
    def tool(self) -> str:
        call = self.input.get("call")
        tool = call.get("tool") if isinstance(call, dict) else None
        return tool if isinstance(tool, str) and tool else "(no tool)"


@dataclass(frozen=True)
class BadLine:
    line: int
    message: str


@dataclass(frozen=True)
class Skipped:
    """A line of another callgate logger."""

    line: int
    logger: str


ReadLine = Recorded | BadLine | Skipped


def read_line(number: int, raw: str | bytes) -> ReadLine | None:
    """One line of a recorded-inputs file; None for a blank one."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return BadLine(number, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
    text = raw.strip()
    if not text:
        return None
    if text.startswith("{"):
        return _json_line(number, text)
    match = _TEXT_LINE.match(text)
    if match is None:
        return BadLine(
            number, "not a decision input: neither a JSON object nor a callgate log line"
        )
    if match["logger"] != INPUTS_LOGGER:
        return Skipped(number, match["logger"])
    return _record(number, text[match.end() :])


def _json_line(number: int, text: str) -> ReadLine:
    try:
        doc = read_object(text, max_depth=MAX_JSON_DEPTH_CAP)
    except JsonTextError as exc:
        return BadLine(number, f"not JSON: {exc.message}")
    logger = doc.get("logger")
    if "input" not in doc and isinstance(logger, str) and isinstance(doc.get("message"), str):
        if logger != INPUTS_LOGGER:
            return Skipped(number, logger)
        return _record(number, doc["message"])
    return _fields(number, doc)


def _record(number: int, text: str) -> ReadLine:
    try:
        doc = read_object(text, max_depth=MAX_JSON_DEPTH_CAP)
    except JsonTextError as exc:
        return BadLine(number, f"the logged record is not JSON: {exc.message}")
    return _fields(number, doc)


def _fields(number: int, doc: dict[str, Any]) -> ReadLine:
    try:
        return _checked(number, doc)
    except _Shape as exc:
        return BadLine(number, exc.message)


class _Shape(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _checked(number: int, doc: dict[str, Any]) -> Recorded:
    input_doc = doc.get("input")
    if input_doc is None:
        raise _Shape("the line has no `input` object: not a decision input line")
    if not isinstance(input_doc, dict):
        raise _Shape(f"`input` is not an object ({type_name(input_doc)})")
    digest = _input_sha256(doc, input_doc)
    verdict = doc.get("verdict")
    if verdict is not None and verdict not in _VERDICTS:
        raise _Shape(f"`verdict` {str(verdict)[:40]!r} is not one of {', '.join(_VERDICTS)}")
    return Recorded(
        line=number,
        input=input_doc,
        input_sha256=digest,
        policy_revision=_text(doc, "policy_revision"),
        verdict=_VERDICTS[verdict] if verdict is not None else None,
        reasons=_recorded_reasons(doc),
        approval_ttl_s=_ttl(doc),
    )


def _input_sha256(doc: dict[str, Any], input_doc: dict[str, Any]) -> str:
    try:
        actual = hashlib.sha256(input_json(input_doc).encode()).hexdigest()
    except (TypeError, ValueError) as exc:
        raise _Shape(f"the input cannot be serialized: {exc}") from None
    logged = doc.get("input_sha256")
    if logged is None:
        return actual
    if not isinstance(logged, str) or not _SHA256.fullmatch(logged):
        raise _Shape("`input_sha256` is not a SHA-256 in hex")
    if logged != actual:
        raise _Shape(
            "the input does not hash to its `input_sha256`: the line was edited or cut short"
        )
    return logged


def _text(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key, "")
    if not isinstance(value, str):
        raise _Shape(f"`{key}` is not a string")
    return value


def _recorded_reasons(doc: dict[str, Any]) -> tuple[str, ...] | None:
    if "reasons" not in doc:
        return None
    reasons = doc["reasons"]
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise _Shape("`reasons` is not a list of strings")
    return tuple(reasons)


def _ttl(doc: dict[str, Any]) -> int | None:
    ttl = doc.get("approval_ttl_s")
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise _Shape("`approval_ttl_s` is not a positive integer")
    return ttl
