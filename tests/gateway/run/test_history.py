"""The run's earlier calls are read for a decision only when the serving policy can observe
them, and a revision that can is never left to decide without them, reload or not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from gateway.model import CallStatus, PastCall, ToolCall
from gateway.policy import load_engine
from gateway.policy.reload import ReloadingEngine
from gateway.run.authorize import Authorizer
from gateway.run.runner import Runner, StartRunParams
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry
from tests.support.harness import ALICE, FakeClock, manifests
from tests.support.runs import TRAIN, by_id, call, calls_turn

BLIND = 'package callgate\n\ndecision := {"allow": true, "reasons": ["history unread"]}\n'
# Allows a run's first call only: with the history it was given, it denies every later one.
FIRST_ONLY = """package callgate

decision := {"allow": true, "reasons": ["first call"]} if count(input.run.calls) == 0
else := {"allow": false, "reasons": ["the run has called before"]}
"""


class CountingStore(SQLiteStore):
    """Records how many recent calls each read asked for; `after_read` runs after a turn's
    context is read (a reload landing between the read and the decisions)."""

    asked: list[int]
    after_read: Any = None

    async def turn_context(
        self, run_id: str, turn_id: str, call_ids: Sequence[str], recent: int
    ) -> Any:
        self.asked.append(recent)
        found = await super().turn_context(run_id, turn_id, call_ids, recent)
        if self.after_read is not None:
            self.after_read()
        return found

    async def recent_calls(self, run_id: str, limit: int) -> list[PastCall]:
        self.asked.append(limit)
        return await super().recent_calls(run_id, limit)


def write(root: Path, name: str, rego: str) -> Path:
    directory = root / name
    directory.mkdir()
    (directory / "p.rego").write_text(rego, encoding="utf-8")
    return directory


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CountingStore]:
    found = await CountingStore.open(tmp_path / "runs.db")
    assert isinstance(found, CountingStore)
    found.asked = []
    yield found
    await found.close()


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    found = Registry.from_manifests(manifests(), env={})
    yield found
    await found.aclose()


def runner(store: SQLiteStore, registry: Registry, policy: ReloadingEngine) -> Runner:
    return Runner(store=store, registry=registry, policy=policy, clock=FakeClock())


def read(call_id: str) -> ToolCall:
    return call(call_id, "lookup_train", TRAIN)


async def test_a_policy_blind_to_the_history_reads_none(
    tmp_path: Path, store: CountingStore, registry: Registry
) -> None:
    policy = ReloadingEngine(load_engine(write(tmp_path, "blind", BLIND)))
    r = runner(store, registry, policy)
    await r.start_run(ALICE, StartRunParams(run_id="r1"))
    for turn in ("t1", "t2"):
        out = await r.submit_turn(ALICE, calls_turn("r1", turn, read(f"{turn}a")))
        assert by_id(out)[f"{turn}a"][0] == CallStatus.SUCCEEDED
    decisions = await Authorizer(r).authorize(ALICE, "r1", [read("probe")])
    assert decisions[0].decision.reasons == ("history unread",)
    assert store.asked == [0, 0], "no recent call was read, for a turn or for Authorize"


async def test_a_policy_that_reads_the_history_is_given_it(
    tmp_path: Path, store: CountingStore, registry: Registry
) -> None:
    policy = ReloadingEngine(load_engine(write(tmp_path, "first", FIRST_ONLY)))
    r = runner(store, registry, policy)
    await r.start_run(ALICE, StartRunParams(run_id="r1"))
    first = await r.submit_turn(ALICE, calls_turn("r1", "t1", read("a")))
    assert by_id(first)["a"][0] == CallStatus.SUCCEEDED
    second = await r.submit_turn(ALICE, calls_turn("r1", "t2", read("b")))
    assert by_id(second)["b"][:2] == (CallStatus.REJECTED, "policy_denied")
    denied = await Authorizer(r).authorize(ALICE, "r1", [read("probe")])
    assert denied[0].decision.reasons == ("the run has called before",)
    assert all(limit > 0 for limit in store.asked) and len(store.asked) == 3


async def test_a_reload_between_the_read_and_the_decision_is_given_the_history(
    tmp_path: Path, store: CountingStore, registry: Registry
) -> None:
    """The context is read for a revision that cannot see the history; a reload to one that
    decides on it lands before the decisions: they are made again with the history read."""
    policy = ReloadingEngine(load_engine(write(tmp_path, "blind", BLIND)))
    reading = load_engine(write(tmp_path, "first", FIRST_ONLY))
    r = runner(store, registry, policy)
    await r.start_run(ALICE, StartRunParams(run_id="r1"))
    await r.submit_turn(ALICE, calls_turn("r1", "t1", read("a")))
    store.after_read = lambda: policy.install(reading)
    out = await r.submit_turn(ALICE, calls_turn("r1", "t2", read("b")))
    assert by_id(out)["b"][:2] == (CallStatus.REJECTED, "policy_denied")
    view = await store.get_view("r1")
    assert view is not None
    decided = {c.call_id: c.decision for c in view.calls}
    assert decided["b"] is not None
    assert decided["b"].policy_revision == reading.revision
    assert decided["b"].reasons == ("the run has called before",)
    assert store.asked == [0, 0, 50], "the history was read once the reload was seen"
