"""`search` asks RE2's compiled program whether a pattern matches, without the `re2` module's
match object: the same answers as the module's own `search`, on any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.tools.patterns import compiled, search, searcher

PATTERNS = [
    "^[A-Z]{1,4}[0-9]{1,5}$",
    r"^\d{4}-\d{2}-\d{2}$",
    "a*",
    "^",
    "$",
    "é+",
    r"\p{Lu}\p{Ll}",
    r"^\s*$",
    ".",
    "[^a]",
    r"\u{1F600}",
    "x|yz",
]


@given(pattern=st.sampled_from(PATTERNS), text=st.text(max_size=12))
def test_search_answers_as_the_re2_module_does(pattern: str, text: str) -> None:
    assert searcher(pattern)(text) == (compiled(pattern).search(text) is not None)
    assert search(pattern, text) == searcher(pattern)(text)


def test_it_asks_the_compiled_program_itself() -> None:
    # the fast path reads the module's binding; if a new google-re2 moved it, this says so
    # (search then falls back to the module's own search, correct but four times slower)
    assert searcher("^a$").__name__ == "found"


def test_a_lone_surrogate_is_refused_as_the_module_refuses_it() -> None:
    with pytest.raises(UnicodeEncodeError):
        compiled("a").search("\ud800")
    with pytest.raises(UnicodeEncodeError):
        search("a", "\ud800")
