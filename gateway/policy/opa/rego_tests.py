"""`callgate policy test --engine opa|both`: the same Rego tests, run on an OPA server.

The directory's policies, its `*_test.rego` files and its data are pushed to OPA (policy IDs
`callgate-test/<file>`, data at its top-level keys), each test rule is queried through the Data
API with `strict-builtin-errors=true` (left out with `--builtin-errors undefined`) and no input,
and everything pushed is deleted again. A test passes when it is exactly `true`, as on the
embedded engine. Point it at a scratch OPA
(`opa run --server`), not the one deciding for a sidecar: its data would be replaced meanwhile.

`compare` pairs the embedded engine's results with OPA's: the engines agree when every test
passes or fails on both.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

from gateway.policy.bundle import Bundle, parse_rules
from gateway.policy.opa.client import OpaConnection, OpaError, OpaSettings
from gateway.policy.opa.engine import query_params
from gateway.policy.opa.push import push_bundle
from gateway.policy.rego_tests import (
    TestCase,
    TestReport,
    TestResult,
    discover,
    numbered_for_tests,
    show,
)

ID_PREFIX = "callgate-test/"


async def run_tests_on_opa(
    bundle: Bundle, settings: OpaSettings, *, match: str | None = None
) -> TestReport:
    """Every test of the bundle, evaluated by OPA; ConfigError (OPA's parse errors per file
    and line) if OPA refuses the files, OpaError if it cannot be reached."""
    pattern = re.compile(match) if match else None
    names = numbered_for_tests(bundle)
    tested = names.bundle
    everything = replace(tested, sources={**tested.sources, **tested.test_sources})
    cases = discover(
        parse_rules(bundle.root, dict(everything.sources), bundle.options.rego_v0), names
    )
    if pattern is not None:
        cases = [c for c in cases if pattern.search(c.path)]
    conn = OpaConnection(settings)
    try:
        pushed = await push_bundle(conn, everything, None, id_prefix=ID_PREFIX)
        try:
            params = query_params(bundle.options)
            results = [await _run_one(conn, case, params) for case in cases]
        finally:
            await push_bundle(
                conn, replace(bundle, sources={}, data={}), pushed, id_prefix=ID_PREFIX
            )
    finally:
        await conn.close()
    return TestReport(results=tuple(results))


async def _run_one(conn: OpaConnection, case: TestCase, params: dict[str, str]) -> TestResult:
    start = time.perf_counter()
    path = "/".join([*case.package.split(".")[1:], case.rule or case.name])
    try:
        answer = await conn.query(path, None, params)
    except OpaError as exc:
        reason = f"error: {exc.message}"
    else:
        value = answer.result
        reason = (
            "undefined"
            if not answer.defined
            else ""
            if value is True
            else "evaluated to false"
            if value is False
            else f"evaluated to {show(value)}, not true"
        )
    elapsed = time.perf_counter() - start
    return TestResult(case=case, passed=not reason, reason=reason, duration_s=elapsed)


@dataclass(frozen=True)
class Difference:
    """A test that passes on one engine and fails on the other."""

    path: str
    embedded: TestResult | None
    opa: TestResult | None


def compare(embedded: TestReport, opa: TestReport) -> list[Difference]:
    """Tests whose outcome differs between the engines (or that only one of them ran)."""
    mine = {r.case.path: r for r in embedded.results}
    theirs = {r.case.path: r for r in opa.results}
    out = []
    for path in sorted(set(mine) | set(theirs)):
        a, b = mine.get(path), theirs.get(path)
        if a is None or b is None or a.passed != b.passed:
            out.append(Difference(path, a, b))
    return out
