"""The loop regression matrix: every regression case of a tool-calling loop, for every
provider, driven through the reference loop (`gateway.loop.AgentLoop`) with a scripted model
replaying each provider's wire format, against a real sidecar process and the real example
services.

Every cell reports four facts, each expected against actual:

    state        the loop's status at each hand-back (a pause, then the end)
    executions   execution_count per call ID, from the run callgate recorded
    correlation  each call's result under its own ID in the provider-shaped request the model
                 was asked next (and no other results there)
    effect       per call ID, how often the external effect happened, read from the example
                 service's own records: the travel service's request log for reads, the
                 workshop's reservations table for the booking

`python -m tests.support.matrix` (`make regression`) prints the matrix and exits 1 on any ✗;
tests/scenarios/test_loop_matrix.py runs each cell as a test. One sidecar serves a provider's
cells (a run per cell), sharing the example services; cells run one at a time.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from examples.travel.service import TravelService, start_travel_service
from examples.workshop.service import WorkshopService, start_workshop_service
from gateway.client import AsyncGatewayClient, RetryPolicy
from gateway.loop import AgentLoop, LoopResult, ModelRequest, ScriptedModel
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH, POLICIES, SUPPORT, example_tools, sidecar_env
from tests.support.wire_checks import results_by_call_id, validate_request

Facts = dict[str, Any]


@dataclass
class Fact:
    name: str
    expected: Any
    actual: Any

    @property
    def ok(self) -> bool:
        return bool(self.expected == self.actual)


@dataclass
class CellReport:
    case: str
    provider: str
    facts: list[Fact] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and all(f.ok for f in self.facts) and len(self.facts) == 4

    def explain(self) -> str:
        lines = [f"{self.case} × {self.provider}"]
        lines += [
            f"  {'✓' if f.ok else '✗'} {f.name}: expected {f.expected!r}, got {f.actual!r}"
            for f in self.facts
        ]
        if self.error:
            lines.append(f"  ✗ error: {self.error}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- the bench


class Bench:
    """The example services (shared) and one sidecar per provider, started when first used."""

    def __init__(self, stack: ExitStack, root: Path) -> None:
        self.stack = stack
        self.root = root
        self.travel: TravelService = stack.enter_context(start_travel_service())
        self.workshop: WorkshopService = stack.enter_context(
            start_workshop_service(root / "workshop.db")
        )
        self.tools = example_tools(root / "tools", SUPPORT / "tools")
        self.effects = root / "effects.db"
        self.sidecars: dict[str, SidecarProcess] = {}

    def sidecar(self, provider: str) -> SidecarProcess:
        if provider not in self.sidecars:
            self.sidecars[provider] = self.stack.enter_context(self._sidecar(provider))
        return self.sidecars[provider]

    def _sidecar(self, provider: str, listen: str = "127.0.0.1:0") -> SidecarProcess:
        return SidecarProcess(
            tools=self.tools,
            policies=POLICIES,
            auth=AUTH,
            listen=listen,
            db=self.root / f"{provider}.db",
            env=sidecar_env(self.travel, self.effects, self.workshop),
        )

    def restart(self, provider: str, *, kill: bool) -> SidecarProcess:
        """Stop the provider's sidecar (SIGKILL: a crash) and start it again on the same
        address and store."""
        old = self.sidecars[provider]
        old.stop(kill=kill)
        new = self._sidecar(provider, listen=old.target).start()
        self.stack.callback(new.stop)
        self.sidecars[provider] = new
        return new

    def fresh(self) -> None:
        self.travel.reset()
        self.workshop.reset()


@contextmanager
def bench() -> Iterator[Bench]:
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="callgate-matrix-") as root:
        yield Bench(stack, Path(root))


# ---------------------------------------------------------------------- a cell's run


@dataclass
class Cell:
    """What a case does in one provider's cell, and what it saw."""

    bench: Bench
    provider: str
    case: str
    token: str
    run_id: str = field(default_factory=lambda: f"m-{uuid.uuid4().hex[:12]}")
    statuses: list[str] = field(default_factory=list)
    models: list[ScriptedModel] = field(default_factory=list)

    @property
    def target(self) -> str:
        return self.bench.sidecar(self.provider).target

    def client(self, token: str = "", *, retry: RetryPolicy | None = None) -> AsyncGatewayClient:
        return AsyncGatewayClient(
            self.target, token or self.token, timeout_s=30, retry=retry or RetryPolicy()
        )

    def model(self, script: Sequence[Any]) -> ScriptedModel:
        model = ScriptedModel(script)
        self.models.append(model)
        return model

    def loop(self, client: AsyncGatewayClient, model: ScriptedModel, **options: Any) -> AgentLoop:
        return AgentLoop(client, model, provider=self.provider, **options)

    def saw(self, result: LoopResult) -> LoopResult:
        self.statuses.append(result.status.value)
        return result

    def requests(self) -> list[ModelRequest]:
        return [r for m in self.models for r in m.requests]


