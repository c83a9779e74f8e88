"""GetRun's pages: how many turns a page holds, and the page token that continues backwards.

The first page holds a run's latest turns; each `next_page_token` leads to the turns just
before the oldest one of its page, until the first turn. A page holds at most `page_size`
turns, and fewer when their records would pass a size (`within_bytes`): a run of large raw
responses or outputs still answers in messages a client can take. A token is opaque to clients: the
URL-safe base64 (no padding) of a version byte, the seq boundary (the next page holds the
turns numbered below it; 8 bytes, big-endian) and a check (the first 12 bytes of SHA-256 over
the run ID and the boundary). A token is valid only with the run it was given out for; it
grants nothing by itself (the caller must still own the run).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence

from gateway.errors import RequestCode, RequestError
from gateway.limits import utf8_len
from gateway.model import CallRecord, RunPage, RunView, TurnRecord

DEFAULT_PAGE_TURNS = 50  # a page_size of 0 (every client that predates paging)
TOKEN_VERSION = 1
_CHECK_BYTES = 12
_TOKEN_BYTES = 1 + 8 + _CHECK_BYTES
_TOKEN_TEXT = re.compile(r"[A-Za-z0-9_-]{28}")  # 21 bytes in base64, unpadded
# what a record's IDs, timestamps, numbers and field tags take besides its long texts, at most
_TURN_OVERHEAD = 512
_CALL_OVERHEAD = 1024


def page_turns(requested: int, maximum: int) -> int:
    """The turns a page holds: `requested`, 0 meaning the default, at most `maximum` (a larger
    request is served `maximum` turns, its next_page_token leading on)."""
    if requested < 0:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"page_size is {requested}: use 0 "
            f"(the default, {min(DEFAULT_PAGE_TURNS, maximum)} turns) or more",
        )
    return min(requested or DEFAULT_PAGE_TURNS, maximum)


def turn_bytes(turn: TurnRecord, calls: Sequence[CallRecord]) -> int:
    """About what a turn and its calls take in an answer (their texts, plus a margin)."""
    size = _TURN_OVERHEAD + utf8_len(turn.raw_response_json) + utf8_len(turn.reason)
    for c in calls:
        reasons = c.decision.reasons if c.decision else ()
        size += _CALL_OVERHEAD + sum(
            utf8_len(t)
            for t in (
                c.arguments_json,
                c.output_json,
                c.error_message,
                c.resolution_reason,
                *reasons,
            )
        )
    return size


def within_bytes(page: RunPage, max_bytes: int) -> RunPage:
    """The page's newest turns whose records (`turn_bytes`) fit in `max_bytes`, with their
    calls; always at least the newest one, so paging moves on whatever a turn's size."""
    calls: defaultdict[str, list[CallRecord]] = defaultdict(list)
    for c in page.view.calls:
        calls[c.turn_id].append(c)
    kept = 0
    total = 0
    for turn in reversed(page.view.turns):
        total += turn_bytes(turn, calls[turn.turn_id])
        if kept and total > max_bytes:
            break
        kept += 1
    if kept == len(page.view.turns):
        return page
    turns = page.view.turns[len(page.view.turns) - kept :]
    ids = {t.turn_id for t in turns}
    view = RunView(page.view.run, turns, tuple(c for c in page.view.calls if c.turn_id in ids))
    return RunPage(view, page.turn_count, older=True)


def _check(run_id: str, before: int) -> bytes:
    text = f"{run_id}\0{before}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).digest()[:_CHECK_BYTES]


def page_token(run_id: str, before: int) -> str:
    """The token of the page of `run_id`'s turns numbered below `before`."""
    raw = bytes([TOKEN_VERSION]) + before.to_bytes(8, "big") + _check(run_id, before)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def next_page_token(page: RunPage) -> str:
    """The token of the page before `page` ("" when `page` reaches the run's first turn)."""
    return page_token(page.view.run.run_id, page.first_seq) if page.older else ""


def _refused(run_id: str, why: str) -> RequestError:
    return RequestError(
        RequestCode.INVALID_PAGE_TOKEN,
        f"page_token {why}: pass the next_page_token of a previous GetRun of run "
        f"{run_id!r} unchanged, or no page_token for the run's latest turns",
    )


def page_before(run_id: str, token: str) -> int | None:
    """The seq boundary `token` stands for (None for no token: the latest turns)."""
    if not token:
        return None
    if not _TOKEN_TEXT.fullmatch(token):
        raise _refused(run_id, "is not one GetRun gave out")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise _refused(run_id, "is not one GetRun gave out") from None
    if len(raw) != _TOKEN_BYTES or raw[0] != TOKEN_VERSION:
        raise _refused(run_id, "is not one GetRun gave out")
    before = int.from_bytes(raw[1:9], "big")
    if before < 2 or raw[9:] != _check(run_id, before):
        raise _refused(run_id, "was not given out for this run (or was changed)")
    return before


def check_in_run(run_id: str, before: int | None, page: RunPage) -> None:
    """A boundary past the run's latest turn came from no page of this run."""
    if before is not None and before > page.turn_count:
        raise _refused(run_id, "was not given out for this run (or was changed)")
