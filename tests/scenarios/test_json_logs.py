"""`serve --log-format json`: every line a scripted run writes is one JSON object with time,
level, logger and message, the run and turn (and trace) it is about where known, and no token,
argument value or redacted value."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import READY
from tests.support.otlp import otlp_collector
from tests.support.scenarios import TRAIN, WEATHER
from tests.support.sidecars import own_sidecar

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
SEAT = "seat-zq-31337"  # book_ticket redacts /seat


def test_every_line_is_json_and_names_nothing_private(
    tmp_path: Path, fresh_travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    run_id = f"logs-{uuid.uuid4().hex[:8]}"
    with (
        otlp_collector() as collector,
        own_sidecar(
            tmp_path,
            fresh_travel,
            tools_dir,
            effects_db,
            extra=("--log-format", "json", "--otlp-endpoint", collector.url),
        ) as proc,
    ):
        with (
            GatewayClient(
                proc.target, "alice-demo-token", metadata=[("traceparent", TRACEPARENT)]
            ) as alice,
            proc.client("walt-demo-token") as walt,
        ):
            alice.start_run(run_id=run_id)
            out = alice.submit_calls(
                run_id,
                "turn-1",
                tool_call("c1", "get_train_status", TRAIN),
                tool_call("c2", "get_weather", WEATHER),
            )
            assert out.next == pb.NEXT_ACTION_CONTINUE
            walt.start_run(run_id=f"{run_id}-w")
            walt.submit_calls(
                f"{run_id}-w",
                "turn-1",
                tool_call(
                    "w1", "book_ticket", {"train_number": TRAIN["train_number"], "seat": SEAT}
                ),
            )
        proc.stop()
    lines = [line for line in proc.lines if not line.startswith(READY)]
    entries = [json.loads(line) for line in lines]  # every line parses
    assert entries and all(isinstance(e, dict) for e in entries)
    for e in entries:
        assert {"time", "level", "logger", "message"} <= e.keys(), e
        assert e["time"].endswith("Z") and e["level"] in {"DEBUG", "INFO", "WARNING", "ERROR"}
    (settled,) = [e for e in entries if e.get("turn_id") == "turn-1" and e.get("run_id") == run_id]
    assert settled["logger"] == "callgate.runner" and "CONTINUE" in settled["message"]
    assert settled["trace_id"] == TRACE_ID and len(settled["span_id"]) == 16
    text = "\n".join(lines)
    for secret in (
        "alice-demo-token",
        "walt-demo-token",
        SEAT,
        TRAIN["train_number"],
        WEATHER["city"],
    ):
        assert secret not in text, f"the log names {secret!r}"
