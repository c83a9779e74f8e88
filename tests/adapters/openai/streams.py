"""Stream transcripts derived from complete-response fixtures.

Each builder turns a complete response into the event sequence the API documents for it
(references: https://platform.openai.com/docs/api-reference/responses-streaming for Responses,
https://platform.openai.com/docs/api-reference/chat-streaming for Chat Completions, and the
real recordings in fixtures/openai_chat/), with text and arguments split into pieces of `size`
UTF-16 code units. That split lands mid-token and can land between the two halves of a
surrogate pair; `interleave` alternates the pieces of parallel items/calls.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

Event = dict[str, Any]
ItemEvents = tuple[list[Event], list[Event], list[Event]]  # opening, middle, closing

_TERMINAL = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}


def utf16_pieces(text: str, size: int) -> list[str]:
    units = text.encode("utf-16-le")
    step = 2 * size
    return [
        units[i : i + step].decode("utf-16-le", "surrogatepass") for i in range(0, len(units), step)
    ]


def has_split_surrogate(pieces: Iterable[str]) -> bool:
    return any(0xD800 <= ord(piece[-1]) <= 0xDBFF for piece in pieces if piece)


def _round_robin(groups: list[list[Event]], interleave: bool) -> list[Event]:
    if not interleave:
        return [event for group in groups for event in group]
    rows = zip_longest(*groups)
    return [event for row in rows for event in row if event is not None]


# --- Responses ------------------------------------------------------------------------------


def _call_events(index: int, item: Event, size: int) -> ItemEvents:
    added = {
        "type": "response.output_item.added",
        "output_index": index,
        "item": {**item, "arguments": "", "status": "in_progress"},
    }
    deltas: list[Event] = [
        {
            "type": "response.function_call_arguments.delta",
            "item_id": item["id"],
            "output_index": index,
            "delta": piece,
        }
        for piece in utf16_pieces(item["arguments"], size)
    ]
    done = [
        {
            "type": "response.function_call_arguments.done",
            "item_id": item["id"],
            "output_index": index,
            "arguments": item["arguments"],
        },
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]
    return [added], deltas, done


def _part_events(index: int, item_id: str, part_index: int, part: Event, size: int) -> list[Event]:
    where: Event = {"item_id": item_id, "output_index": index, "content_index": part_index}
    empty: Event
    extra: Event
    if part["type"] == "refusal":
        empty, name, field, extra = {"type": "refusal", "refusal": ""}, "refusal", "refusal", {}
    else:
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        name, field, extra = "output_text", "text", {"logprobs": []}
    events: list[Event] = [{"type": "response.content_part.added", **where, "part": empty}]
    events += [
        {"type": f"response.{name}.delta", **where, "delta": piece, **extra}
        for piece in utf16_pieces(part[field], size)
    ]
    events.append({"type": f"response.{name}.done", **where, field: part[field], **extra})
    events.append({"type": "response.content_part.done", **where, "part": part})
    return events


def _item_events(index: int, item: Event, size: int) -> ItemEvents:
    if item["type"] == "function_call":
        return _call_events(index, item, size)
    if item["type"] == "message":
        added = {**item, "content": [], "status": "in_progress"}
        parts = [
            event
            for part_index, part in enumerate(item["content"])
            for event in _part_events(index, item["id"], part_index, part, size)
        ]
    else:
        added = {**item, "summary": []} if item["type"] == "reasoning" else item
        parts = []
    return (
        [{"type": "response.output_item.added", "output_index": index, "item": added}],
        parts,
        [{"type": "response.output_item.done", "output_index": index, "item": item}],
    )


def response_events(
    response: Event, size: int = 4, interleave: bool = False, terminal: bool = True
) -> list[Event]:
    """The SSE event payloads of a streamed `response` (with `sequence_number`)."""
    shell = {
        **response,
        "status": "in_progress",
        "output": [],
        "usage": None,
        "error": None,
        "incomplete_details": None,
        "completed_at": None,
    }
    events: list[Event] = [
        {"type": "response.created", "response": shell},
        {"type": "response.in_progress", "response": shell},
    ]
    items = [_item_events(i, item, size) for i, item in enumerate(response["output"])]
    if interleave:
        events += [event for opening, _, _ in items for event in opening]
        events += _round_robin([middle for _, middle, _ in items], True)
        events += [event for _, _, closing in items for event in closing]
    else:
        events += [event for group in items for part in group for event in part]
    if terminal:
        events.append({"type": _TERMINAL[response["status"]], "response": response})
    return [{**copy.deepcopy(event), "sequence_number": n} for n, event in enumerate(events)]


# --- Chat Completions -----------------------------------------------------------------------


def _chunk(completion: Event, delta: Event, finish_reason: str | None = None) -> Event:
    head: Event = {
        key: completion[key]
        for key in ("id", "created", "model", "system_fingerprint")
        if key in completion
    }
    return {
        **head,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def _tool_call_deltas(tool_calls: list[Event], size: int, interleave: bool) -> list[Event]:
    firsts = [
        {
            "tool_calls": [
                {
                    "index": i,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""},
                }
            ]
        }
        for i, call in enumerate(tool_calls)
    ]
    pieces = [
        [
            {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
            for piece in utf16_pieces(call["function"]["arguments"], size)
        ]
        for i, call in enumerate(tool_calls)
    ]
    if interleave:
        return firsts + _round_robin(pieces, True)
    return [delta for first, rest in zip(firsts, pieces, strict=True) for delta in [first, *rest]]


def chat_chunks(
    completion: Event,
    size: int = 4,
    interleave: bool = False,
    finish: bool = True,
    usage: bool = True,
) -> list[Event]:
    """The `data:` payloads of a streamed chat `completion` (without the `[DONE]` line)."""
    choice = completion["choices"][0]
    message = choice["message"]
    first: Event = {"role": "assistant", "content": "" if message.get("content") else None}
    if message.get("refusal"):
        first["refusal"] = ""
    deltas = [first]
    deltas += [{"content": piece} for piece in utf16_pieces(message.get("content") or "", size)]
    deltas += [{"refusal": piece} for piece in utf16_pieces(message.get("refusal") or "", size)]
    deltas += _tool_call_deltas(message.get("tool_calls") or [], size, interleave)
    chunks = [_chunk(completion, delta) for delta in deltas]
    if finish:
        chunks.append(_chunk(completion, {}, choice["finish_reason"]))
        if usage and "usage" in completion:
            chunks.append({**_chunk(completion, {}), "choices": [], "usage": completion["usage"]})
    return copy.deepcopy(chunks)