async def facts_of(cell: Cell, expected: Facts) -> list[Fact]:
    """The four facts of a cell that has run, against what its case expects."""
    async with cell.client() as c:
        run = await c.whole_run(cell.run_id)
    sent = requests_sent(cell)
    executions = {
        r.call_id: r.execution_count
        if r.execution_count == sent.get(r.call_id, 0)
        else f"{r.execution_count} (the target saw {sent.get(r.call_id, 0)})"
        for r in run.calls
    }
    return [
        Fact("state", expected["state"], cell.statuses),
        Fact("executions", expected["executions"], executions),
        Fact("correlation", expected["correlation"], correlation(cell, expected)),
        Fact(
            "effect", expected["effect"], effects(cell, set(executions) | set(expected["effect"]))
        ),
    ]


def correlation(cell: Cell, expected: Facts) -> dict[str, bool]:
    """For every result the model was given: whether it holds what its own call's result
    holds (the marker the case expects under that call ID); a result under an ID the case does
    not expect shows as False. Each request is read for what it adds to the one before (the
    whole of it when it does not extend that one: a loop that resumed)."""
    found: dict[str, bool] = {}
    before: list[Any] = []
    for request in cell.requests():
        conversation = list(request.conversation)
        validate_request(cell.provider, conversation, request.tools)
        extends = conversation[: len(before)] == before
        added = conversation[len(before) :] if extends else conversation
        for call_id, text in results_by_call_id(cell.provider, added).items():
            marker = expected["correlation_markers"].get(call_id)
            found[call_id] = marker is not None and marker in text
        before = conversation
    return found


def requests_sent(cell: Cell) -> dict[str, int]:
    """Per call ID, the requests the example services received for it (the workshop's
    look-ups of a booking aside: reconciling reads, it does not execute)."""
    counts: dict[str, int] = {}
    for r in cell.bench.travel.stats()["requests"]:
        if r["run_id"] == cell.run_id:
            counts[r["call_id"]] = counts.get(r["call_id"], 0) + 1
    prefix = f"{cell.run_id}:"
    for r in cell.bench.workshop.stats()["requests"]:
        key = r.get("idempotency_key") or ""
        if key.startswith(prefix) and r["path"] != "/lookup":
            counts[key[len(prefix) :]] = counts.get(key[len(prefix) :], 0) + 1
    return counts


def effects(cell: Cell, call_ids: set[str]) -> dict[str, int]:
    """How often each call's effect happened, from the services' own records."""
    seen = [r for r in cell.bench.travel.stats()["requests"] if r["run_id"] == cell.run_id]
    counts = {cid: sum(1 for r in seen if r["call_id"] == cid) for cid in call_ids}
    for cid in call_ids:
        counts[cid] += len(cell.bench.workshop.reservations(f"{cell.run_id}:{cid}"))
    return counts


# ---------------------------------------------------------------------- running and printing

CaseFn = Callable[[Cell], Awaitable[Facts]]


async def run_cell(b: Bench, case: str, provider: str, fn: CaseFn, token: str) -> CellReport:
    report = CellReport(case, provider)
    b.fresh()
    cell = Cell(b, provider, case, token)
    try:
        expected = await fn(cell)
        report.facts = await facts_of(cell, expected)
    except Exception as err:  # a cell that breaks is a ✗ with its reason, not a crash
        report.error = f"{type(err).__name__}: {err}"
    return report


def table(reports: Sequence[CellReport], providers: Sequence[str]) -> str:
    """case × provider; each cell the four facts (state, executions, correlation, effect)."""
    short = {
        "openai.responses": "responses",
        "openai.chat_completions": "chat",
        "anthropic.messages": "anthropic",
        "google.gemini": "gemini",
        "aws.bedrock_converse": "bedrock",
    }
    cases = list(dict.fromkeys(r.case for r in reports))
    by = {(r.case, r.provider): r for r in reports}
    width = max(len(c) for c in cases) + 2
    head = "case".ljust(width) + "".join(short.get(p, p).ljust(12) for p in providers)
    lines = [head, "-" * len(head)]
    for case in cases:
        row = case.ljust(width)
        for p in providers:
            r = by.get((case, p))
            marks = (
                (
                    "".join("✓" if f.ok else "✗" for f in r.facts).ljust(4, "✗")
                    if r and not r.error
                    else "✗✗✗✗"
                )
                if r
                else "    "
            )
            row += marks.ljust(12)
        lines.append(row)
    ok = sum(r.ok for r in reports)
    lines += [
        "",
        "each cell: state, executions, correlation, effect",
        f"{ok} of {len(reports)} cells hold all four facts",
    ]
    lines += [r.explain() for r in reports if not r.ok]
    return "\n".join(lines)


def main(argv: Sequence[str] = ()) -> int:
    from tests.support.matrix_cases import CASES, PROVIDERS

    wanted = set(argv)
    reports = []
    with bench() as b:
        for provider in PROVIDERS:
            for name, (fn, token) in CASES.items():
                if wanted and name not in wanted and provider not in wanted:
                    continue
                reports.append(asyncio.run(run_cell(b, name, provider, fn, token)))
                print(
                    f"{'✓' if reports[-1].ok else '✗'} {name} × {provider}",
                    flush=True,
                    file=sys.stderr,
                )
    print(table(reports, PROVIDERS))
    return 0 if all(r.ok for r in reports) else 1


def as_json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
