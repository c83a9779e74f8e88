"""Tool pins in each store: the first definition recorded pins the tool, later ones are kept
beside it, an approval moves the pin only to a definition recorded before, and both are
audited in the commit that makes them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from gateway.audit import events
from gateway.audit.records import AuditFilter
from gateway.model import Identity
from gateway.pins import SeenDefinition, ToolPin, definition_json, fingerprint_of
from gateway.store import RunStore, open_store

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OSCAR = Identity("oscar", "acme", ("operator",))


def seen(name: str, description: str) -> SeenDefinition:
    text = definition_json({"name": name, "description": description})
    return SeenDefinition(name, fingerprint_of(text), text, AT)


def first_pins(made: object) -> list[events.AuditEvent]:
    assert isinstance(made, list)
    return [events.tool_pinned(p, by=None) for p in made]


async def pin_records(store: RunStore) -> list[str]:
    records = await store.query_audit(AuditFilter(tool="book"), after=0, limit=100)
    return [r.message for r in records if r.kind == "pin"]


async def test_the_first_definition_pins_and_a_later_one_waits(store: RunStore) -> None:
    one, two = seen("book", "Book a seat."), seen("book", "Book any seat.")
    pins = await store.record_definitions([one], first_pins)
    assert pins["book"].fingerprint == one.fingerprint
    assert pins["book"].definition_json == one.definition_json
    pins = await store.record_definitions([two], first_pins)
    assert pins["book"].fingerprint == one.fingerprint  # not moved
    found = await store.tool_definitions(["book"])
    assert {d.fingerprint for d in found} == {one.fingerprint, two.fingerprint}
    assert await store.tool_pins(["nope"]) == {}
    (record,) = await pin_records(store)  # the first pin only
    assert "pinned to the first definition seen" in record


async def test_an_approval_moves_the_pin_to_a_recorded_definition_only(store: RunStore) -> None:
    one, two = seen("book", "Book a seat."), seen("book", "Book any seat.")
    await store.record_definitions([one, seen("get", "Read.")], first_pins)
    await store.record_definitions([two], first_pins)
    approved = ToolPin("book", two.fingerprint, "", AT, "oscar", "reviewed")

    def audit(pin: ToolPin) -> list[events.AuditEvent]:
        return [events.tool_pinned(pin, by=OSCAR, previous=one.fingerprint)]

    stored = await store.approve_pin(approved, audit)
    assert stored is not None and stored.fingerprint == two.fingerprint
    assert (stored.pinned_by, stored.reason, stored.definition_json) == (
        "oscar",
        "reviewed",
        two.definition_json,
    )
    unknown = ToolPin("book", fingerprint_of("{}"), "", AT, "oscar", "guess")
    assert await store.approve_pin(unknown, audit) is None
    assert (await store.tool_pins(["book"]))["book"].fingerprint == two.fingerprint
    assert set(await store.tool_pins()) == {"book", "get"}
    assert any("by oscar" in m and "reviewed" in m for m in await pin_records(store))


async def test_two_writers_pinning_at_once_store_one_pin(db_url: str) -> None:
    a, b = await open_store(db_url), await open_store(db_url)
    one, two = seen("book", "Book a seat."), seen("book", "Book any seat.")
    first, second = await asyncio.gather(
        a.record_definitions([one], first_pins), b.record_definitions([two], first_pins)
    )
    assert first["book"] == second["book"]
    assert first["book"].fingerprint in {one.fingerprint, two.fingerprint}
    await a.close()
    await b.close()
