"""The policy contract as the runner sees it (the rules and inputs: docs/policies.md).

Every method is fail-closed: an undefined, malformed or failing evaluation never yields an allow.
The evaluation methods are coroutines, because an OPA server engine asks over the network; the
embedded engine answers at once (an evaluation costs ~50 µs and runs inline on the event loop's
own regorus engine: a thread hop would cost more than it saves).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

from gateway.model import Decision, now_utc
from gateway.policy.results import ResultVerdict

DEFAULT_PREFIX: Final = "data.callgate"  # the Rego package callgate queries unless told


@dataclass(frozen=True)
class ReloadProblem:
    """One problem of a rejected set of policy files: where, and what (the message starts
    with `file:line:col:` when the place is known)."""

    file: str
    line: int | None
    column: int | None
    message: str


@dataclass(frozen=True)
class RejectedReload:
    """Why the newest policy files are not serving (GetStatus `last_rejected_reload`): the
    first problem's place and message, and every problem."""

    file: str
    line: int | None
    message: str
    at: datetime
    column: int | None = None
    problems: tuple[ReloadProblem, ...] = ()

    @classmethod
    def of(cls, error: Any) -> RejectedReload:
        """From a PolicyConfigError (its place, and each of its problems)."""
        problems = tuple(ReloadProblem(p.file, p.line, p.column, p.message) for p in error.problems)
        first = problems[0].message if problems else error.message
        return cls(
            file=error.file,
            line=error.line,
            message=first,
            at=now_utc(),
            column=error.column,
            problems=problems,
        )


class PolicyEngine(Protocol):
    name: str  # "embedded" | "opa" | ...

    @property
    def revision(self) -> str:
        """Hash of the loaded policy files and data; recorded with every decision."""
        ...

    @property
    def loaded_at(self) -> datetime: ...

    def reads(self, *path: str) -> bool:
        """Whether any rule of the serving revision can observe `input.<path>` of a
        `decision` (True unless that is certain not to be so)."""
        ...

    async def decide(self, input: dict[str, Any]) -> Decision:
        """`decision` → ALLOW / DENY / APPROVAL_REQUIRED; any error → DENY policy_error."""
        ...

    async def allows(self, rule: str, input: dict[str, Any]) -> bool:
        """A boolean grant such as `may_approve`; undefined, non-bool or error → False."""
        ...

    async def offer(self, input: dict[str, Any]) -> set[str] | None:
        """`offer`: tool names to list; None when the rule is undefined (offer every tool).
        An evaluation error offers nothing (empty set)."""
        ...

    @property
    def defines_result(self) -> bool:
        """Whether the serving revision may define `result` (False: no result is asked)."""
        ...

    async def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        """`result` over a call's result: None when undefined (deliver as is); a malformed
        answer or an evaluation error withholds (docs/policies.md, "Policy over results")."""
        ...

    async def partial_writes(self, input: dict[str, Any]) -> bool:
        """`batch_policy.partial_writes`; undefined or error → False."""
        ...

    async def healthy(self) -> bool: ...
