"""Rego unit tests: every rule named `test_*` (in any package) of a policy directory.

Each definition of a test is a test of its own, named as `opa test` names it (`test_x`,
`test_x#01`, ...: `gateway.policy.testnames`). A test passes when it evaluates to exactly
`true`; false, undefined, an evaluation error or an
engine panic is a failure with its reason. For a failing test the runner also finds the first
expression of its body that failed and the values involved (both sides of a comparison, or the
value of the expression), by evaluating the body up to each expression (`gateway.policy.probe`).
Policies, `*_test.rego` files and data are loaded together into one engine (built on the
calling thread); coverage can be collected on the way.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.policy.bundle import (
    Bundle,
    RuleInfo,
    config_error_from_regorus,
    load_bundle,
    rules_of_engine,
)
from gateway.policy.crossing import SUPPORT_FILE as CROSSING_FILE
from gateway.policy.decision import UNDEFINED
from gateway.policy.embedded import build_regorus_engine, clean_copy
from gateway.policy.failures import CallIndex, describe
from gateway.policy.guards import SUPPORT_FILE
from gateway.policy.interpreter import is_panic
from gateway.policy.probe import Probe
from gateway.policy.syntax import inner, span, statement_text, statements, text_of
from gateway.policy.testnames import TEST_PREFIX, NumberedBundle, numbered

_SIDE = "__callgate_side"
_COMPARISONS = {"Eq": "==", "Ne": "!=", "Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">="}


@dataclass(frozen=True)
class TestCase:
    """One discovered test: a rule, or one definition of a rule defined more than once."""

    __test__ = False  # not a pytest test class

    package: str  # data.callgate_test
    name: str  # test_something, or test_something#01 for its second definition
    file: str
    line: int
    rule: str = ""  # the rule evaluated (test_something__01), when not the name

    @property
    def path(self) -> str:
        """The test's name as reported, and matched by --run: `data.pkg.test_x#01`."""
        return f"{self.package}.{self.name}"

    @property
    def query(self) -> str:
        return f"{self.package}.{self.rule or self.name}"


@dataclass(frozen=True)
class FailedExpression:
    """The first expression of a failing test's body that failed, and the values involved."""

    text: str
    line: int
    values: tuple[tuple[str, str], ...] = ()  # (label, value as JSON or "undefined")


@dataclass(frozen=True)
class TestResult:
    __test__ = False
    case: TestCase
    passed: bool
    reason: str = ""  # why it failed: "evaluated to false", "undefined", "error: ..."
    duration_s: float = 0.0
    failed: FailedExpression | None = None


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


def discover(rules: Iterable[RuleInfo], names: NumberedBundle | None = None) -> list[TestCase]:
    """Test cases among the rule heads of a (numbered) bundle: non-function rules named
    test_*, one per path."""
    cases: dict[str, TestCase] = {}
    for rule in rules:
        if rule.function or "." in rule.name or not rule.name.startswith(TEST_PREFIX):
            continue
        shown = names.name_of(rule.package, rule.name) if names else rule.name
        case = TestCase(
            package=rule.package,
            name=shown,
            file=rule.file,
            line=rule.line,
            rule=rule.name if shown != rule.name else "",
        )
        cases.setdefault(case.path, case)
    return sorted(cases.values(), key=lambda c: (c.file, c.line, c.name))


def numbered_for_tests(bundle: Bundle) -> NumberedBundle:
    """The bundle a test run evaluates (every definition of a test renamed apart);
    PolicyConfigError if a source does not parse."""
    try:
        return numbered(bundle)
    except RuntimeError as exc:
        raise config_error_from_regorus(exc, fallback_file=bundle.root.as_posix()) from exc


def run_tests(
    source: Path | Bundle,
    *,
    coverage: bool = False,
    match: str | None = None,
    explain_failures: bool = True,
) -> TestReport:
    """Run every test of a directory (or loaded bundle); ConfigError if it does not load.

    `match` is a regular expression: only tests whose path (`data.pkg.test_x`) it matches
    somewhere run (re.error if it is not one).
    """
    names = numbered_for_tests(source if isinstance(source, Bundle) else load_bundle(source))
    bundle = names.bundle
    pattern = re.compile(match) if match else None
    engine = build_regorus_engine(bundle, include_tests=True, coverage=coverage)
    index = CallIndex(engine, dict(bundle.named_sources(include_tests=True)))
    cases = discover(rules_of_engine(engine), names)
    if pattern is not None:
        cases = [c for c in cases if pattern.search(c.path)]
    results: list[TestResult] = []
    for case in cases:
        result, panicked = _run_one(engine, case, index)
        if not result.passed and explain_failures and not panicked:
            result = _with_failed_expression(bundle, engine, result)
        results.append(result)
        if panicked:  # keep going on a fresh engine (coverage so far is lost with it)
            engine = build_regorus_engine(bundle, include_tests=True, coverage=coverage)
        elif result.reason.startswith("error: "):  # as OPA: one test's error is its own
            engine = clean_copy(engine)
    report = _coverage(engine) if coverage else ()
    return TestReport(results=tuple(results), coverage=report)


