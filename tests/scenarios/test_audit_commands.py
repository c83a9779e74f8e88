"""`callgate audit`: a run's records from the sidecar (table, JSON lines, following), and
verify, export and prune on a copy of its store."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gateway.client import tool_call
from gateway.testing import SidecarProcess
from tests.support.commands import callgate
from tests.support.paths import ROOT, Connect
from tests.support.scenarios import WEATHER


def copy_store(sidecar: SidecarProcess, to: Path) -> Path:
    """A consistent copy of the sidecar's SQLite store, with its audit key beside it."""
    source = sqlite3.connect(f"file:{sidecar.db}?mode=ro", uri=True)
    target = sqlite3.connect(to)
    source.backup(target)
    source.close()
    target.close()
    shutil.copy(f"{sidecar.db}-audit.key", f"{to}-audit.key")
    return to


@pytest.fixture
def with_records(connect: Connect, run_id: str) -> str:
    alice = connect("alice-demo-token")
    alice.start_run(run_id=run_id)
    alice.submit_calls(
        run_id, "t1", tool_call("c1", "get_weather", WEATHER), tool_call("c2", "launch_rocket", {})
    )
    return run_id


def test_a_runs_records_as_a_table_and_as_json_lines(
    sidecar: SidecarProcess, with_records: str
) -> None:
    base = (
        "audit",
        "--target",
        sidecar.target,
        "--token",
        "alice-demo-token",
        "--run-id",
        with_records,
    )
    done = callgate(*base)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "SEQ",
        "TIME",
        "KIND",
        "RUN",
        "CALL",
        "TOOL",
        "VERDICT",
        "STATUS",
        "CODE",
        "ACTOR",
        "WHY",
    ]
    (rocket,) = [line for line in lines if "launch_rocket" in line]
    # why it was refused, in the table itself: no --json needed
    assert "unknown_tool" in rocket and "no tool named 'launch_rocket' is registered" in rocket
    assert rocket.endswith("…")  # cut at the column's width; --wide shows it whole
    (allowed,) = [line for line in lines if " decision " in line and " c1 " in line]
    assert "tool get_weather allowed for roles" in allowed  # a decision says its reasons
    assert sum(" execution " in line and "callgate" in line for line in lines) == 1
    wide = callgate(*base, "--wide").stdout
    assert "(known: " in wide and "…" not in wide
    done = callgate(*base, "--json", "--limit", "2")
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["kind"], r["call_id"]) for r in found] == [("decision", "c1"), ("decision", "c2")]
    first = found[0]
    assert isinstance(first["seq"], int) and first["execution_count"] == 0  # typed, present
    assert first["arguments_summary"] == {"city": "Berlin", "date": "2026-12-01"}
    assert "detail_json" not in first and first["detail"] is None
    assert first["status"] == "CALL_STATUS_UNSPECIFIED" and first["error_code"] == ""
    assert f"more: --after-seq {found[-1]['seq']}" in done.stderr
    denied = callgate(
        "audit", "--target", sidecar.target, "--token", "gina-demo-token", "--run-id", with_records
    )
    assert denied.returncode == 1 and "PERMISSION_DENIED permission_denied" in denied.stderr


def test_follow_prints_records_as_they_are_written(
    sidecar: SidecarProcess, connect: Connect, with_records: str
) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "audit",
            "--target",
            sidecar.target,
            "--token",
            "alice-demo-token",
            "--run-id",
            with_records,
            "--follow",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    seen: list[dict[str, object]] = []
    arrived = threading.Condition()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with arrived:
                seen.append(json.loads(line))
                arrived.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        with arrived:
            assert arrived.wait_for(lambda: len(seen) >= 3, 60)
        connect("alice-demo-token").submit_calls(
            with_records, "t2", tool_call("c3", "get_weather", WEATHER)
        )
        with arrived:
            assert arrived.wait_for(lambda: len(seen) >= 5, 60)
    finally:
        proc.terminate()
        proc.wait(30)
        reader.join(30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert [r["call_id"] for r in seen[3:5]] == ["c3", "c3"]


def test_verify_export_and_prune_on_the_store(
    sidecar: SidecarProcess, with_records: str, tmp_path: Path
) -> None:
    db = copy_store(sidecar, tmp_path / "copy.db")
    done = callgate("audit", "verify", "--db", str(db))
    assert (
        done.returncode == 0
        and done.stdout.startswith("intact: ")
        and "seals: checked with key" in done.stdout
    ), done.stdout + done.stderr
    out = tmp_path / "log.jsonl"
    done = callgate("audit", "export", "--db", str(db), "--output", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert done.returncode == 0 and lines and f"{len(lines)} record(s)" in done.stderr
    assert {"decision_id", "path", "input", "result", "timestamp", "revision"} <= set(lines[0])
    later = callgate(
        "audit", "export", "--db", str(db), "--since", str(lines[-2]["callgate"]["seq"])
    )
    assert [json.loads(line) for line in later.stdout.splitlines()] == lines[-1:]
    done = callgate("audit", "prune", "--db", str(db), "--before", "2999-01-01")
    assert done.returncode == 0 and f"removed {len(lines)} record(s)" in done.stdout
    done = callgate("audit", "verify", "--db", str(db))
    assert done.returncode == 0 and "the chain continues after record" in done.stdout


def test_verify_names_the_first_broken_link_and_exits_1(
    sidecar: SidecarProcess, with_records: str, tmp_path: Path
) -> None:
    db = copy_store(sidecar, tmp_path / "copy.db")
    conn = sqlite3.connect(db)
    with conn:
        (seq,) = conn.execute(
            "SELECT seq FROM audit WHERE run_id = ? AND call_id = 'c2'", (with_records,)
        ).fetchone()
        conn.execute("UPDATE audit SET error_code = '' WHERE seq = ?", (seq,))
    conn.close()
    done = callgate("audit", "verify", "--db", str(db))
    assert done.returncode == 1
    assert done.stdout.startswith(f"BROKEN: record {seq} was changed after it was written")
