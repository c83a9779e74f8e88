"""Policy inputs (docs/policies.md) for tests, and where the default bundle lives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DEFAULT_POLICIES = REPO / "policies"

WriteBundle = Callable[..., Path]  # the write_bundle fixture


def identity(subject: str, tenant: str, *roles: str) -> dict[str, Any]:
    return {"subject": subject, "tenant": tenant, "roles": list(roles), "claims": {}}


def call_input(
    tool: str,
    effect: str,
    args: dict[str, Any],
    who: dict[str, Any],
    *,
    approval: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A full `decision` input in the shape callgate sends (docs/policies.md)."""
    return {
        "action": "call",
        "call": {
            "id": "call-1",
            "tool": tool,
            "tool_version": "1.0.0",
            "effect": effect,
            "args": args,
            "args_sha256": "sha-of-args",
        },
        "tool": {"name": tool, "version": "1.0.0", "effect": effect, "labels": {}},
        "identity": who,
        "run": {
            "id": "run-1",
            "turn": 3,
            "turn_id": "turn-3",
            "tool_calls_used": 5,
            "labels": {},
            "calls": [
                {
                    "id": "call-0",
                    "tool": "check_availability",
                    "effect": "read",
                    "args": {"event_id": "ws-acme-1"},
                    "status": "SUCCEEDED",
                }
            ],
        },
        "batch": {"size": 1, "calls": [{"id": "call-1", "tool": tool, "effect": effect}]},
        "approval": approval,
        "now": "2026-11-29T21:00:00Z",
    }


def approval_by(who: dict[str, Any], args_sha256: str = "sha-of-args") -> dict[str, Any]:
    return {
        "id": "appr-1",
        "approved_by": who,
        "decided_at": "2026-11-29T21:01:00Z",
        "expires_at": "2026-11-29T22:00:00Z",
        "args_sha256": args_sha256,
    }
