"""Tool manifests for the executor tests, and the type of the fixture that loads them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.tools import Tool

ToolFactory = Callable[..., Tool]

OBJECT = {"type": "object"}


def manifest(
    name: str = "t", *, effect: str = "read", executor: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "version": "1",
        "effect": effect,
        "input_schema": OBJECT,
        "executor": executor,
        **extra,
    }
