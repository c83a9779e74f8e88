"""`callgate tools pins` and `callgate tools approve` on a store: the listing shows a changed
definition with what changed, an approval moves the pin (audited, sealed), and bad requests
end with a one-line usage error and change nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from gateway.audit import events, offline
from gateway.audit.keys import AuditKey
from gateway.pins import SeenDefinition, definition_json, fingerprint_of
from gateway.store import open_store
from tests.support.commands import callgate

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def seen(description: str, at: datetime = AT) -> SeenDefinition:
    text = definition_json({"name": "book", "description": description})
    return SeenDefinition("book", fingerprint_of(text), text, at)


async def two_definitions(db: str, key: AuditKey) -> tuple[str, str]:
    store = await open_store(db, audit_key=key)
    one, two = seen("Book a seat."), seen("Book any seat.", AT.replace(hour=13))
    for s in (one, two):
        await store.record_definitions(
            [s], lambda made: [events.tool_pinned(p, by=None) for p in made]
        )
    await store.close()
    return one.fingerprint, two.fingerprint


async def verified(db: str, key: AuditKey) -> bool:
    store = await open_store(db)
    report = await offline.verify(store, key)
    await store.close()
    return report.broken is None


def test_a_changed_definition_is_listed_and_approved(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    key = AuditKey.load_or_create(tmp_path / "runs.db-audit.key")
    first, changed = asyncio.run(two_definitions(db, key))

    listed = callgate("tools", "pins", "--db", db, "--json")
    assert listed.returncode == 0, listed.stderr
    (book,) = json.loads(listed.stdout)["pins"]
    assert book["fingerprint"] == first and book["pinned_by"] == ""
    (change,) = book["changed"]
    assert change["fingerprint"] == changed and change["fields"] == ["description"]
    assert '+  "description": "Book any seat."' in change["diff"]
    text = callgate("tools", "pins", "--db", db)
    assert "changed: " + changed in text.stdout and "description" in text.stdout

    refused = callgate("tools", "approve", "book", "--db", db)
    assert refused.returncode == 2 and "--reason" in refused.stderr
    unknown = callgate(
        "tools", "approve", "book", "--db", db, "--reason", "r", "--fingerprint", "x"
    )
    assert unknown.returncode == 2 and "was ever served" in unknown.stderr

    done = callgate("tools", "approve", "book", "--db", db, "--reason", "reviewed the change")
    assert done.returncode == 0, done.stderr
    assert changed in done.stdout
    (book,) = json.loads(callgate("tools", "pins", "--db", db, "--json").stdout)["pins"]
    assert book["fingerprint"] == changed and book["reason"] == "reviewed the change"
    assert book["pinned_by"] and [c["fingerprint"] for c in book["changed"]] == [first]
    assert asyncio.run(verified(db, key))
