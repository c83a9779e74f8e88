"""What a log line is about (run, turn, call) and the JSON lines of `serve --log-format json`.

The run engine sets `RUN_ID`, `TURN_ID` and `CALL_ID` while it works on one (context
variables: each asyncio task sees its own, and a task started for a call inherits its turn's);
`JsonFormatter` writes every record as one JSON object with them and, while a span is
current, its trace and span IDs. Only identifiers are added: a message is the code's own text
(callgate never logs arguments, results or tokens; `--log-decision-inputs` is the one
documented exception and writes policy inputs on purpose).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson

RUN_ID: ContextVar[str] = ContextVar("callgate_run_id", default="")
TURN_ID: ContextVar[str] = ContextVar("callgate_turn_id", default="")
CALL_ID: ContextVar[str] = ContextVar("callgate_call_id", default="")

_FIELDS = (("run_id", RUN_ID), ("turn_id", TURN_ID), ("call_id", CALL_ID))

# (trace ID, span ID) of the current span, hex; set by `gateway.observe.tracing` when on
TraceIds = Callable[[], tuple[str, str] | None]


def _no_trace() -> tuple[str, str] | None:
    return None


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (RFC 3339, UTC), level, logger, message, and what the
    record is about when known (worker, run_id, turn_id, call_id, trace_id, span_id,
    exception)."""

    def __init__(self, *, worker: str = "", trace_ids: TraceIds = _no_trace) -> None:
        super().__init__()
        self.worker = worker
        self.trace_ids = trace_ids

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self.worker:
            entry["worker"] = self.worker
        for name, var in _FIELDS:
            value = var.get()
            if value:
                entry[name] = value
        ids = self.trace_ids()
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()
