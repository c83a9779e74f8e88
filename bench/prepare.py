"""What the flat-cost scenarios start from: many tool manifests, large policy data, long runs.

- `write_manifests(dir, n)`: n more tools beside the travel example's two, one JSON manifest
  file each, each with its own name and input schema (an HTTP read like `get_weather`).
- `write_policy_data(dir, entries)`: a copy of `policies/` whose `data.json` holds `entries`
  tenants in `config.tenants` (the map the default policy looks the caller's tenant up in):
  the example's acme and globex, and generated ones.
- `grow_runs(db, {run_id: turns})`: extends runs of a SQLite file, each to that many turns, by
  copying its last turn and that turn's calls under new IDs (in one transaction, without
  fsync): a run the real runner wrote, only longer, in well under a second per thousand turns.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.procs import ROOT
from gateway.store import fragments, schema

TOOLS = ROOT / "examples" / "travel" / "tools"
POLICIES = ROOT / "policies"
TENANT_NAMES = ("acme", "globex")


def manifest(i: int) -> dict[str, Any]:
    return {
        "name": f"bench_tool_{i:05d}",
        "version": "1.0.0",
        "description": f"Generated read-only tool number {i} (benchmark only).",
        "effect": "read",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 80},
                f"field_{i % 97}": {"type": "integer", "minimum": 0, "maximum": 1000 + i},
                "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            },
            "required": ["city", "date"],
            "additionalProperties": False,
        },
        "output_schema": {"type": "object", "properties": {"value": {"type": "string"}}},
        "executor": {
            "type": "http",
            "url": "${CALLGATE_TRAVEL_URL:-http://127.0.0.1:8765}/weather",
            "timeout_s": 2,
        },
        "labels": {"domain": "bench", "owner": f"team-{i % 13}"},
    }


def write_manifests(directory: Path, extra: int) -> int:
    """The example's tools and `extra` generated ones in directory; answers how many tools."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in TOOLS.iterdir():
        shutil.copy(path, directory / path.name)
    for i in range(extra):
        (directory / f"bench_tool_{i:05d}.json").write_text(json.dumps(manifest(i)))
    return len(list(TOOLS.iterdir())) + extra


def policy_data(entries: int) -> dict[str, Any]:
    """policies/data.json with `entries` tenants (the example's own ones among them)."""
    data: dict[str, Any] = json.loads((POLICIES / "data.json").read_text())
    tenants: dict[str, Any] = data["callgate"]["config"]["tenants"]
    i = 0
    while len(tenants) < entries:
        tenants[f"tenant-{i:06d}"] = {
            "trains": [f"ICE{i % 99999}", f"RE{i % 997}"],
            "events": [f"ws-{i}-1"],
        }
        i += 1
    return data


def write_policy_data(directory: Path, entries: int) -> Path:
    """A copy of policies/ with `entries` tenants in its data; answers the directory."""
    shutil.copytree(POLICIES, directory)
    (directory / "data.json").write_text(json.dumps(policy_data(entries)))
    return directory


def _renamed(
    row: tuple[Any, ...], columns: tuple[str, ...], changes: Mapping[str, Any]
) -> tuple[Any, ...]:
    return tuple(changes.get(c, v) for c, v in zip(columns, row, strict=True))


def grow_runs(db: Path, lengths: Mapping[str, int]) -> None:
    """Extend each run (which has at least one turn) to lengths[run_id] turns."""
    turn_cols, call_cols = schema.TURN_COLUMNS, schema.CALL_COLUMNS
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")  # preparing only; the sidecar opens it as usual
        conn.execute("BEGIN IMMEDIATE")
        for run_id, length in lengths.items():
            used, calls_used = conn.execute(
                "SELECT turns_used, tool_calls_used FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            last = conn.execute(
                f"SELECT {', '.join(turn_cols)} FROM turns WHERE run_id = ? AND seq = ?",
                (run_id, used),
            ).fetchone()
            calls = conn.execute(
                f"SELECT {', '.join(call_cols)} FROM calls WHERE run_id = ? "
                "AND turn_id = ? ORDER BY idx",
                (run_id, last[1]),
            ).fetchall()
            new_turns, new_calls = [], []
            for seq in range(used + 1, length + 1):
                turn_id = f"grown_{seq}"
                new_turns.append(_renamed(last, turn_cols, {"turn_id": turn_id, "seq": seq}))
                for call in calls:
                    old = call[call_cols.index("call_id")]
                    key = call[call_cols.index("idempotency_key")]
                    new_calls.append(
                        _renamed(
                            call,
                            call_cols,
                            {
                                "turn_id": turn_id,
                                "call_id": f"{turn_id}_{old}",
                                "idempotency_key": f"{key}-{seq}" if key else key,
                            },
                        )
                    )
            conn.executemany(
                f"INSERT INTO turns ({', '.join(turn_cols)}) VALUES "
                f"({fragments.placeholders(turn_cols, '?')})",
                new_turns,
            )
            conn.executemany(
                f"INSERT INTO calls ({', '.join(call_cols)}) VALUES "
                f"({fragments.placeholders(call_cols, '?')})",
                new_calls,
            )
            conn.execute(
                "UPDATE runs SET turns_used = ?, tool_calls_used = ? WHERE run_id = ?",
                (max(used, length), calls_used + len(new_calls), run_id),
            )
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()
