"""Reading a sidecar's audit trail back in tests."""

from __future__ import annotations

from typing import Any

from gateway import pb
from gateway.client import GatewayClient


def records(c: GatewayClient, **filters: Any) -> list[pb.AuditRecord]:
    return list(c.query_audit(timeout_s=30, **filters))
