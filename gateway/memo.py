"""A bounded, thread-safe table of results of pure functions of a text.

For the steps a repeated call repeats exactly: the same arguments text has the same hash and
passes or fails the same schema; a pure policy revision decides the same input the same way.
Only short keys are kept (a memo of SIZE entries holds at most SIZE × max_key_chars characters
of keys), the least recently used entry goes first, and a miss costs one dictionary lookup.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, size: int = 1024, max_key_chars: int = 4096) -> None:
        self.size = size
        self.max_key_chars = max_key_chars
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: str, value: V) -> None:
        if len(key) > self.max_key_chars:
            return
        with self._lock:
            self._items[key] = value
            if len(self._items) > self.size:
                self._items.popitem(last=False)

    def get_or(self, key: str, compute: Callable[[], V]) -> V:
        """The value kept for key, or compute() (kept when the key is short enough)."""
        found = self.get(key)
        if found is None:
            found = compute()
            self.put(key, found)
        return found
