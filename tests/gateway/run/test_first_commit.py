"""A turn's first commit syncs to disk on its own unless the turn is reads only, all going out
at once: then nothing leaves the sidecar before the settling commit, which syncs both."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.model import CallStatus, Verdict
from tests.support.harness import ALICE, Harness
from tests.support.runs import TRAIN, by_id, call, calls_turn, start


@pytest.fixture
def durable(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `durable` of every begin_turn the runner asks for."""
    seen: list[bool] = []
    begin = harness.store.begin_turn

    async def recorded(*args: Any, durable: bool = True, **kwargs: Any) -> None:
        seen.append(durable)
        await begin(*args, durable=durable, **kwargs)

    monkeypatch.setattr(harness.store, "begin_turn", recorded)
    return seen


async def test_a_turn_of_reads_only_leaves_its_first_commit_to_the_settling_one(
    harness: Harness, durable: list[bool]
) -> None:
    await start(harness)
    out = await harness.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", call("a", "lookup_train", TRAIN), call("b", "nope", TRAIN))
    )
    assert by_id(out)["a"][0] == CallStatus.SUCCEEDED
    assert by_id(out)["b"][0] == CallStatus.REJECTED
    assert durable == [False]


@pytest.mark.parametrize(
    "verdicts, calls",
    [
        ({}, [("a", "lookup_train"), ("w", "book")]),  # a write follows the reads
        ({"lookup_train": Verdict.APPROVAL_REQUIRED}, [("a", "lookup_train")]),  # an approval
        ({"lookup_train": Verdict.DENY}, [("a", "lookup_train")]),  # nothing goes out
    ],
)
async def test_any_other_turn_syncs_its_first_commit(
    harness: Harness,
    durable: list[bool],
    verdicts: dict[str, Verdict],
    calls: list[tuple[str, str]],
) -> None:
    harness.policy.verdicts.update(verdicts)
    await start(harness)
    await harness.runner.submit_turn(
        ALICE, calls_turn("r1", "t1", *(call(i, tool, TRAIN) for i, tool in calls))
    )
    assert durable == [True]
