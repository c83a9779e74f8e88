"""The run's earlier calls in a decision's input, read only when the policy can observe them.

A decision's input carries the run's recent calls (`input.run.calls`, up to RECENT_CALLS of
them with their arguments). They are most of what accepting a turn reads from the store and
most of the input built for its decisions, and many policies (the default bundle among them)
never look at them. The serving revision says whether any of its rules can
(`PolicyEngine.reads`); when none can, the calls are not read and the input holds none.

A reload can land between that answer and the decisions. When any call was decided by a
revision other than the one that answered, the calls are judged again with the history read,
so a revision whose rules read the history never decides without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from gateway.model import CallRecord
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import RECENT_CALLS, HistoryEntry, RunContext

HISTORY = ("run", "calls")


@dataclass(frozen=True)
class HistoryNeed:
    """How many recent calls to read for a decision (RECENT_CALLS, or 0 when the policy
    cannot observe them), and the policy revision that answered."""

    limit: int
    revision: str

    @classmethod
    def of(cls, policy: PolicyEngine) -> HistoryNeed:
        revision = policy.revision
        return cls(RECENT_CALLS if policy.reads(*HISTORY) else 0, revision)

    def held(
        self, policy: PolicyEngine, before: Sequence[CallRecord], judged: Sequence[CallRecord]
    ) -> bool:
        """Whether judging without the history was right: the history was read, or every
        call decided now was decided by the revision that answered (or by no policy), and
        that revision still serves."""
        if self.limit:
            return True
        return policy.revision == self.revision and all(
            after is was
            or after.decision is None
            or after.decision.policy_revision in ("", self.revision)
            for was, after in zip(before, judged, strict=True)
        )


async def judged_with_history(
    need: HistoryNeed,
    policy: PolicyEngine,
    calls: Sequence[CallRecord],
    recent: Sequence[HistoryEntry],
    context: Callable[[Sequence[HistoryEntry]], RunContext],
    judge: Callable[[CallRecord, RunContext], Awaitable[CallRecord]],
    read_history: Callable[[], Awaitable[Sequence[HistoryEntry]]],
) -> list[CallRecord]:
    """Each call judged in the run's context with `recent` as its history (`judge` answers a
    call it leaves alone unchanged, the same object); judged again with the history read when
    `need` did not hold throughout."""
    ctx = context(recent)
    judged = [await judge(c, ctx) for c in calls]
    if need.held(policy, calls, judged):
        return judged
    ctx = context(await read_history())
    return [await judge(c, ctx) for c in calls]
