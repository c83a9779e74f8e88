"""callgate's threads carry their names at the OS level (top -H, ps -L, /proc)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from gateway.store.sqlite import SQLiteStore
from gateway.threadname import name_os_thread

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="thread names are read from /proc"
)


def os_name() -> str:
    return Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()


def test_a_thread_gets_its_python_name_cut_to_what_the_kernel_keeps() -> None:
    seen: list[str] = []

    def work() -> None:
        name_os_thread()
        seen.append(os_name())

    t = threading.Thread(target=work, name="callgate-a-long-thread-name")
    t.start()
    t.join()
    assert seen == ["callgate-a-long"]


async def test_the_sqlite_stores_thread_is_named(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.db")
    try:
        assert await store._db.run(os_name) == "callgate-sqlite"
    finally:
        await store.close()
