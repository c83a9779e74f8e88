"""`callgate policy test --engine opa|both`: the same tests on an OPA server, compared."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

from gateway.cli.common import UsageError
from gateway.cli.policy_output import (
    EXIT_FAILED,
    EXIT_OK,
    Out,
    dump,
    finish,
    options,
    print_results,
    result_json,
)
from gateway.errors import ConfigError
from gateway.policy.bundle import load_bundle
from gateway.policy.opa.client import OpaError, OpaSettings
from gateway.policy.opa.rego_tests import Difference, compare, run_tests_on_opa
from gateway.policy.rego_tests import TestReport, TestResult

EmbeddedRun = Callable[..., TestReport]


def test_on_opa(args: argparse.Namespace, out: Out, run_embedded: EmbeddedRun) -> int:
    if not args.opa_url:
        raise UsageError(f"--engine {args.engine} needs --opa-url URL (or CALLGATE_OPA_URL)")
    settings = OpaSettings(url=args.opa_url, token=args.opa_token, timeout_s=30)
    settings.check()
    embedded = run_embedded(args, coverage=False) if args.engine == "both" else None
    try:
        report = asyncio.run(
            run_tests_on_opa(load_bundle(args.directory, options(args)), settings, match=args.run)
        )
    except OpaError as exc:
        raise ConfigError(f"--opa-url {args.opa_url}: {exc.message}") from None
    differences = compare(embedded, report) if embedded is not None else []
    if args.format == "json":
        doc: dict[str, Any] = {
            "engine": args.engine,
            "passed": report.passed,
            "failed": report.failed,
            "tests": [result_json(r) for r in report.results],
        }
        if embedded is not None:
            doc["differences"] = [_difference_json(d) for d in differences]
        out.line(dump(doc))
        return EXIT_OK if report.ok and not differences else EXIT_FAILED
    print_results(report, out, verbose=args.verbose)
    if embedded is not None:
        _print_differences(embedded, differences, out)
    code = finish(report, out, args.run)
    return code if not differences else EXIT_FAILED


def _print_differences(embedded: TestReport, differences: list[Difference], out: Out) -> None:
    if not differences:
        out.line(
            f"engines agree: embedded and OPA give the same outcome for all "
            f"{len(embedded.results)} tests"
        )
        return
    out.line(out.paint(f"engines disagree on {len(differences)} test(s):", "red"))
    for d in differences:
        out.line(f"  {d.path}: embedded {_outcome(d.embedded)}, OPA {_outcome(d.opa)}")


def _outcome(result: TestResult | None) -> str:
    if result is None:
        return "did not run it"
    return "passed" if result.passed else f"failed ({result.reason})"


def _difference_json(d: Difference) -> dict[str, Any]:
    return {"name": d.path, "embedded": _outcome(d.embedded), "opa": _outcome(d.opa)}