def _run_one(engine: Any, case: TestCase, index: CallIndex) -> tuple[TestResult, bool]:
    start = time.perf_counter()
    panicked = False
    try:  # no input is set: as in OPA, `input` is undefined unless a test sets it with `with`
        value = _value(engine.eval_query(case.query))
        reason = "" if value is True else _describe(value)
    except Exception as exc:  # regorus RuntimeError: builtin error, conflict, ...
        reason = f"error: {describe(exc, index).message}"
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
    return f"evaluated to {show(value)}, not true"


def show(value: Any, limit: int = 200) -> str:
    """A value as JSON (sets as sorted arrays), cut at limit characters."""
    try:
        text = json.dumps(value, default=_sorted_list, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sorted_list(value: Any) -> list[Any]:
    return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=str))


# ---------------------------------------------------------------------------------------------
# which expression failed


def _with_failed_expression(bundle: Bundle, engine: Any, result: TestResult) -> TestResult:
    found = _test_body(engine, result.case)
    if found is None:
        return result
    source, stmts = found
    failed = _first_failing(bundle, result.case, source, stmts)
    if failed is None:
        return result
    return TestResult(
        case=result.case,
        passed=False,
        reason=result.reason,
        duration_s=result.duration_s,
        failed=failed,
    )


def _test_body(engine: Any, case: TestCase) -> tuple[bytes, list[dict[str, Any]]] | None:
    for module in json.loads(engine.get_ast_as_json()):
        source = module.get("source", {})
        if source.get("file") != case.file:
            continue
        for rule in module.get("ast", {}).get("rules", []):
            kind, spec = inner(rule)
            bodies = spec.get("bodies") or []
            head_line = span(spec.get("head")).get("line")
            if kind == "Spec" and head_line == case.line and bodies:
                return source.get("contents", "").encode(), statements(bodies[0].get("query"))
    return None


def _first_failing(
    bundle: Bundle, case: TestCase, source: bytes, stmts: list[dict[str, Any]]
) -> FailedExpression | None:
    texts = [statement_text(source, s) for s in stmts]
    if not texts or not all(texts):
        return None
    probe = Probe(bundle, case.file, case.package, include_tests=True)
    prefixes = [probe.add(texts[:k], "true") for k in range(1, len(texts) + 1)]
    outcomes = probe.run(None)
    for k, name in enumerate(prefixes):
        if not outcomes[name].succeeded:
            stmt = stmts[k]
            values = (
                _values(bundle, case, source, texts[:k], stmt)
                if not outcomes[name].error
                else (("error", outcomes[name].error),)
            )
            return FailedExpression(
                text=texts[k], line=int(stmt.get("span", {}).get("line", 0)), values=values
            )
    return None


def _values(
    bundle: Bundle, case: TestCase, source: bytes, before: list[str], stmt: dict[str, Any]
) -> tuple[tuple[str, str], ...]:
    """Both sides of a failing comparison, or the value of a failing expression."""
    literal = stmt.get("literal", {})
    kind, body = inner(literal)
    expr = body.get("expr")
    withs = " ".join(statement_text(source, w) for w in stmt.get("with_mods") or [])
    expr_kind, node = inner(expr)
    parts: list[tuple[str, Any]] = []
    if kind == "Expr" and expr_kind == "BoolExpr" and node.get("op") in _COMPARISONS:
        parts = [("left", node.get("lhs")), ("right", node.get("rhs"))]
    elif kind == "Expr" and expr_kind == "Membership":
        parts = [("value", node.get("value")), ("collection", node.get("collection"))]
    elif kind in ("Expr", "NotExpr"):
        parts = [("value", expr)]
    if not parts:
        return ()
    probe = Probe(bundle, case.file, case.package, include_tests=True)
    names = [
        (label, probe.add([*before, f"{_SIDE} := {text_of(source, n)} {withs}".rstrip()], _SIDE))
        for label, n in parts
    ]
    outcomes = probe.run(None)
    return tuple(
        (label, _shown(outcomes[name].values, outcomes[name].error)) for label, name in names
    )


def _shown(values: tuple[Any, ...], error: str) -> str:
    if error:
        return f"error: {error}"
    if not values:
        return "undefined"
    return show(values[0]) if len(values) == 1 else " | ".join(show(v, 80) for v in values)


def _coverage(engine: Any) -> tuple[FileCoverage, ...]:
    report = json.loads(engine.get_coverage_report_as_json())
    files = [
        FileCoverage(
            path=f.get("path", ""),
            covered=tuple(sorted(f.get("covered", []))),
            not_covered=tuple(sorted(f.get("not_covered", []))),
        )
        for f in report.get("files", [])
        # callgate's own: for --builtin-errors undefined, and for sprintf's arguments
        if f.get("path") not in (SUPPORT_FILE, CROSSING_FILE)
    ]
    return tuple(sorted(files, key=lambda f: f.path))
