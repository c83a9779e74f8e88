"""The store every test here runs against: one fresh store of each kind (`db_kind`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.store import RunStore, open_store
from tests.support.paths import NewDb


@pytest.fixture
def db_url(new_db: NewDb) -> str:
    return new_db()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[RunStore]:
    s = await open_store(db_url)
    yield s
    await s.close()
