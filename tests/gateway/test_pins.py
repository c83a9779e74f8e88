"""Fingerprints, what changed between two definitions, and `--pin-tools` modes."""

from __future__ import annotations

import pytest

from gateway.pins import (
    PinMode,
    PinModes,
    changed_fields,
    definition_json,
    diff_text,
    fingerprint_of,
)


def test_a_fingerprint_is_over_the_canonical_form() -> None:
    a = definition_json({"name": "book", "input_schema": {"b": 1, "a": [1.0, "é"]}})
    b = definition_json({"input_schema": {"a": [1, "é"], "b": 1}, "name": "book"})
    assert a == b and fingerprint_of(a) == fingerprint_of(b)
    assert fingerprint_of(a).startswith("sha256:") and len(fingerprint_of(a)) == 7 + 64
    assert fingerprint_of(a) != fingerprint_of(definition_json({"name": "book"}))


def test_changed_fields_name_what_differs() -> None:
    before = {"name": "t", "description": "x", "mcp": {"description": "d", "title": "T"}}
    after = {"name": "t", "description": "y", "mcp": {"description": "e", "title": "T"}}
    assert changed_fields(before, after) == ["description", "mcp.description"]
    assert changed_fields(before, before) == []
    assert changed_fields({"a": 1}, {"b": 1}) == ["a", "b"]


def test_the_diff_shows_both_definitions_lines() -> None:
    text = diff_text(
        definition_json({"description": "old"}), definition_json({"description": "new"})
    )
    assert '-  "description": "old"' in text and '+  "description": "new"' in text
    assert diff_text("not json", "{}").startswith("---") or diff_text("not json", "{}") == ""


@pytest.mark.parametrize(
    ("text", "mcp", "manifest"),
    [
        ("", PinMode.ENFORCE, PinMode.WARN),
        ("off", PinMode.OFF, PinMode.OFF),
        ("enforce", PinMode.ENFORCE, PinMode.ENFORCE),
        ("manifest=enforce", PinMode.ENFORCE, PinMode.ENFORCE),
        ("mcp=warn, manifest=off", PinMode.WARN, PinMode.OFF),
    ],
)
def test_modes_parse(text: str, mcp: PinMode, manifest: PinMode) -> None:
    modes = PinModes.parse(text)
    assert (modes.mcp, modes.manifest) == (mcp, manifest)
    assert modes.of(True) is mcp and modes.of(False) is manifest


@pytest.mark.parametrize("text", ["strict", "mcp=maybe", "mcp=warn,mcp=off", "tools=warn"])
def test_bad_modes_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        PinModes.parse(text)
