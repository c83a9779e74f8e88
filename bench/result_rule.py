"""The `results` part of `make bench`: what the policy's `result` rule costs a SubmitTurn.

Four sidecars, started together and driven in one interleaved schedule: two with the default
bundle minus its `result` rule (policies/results.rego left out; their ratio is the noise
between two identical processes), one with the whole default bundle, whose `result` rule
walks each read's output with the detectors of `callgate.detect`, and one whose `result` rule
never applies (a side row: what asking any `result` rule costs, whatever it does). Each is
asked SubmitTurn (two HTTP reads) at 8 in flight; the target is the server CPU per request
with the default rule over the mean of the two without: at most 1.10.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from bench.workloads import Workload, start_runs, submit_turn_call
from gateway.testing import SidecarProcess

TARGET = 1.10
RPC = "SubmitTurn (2 reads)"


class BenchLike(Protocol):
    ns: Any
    sections: list[tuple[str, list[str]]]

    def sidecar(self, name: str, *, policies: Path) -> SidecarProcess: ...

    async def pair(self, workloads: Sequence[Workload]) -> list[Any]: ...


# A `result` rule that is never defined for the benchmark's calls: the cost of asking alone.
IDLE_RULE = """package callgate

result := {"deliver": false, "redact": [], "reasons": ["never"]} if input.tool.effect == "none"
"""


def idle_result_rule(policies: Path, into: Path) -> Path:
    """A copy of the bundle whose `result` rule never applies."""
    without_result_rule(policies, into)
    (into / "results.rego").write_text(IDLE_RULE)
    return into


def without_result_rule(policies: Path, into: Path) -> Path:
    """A copy of the bundle without its `result` rule (and that rule's tests)."""
    shutil.copytree(policies, into, dirs_exist_ok=True)
    for name in ("results.rego", "results_test.rego"):
        (into / name).unlink(missing_ok=True)
    return into


async def part_results(b: BenchLike, stubs: Any, policies: Path, tmp: Path) -> None:
    """`stubs(sidecar)`: a ToolGateway stub on a channel of the benchmark's own."""
    print("results: SubmitTurn with and without a result rule", flush=True)
    plain = without_result_rule(policies, tmp / "policies-without-result")
    idle = idle_result_rule(policies, tmp / "policies-idle-result")
    with ExitStack() as stack:
        sidecars = {
            "without": stack.enter_context(b.sidecar("results-without", policies=plain)),
            "without again": stack.enter_context(b.sidecar("results-without-2", policies=plain)),
            "with an idle": stack.enter_context(b.sidecar("results-idle", policies=idle)),
            "with": stack.enter_context(b.sidecar("results-with", policies=policies)),
        }
        workloads = []
        for kind, sidecar in sidecars.items():
            assert sidecar.proc is not None
            stub = stubs(sidecar)
            runs = await start_runs(stub, b.ns.concurrency)
            workloads.append(
                Workload(
                    f"{RPC}, {kind} a result rule",
                    submit_turn_call(stub, runs),
                    sidecar.proc.pid,
                    b.ns.concurrency,
                )
            )
        found = await b.pair(workloads)
    b.sections.append(
        (
            "Result rule cost (server CPU per SubmitTurn over the sidecars without one, same run)",
            _lines(found),
        )
    )


def _lines(found: Sequence[Any]) -> list[str]:
    by_name = {s.name: s for s in found}
    first, second, rule, idle = (
        by_name[f"{RPC}, {k} a result rule"]
        for k in ("without", "without again", "with", "with an idle")
    )
    a, b2, c, d = (s.cpu_us_per_request(s.server_cpu_s) for s in (first, second, rule, idle))
    base, p50 = (a + b2) / 2, (first.p50_ms + second.p50_ms) / 2
    ratio = c / base
    return [
        f"{RPC}, without again / without: {b2 / a:.3f}x ({b2:,.0f} vs {a:,.0f} us/req): "
        f"the noise between two identical processes; the ratios below are to their mean, "
        f"{base:,.0f} us/req",
        f"{RPC}, with the default result rule: {ratio:.3f}x ({c:,.0f} us/req; p50 "
        f"{rule.p50_ms / p50:.2f}x); target <= {TARGET:.2f}x: "
        f"{'yes' if ratio <= TARGET else 'NO'}",
        f"{RPC}, with a result rule that never applies: {d / base:.3f}x ({d:,.0f} us/req; "
        f"p50 {idle.p50_ms / p50:.2f}x); reported only: what asking costs, whatever the rule",
    ]
