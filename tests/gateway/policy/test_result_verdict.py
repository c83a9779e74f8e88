"""Parsing a `result` answer: strict, and every hostile answer withholds with a clear reason."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.policy.decision import UNDEFINED
from gateway.policy.results import (
    MAX_POINTERS,
    ResultVerdict,
    pointer_problem,
    pointer_tokens,
    result_verdict,
)


def test_undefined_delivers_as_is() -> None:
    assert result_verdict(UNDEFINED) is None
    assert result_verdict(None) is None


def test_a_well_formed_answer() -> None:
    got = result_verdict({"deliver": True, "redact": {"/b", "/a"}, "reasons": ["x"]})
    assert got == ResultVerdict(deliver=True, redact=("/a", "/b"), reasons=("x",))
    assert result_verdict({"deliver": False}) == ResultVerdict(deliver=False)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("deliver", "result is not an object (string)"),
        ([True], "result is not an object (array)"),
        ({}, "result.deliver is not a boolean (undefined)"),
        ({"deliver": "yes"}, "result.deliver is not a boolean (string)"),
        ({"deliver": True, "redact": "/a"}, "result.redact is not a list of strings"),
        ({"deliver": True, "redact": [1]}, "result.redact is not a list of strings"),
        ({"deliver": True, "reasons": [{"r": 1}]}, "result.reasons is not a list of strings"),
        ({"deliver": True, "redact": ["a/b"]}, "not a JSON pointer: it must be empty or start"),
        ({"deliver": True, "redact": ["/a~2"]}, "'~' must be followed by 0 or 1"),
        ({"deliver": True, "redact": [f"/{i}" for i in range(5000)]}, "5000 items, over"),
        ({"deliver": True, "redact": ["/" + "a" * 5000]}, "over the limit of 1024"),
        ({"deliver": True, "drop": []}, "unknown key(s): drop"),
    ],
)
def test_a_hostile_answer_withholds(value: Any, says: str) -> None:
    got = result_verdict(value)
    assert got is not None and got.deliver is False and got.redact == ()
    assert says in got.error and got.reasons == (f"policy_error: {got.error}",)


def test_the_pointer_limit_itself_is_accepted() -> None:
    got = result_verdict({"deliver": True, "redact": [f"/{i}" for i in range(MAX_POINTERS)]})
    assert got is not None and got.deliver and len(got.redact) == MAX_POINTERS


def test_pointers_follow_rfc_6901() -> None:
    assert pointer_problem("") == pointer_problem("/a~0b~1c") == ""
    assert pointer_tokens("/a~0b~1c/0/") == ["a~b/c", "0", ""]
    assert pointer_tokens("") == []
