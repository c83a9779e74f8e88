"""Re-deciding recorded decision inputs with a candidate policy: what would change.

`replay` reads the lines of a recorded-inputs file (`gateway.policy.recorded`), decides each
input with the candidate and compares the answer with the one before: the decision the line
records (verdict, and reasons and approval TTL where the line has them), or, given a baseline
(another policy directory, usually the one serving), that baseline's decision for the same
input. A `Change` says what differs:

    verdict       ALLOW, DENY and APPROVAL_REQUIRED, one became another
    policy_error  same verdict (DENY), but the candidate fails to decide (a policy_error)
    reasons       same verdict, other reasons (compared as sorted lists)
    approval_ttl  both APPROVAL_REQUIRED, another approval_ttl_s

The first two change what a call may do; the report's `verdicts_changed` counts them. Lines
that cannot be replayed are kept as `BadLine`s (an input not replayed is not an input
unchanged); lines of other loggers are counted as skipped. Nothing here reads files or
prints: the CLI does.

A logged input holds only what the revision that decided could read of it (the rest is left
out before evaluation, `gateway.policy.reads`): `unobserved` lists the input paths the
candidate reads that no replayed input holds, where the candidate sees nothing because the log
has nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.model import Decision, Verdict
from gateway.policy.recorded import BadLine, Recorded, Skipped, read_line

_POLICY_ERROR = "policy_error: "
VERDICT_KINDS = frozenset({"verdict", "policy_error"})


class Decider(Protocol):
    """What replay needs of an engine (an EmbeddedEngine)."""

    @property
    def revision(self) -> str: ...

    def decide(self, input: dict[str, Any]) -> Decision: ...


@dataclass(frozen=True)
class Outcome:
    """A decision as replay compares it; `reasons` None where the line recorded none."""

    verdict: Verdict
    reasons: tuple[str, ...] | None
    approval_ttl_s: int | None
    policy_error: bool

    @classmethod
    def of(cls, decision: Decision) -> Outcome:
        return cls(
            decision.verdict, decision.reasons, decision.approval_ttl_s, decision.is_policy_error
        )

    @classmethod
    def recorded(cls, record: Recorded, verdict: Verdict) -> Outcome:
        reasons = record.reasons
        error = reasons is not None and any(r.startswith(_POLICY_ERROR) for r in reasons)
        return cls(verdict, reasons, record.approval_ttl_s, error)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"verdict": self.verdict.value, "policy_error": self.policy_error}
        if self.reasons is not None:
            doc["reasons"] = list(self.reasons)
        if self.approval_ttl_s is not None:
            doc["approval_ttl_s"] = self.approval_ttl_s
        return doc


@dataclass(frozen=True)
class Change:
    line: int
    tool: str
    input_sha256: str
    recorded_revision: str
    kinds: tuple[str, ...]
    before: Outcome
    after: Outcome

    @property
    def verdict_changed(self) -> bool:
        return bool(VERDICT_KINDS.intersection(self.kinds))

    @property
    def transition(self) -> str:
        """`ALLOW→DENY`; a verdict that stays shows once (`DENY`)."""
        before, after = self.before.verdict.value, self.after.verdict.value
        return before if before == after else f"{before}→{after}"


def differences(before: Outcome, after: Outcome) -> tuple[str, ...]:
    """What differs between two outcomes, in the order of the module's table."""
    kinds: list[str] = []
    if before.verdict != after.verdict:
        kinds.append("verdict")
    elif after.policy_error and not before.policy_error:
        kinds.append("policy_error")
    if (
        before.reasons is not None
        and after.reasons is not None
        and sorted(before.reasons) != sorted(after.reasons)
    ):
        kinds.append("reasons")
    if (
        before.reasons is not None
        and before.verdict == after.verdict == Verdict.APPROVAL_REQUIRED
        and before.approval_ttl_s != after.approval_ttl_s
    ):
        kinds.append("approval_ttl")
    return tuple(kinds)


@dataclass
class ToolCounts:
    replayed: int = 0
    verdicts_changed: int = 0
    other_changes: int = 0  # reasons or approval TTL only

    @property
    def unchanged(self) -> int:
        return self.replayed - self.verdicts_changed - self.other_changes


