"""Submitting raw provider responses to a sidecar."""

from __future__ import annotations

import json
from typing import Any

from gateway import pb
from gateway.client import GatewayClient

USER = [{"role": "user", "content": "Is ICE123 on time, and what's the weather in Berlin?"}]


def submit_raw(
    c: GatewayClient, run_id: str, response: dict[str, Any] | str, **fields: Any
) -> pb.TurnOutcome:
    text = response if isinstance(response, str) else json.dumps(response)
    return c.submit_provider_response(run_id, text, timeout_s=30, **fields)
