"""Row forms that stored data depends on."""

from __future__ import annotations

import json
from dataclasses import asdict

from gateway.model import Budget, EventDetail
from gateway.store import codecs


def test_budgets_and_event_details_are_stored_as_they_always_were() -> None:
    for value in (
        Budget(),
        Budget(3, 10, 5000, 1),
        EventDetail(),
        EventDetail('said "hé"', "rate_limit", True),
    ):
        text = codecs._flat_json(value)
        assert text == json.dumps(asdict(value))
        assert type(value)(**json.loads(text)) == value
