"""Fixture loading, SDK validation and a google-genai client bound to a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types
from pydantic import TypeAdapter

from tests.adapters.loopback import LoopbackServer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"
RESPONSE_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.json") if p.name != "error_429.json")

_RESPONSE = TypeAdapter(types.GenerateContentResponse)
_CONTENT = TypeAdapter(types.Content)
_TOOL = TypeAdapter(types.Tool)


def load(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return value


def sse_text(name: str) -> str:
    """The SSE body exactly as stored (CRLF separators kept)."""
    return (FIXTURES / name).read_bytes().decode("utf-8")


def sse_chunks(name: str) -> list[dict[str, Any]]:
    """The `data:` payloads of an SSE fixture, in order."""
    events = sse_text(name).replace("\r\n", "\n").split("\n\n")
    return [json.loads(event.removeprefix("data: ")) for event in events if event.strip()]


# Strict validation runs in JSON mode: the REST wire is JSON, where strict pydantic accepts enum
# names as strings and `bytes` fields (thoughtSignature) as base64 (the SDK models set
# val_json_bytes="base64"). Python-mode strict would demand enum instances and raw bytes.
def validate_response(body: dict[str, Any]) -> types.GenerateContentResponse:
    return _RESPONSE.validate_json(json.dumps(body), strict=True)


def validate_content(item: dict[str, Any]) -> types.Content:
    return _CONTENT.validate_json(json.dumps(item), strict=True)


def validate_tool(item: dict[str, Any]) -> types.Tool:
    return _TOOL.validate_json(json.dumps(item), strict=True)


def sdk_chunk_json(chunk: types.GenerateContentResponse) -> dict[str, Any]:
    """An SDK stream chunk back as the REST JSON chunk (without the SDK's HTTP envelope)."""
    dumped: dict[str, Any] = chunk.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude={"sdk_http_response"}
    )
    return dumped


@contextmanager
def genai_client(server: LoopbackServer, api_version: str = "v1beta") -> Iterator[genai.Client]:
    options = types.HttpOptions(base_url=server.url, api_version=api_version)
    with genai.Client(api_key="test-key", http_options=options) as client:
        yield client
