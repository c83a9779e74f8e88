"""The strict YAML reader on hostile texts: whatever a file holds, reading it answers a value
or YamlTextError (a message naming the problem, its line where known), never another
exception out of PyYAML or Python's conversions, which callers do not expect and which made
start-up, a reload or a policy load fail with an unexplained error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.yamltext import YamlTextError, read_yaml, read_yaml_documents

HOSTILE = [
    ('x: !!float "x"\n', "line 1"),  # an explicit tag on a value it cannot convert
    ('x: !!int "x"\n', "line 1"),
    ("x: !!bool maybe\n", "line 1"),
    ('x: "\\UFFFFFFFF"\n', ""),  # an escape beyond Unicode (the scanner's error: no line)
    ("x: 0x" + "f" * 5000 + "\n", "line 1"),  # read, but too long to write in decimal
    ("x: " + "7" * 5000 + "\n", "line 1"),  # too long to read
    ("? 0x" + "f" * 5000 + "\n: 1\n", "line 1"),  # as a key
    ("x:\n  - 1\n  - !!float nope\n", "line 3"),  # the line of the value, not the document
]


@pytest.mark.parametrize(("text", "where"), HOSTILE)
def test_a_value_python_cannot_make_is_a_yaml_problem(text: str, where: str) -> None:
    for read in (read_yaml, read_yaml_documents):
        with pytest.raises(YamlTextError) as got:
            read(text)
        assert where in str(got.value)


def test_integers_within_what_can_be_written_stay_integers() -> None:
    value = read_yaml("a: 0x1F\nb: -12\nc: 1_000\nd: " + "9" * 4300 + "\n")
    assert value["a"] == 31 and value["b"] == -12 and value["c"] == 1000
    assert value["d"] == int("9" * 4300)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_a_value_or_a_yaml_problem(text: str) -> None:
    try:
        read_yaml_documents(text)
    except YamlTextError:
        pass
