"""Fixture loading, strict validation against the official `openai` SDK types, and SDK clients
pointed at the loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, TypeAdapter

from tests.adapters.loopback import LoopbackServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DONE = {"_sentinel": "[DONE]"}


def load_json(provider_dir: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / provider_dir / name).read_text("utf-8"))
    return loaded


def load_text(provider_dir: str, name: str) -> str:
    return (FIXTURES / provider_dir / name).read_text("utf-8")


def sse_payloads(body: str) -> list[dict[str, Any]]:
    """The JSON of each `data:` line of an SSE body, `[DONE]` as the sentinel dict."""
    payloads = []
    for line in body.splitlines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            payloads.append(DONE if data.strip() == "[DONE]" else json.loads(data))
    return payloads


def _realized(value: Any) -> Any:
    """Pydantic validates `Iterable[...]` fields of TypedDicts lazily: iterate them so every
    element is validated, and return plain dicts/lists to compare with the input."""
    if isinstance(value, dict):
        return {key: _realized(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_realized(item) for item in value]
    if type(value).__name__ == "ValidatorIterator":
        return [_realized(item) for item in value]
    return value


def _assert_no_extra(model: Any, where: str = "$") -> None:
    """Every field of a validated SDK model is a field the SDK declares (the SDK's models
    allow unknown fields, so strict validation alone would not catch a misspelled one)."""
    if isinstance(model, BaseModel):
        assert not model.model_extra, f"{where}: fields unknown to the SDK: {model.model_extra}"
        for name in type(model).model_fields:
            _assert_no_extra(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            _assert_no_extra(item, f"{where}[{index}]")


_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def _type_adapter(sdk_type: Any) -> TypeAdapter[Any]:
    """Building an adapter for a large SDK union is slow; build each one once."""
    if id(sdk_type) not in _ADAPTERS:
        _ADAPTERS[id(sdk_type)] = TypeAdapter(sdk_type)
    return _ADAPTERS[id(sdk_type)]


def validate_model(sdk_type: Any, obj: Any, check_extra: bool = True) -> Any:
    """Strictly validate a response-side object (a pydantic model type or union of them)."""
    validated = _type_adapter(sdk_type).validate_python(obj, strict=True)
    if check_extra:
        _assert_no_extra(validated)
    return validated


def validate_param(sdk_type: Any, obj: Any) -> None:
    """Strictly validate a request-side object against an SDK *Param TypedDict (or union).
    TypedDicts drop unknown keys silently, so the validated value must equal the input."""
    validated = _type_adapter(sdk_type).validate_python(obj, strict=True)
    assert _realized(validated) == obj, f"the SDK type {sdk_type} dropped or changed fields"


@contextmanager
def sdk_client(server: LoopbackServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        api_key="sk-test-dummy", base_url=f"{server.url}/v1", max_retries=0
    ) as client:
        yield client
