"""Rego unit tests: every rule named `test_*` (in any package) of a policy directory.

A test passes when it evaluates to exactly `true`; false, undefined, an evaluation error or an
engine panic is a failure with its reason. Policies, `*_test.rego` files and data are loaded
together into one engine (built on the calling thread); coverage can be collected on the way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.policy.bundle import (
    Bundle,
    RuleInfo,
    load_bundle,
    rules_of_engine,
    short_regorus_message,
)
from gateway.policy.embedded import UNDEFINED, build_regorus_engine, is_panic

TEST_PREFIX = "test_"


@dataclass(frozen=True)
class TestCase:
    """One discovered test rule."""

    __test__ = False  # not a pytest test class

    package: str  # data.callgate_test
    name: str  # test_something
    file: str
    line: int

    @property
    def path(self) -> str:
        return f"{self.package}.{self.name}"


@dataclass(frozen=True)
class TestResult:
    __test__ = False
    case: TestCase
    passed: bool
    reason: str = ""  # why it failed: "evaluated to false", "undefined", "error: ..."
    duration_s: float = 0.0


@dataclass(frozen=True)
class FileCoverage:
    path: str
    covered: tuple[int, ...]
    not_covered: tuple[int, ...]

    @property
    def percent(self) -> float:
        total = len(self.covered) + len(self.not_covered)
        return 100.0 * len(self.covered) / total if total else 100.0


@dataclass(frozen=True)
class TestReport:
    __test__ = False
    results: tuple[TestResult, ...]
    coverage: tuple[FileCoverage, ...] = field(default=())

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.passed)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    @property
    def ok(self) -> bool:
        """True when there was at least one test and none failed."""
        return bool(self.results) and self.failed == 0

    def summary(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


# ---------------------------------------------------------------------------------------------


def discover(rules: Iterable[RuleInfo]) -> list[TestCase]:
    """Test cases among rule heads: non-function rules named test_*, one per path."""
    cases: dict[str, TestCase] = {}
    for rule in rules:
        if rule.function or "." in rule.name or not rule.name.startswith(TEST_PREFIX):
            continue
        case = TestCase(package=rule.package, name=rule.name, file=rule.file, line=rule.line)
        cases.setdefault(case.path, case)
    return sorted(cases.values(), key=lambda c: (c.file, c.line, c.name))


def run_tests(source: Path | Bundle, *, coverage: bool = False,
              match: str | None = None) -> TestReport:
    """Run every test of a directory (or loaded bundle); ConfigError if it does not load.

    `match` keeps only tests whose path contains that text.
    """
    bundle = source if isinstance(source, Bundle) else load_bundle(source)
    engine = build_regorus_engine(bundle, include_tests=True, coverage=coverage)
    cases = discover(rules_of_engine(engine))
    if match:
        cases = [c for c in cases if match in c.path]
    results: list[TestResult] = []
    for case in cases:
        result, panicked = _run_one(engine, case)
        results.append(result)
        if panicked:  # keep going on a fresh engine (coverage so far is lost with it)
            engine = build_regorus_engine(bundle, include_tests=True, coverage=coverage)
    report = _coverage(engine) if coverage else ()
    return TestReport(results=tuple(results), coverage=report)


def _run_one(engine: Any, case: TestCase) -> tuple[TestResult, bool]:
    start = time.perf_counter()
    panicked = False
    try:  # no input is set: as in OPA, `input` is undefined unless a test sets it with `with`
        value = _value(engine.eval_query(case.path))
        reason = "" if value is True else _describe(value)
    except Exception as exc:  # regorus RuntimeError: builtin error, conflict, ...
        reason = f"error: {short_regorus_message(exc)}"
    except BaseException as exc:
        if not is_panic(exc):
            raise
        reason, panicked = f"error: engine panic: {exc}", True
    elapsed = time.perf_counter() - start
    return TestResult(case=case, passed=not reason, reason=reason, duration_s=elapsed), panicked


def _value(out: Any) -> Any:
    results = out.get("result") if isinstance(out, dict) else None
    if not results:
        return UNDEFINED
    expressions = results[0].get("expressions") or [{}]
    return expressions[0].get("value", UNDEFINED)


def _describe(value: Any) -> str:
    if value is UNDEFINED:
        return "undefined"
    if value is False:
        return "evaluated to false"
    try:
        shown = json.dumps(value, default=sorted)
    except (TypeError, ValueError):
        shown = repr(value)
    return f"evaluated to {shown[:200]}, not true"


def _coverage(engine: Any) -> tuple[FileCoverage, ...]:
    report = json.loads(engine.get_coverage_report_as_json())
    files = [FileCoverage(path=f.get("path", ""), covered=tuple(sorted(f.get("covered", []))),
                          not_covered=tuple(sorted(f.get("not_covered", []))))
             for f in report.get("files", [])]
    return tuple(sorted(files, key=lambda f: f.path))
