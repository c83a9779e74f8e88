"""The responses the scripted model replays are each provider's exact wire format: strictly
valid for the official SDK types, and read by callgate's adapters as the event they stand for
(complete calls, a final answer, a refusal, a cut turn)."""

from __future__ import annotations

import pytest

from adapters import get_adapter
from adapters.events import FinalEvent, IncompleteEvent, RefusalEvent, ToolRequestEvent
from tests.support.scenarios import TRAIN, WEATHER
from tests.support.wire_checks import validate_response
from tests.support.wire_responses import PROVIDERS, WIRES, Call

CALLS = [
    Call("call_train", "get_train_status", TRAIN),
    Call("call_weather", "get_weather", WEATHER),
]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_shape_is_valid_for_the_sdk(provider: str) -> None:
    wire = WIRES[provider]
    for body in (
        wire.calls("r-1", CALLS),
        wire.calls("r-2", CALLS[:1]),
        wire.final("r-3", "ICE123 is on time."),
        wire.refusal("r-4"),
        wire.truncated("r-5", CALLS[0]),
    ):
        validate_response(provider, body)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_shape_reads_as_the_event_it_stands_for(provider: str) -> None:
    wire, adapter = WIRES[provider], get_adapter(provider)
    calls = adapter.read_complete_event(wire.calls("r-1", CALLS))
    assert isinstance(calls, ToolRequestEvent)
    assert [(c.call_id, c.name, c.arguments, c.complete) for c in calls.calls] == [
        ("call_train", "get_train_status", TRAIN, True),
        ("call_weather", "get_weather", WEATHER, True),
    ]
    final = adapter.read_complete_event(wire.final("r-2", "ICE123 is on time."))
    assert isinstance(final, FinalEvent) and final.text == "ICE123 is on time."
    assert isinstance(adapter.read_complete_event(wire.refusal("r-3")), RefusalEvent)
    assert isinstance(adapter.read_complete_event(wire.truncated("r-4", CALLS[0])), IncompleteEvent)
    if wire.has_ids:
        assert calls.meta.response_id == "r-1"
