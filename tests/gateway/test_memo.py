"""The memo behind repeated calls: bounded in entries and key length, computed once per key."""

from __future__ import annotations

import threading

from gateway.memo import Memo


def test_a_key_is_computed_once_and_the_oldest_goes_first() -> None:
    memo: Memo[str] = Memo(size=3)
    computed: list[str] = []

    def value(key: str) -> str:
        return memo.get_or(key, lambda: computed.append(key) or key.upper())

    assert [value(k) for k in "abca"] == ["A", "B", "C", "A"]
    assert computed == ["a", "b", "c"]
    value("d")  # evicts b, the least recently used ("a" was just used)
    assert memo.get("b") is None and memo.get("a") == "A"
    assert value("b") == "B" and computed == ["a", "b", "c", "d", "b"]


def test_long_keys_are_computed_every_time() -> None:
    memo: Memo[int] = Memo(max_key_chars=4)
    calls = []
    for _ in range(2):
        memo.get_or("12345", lambda: calls.append(1) or 1)
    assert len(calls) == 2 and memo.get("12345") is None


def test_an_empty_value_is_a_value() -> None:
    memo: Memo[str] = Memo()
    calls = []
    for _ in range(2):
        assert memo.get_or("k", lambda: calls.append(1) or "") == ""
    assert calls == [1]


def test_threads_share_one_table_within_its_bound() -> None:
    memo: Memo[int] = Memo(size=50)

    def work(offset: int) -> None:
        for i in range(500):
            key = str((i + offset) % 120)
            assert memo.get_or(key, lambda k=key: int(k)) == int(key)

    threads = [threading.Thread(target=work, args=(n * 7,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memo._items) == 50
