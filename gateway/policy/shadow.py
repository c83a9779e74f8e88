"""Shadow mode: the embedded engine decides; OPA evaluates the same input off to the side.

Every evaluation (`decision`, the `may_*` grants, `offer`, `batch_policy`) is answered by the
embedded engine at once. The same rule and input go onto a bounded queue; a few workers ask OPA
and compare what each engine's answer means to callgate (for `decision`: verdict, reasons,
approval TTL and whether it failed closed; for the others: the grant, the offered set, the
batch permission). Nothing waits for OPA: when the queue is full the comparison is dropped and
counted, and OPA being slow or down only counts as `failed`.

Each disagreement is recorded (the `record` callback: an audit record of kind `shadow` with the
input's hash, both answers and both revisions; the input itself is not stored) and counted.
`stats()` is what GetStatus reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from gateway.audit.records import AuditEvent
from gateway.model import Decision, now_utc
from gateway.policy.base import RejectedReload
from gateway.policy.bundle import Bundle, PolicyConfigError
from gateway.policy.decision import UNDEFINED, PolicyEvalError, decision_from_value, error_decision
from gateway.policy.embedded import input_json, input_sha256
from gateway.policy.opa.settings import OpaUnavailable
from gateway.policy.reload import ReloadingEngine
from gateway.policy.results import ResultVerdict

if TYPE_CHECKING:
    from gateway.policy.opa.engine import OpaEngine

log = logging.getLogger("callgate.policy.shadow")

DEFAULT_QUEUE: Final = 1000
WORKERS: Final = 4


@dataclass(frozen=True)
class Disagreement:
    """One evaluation the two engines answered differently."""

    rule: str
    input: dict[str, Any]
    input_sha256: str
    embedded: Any  # what the answer means (see `meaning`)
    opa: Any
    embedded_revision: str
    opa_revision: str
    decision: Decision | None = None  # the embedded decision, for `decision`
    at: datetime = field(default_factory=now_utc)

    def summary_json(self) -> str:
        return json.dumps(
            {
                "rule": self.rule,
                "input_sha256": self.input_sha256,
                "embedded": self.embedded,
                "opa": self.opa,
                "embedded_revision": self.embedded_revision,
                "opa_revision": self.opa_revision,
            },
            sort_keys=True,
        )


@dataclass(frozen=True)
class ShadowStats:
    compared: int
    disagreed: int
    dropped: int
    failed: int
    opa_revision: str
    opa_reachable: bool


Recorder = Callable[[Disagreement], Awaitable[None]]


@dataclass(frozen=True)
class _Job:
    rule: str
    input: dict[str, Any]
    text: str
    embedded: Any
    revision: str
    decision: Decision | None = None


class ShadowEngine:
    """PolicyEngine: the embedded engine's answers, compared with OPA's off the critical
    path."""

    name = "shadow"

    def __init__(
        self,
        primary: ReloadingEngine,
        opa: OpaEngine,
        *,
        queue_size: int = DEFAULT_QUEUE,
        push: bool = True,
    ) -> None:
        self.primary = primary
        self.opa = opa
        self.push = push  # also push each revision to OPA
        self.record: Recorder | None = None
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=queue_size)
        self._workers: list[asyncio.Task[None]] = []
        self._compared = self._disagreed = self._dropped = self._failed = 0

    # -- PolicyEngine: the embedded answer, and a comparison queued ----------------------------

    @property
    def revision(self) -> str:
        return self.primary.revision

    @property
    def loaded_at(self) -> datetime:
        return self.primary.loaded_at

    @property
    def last_rejected(self) -> RejectedReload | None:
        return self.primary.last_rejected

    def reads(self, *path: str) -> bool:
        return True  # both engines are handed the whole input, to compare their answers

    async def decide(self, input: dict[str, Any]) -> Decision:
        try:
            text = input_json(input)
        except (TypeError, ValueError) as exc:
            return error_decision(f"input is not JSON: {exc}", self.primary.revision)
        decision = self.primary.decide_json(text)
        self._enqueue(
            _Job(
                "decision",
                input,
                text,
                decision_meaning(decision),
                decision.policy_revision,
                decision,
            )
        )
        return decision

    async def allows(self, rule: str, input: dict[str, Any]) -> bool:
        granted = await self.primary.allows(rule, input)
        self._enqueue(_Job(rule, input, "", granted, self.primary.revision))
        return granted

    async def offer(self, input: dict[str, Any]) -> set[str] | None:
        offered = await self.primary.offer(input)
        self._enqueue(_Job("offer", input, "", offer_meaning(offered), self.primary.revision))
        return offered

    @property
    def defines_result(self) -> bool:
        return self.primary.defines_result

    async def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        """The deciding engine's answer (results are not compared with OPA's)."""
        return await self.primary.result(input)

    async def partial_writes(self, input: dict[str, Any]) -> bool:
        partial = await self.primary.partial_writes(input)
        self._enqueue(_Job("batch_policy", input, "", partial, self.primary.revision))
        return partial

    async def healthy(self) -> bool:
        """The deciding engine's health; OPA's is `opa_healthy` (it decides nothing here)."""
        return await self.primary.healthy()

    async def opa_healthy(self) -> bool:
        return await self.opa.healthy()

    # -- comparing -----------------------------------------------------------------------------

    def _enqueue(self, job: _Job) -> None:
        if not self._workers:
            self._workers = [asyncio.create_task(self._work()) for _ in range(WORKERS)]
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self._dropped += 1

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                await self._compare(job)
            except Exception:  # a comparison bug must not stop the workers
                log.exception("shadow comparison of %s failed", job.rule)
            finally:
                self._queue.task_done()

    async def _compare(self, job: _Job) -> None:
        text = job.text or input_json(job.input)
        try:
            value, revision = await self.opa.value(job.rule, text)
        except OpaUnavailable:
            self._failed += 1
            return
        except PolicyEvalError as exc:
            value, revision = exc, self.opa.revision
        theirs = opa_meaning(job.rule, value, revision)
        self._compared += 1
        if theirs == job.embedded:
            return
        self._disagreed += 1
        found = Disagreement(
            rule=job.rule,
            input=job.input,
            input_sha256=input_sha256(text),
            embedded=job.embedded,
            opa=theirs,
            embedded_revision=job.revision,
            opa_revision=revision,
            decision=job.decision,
        )
        log.warning(
            "shadow: the engines disagree on %s (input %s): embedded %s, OPA %s",
            job.rule,
            found.input_sha256,
            job.embedded,
            theirs,
        )
        if self.record is not None:
            await self.record(found)

    async def drain(self) -> None:
        """Wait until every queued comparison is done (tests, shutdown)."""
        await self._queue.join()

    def stats(self) -> ShadowStats:
        return ShadowStats(
            compared=self._compared,
            disagreed=self._disagreed,
            dropped=self._dropped,
            failed=self._failed,
            opa_revision=self.opa.revision,
            opa_reachable=self.opa.reachable,
        )

    async def close(self) -> None:
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.opa.close()

    # -- reloads: the embedded engine's, and the same files pushed to OPA ----------------------

    def prepare(self, directory: Path, prefix: str, *, require_tests: bool) -> Bundle:
        return self.primary.prepare(directory, prefix, require_tests=require_tests)

    async def load(self, bundle: Bundle, prefix: str) -> None:
        await self.primary.load(bundle, prefix)
        if self.push:
            await self.push_to_opa(bundle)

    async def push_to_opa(self, bundle: Bundle) -> None:
        """OPA refusing what the embedded engine serves is logged, not a rejected reload: the
        disagreements that follow show it."""
        try:
            await self.opa.install_bundle(bundle)
        except PolicyConfigError as exc:
            log.error("shadow: OPA refused revision %s: %s", bundle.revision, exc.message)

    def reject(self, rejection: RejectedReload) -> None:
        self.primary.reject(rejection)

    def accept_unchanged(self) -> None:
        self.primary.accept_unchanged()


def audit_event(found: Disagreement) -> AuditEvent:
    """The audit record of a disagreement (kind `shadow`, error code `shadow_disagreement`):
    the call it was about, the embedded decision that was served and its revision; the
    comparison (rule, input hash, both answers, both revisions) as its summary JSON."""
    inp = found.input
    identity = _object(inp.get("identity") or inp.get("approver") or inp.get("operator"))
    call, run = _object(inp.get("call")), _object(inp.get("run"))
    return AuditEvent(
        kind="shadow",
        subject=str(identity.get("subject", "")),
        tenant=str(identity.get("tenant", "")),
        run_id=str(run.get("id", "")),
        turn_id=str(run.get("turn_id", "")),
        call_id=str(call.get("id", "")),
        tool=str(call.get("tool", "")),
        tool_version=str(call.get("tool_version", "")),
        arguments_summary_json=found.summary_json(),
        arguments_sha256=str(call.get("args_sha256", "")),
        decision=found.decision,
        error_code="shadow_disagreement",
        policy_revision=found.embedded_revision,
        time=found.at,
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def decision_meaning(decision: Decision) -> dict[str, Any]:
    """What a decision means to callgate: verdict, reasons, approval TTL, failed closed."""
    if decision.is_policy_error:
        return {"verdict": decision.verdict.value, "policy_error": True}
    return {
        "verdict": decision.verdict.value,
        "reasons": list(decision.reasons),
        "approval_ttl_s": decision.approval_ttl_s,
        "policy_error": False,
    }


def offer_meaning(offered: set[str] | None) -> list[str] | None:
    return None if offered is None else sorted(offered)


def opa_meaning(rule: str, value: Any, revision: str) -> Any:
    """OPA's answer (a value, UNDEFINED or the evaluation error) as the embedded engine's
    answer of the same rule would mean it."""
    failed = isinstance(value, PolicyEvalError)
    if rule == "decision":
        decision = (
            error_decision(value.message, revision)
            if isinstance(value, PolicyEvalError)
            else decision_from_value(value, revision)
        )
        return decision_meaning(decision)
    if rule == "offer":
        if failed:
            return []
        if value is UNDEFINED:
            return None
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return sorted(set(value)) if ok else []
    if rule == "batch_policy":
        return not failed and isinstance(value, dict) and value.get("partial_writes") is True
    return value is True
