"""Helpers every adapter needs the same way: parsing argument text, pairing results with calls."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapters.events import AdapterError, NormalizedCall, ToolRequestEvent, ToolResult


def parse_object(text: str) -> dict[str, Any] | None:
    """`text` parsed as a JSON object, or None when it is not valid JSON or not an object."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class _Pairs:
    """An object_pairs_hook that notices duplicate keys (a dict keeps only the last)."""

    def __init__(self) -> None:
        self.duplicates = False

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        self.duplicates = self.duplicates or len(value) != len(pairs)
        return value


def parse_streamed(text: str, **options: Any) -> tuple[Any, bool]:
    """(value, lossless) of streamed argument text; lossless is False when the text repeats an
    object key, which the parsed value cannot show: then the caller keeps the text itself as
    the call's arguments, so the gateway's reader sees (and refuses) it. ValueError and
    RecursionError as json.loads raises them."""
    pairs = _Pairs()
    value = json.loads(text, object_pairs_hook=pairs, **options)
    return value, not pairs.duplicates


def results_in_call_order(
    event: ToolRequestEvent, results: Sequence[ToolResult]
) -> list[tuple[NormalizedCall, ToolResult]]:
    """Each call of `event` with its result, in the model's order, matched by call ID (never
    by position). Two results for one ID are `duplicate_call_id`; a call without one is
    `missing_result`; results for IDs the event does not have are left out."""
    by_id: dict[str, ToolResult] = {}
    for result in results:
        if result.call_id in by_id:
            raise AdapterError(
                f"two results for call ID {result.call_id!r}", code="duplicate_call_id"
            )
        by_id[result.call_id] = result
    missing = [f"{call.call_id} ({call.name})" for call in event.calls if call.call_id not in by_id]
    if missing:
        raise AdapterError(f"no result for call ID(s): {', '.join(missing)}", code="missing_result")
    return [(call, by_id[call.call_id]) for call in event.calls]
