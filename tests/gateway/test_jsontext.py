"""The one strict JSON reader and the bounded writer (docs/operations.md, "Limits")."""

from __future__ import annotations

import json

import pytest

from gateway.jsontext import (
    JsonTextError,
    read_json,
    read_object,
    storable_text,
    write_json,
)
from gateway.store.codecs import storable


@pytest.mark.parametrize(
    "text, rule",
    [
        ("NaN", "non_finite"),
        ("[Infinity]", "non_finite"),
        ('{"a": -Infinity}', "non_finite"),
        ("[1e400]", "non_finite"),
        ("[" + "9" * 400 + "]", "integer_range"),
        ("9007199254740992", "integer_range"),
        ("-9007199254740992", "integer_range"),
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ('{"x": {"a": 1, "b": {}, "a": 2}}', "duplicate_key"),
        ('"\\ud800"', "lone_surrogate"),
        ('{"\\udc00": 1}', "lone_surrogate"),
        ('["\\ude00\\ud83d"]', "lone_surrogate"),
        ("\ud800", "lone_surrogate"),
        ("[" * 65 + "]" * 65, "depth"),
        ('{"a":' * 65 + "1" + "}" * 65, "depth"),
        ("[" * 100_000 + "]" * 100_000, "depth"),
        ("{", "syntax"),
        ("[1,]", "syntax"),
        ("", "syntax"),
        ("\ufeff{}", "syntax"),  # a byte order mark is not JSON text (RFC 8259 §8.1)
        (b"\xef\xbb\xbf{}", "syntax"),  # the same, as bytes
    ],
)
def test_rules(text: str, rule: str) -> None:
    with pytest.raises(JsonTextError) as info:
        read_json(text)
    assert info.value.rule == rule, info.value.message


@pytest.mark.parametrize(
    "text",
    [
        "[" * 64 + "]" * 64,
        '["\\ud83d\\ude00", "\\u00e9", "😀"]',
        "9007199254740991",
        "-9007199254740991",
        '{"a": 1.5e300, "b": -0, "c": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',
        '"\\\\ud800"',  # an escaped backslash, then text: no surrogate
    ],
)
def test_accepted(text: str) -> None:
    assert read_json(text) == json.loads(text)


def test_depth_is_configurable() -> None:
    text = "[" * 10 + "]" * 10
    with pytest.raises(JsonTextError):
        read_json(text, max_depth=9)
    assert read_json(text, max_depth=10) == json.loads(text)


def test_big_integers_can_be_kept_exactly() -> None:
    assert read_json("[12345678901234567890]", big_integers=True) == [12345678901234567890]
    with pytest.raises(JsonTextError):
        read_json("[" + "9" * 5000 + "]", big_integers=True)


def test_bytes_must_be_utf8() -> None:
    assert read_json(b'{"a": "\xc3\xa9"}') == {"a": "é"}
    with pytest.raises(JsonTextError) as info:
        read_json(b'{"a": "\xff"}')
    assert info.value.rule == "syntax"


def test_read_object() -> None:
    assert read_object('{"a": 1}') == {"a": 1}
    with pytest.raises(JsonTextError) as info:
        read_object("[1]")
    assert info.value.rule == "not_object"


def test_writer_is_compact_strict_and_bounded() -> None:
    assert write_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    for bad in (float("nan"), {"a": "\ud800"}, {1: object()}):
        with pytest.raises(JsonTextError):
            write_json(bad)
    deep: list[object] = []
    node = deep
    for _ in range(100):
        node.append([])
        node = node[0]  # type: ignore[assignment]
    with pytest.raises(JsonTextError):
        write_json(deep)
    with pytest.raises(JsonTextError) as info:
        write_json({"a": "x" * 100}, limit=50)
    assert info.value.rule == "size"


def test_texts_are_made_storable() -> None:
    assert storable_text("a\ud800b") == "a\ufffdb"
    assert storable_text("\ud83d\ude00") == "😀"
    assert storable_text("plain") == "plain"
    assert storable_text("a\x00b") == "a\ufffdb"  # PostgreSQL text holds no NUL


@pytest.mark.parametrize("odd", ["a\x00b", "a\ud800b", "\ud83d\ude00"])
def test_a_row_is_made_storable_whichever_text_needs_it(odd: str) -> None:
    row = ("plain", 3, None, "ünïcode ✓", odd, "")
    assert storable(row) == (*row[:4], storable_text(odd), "")


def test_a_row_of_texts_that_need_nothing_is_kept_as_it_is() -> None:
    assert storable(("plain", 3, None, "ünïcode ✓", "")) == ("plain", 3, None, "ünïcode ✓", "")
    ascii_row = ("a", 1, "b")
    assert storable(ascii_row) is ascii_row


def test_a_byte_order_mark_is_named() -> None:
    with pytest.raises(JsonTextError, match="byte order mark"):
        read_json("\ufeff{}")
