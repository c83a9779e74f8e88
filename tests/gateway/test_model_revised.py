"""`revised` is `dataclasses.replace` for the records a turn moves through its states: the same
record for any changes, and the same refusals."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.model import (
    CallRecord,
    CallStatus,
    Decision,
    EventKind,
    NextAction,
    RunRecord,
    RunState,
    TurnRecord,
    Verdict,
    revised,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RECORDS: list[Any] = [
    CallRecord(
        "r1",
        "t1",
        "c1",
        0,
        "get_weather",
        CallStatus.PROPOSED,
        '{"city": "Berlin"}',
        created_at=NOW,
        decision=Decision(Verdict.ALLOW),
    ),
    TurnRecord("r1", "t1", 1, EventKind.TOOL_REQUEST, "ab" * 32, next=NextAction.CONTINUE),
    RunRecord("r1", RunState.ACTIVE, "alice", "acme", created_at=NOW),
]


def _values_for(hint: Any) -> st.SearchStrategy[Any] | None:
    """Values of a field's annotated type, if it is one of the simple types the records use."""
    options = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    found: list[st.SearchStrategy[Any]] = []
    for kind in options:
        if isinstance(kind, type) and issubclass(kind, Enum):
            found.append(st.sampled_from(list(kind)))
        elif kind is str:
            found.append(st.text(max_size=8))
        elif kind is int:
            found.append(st.integers(0, 2**40))
        elif kind is datetime:
            found.append(st.datetimes(timezones=st.just(UTC)))
    if type(None) in typing.get_args(hint):
        found.append(st.none())
    return st.one_of(found) if found else None


@st.composite
def record_and_changes(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    record = draw(st.sampled_from(RECORDS))
    hints = typing.get_type_hints(type(record))
    values = {f.name: _values_for(hints[f.name]) for f in dataclasses.fields(record)}
    settable = sorted(n for n, v in values.items() if v is not None)
    chosen = draw(st.lists(st.sampled_from(settable), unique=True, max_size=4))
    return record, {n: draw(values[n]) for n in chosen}  # type: ignore[arg-type]


@given(record_and_changes())
def test_revised_is_the_record_replace_builds(case: tuple[Any, dict[str, Any]]) -> None:
    record, changes = case
    mine, theirs = revised(record, **changes), replace(record, **changes)
    assert mine == theirs
    assert type(mine) is type(theirs) and vars(mine) == vars(theirs)
    assert mine is not record and replace(record) == record  # the original is untouched


def test_a_change_to_no_field_is_refused_as_replace_refuses_it() -> None:
    with pytest.raises(TypeError, match="'colour'"):
        revised(RECORDS[0], colour="red")
    with pytest.raises(TypeError):
        replace(RECORDS[0], colour="red")


def test_classes_it_cannot_copy_faithfully_are_refused() -> None:
    @dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    @dataclass(frozen=True, slots=True)
    class Slotted:
        n: int

    @dataclass
    class Mutable:
        n: int

    for record in (Checked(1), Slotted(1), Mutable(1)):
        with pytest.raises(TypeError, match="dataclasses.replace"):
            revised(record, n=2)
