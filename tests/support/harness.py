"""A runner over a real SQLite store with a scripted policy, a fake clock and the run tests'
own Python tools (tests/gateway/run/tools.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gateway.model import Decision, Identity, Verdict
from gateway.policy.results import ResultVerdict, result_verdict, withheld_for_error
from gateway.run.runner import Runner
from gateway.store.sqlite import SQLiteStore

ALICE = Identity("alice", "acme", ("traveler",))

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

OBJECT = {"type": "object", "properties": {"train": {"type": "string"}, "seat": {"type": "string"}}}


class FakeClock:
    """now() answers a time the test sets; advance() moves it."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class ScriptedPolicy:
    """A PolicyEngine whose `decision` is a verdict per tool name (ALLOW when unnamed), and
    with `input.approval` set (the re-check of an approved call) one of `approved` (ALLOW when
    unnamed); grants (`may_approve`, ...) answer `grants`. It keeps every input it was asked."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    approved: dict[str, Verdict] = field(default_factory=dict)
    errors: set[str] = field(default_factory=set)  # tools whose decision fails
    grants: dict[str, bool] = field(default_factory=dict)
    partial: bool = False
    result_value: Any = None  # what `result` answers (None: undefined, deliver as is)
    result_fails: bool = False  # `result` evaluations fail
    inputs: list[dict[str, Any]] = field(default_factory=list)
    name: str = "scripted"
    revision: str = "sha256:scripted"
    loaded_at: datetime = START

    def reads(self, *path: str) -> bool:
        return True  # it keeps every input whole

    async def decide(self, input: dict[str, Any]) -> Decision:
        self.inputs.append(input)
        tool = input["call"]["tool"]
        if tool in self.errors:
            return Decision(Verdict.DENY, ("policy_error: boom",), self.revision, error="boom")
        table = self.verdicts if input.get("approval") is None else self.approved
        verdict = table.get(tool, Verdict.ALLOW)
        return Decision(
            verdict,
            (f"{verdict.value.lower()} by script",),
            self.revision,
            approval_ttl_s=600 if verdict == Verdict.APPROVAL_REQUIRED else None,
        )

    async def allows(self, rule: str, input: dict[str, Any]) -> bool:
        self.inputs.append(input)
        return self.grants.get(rule, False)

    async def offer(self, input: dict[str, Any]) -> set[str] | None:
        return None

    @property
    def defines_result(self) -> bool:
        return self.result_value is not None or self.result_fails

    async def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        self.inputs.append(input)
        if self.result_fails:
            return withheld_for_error("boom")
        return result_verdict(self.result_value)

    async def partial_writes(self, input: dict[str, Any]) -> bool:
        self.inputs.append(input)
        return self.partial

    async def healthy(self) -> bool:
        return True


def manifests() -> list[dict[str, Any]]:
    fn = "tests.gateway.run.tools"
    return [
        {
            "name": "lookup_train",
            "version": "1",
            "effect": "read",
            "input_schema": OBJECT,
            "executor": {"type": "python", "function": f"{fn}:lookup_train"},
        },
        {
            "name": "book",
            "version": "2",
            "effect": "write",
            "input_schema": OBJECT,
            "executor": {"type": "python", "function": f"{fn}:book"},
            "reconcile": {"type": "python", "function": f"{fn}:find_booking"},
        },
        {
            "name": "book_unreconciled",
            "version": "1",
            "effect": "write",
            "input_schema": OBJECT,
            "executor": {"type": "python", "function": f"{fn}:book"},
        },
    ]


@dataclass
class Harness:
    runner: Runner
    store: SQLiteStore
    policy: ScriptedPolicy
    clock: FakeClock
