"""Unknown outcomes settled by an operator: attempts, refusals, and their audit records."""

from __future__ import annotations

import grpc

from gateway.client import RequestError, error_code
from gateway.store import open_store


def refused(call: object, code: grpc.StatusCode, reason: str) -> None:
    assert isinstance(call, RequestError), call
    assert call.grpc_status == code.name and error_code(call) == reason, call.message


def attempt(fn: object, *args: object, **kwargs: object) -> object:
    """The error fn raises (or its answer, which the caller's assertion then rejects)."""
    try:
        return fn(*args, **kwargs)  # type: ignore[operator]
    except RequestError as err:
        return err


async def audit_of(db: str, run_id: str) -> list[dict[str, object]]:
    store = await open_store(db)
    try:
        return await store.audit_rows(run_id)
    finally:
        await store.close()
