"""Reading a `--tools` directory: every `*.yaml`, `*.yml` and `*.json` file holds one tool, a
list of tools, or several YAML documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.errors import ConfigError
from gateway.jsontext import JsonTextError, read_json
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.tools.problems import FieldPath, ManifestProblem
from gateway.yamltext import YamlTextError, read_yaml_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _yaml_documents(text: str) -> list[Any]:
    try:
        return read_yaml_documents(text, safe_integers=True)  # (as the JSON reader's default)
    except YamlTextError as exc:
        raise ManifestProblem((), str(exc)) from exc


def _json_documents(text: str) -> list[Any]:
    try:
        return [read_json(text, max_depth=MAX_JSON_DEPTH_CAP)]
    except JsonTextError as exc:
        raise ManifestProblem((), f"invalid JSON: {exc.message}") from exc


def manifest_entries(path: Path) -> list[tuple[FieldPath, Any]]:
    """(field prefix, raw manifest) for every tool in one file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestProblem((), f"cannot read: {exc}") from exc
    docs = _json_documents(text) if path.suffix.lower() == ".json" else _yaml_documents(text)
    items = [
        item
        for doc in docs
        if doc is not None
        for item in (doc if isinstance(doc, list) else [doc])
    ]
    if not items:
        raise ManifestProblem((), "no tool manifest in this file")
    single = len(docs) == 1 and not isinstance(docs[0], list)
    return [((() if single else (i,)), item) for i, item in enumerate(items)]


def manifest_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise ConfigError(f"{directory}: tool directory does not exist or is not a directory")
    files = sorted(
        (
            p
            for p in directory.iterdir()
            if p.suffix.lower() in MANIFEST_SUFFIXES and p.is_file() and not p.name.startswith(".")
        ),
        key=lambda p: p.name,  # (one directory: Path's own order, without its per-compare cost)
    )
    if not files:
        raise ConfigError(f"{directory}: no tool manifests (*.yaml, *.yml, *.json)")
    return files
