"""Fixture loading, SSE parsing, SDK type validation and an SDK client for the loopback server."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import anthropic
from anthropic.types import MessageParam, ToolParam
from pydantic import TypeAdapter

from adapters.anthropic_messages import ADAPTER
from adapters.events import ProviderEvent
from tests.adapters.loopback import LoopbackServer, Reply

FIXTURES = Path(__file__).parent.parent / "fixtures" / "anthropic"
API_VERSION = ADAPTER.api_versions[0]
MODEL = "claude-sonnet-4-6"  # a model the SDK does not warn about as deprecated


def load_json(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


def sse_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def sse_payloads(name: str) -> list[dict[str, Any]]:
    """Every `data:` JSON of an SSE fixture in order, `ping` included (the raw stream)."""
    payloads = []
    for frame in sse_text(name).split("\n\n"):
        data = [
            line[len("data:") :].strip() for line in frame.splitlines() if line.startswith("data:")
        ]
        if data:
            payloads.append(json.loads("\n".join(data)))
    return payloads


def sse_reply(payloads: list[dict[str, Any]]) -> Reply:
    """An SSE body with an `event:` line per payload (the SDK skips events without one)."""
    return Reply.sse([(payload["type"], payload) for payload in payloads])


def feed_all(payloads: list[dict[str, Any]]) -> ProviderEvent:
    assembler = ADAPTER.new_stream_assembler()
    for payload in payloads:
        assembler.feed(payload)
    return assembler.finish()


def validate(type_: Any, value: Any) -> Any:
    """Strict validation against an SDK type. The SDK's params declare content lists as
    `Iterable[...]`, which pydantic validates lazily, so every iterator is drained here to make
    each element go through its validator. The adapter must outlive the draining (its lazy
    iterators refer to its validators), so adapters are kept."""
    return _drain(_adapter(type_).validate_python(value, strict=True))


@functools.cache
def _adapter(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)


def _drain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _drain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_drain(item) for item in value]
    return value


def as_messages(items: list[dict[str, Any]]) -> list[MessageParam]:
    """The produced items, unchanged, typed as what the SDK's `messages=` takes."""
    return cast("list[MessageParam]", items)


def as_tools(items: list[dict[str, Any]]) -> list[ToolParam]:
    """The produced declarations, unchanged, typed as what the SDK's `tools=` takes."""
    return cast("list[ToolParam]", items)


@contextmanager
def sdk_client(server: LoopbackServer) -> Iterator[anthropic.Anthropic]:
    """The official client against the loopback server, pinned to the adapter's API version
    (anthropic 2.14.0 sends a newer `anthropic-version` by default)."""
    client = anthropic.Anthropic(
        api_key="test-key",
        base_url=server.url,
        max_retries=0,
        default_headers={"anthropic-version": API_VERSION},
    )
    with client:
        yield client


def sdk_stream(server: LoopbackServer, body: Reply) -> list[dict[str, Any]]:
    """Replay `body` as the reply to a streaming request, iterate the SDK's raw stream, and
    return each SDK event as JSON. An in-stream `error` event makes the SDK raise
    `APIStatusError`; its parsed body is returned as the last item, as the stream carried it."""
    server.queue(body)
    events: list[dict[str, Any]] = []
    with sdk_client(server) as client:
        stream = client.messages.create(
            model=MODEL, max_tokens=1024, stream=True, messages=[{"role": "user", "content": "hi"}]
        )
        with stream:
            try:
                for event in stream:
                    events.append(event.model_dump(mode="json", exclude_unset=True))
            except anthropic.APIStatusError as error:
                assert isinstance(error.body, dict)
                events.append(error.body)
    return events


def sdk_stream_fixture(server: LoopbackServer, name: str) -> list[dict[str, Any]]:
    """`sdk_stream` over an SSE fixture's text. The SDK's fixture files end right after the
    last `data:` line (its own test helper re-terminates every line), and an SSE event only
    counts once a blank line ends it, so the replay ends the text with one."""
    return sdk_stream(server, Reply.sse(sse_text(name).rstrip("\n") + "\n\n"))
