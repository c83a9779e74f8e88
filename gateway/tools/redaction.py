"""Masking argument values by JSON pointer (a manifest's `redact`); a `*` token matches every
member of an object or array."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

MASK = "***"


def pointer_tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _members(node: Any, token: str) -> list[Any]:
    if isinstance(node, dict):
        return list(node) if token == "*" else [token] if token in node else []
    if isinstance(node, list):
        if token == "*":
            return list(range(len(node)))
        if token.isdigit() and int(token) < len(node):
            return [int(token)]
    return []


def _mask(node: Any, tokens: list[str]) -> None:
    for key in _members(node, tokens[0]):
        if len(tokens) == 1:
            node[key] = MASK
        else:
            _mask(node[key], tokens[1:])


def redacted(args: dict[str, Any], pointers: Sequence[list[str]]) -> dict[str, Any]:
    """A copy of args with the value at every pointer (as tokens) replaced by MASK."""
    out: dict[str, Any] = copy.deepcopy(args)
    for tokens in pointers:
        _mask(out, tokens)
    return out
