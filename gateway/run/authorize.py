"""Authorize: calls decided (allowlist, arguments, schema, policy) without running anything,
and audited. No turn is recorded and no run lock taken; with a run ID the policy sees the
run as a turn would (its owner checked, its earlier calls when the policy reads them)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway.audit import events
from gateway.errors import CallCode
from gateway.model import CallRecord, CallStatus, Decision, Identity, ToolCall, Verdict
from gateway.policy.inputs import RECENT_CALLS, RunContext
from gateway.quotas import QuotaExceeded, Reservation
from gateway.request_checks import check_calls
from gateway.run.history import HistoryNeed, judged_with_history
from gateway.run.judge import rejected
from gateway.run.runner import Runner


@dataclass(frozen=True)
class AuthorizeDecision:
    call_id: str
    decision: Decision
    error_code: str = ""
    error_message: str = ""


class Authorizer:
    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    async def authorize(
        self, identity: Identity, run_id: str, calls: Sequence[ToolCall]
    ) -> list[AuthorizeDecision]:
        runner = self.runner
        check_calls(calls, runner.limits)
        run = await runner.owned_run(identity, run_id) if run_id else None
        now = runner.clock()
        recs = [runner.judge.propose(run_id, "", i, c, now) for i, c in enumerate(calls)]

        async def judge(r: CallRecord, ctx: RunContext | None) -> CallRecord:
            if r.status != CallStatus.PROPOSED:
                return r
            return await runner.judge.judge(r, identity=identity, run=ctx, batch=recs, now=now)

        if run is None:  # (judging is the whole RPC: its policy spans are the RPC's children)
            judged = [await judge(r, None) for r in recs]
        else:
            need = HistoryNeed.of(runner.policy)
            judged = await judged_with_history(
                need,
                runner.policy,
                recs,
                await runner.judging.history(run.run_id, "", need.limit),
                runner.judging.context(run, run.turns_used, ""),
                judge,
                lambda: runner.judging.history(run.run_id, "", RECENT_CALLS),
            )
        judged = await self._commit(identity, run_id, judged, now)
        return [
            AuthorizeDecision(
                r.call_id,
                r.decision or Decision(Verdict.UNSPECIFIED),
                r.error_code if r.status == CallStatus.REJECTED else "",
                r.error_message if r.status == CallStatus.REJECTED else "",
            )
            for r in judged
        ]

    async def _commit(
        self, identity: Identity, run_id: str, judged: list[CallRecord], now: datetime
    ) -> list[CallRecord]:
        """The decisions' audit records, with the quotas of the allowed calls reserved in the
        same commit (kept: what the caller does with an allowed call is not known here); a
        call whose quota does not fit is REJECTED `quota_exceeded` and the rest committed
        again."""
        runner = self.runner
        tag = ""  # the reservations' own ID, made for the first (most calls have no quota)
        while True:
            audit = [
                events.authorize(r, identity, registry=runner.registry, now=now) for r in judged
            ]
            quotas = [
                (r.call_id, q)
                for r in judged
                if r.status == CallStatus.PROPOSED
                and r.decision is not None
                and r.decision.verdict == Verdict.ALLOW
                for q in r.decision.quotas
            ]
            if not quotas:
                await runner.store.append_audit(audit)
                return judged
            # (128 random bits, as a UUID's hex; a seventh of uuid4's cost)
            tag = tag or f"authorize_{os.urandom(16).hex()}"
            reserve = [Reservation(run_id, f"{tag}/{call_id}", q, now) for call_id, q in quotas]
            try:
                await runner.store.reserve_quotas(reserve, audit)
                return judged
            except QuotaExceeded as exc:
                refused = exc.call_id.removeprefix(f"{tag}/")
                for r in judged:
                    if r.call_id == refused:
                        runner.observe.metrics.quota_rejected(r.tool)
                judged = [
                    rejected(r, CallCode.QUOTA_EXCEEDED, str(exc), now=now)
                    if r.call_id == refused
                    else r
                    for r in judged
                ]
