"""Uploading a policy directory to OPA: Rego through the Policy API, data through the Data API.

Each policy file `<rel>` becomes the OPA policy `callgate/<rel>`; each top-level key of the
merged data is written at `/v1/data/<key>`. Only what changed since the last push is sent, and
files or keys gone from the directory are deleted.

OPA compiles all its modules on every policy upload, so a change spread over several files can
fail half way (a new function used before the file defining it is uploaded). The uploads are
retried until a round makes no progress; only then is an error real. A push that fails puts
back what it had changed (the previous revision keeps serving) and raises PolicyConfigError
naming each file and line OPA reported.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gateway.policy.bundle import Bundle, PolicyConfigError
from gateway.policy.opa.client import OpaConnection, OpaError

log = logging.getLogger("callgate.policy.opa")

ID_PREFIX: Final = "callgate/"

Step = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Pushed:
    """What OPA holds after a successful push."""

    bundle: Bundle
    policies: Mapping[str, str]  # policy id → text
    data: Mapping[str, Any]  # top-level key → value

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self.policies)


async def push_bundle(
    conn: OpaConnection, bundle: Bundle, before: Pushed | None, *, id_prefix: str = ID_PREFIX
) -> Pushed:
    """Make OPA hold bundle; on failure OPA is put back to `before` and PolicyConfigError (or,
    when OPA cannot be reached, OpaError) is raised."""
    old_policies = dict(before.policies) if before else {}
    old_data = dict(before.data) if before else {}
    policies = {id_prefix + rel: text for rel, text in bundle.sources.items()}
    data = dict(bundle.data)
    done: list[Step] = []  # undo steps of what was changed, in order
    try:
        await _data(conn, old_data, data, done)
        await _policies(conn, old_policies, policies, done)
    except OpaError as exc:
        await _undo(done)
        if exc.transport or not exc.errors:
            raise
        raise _config_error(bundle, exc, id_prefix) from None
    return Pushed(bundle=bundle, policies=policies, data=data)


async def _data(
    conn: OpaConnection, old: dict[str, Any], new: dict[str, Any], done: list[Step]
) -> None:
    for key, value in sorted(new.items()):
        if key in old and old[key] == value:
            continue
        await conn.put_data(key, value)
        done.append(_restore_data(conn, key, old))
    for key in sorted(set(old) - set(new)):
        await conn.delete_data(key)
        done.append(_restore_data(conn, key, old))


def _restore_data(conn: OpaConnection, key: str, old: dict[str, Any]) -> Step:
    if key in old:
        value = old[key]
        return lambda: conn.put_data(key, value)
    return lambda: conn.delete_data(key)


async def _policies(
    conn: OpaConnection, old: dict[str, str], new: dict[str, str], done: list[Step]
) -> None:
    steps: dict[str, tuple[Step, Step]] = {}  # id → (change, undo)
    for pid, text in new.items():
        if old.get(pid) != text:
            steps[pid] = (_put(conn, pid, text), _restore_policy(conn, pid, old))
    for pid in set(old) - set(new):
        steps[pid] = (_delete(conn, pid), _restore_policy(conn, pid, old))
    await until_no_progress(steps, done)


def _put(conn: OpaConnection, pid: str, text: str) -> Step:
    return lambda: conn.put_policy(pid, text)


def _delete(conn: OpaConnection, pid: str) -> Step:
    return lambda: conn.delete_policy(pid)


def _restore_policy(conn: OpaConnection, pid: str, old: dict[str, str]) -> Step:
    if pid in old:
        text = old[pid]
        return lambda: conn.put_policy(pid, text)
    return lambda: conn.delete_policy(pid)


async def until_no_progress(steps: dict[str, tuple[Step, Step]], done: list[Step]) -> None:
    """Apply every step, retrying the refused ones while a round makes progress."""
    pending = dict(sorted(steps.items()))
    while pending:
        refused: dict[str, tuple[Step, Step]] = {}
        first_error: OpaError | None = None
        for pid, (change, undo) in pending.items():
            try:
                await change()
            except OpaError as exc:
                if exc.transport or not exc.errors:
                    raise
                refused[pid] = (change, undo)
                first_error = first_error or exc
                continue
            done.append(undo)
        if len(refused) == len(pending):
            assert first_error is not None
            raise first_error
        pending = refused


async def _undo(done: list[Step]) -> None:
    """Put OPA back as it was, newest change first; the remaining steps are still tried when
    one fails (and the failure logged)."""
    for step in reversed(done):
        try:
            await step()
        except OpaError as exc:
            log.error("could not restore OPA's previous policy: %s", exc.message)


def _config_error(bundle: Bundle, exc: OpaError, id_prefix: str) -> PolicyConfigError:
    """OPA's errors (file = policy id, row) as problems naming the directory's files."""
    problems = [_problem(bundle, e, id_prefix) for e in exc.errors]
    return (
        PolicyConfigError.of(problems)
        if problems
        else PolicyConfigError(
            f"{bundle.root.as_posix()}: {exc.message}", file=bundle.root.as_posix()
        )
    )


def _problem(bundle: Bundle, error: dict[str, Any], id_prefix: str) -> PolicyConfigError:
    where = error.get("location") if isinstance(error.get("location"), dict) else {}
    assert isinstance(where, dict)
    opa_file = str(where.get("file") or "")
    rel = opa_file[len(id_prefix) :] if opa_file.startswith(id_prefix) else opa_file
    file = (
        bundle.source_name(rel) if rel in bundle.sources else (opa_file or bundle.root.as_posix())
    )
    row = where.get("row")
    line = row if isinstance(row, int) and row > 0 else None
    col = where.get("col")
    column = col if isinstance(col, int) and col > 0 else None
    detail = f"OPA: {error.get('code', 'error')}: {error.get('message', '')}"
    at = f"{file}:{line}" if line else file
    return PolicyConfigError(f"{at}: {detail}", file=file, line=line, column=column, detail=detail)
