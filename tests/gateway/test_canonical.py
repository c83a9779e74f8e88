"""callgate's canonical JSON is RFC 8785's, byte for byte: for every JSON-like value both give
the same bytes or both refuse it (Hypothesis, with the values where a quick path could go
wrong: floats, integers at the safe range's edges, keys beyond the BMP or in the private use
area, control characters, lone surrogates)."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.canonical import SAFE_INT, canonical

texts = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["", "\x00", "\x1f", "\x7f", "\u2028", "\ud7ff", "\ue000", "\U0001f600"]),
    st.text(alphabet=st.characters(min_codepoint=0xD000, max_codepoint=0x1F000), max_size=3),
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-SAFE_INT - 2, SAFE_INT + 2),
    st.sampled_from([SAFE_INT, -SAFE_INT, SAFE_INT + 1, 2**64, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, -0.0, 1e21, 1e-7, 0.5]),
    texts,
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=16,
)


def either(value: Any) -> tuple[str, bytes | str]:
    try:
        return "ok", rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        return "refused", type(exc).__name__
    except UnicodeError:  # a lone surrogate in a key: refused, under the library's own name
        return "refused", "CanonicalizationError"


def ours(value: Any) -> tuple[str, bytes | str]:
    try:
        return "ok", canonical(value)
    except rfc8785.CanonicalizationError as exc:
        return "refused", type(exc).__name__


@settings(max_examples=2000)
@given(values)
def test_every_value_is_written_as_rfc8785_writes_it(value: Any) -> None:
    assert ours(value) == either(value)


@pytest.mark.parametrize(
    "value",
    [
        {"\U0001f600": 1, "\ue000": 2},  # UTF-16 order puts the astral key first
        {"b": 1.0, "a": [1e21, 1e-7, -0.0]},
        {"big": SAFE_INT + 1},
        {"lone": "\ud800"},
        {"\ud800": "a lone surrogate key"},
        [[[[[[]]]]]] * 3,
    ],
)
def test_the_values_a_quick_path_would_get_wrong(value: Any) -> None:
    assert ours(value) == either(value)


def test_a_plain_value_takes_the_quick_path() -> None:
    """Same bytes as the reference, from orjson (the reference writes through a BytesIO)."""
    value = {"b": [1, "x\n", None, True], "a": {"é": -SAFE_INT}}
    assert (
        canonical(value)
        == rfc8785.dumps(value)
        == b'{"a":{"\xc3\xa9":-9007199254740991},"b":[1,"x\\n",null,true]}'
    )
