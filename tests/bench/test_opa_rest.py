"""The OPA REST row: the input is the one callgate's policy gets, and each request asks OPA for
that decision with a date of its own (a live OPA when this machine has one, else the stand-in
speaking OPA's Data API)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.opa_rest import CAPTURED_DATE, decision_input, opa_rest_call
from bench.workloads import UnexpectedAnswer, fresh_date
from gateway.executors.http1 import Http1Client
from tests.support.opa import FakeOpa, SyncOpaEngine, live_opa_url


@pytest.fixture(scope="module")
def captured() -> str:
    return asyncio.run(decision_input())


@pytest.fixture
def opa_url() -> Iterator[str]:
    live = live_opa_url()
    if live is not None:
        yield live
        return
    with FakeOpa() as server:
        yield server.url


def test_the_input_is_the_policys_for_the_benchmark_call(captured: str) -> None:
    value = json.loads(captured)
    assert value["action"] == "call"
    assert value["call"]["tool"] == "get_train_status"
    assert value["call"]["args"] == {"train_number": "ICE123", "date": CAPTURED_DATE}
    assert value["identity"]["subject"] == "alice"
    assert captured.count(CAPTURED_DATE) == 1


CLOSED = fresh_date(3, 1)  # the date the bundle below refuses
BUNDLE = f"""package callgate

import rego.v1

default decision := {{"allow": false, "reasons": ["closed that day"]}}

decision := {{"allow": true}} if input.call.args.date != "{CLOSED}"
"""


def test_each_request_asks_its_own_date_and_must_be_allowed(
    captured: str, opa_url: str, tmp_path: Path
) -> None:
    async def ask(seq: int) -> None:
        client = Http1Client()
        try:
            await opa_rest_call(client, opa_url, captured)(3, seq)
        finally:
            await client.aclose()

    (tmp_path / "closed.rego").write_text(BUNDLE)
    pushed = SyncOpaEngine(opa_url, tmp_path)
    try:
        asyncio.run(ask(0))  # another date: allowed
        with pytest.raises(UnexpectedAnswer, match="closed that day"):
            asyncio.run(ask(1))  # OPA saw this request's own date, and denied it
    finally:
        pushed.close()
    # nothing pushed any more: OPA answers no decision, which never passes as ALLOW
    with pytest.raises(UnexpectedAnswer, match="OPA"):
        asyncio.run(ask(0))
