"""GetRun's page sizes and page tokens (`gateway.run.pages`): what a page holds, and that only
a token given out for the same run is taken back."""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from gateway.errors import RequestCode, RequestError
from gateway.model import (
    CallRecord,
    CallStatus,
    EventKind,
    RunPage,
    RunRecord,
    RunState,
    RunView,
    TurnRecord,
)
from gateway.run import pages as run_pages

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def refused(run_id: str, token: str) -> RequestError:
    with pytest.raises(RequestError) as err:
        run_pages.page_before(run_id, token)
    assert err.value.code == RequestCode.INVALID_PAGE_TOKEN
    assert "next_page_token" in err.value.message and run_id in err.value.message
    return err.value


def a_page(run_id: str, seqs: range, count: int) -> RunPage:
    run = RunRecord(
        run_id=run_id,
        state=RunState.ACTIVE,
        subject="alice",
        tenant="acme",
        created_at=NOW,
        updated_at=NOW,
    )
    turns = tuple(
        TurnRecord(run_id=run_id, turn_id=f"t{n}", seq=n, event=EventKind.FINAL, content_hash="h")
        for n in seqs
    )
    return RunPage(RunView(run, turns, ()), count, older=bool(turns) and turns[0].seq > 1)


def test_page_size_zero_is_the_default_and_the_limit_caps_it() -> None:
    assert run_pages.page_turns(0, 500) == run_pages.DEFAULT_PAGE_TURNS == 50
    assert run_pages.page_turns(7, 500) == 7
    assert run_pages.page_turns(501, 500) == 500  # served as many as the limit allows
    assert run_pages.page_turns(0, 20) == 20  # a limit below the default bounds it too
    with pytest.raises(RequestError) as err:
        run_pages.page_turns(-1, 500)
    assert err.value.code == RequestCode.INVALID_ARGUMENT and "page_size" in err.value.message


def test_a_token_stands_for_its_boundary_in_its_run() -> None:
    token = run_pages.page_token("trip-42", 51)
    assert run_pages.page_before("trip-42", token) == 51
    assert run_pages.page_before("trip-42", "") is None
    assert token.isascii() and "=" not in token and "trip" not in token  # opaque, URL-safe
    assert run_pages.page_token("trip-42", 51) == token  # stable: any replica gives the same


def test_the_next_token_leads_before_the_page_until_the_first_turn() -> None:
    latest = a_page("r1", range(51, 101), 100)
    assert run_pages.page_before("r1", run_pages.next_page_token(latest)) == 51
    assert run_pages.next_page_token(a_page("r1", range(1, 51), 100)) == ""
    assert run_pages.next_page_token(a_page("r1", range(0), 0)) == ""


def test_another_runs_token_is_refused() -> None:
    err = refused("r2", run_pages.page_token("r1", 51))
    assert "was not given out for this run" in err.message


@pytest.mark.parametrize(
    "token",
    [
        "x",
        "not a token",
        "after:50",
        "A" * 28,
        "A" * 29,
        "====",
        "Zm9v",
        "\u00e9" * 28,
        "AQAAAAAAAAAz" + "A" * 15 + "!",
    ],
)
def test_garbage_is_refused(token: str) -> None:
    refused("r1", token)


def raw(token: str) -> bytearray:
    return bytearray(base64.urlsafe_b64decode(token))


def encoded(data: bytes | bytearray) -> str:
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def test_a_changed_token_is_refused() -> None:
    token = raw(run_pages.page_token("r1", 51))
    for i in range(len(token)):  # any byte changed: version, boundary or check
        changed = bytearray(token)
        changed[i] ^= 0x01
        refused("r1", encoded(changed))


def test_boundaries_no_page_gives_out_are_refused() -> None:
    """A page's token names the seq of its oldest turn, which has older turns: 2 or more."""
    for before in (0, 1):
        refused("r1", run_pages.page_token("r1", before))
    page = a_page("r1", range(1, 11), 10)
    run_pages.check_in_run("r1", 10, page)
    run_pages.check_in_run("r1", None, page)
    with pytest.raises(RequestError) as err:
        run_pages.check_in_run("r1", 11, page)  # past the run's latest turn
    assert err.value.code == RequestCode.INVALID_PAGE_TOKEN


def sized_page(sizes: list[int], count: int | None = None) -> RunPage:
    """A page of turns 1..len(sizes) whose raw responses have these sizes, one call each."""
    run = RunRecord(run_id="r1", state=RunState.ACTIVE, subject="alice", tenant="acme")
    turns = tuple(
        TurnRecord(
            run_id="r1",
            turn_id=f"t{n}",
            seq=n,
            event=EventKind.TOOL_REQUEST,
            content_hash="h",
            raw_response_json="x" * size,
        )
        for n, size in enumerate(sizes, 1)
    )
    calls = tuple(
        CallRecord(
            run_id="r1",
            turn_id=t.turn_id,
            call_id=f"c{t.seq}",
            index=0,
            tool="t",
            status=CallStatus.SUCCEEDED,
            arguments_json="{}",
        )
        for t in turns
    )
    return RunPage(RunView(run, turns, calls), count or len(sizes), older=False)


def test_a_page_keeps_the_newest_turns_that_fit_its_bytes() -> None:
    page = sized_page([10_000] * 6)
    each = run_pages.turn_bytes(page.view.turns[0], page.view.calls[:1])
    assert each > 10_000
    assert run_pages.within_bytes(page, 6 * each) is page  # everything fits: as read
    cut = run_pages.within_bytes(page, 4 * each + each // 2)
    assert [t.seq for t in cut.view.turns] == [3, 4, 5, 6]
    assert [c.call_id for c in cut.view.calls] == ["c3", "c4", "c5", "c6"]
    assert cut.older and not cut.whole and cut.turn_count == 6
    assert run_pages.page_before("r1", run_pages.next_page_token(cut)) == 3


def test_a_turn_larger_than_the_bytes_still_makes_a_page() -> None:
    """Paging always moves on: a page holds at least its newest turn."""
    page = sized_page([50, 2_000_000, 50])
    one = run_pages.within_bytes(page, 1000)
    assert [t.seq for t in one.view.turns] == [3] and one.older
    big = run_pages.within_bytes(
        RunPage(RunView(page.view.run, page.view.turns[:2], page.view.calls[:2]), 3, older=True),
        1000,
    )
    assert [t.seq for t in big.view.turns] == [2]
    assert [c.call_id for c in big.view.calls] == ["c2"]


def test_call_texts_count_towards_the_bytes() -> None:
    page = sized_page([10, 10])
    light = run_pages.turn_bytes(page.view.turns[0], page.view.calls[:1])
    heavy_call = replace(page.view.calls[0], output_json="y" * 5000, error_message="é" * 100)
    assert run_pages.turn_bytes(page.view.turns[0], [heavy_call]) == light + 5000 + 200
    assert run_pages.turn_bytes(page.view.turns[0], []) < light
