"""`callgate policy check|test|eval|coverage DIR`: offline policy tools (no sidecar).

    check DIR                         load and compile; print the revision and the rules
    test DIR [-v] [--run TEXT]        run the Rego unit tests; last line "N passed, M failed"
    eval DIR --input FILE|- [--rule decision] [--prefix data.callgate] [--explain]
                                      evaluate one rule; for `decision` also the verdict
    coverage DIR [-v]                 run the tests with coverage; per-file line counts

Exit status: 0 on success, 1 when the bundle is rejected, a test fails (or there are none) or
an evaluation fails, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.errors import ConfigError
from gateway.jsontext import read_object
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import Decision
from gateway.policy.bundle import Bundle, load_bundle
from gateway.policy.embedded import (
    DEFAULT_PREFIX,
    UNDEFINED,
    EmbeddedEngine,
    PolicyEvalError,
    PolicyUndefined,
    build_regorus_engine,
    decision_from_value,
    error_decision,
    is_panic,
)
from gateway.policy.testing import FileCoverage, TestReport, TestResult, run_tests


def run_policy_command(argv: list[str]) -> int:
    """Run one `policy` sub-command; returns the process exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        _err(f"policy rejected: {exc}")
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="callgate policy",
                                     description="Offline tools for a policy directory.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="load and compile a policy directory")
    check.add_argument("directory", type=Path)
    check.add_argument("--prefix", default=DEFAULT_PREFIX)
    check.set_defaults(handler=_check)
    test = sub.add_parser("test", help="run the Rego unit tests (rules named test_*)")
    test.add_argument("directory", type=Path)
    test.add_argument("-v", "--verbose", action="store_true", help="list passing tests too")
    test.add_argument("--run", default=None, help="only tests whose path contains TEXT")
    test.set_defaults(handler=_test)
    ev = sub.add_parser("eval", help="evaluate one rule for an input")
    ev.add_argument("directory", type=Path)
    ev.add_argument("--input", required=True, help="JSON input file, or - for stdin")
    ev.add_argument("--rule", default="decision")
    ev.add_argument("--prefix", default=DEFAULT_PREFIX)
    ev.add_argument("--explain", action="store_true", help="print the lines evaluated")
    ev.set_defaults(handler=_eval)
    cov = sub.add_parser("coverage", help="run the tests and report line coverage")
    cov.add_argument("directory", type=Path)
    cov.add_argument("-v", "--verbose", action="store_true", help="list uncovered lines")
    cov.set_defaults(handler=_coverage)
    return parser


# ---------------------------------------------------------------------------------------------
# check


def _check(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.directory)
    EmbeddedEngine(bundle, prefix=args.prefix)  # compiles; refuses missing builtins
    _out(f"ok: {args.directory} revision {bundle.revision}")
    _out(f"policies: {len(bundle.sources)}, test files: {len(bundle.test_sources)}, "
         f"data files: {len(bundle.data_files)}")
    for line in _rule_lines(bundle, args.prefix):
        _out(line)
    return 0


def _rule_lines(bundle: Bundle, prefix: str) -> list[str]:
    seen: dict[str, str] = {}
    for rule in bundle.rules:
        seen.setdefault(rule.path, f"{rule.file}:{rule.line}")
    lines = []
    for path in sorted(seen):
        mark = "" if path.startswith(prefix + ".") else "  (outside the queried prefix)"
        lines.append(f"  {path}  {seen[path]}{mark}")
    queried = [r for r in ("decision", "may_approve", "may_resolve", "may_read_audit", "offer",
                           "batch_policy") if f"{prefix}.{r}" not in seen]
    if queried:
        lines.append(f"undefined (their fallback applies): {', '.join(queried)}")
    return ["rules:", *lines]


# ---------------------------------------------------------------------------------------------
# test / coverage


def _test(args: argparse.Namespace) -> int:
    report = run_tests(args.directory, match=args.run)
    _print_results(report, verbose=args.verbose)
    return _finish(report)


def _coverage(args: argparse.Namespace) -> int:
    report = run_tests(args.directory, coverage=True)
    _print_results(report, verbose=False)
    for file in report.coverage:
        _out(_coverage_line(file, verbose=args.verbose))
    return _finish(report)


def _coverage_line(file: FileCoverage, *, verbose: bool) -> str:
    line = (f"{file.path}: {len(file.covered)} covered, {len(file.not_covered)} not covered "
            f"({file.percent:.1f}%)")
    if verbose and file.not_covered:
        line += f"; not covered: {', '.join(str(n) for n in file.not_covered)}"
    return line


def _print_results(report: TestReport, *, verbose: bool) -> None:
    for result in report.results:
        if not result.passed:
            _out(_result_line("FAIL", result))
        elif verbose:
            _out(_result_line("PASS", result))


def _result_line(status: str, result: TestResult) -> str:
    case = result.case
    line = f"{status} {case.path} ({case.file}:{case.line})"
    return f"{line}: {result.reason}" if result.reason else line


def _finish(report: TestReport) -> int:
    if not report.results:
        _err("no tests found (rules named test_*)")
    _out(report.summary())
    return 0 if report.ok else 1


# ---------------------------------------------------------------------------------------------
# eval


def _eval(args: argparse.Namespace) -> int:
    try:
        input_doc = _read_input(args.input)
    except (OSError, ValueError) as exc:
        _err(f"cannot read input {args.input}: {exc}")
        return 1
    bundle = load_bundle(args.directory)
    engine = EmbeddedEngine(bundle, prefix=args.prefix)
    status = _print_eval(engine, args.rule, input_doc)
    if args.explain:
        _out(_explain(bundle, f"{args.prefix}.{args.rule}", input_doc))
    return status


def _read_input(name: str) -> dict[str, Any]:
    text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    return read_object(text, max_depth=MAX_JSON_DEPTH_CAP)  # ValueError says what is wrong


def _print_eval(engine: EmbeddedEngine, rule: str, input_doc: dict[str, Any]) -> int:
    value: Any = UNDEFINED
    status = 0
    try:
        value = engine.eval_raw(rule, input_doc)
        _out(json.dumps(_jsonable(value), indent=2, sort_keys=True))
    except PolicyUndefined:
        _out("undefined")
    except PolicyEvalError as exc:
        _err(f"evaluation failed: {exc.message}")
        status = 1
        if rule == "decision":
            _print_verdict(error_decision(exc.message, engine.revision))
        return status
    if rule == "decision":
        _print_verdict(decision_from_value(value, engine.revision))
    return status


def _print_verdict(decision: Decision) -> None:
    extra = f", approval_ttl_s {decision.approval_ttl_s}" if decision.approval_ttl_s else ""
    error = " (policy_error)" if decision.error else ""
    _out(f"verdict: {decision.verdict.value}{error}{extra}")
    for reason in decision.reasons:
        _out(f"  reason: {reason}")
    _out(f"policy revision: {decision.policy_revision}")


def _explain(bundle: Bundle, query: str, input_doc: dict[str, Any]) -> str:
    """The evaluated lines of the policies (regorus coverage of this one evaluation)."""
    engine = build_regorus_engine(bundle, coverage=True)
    engine.clear_coverage_data()
    engine.set_input_json(json.dumps(input_doc))
    try:
        engine.eval_query(query)
    except BaseException as exc:  # the error itself was printed already
        if not (isinstance(exc, Exception) or is_panic(exc)):
            raise
        return "(no explanation: the evaluation failed)"
    return str(engine.get_coverage_report_pretty())


def _jsonable(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------


def _out(text: str) -> None:
    print(text)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(run_policy_command(sys.argv[1:]))