@dataclass
class ReplayReport:
    candidate_revision: str
    baseline: str  # "recorded", or the baseline directory's revision
    replayed: int = 0
    changes: list[Change] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    skipped: int = 0
    by_tool: dict[str, ToolCounts] = field(default_factory=dict)
    unobserved: tuple[str, ...] = ()

    @property
    def verdicts_changed(self) -> int:
        return sum(1 for c in self.changes if c.verdict_changed)

    @property
    def unchanged(self) -> int:
        return self.replayed - len(self.changes)

    def transitions(self) -> dict[str, int]:
        """How many calls went from one verdict to another (`ALLOW→DENY`: 3); a candidate's
        new policy_error counts as `DENY→DENY (policy_error)`."""
        counts = Counter(
            c.transition + (" (policy_error)" if "policy_error" in c.kinds else "")
            for c in self.changes
            if c.verdict_changed
        )
        return dict(sorted(counts.items()))

    def ok(self, *, allow_changes: bool, allow_bad_lines: bool) -> bool:
        """Whether the replay passes: something replayed, no verdict changed (unless allowed),
        every line read (unless allowed)."""
        if not self.replayed:
            return False
        if self.verdicts_changed and not allow_changes:
            return False
        return allow_bad_lines or not self.bad_lines


def replay(
    lines: Iterable[str | bytes],
    candidate: Decider,
    *,
    baseline: Decider | None = None,
    candidate_paths: frozenset[tuple[str, ...]] | None = None,
) -> ReplayReport:
    """Replay every line; `candidate_paths` are the input paths the candidate reads (None:
    the whole input, nothing to warn about)."""
    report = ReplayReport(
        candidate.revision, baseline.revision if baseline is not None else "recorded"
    )
    seen: list[dict[str, Any]] = []
    for number, text in enumerate(lines, start=1):
        read = read_line(number, text)
        if read is None:
            continue
        if isinstance(read, Skipped):
            report.skipped += 1
        elif isinstance(read, BadLine):
            report.bad_lines.append(read)
        else:
            _replay_one(report, read, candidate, baseline)
            seen.append(read.input)
    if candidate_paths is not None and seen:
        report.unobserved = _unobserved(candidate_paths, seen)
    return report


def _unobserved(paths: frozenset[tuple[str, ...]], seen: list[dict[str, Any]]) -> tuple[str, ...]:
    """The shortest input paths the candidate reads that no replayed input holds."""

    def absent(path: tuple[str, ...]) -> bool:
        return not any(_holds(doc, path) for doc in seen)

    shortest = {
        next(path[:n] for n in range(1, len(path) + 1) if absent(path[:n]))
        for path in paths
        if path and absent(path)
    }
    return tuple(sorted("input." + ".".join(p) for p in shortest))


def _replay_one(
    report: ReplayReport, record: Recorded, candidate: Decider, baseline: Decider | None
) -> None:
    if baseline is not None:
        before = Outcome.of(baseline.decide(record.input))
    elif record.verdict is None:
        report.bad_lines.append(
            BadLine(
                record.line,
                "the line records no verdict to compare with: give a baseline policy directory",
            )
        )
        return
    else:
        before = Outcome.recorded(record, record.verdict)
    after = Outcome.of(candidate.decide(record.input))
    counts = report.by_tool.setdefault(record.tool, ToolCounts())
    counts.replayed += 1
    report.replayed += 1
    kinds = differences(before, after)
    if not kinds:
        return
    change = Change(
        record.line, record.tool, record.input_sha256, record.policy_revision, kinds, before, after
    )
    report.changes.append(change)
    if change.verdict_changed:
        counts.verdicts_changed += 1
    else:
        counts.other_changes += 1


def _holds(doc: Any, path: tuple[str, ...]) -> bool:
    """Whether an input has something at `path` (a value reached before the path ends is
    observed whole, so it counts)."""
    for step in path:
        if not isinstance(doc, dict):
            return True
        if step not in doc:
            return False
        doc = doc[step]
    return True
