"""Fixtures: the default engine and small policy bundles written on the fly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.policy import EmbeddedEngine, load_bundle
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle


@pytest.fixture(scope="session")
def embedded_default() -> EmbeddedEngine:
    return EmbeddedEngine(load_bundle(DEFAULT_POLICIES))


@pytest.fixture(scope="session")
def default_engine(embedded_default: EmbeddedEngine) -> EmbeddedEngine:
    return embedded_default


@pytest.fixture
def write_bundle(tmp_path: Path) -> WriteBundle:
    """write_bundle({"p.rego": "...", "data.json": {...}}) → a directory with those files."""

    def write(files: dict[str, str | dict[str, Any]], name: str = "bundle") -> Path:
        root = tmp_path / name
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            text = content if isinstance(content, str) else json.dumps(content)
            path.write_text(text, encoding="utf-8")
        root.mkdir(parents=True, exist_ok=True)
        return root

    return write
