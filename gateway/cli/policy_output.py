"""What the `callgate policy` commands share: the Rego options they were given, and what they
print and how they exit (the exit statuses, the output stream with colour where it is a
terminal, test results as lines or JSON, the closing summary), for the embedded and the OPA
test runs alike."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

from gateway.policy.options import RegoOptions
from gateway.policy.rego_tests import TestReport, TestResult

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CLOSED_PIPE = 141


class Out:
    """stdout/stderr, with colour only on a terminal."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.colour = _wants_colour(stdout)

    def line(self, text: str = "") -> None:
        print(text, file=self.stdout)

    def err(self, text: str) -> None:
        print(text, file=self.stderr)

    def paint(self, text: str, colour: str) -> str:
        codes = {"green": "32", "red": "31", "yellow": "33", "dim": "2", "bold": "1"}
        return f"\033[{codes[colour]}m{text}\033[0m" if self.colour else text


def _wants_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def dump(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=_jsonable_set)


def _jsonable_set(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    raise TypeError(f"{type(value).__name__} is not JSON")


def print_results(report: TestReport, out: Out, *, verbose: bool) -> None:
    for result in report.results:
        if not result.passed:
            out.line(_result_line(out.paint("FAIL", "red"), result, timed=verbose))
            for detail in _failure_lines(result):
                out.line(detail)
        elif verbose:
            out.line(_result_line(out.paint("PASS", "green"), result, timed=True))


def _result_line(status: str, result: TestResult, *, timed: bool) -> str:
    case = result.case
    line = f"{status} {case.path} ({case.file}:{case.line})"
    if timed:
        line += f" {_duration(result.duration_s)}"
    return f"{line}: {result.reason}" if result.reason else line


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f}ms" if seconds < 1 else f"{seconds:.2f}s"


def _failure_lines(result: TestResult) -> list[str]:
    failed = result.failed
    if failed is None:
        return []
    lines = [f"  failed at {result.case.file}:{failed.line}: {failed.text}"]
    width = max((len(label) for label, _ in failed.values), default=0)
    lines.extend(f"    {label + ':':<{width + 1}} {value}" for label, value in failed.values)
    return lines


def result_json(result: TestResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": result.case.path,
        "file": result.case.file,
        "line": result.case.line,
        "passed": result.passed,
        "duration_ms": round(result.duration_s * 1000, 3),
    }
    if result.reason:
        out["reason"] = result.reason
    if result.failed is not None:
        out["failed_expression"] = {
            "text": result.failed.text,
            "line": result.failed.line,
            "values": dict(result.failed.values),
        }
    return out


def finish(report: TestReport, out: Out, run: str | None = None) -> int:
    if not report.results:
        out.err(f"no tests match --run {run!r}" if run else "no tests found (rules named test_*)")
    summary = report.summary()
    out.line(out.paint(summary, "green" if report.ok else "red"))
    return EXIT_OK if report.ok else EXIT_FAILED


def options(args: argparse.Namespace) -> RegoOptions:
    """The Rego version and builtin-error mode a command was given (check has no errors)."""
    return RegoOptions(
        rego_version=args.rego_version, builtin_errors=getattr(args, "builtin_errors", "strict")
    )
