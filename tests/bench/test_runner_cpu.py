"""bench.runner_cpu: every Authorize it sends has arguments no request had before (what its
figures claim to measure), across rounds and concurrencies, and its options are checked."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from bench.inproc import in_process, sqlite_opener
from bench.runner_cpu import main, measure
from gateway.audit.records import AuditFilter


def test_every_authorize_has_new_arguments(tmp_path: Path) -> None:
    async def go() -> tuple[list[int], list[str]]:
        dates = itertools.count()
        async with in_process(sqlite_opener(tmp_path / "r.db"), "http://127.0.0.1:9") as proc:
            found = [await measure(proc, "authorize", c, 6, 2, None, dates) for c in (1, 3)]
            records = await proc.store.query_audit(AuditFilter(), after=0, limit=1000)
        return [r.requests for r in found], [r.arguments_sha256 for r in records]

    requests, hashes = asyncio.run(go())
    assert requests == [6, 6]
    # the warm-up's requests, then two rounds of each concurrency, one record each
    assert len(hashes) == 200 + 12 + 198 + 12
    assert len(set(hashes)) == len(hashes)


def test_bad_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--concurrency", "0"])
    assert exc.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err
