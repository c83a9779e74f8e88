"""Tool manifests written for tests, and the load errors they give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.errors import ConfigError
from gateway.tools import Registry


def base(**changes: Any) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": "reserve",
        "version": "1.0.0",
        "description": "Reserve a seat.",
        "effect": "write",
        "input_schema": {"type": "object"},
        "executor": {"type": "http", "url": "http://127.0.0.1:9/reserve"},
    }
    tool.update(changes)
    return {k: v for k, v in tool.items() if v is not None}


def write(directory: Path, name: str, content: Any) -> Path:
    path = directory / name
    text = (
        content
        if isinstance(content, str)
        else (
            json.dumps(content)
            if name.endswith(".json")
            else yaml.safe_dump(content, sort_keys=False)
        )
    )
    path.write_text(text, encoding="utf-8")
    return path


def load_error(directory: Path) -> str:
    with pytest.raises(ConfigError) as info:
        Registry.load(directory, env={})
    return info.value.message
