"""`callgate policy check|test|eval|coverage`: offline policy tools (no sidecar).

    check DIR|FILE...                 load, compile and check; every problem with file and line
    test DIR [-v] [--run REGEX] [--engine embedded|opa|both --opa-url URL]
                                      run the Rego unit tests; last line "N passed, M failed";
                                      on OPA too (both: the engines must agree)
    eval DIR --input FILE|- [--rule decision] [--explain] [--format pretty|json]
                                      evaluate one rule; for `decision` also the verdict
    coverage DIR [-v]                 run the tests with coverage; per-file line counts
    replay CANDIDATE_DIR --inputs FILE|- [--baseline DIR] [--allow-changes]
           [--allow-bad-lines] [--format text|json]
                                      decide recorded decision inputs (serve
                                      --log-decision-inputs) again; list what would change

Every command takes --rego-version v1|v0 and (but check) --builtin-errors strict|undefined,
with the same variables and defaults as `serve` (CALLGATE_REGO_VERSION,
CALLGATE_BUILTIN_ERRORS), so tests and evaluations run as serving does.

Exit status:
    check     0 the policies load and pass every check; 1 a problem was found
    test      0 every test passed (with --engine both: on both engines); 1 a test failed,
              there are none, the policies are bad, OPA cannot be reached, or the engines
              disagree
    eval      0 the rule produced a value (for `decision`: a well-formed decision, whatever
              its verdict); 1 the rule is undefined, the decision is malformed, the evaluation
              failed, or the policies are bad
    coverage  as test
    replay    0 every input was replayed and no verdict changed (or --allow-changes); 1 a
              verdict would change, a line could not be replayed (unless --allow-bad-lines),
              nothing was replayed, or the policies are bad
    all       2 on a usage error (a bad flag, an unreadable --input, a bad --run pattern)

Colours are used only when the output is a terminal (and NO_COLOR is not set).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.cli.common import UsageError
from gateway.cli.policy_eval import run_eval
from gateway.cli.policy_output import (
    EXIT_CLOSED_PIPE,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Out,
    dump,
    finish,
    options,
    print_results,
    result_json,
)
from gateway.errors import ConfigError
from gateway.policy.bundle import Bundle, PolicyConfigError, load_bundle, load_paths
from gateway.policy.embedded import DEFAULT_PREFIX, EmbeddedEngine
from gateway.policy.options import BUILTIN_ERRORS, REGO_VERSION, SETTINGS, Setting
from gateway.policy.rego_tests import FileCoverage, TestReport, run_tests

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def _prefix(value: str) -> str:
    if not re.fullmatch(rf"data(\.{_NAME})+", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a package path like data.callgate")
    return value


def _rule(value: str) -> str:
    if not re.fullmatch(rf"{_NAME}(\.{_NAME})*", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a rule name like decision")
    return value


def run_policy_command(argv: list[str]) -> int:
    """Run one `policy` sub-command; returns the process exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Callable[[argparse.Namespace, Out], int] = args.handler
    out = Out(sys.stdout, sys.stderr)
    try:
        return handler(_resolved(args), out)
    except UsageError as exc:
        out.err(f"callgate policy {args.command}: {exc}")
        return EXIT_USAGE
    except ConfigError as exc:
        _print_problems(exc, out)
        return EXIT_FAILED
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell
        _silence_stdout()  # reports a command killed by SIGPIPE
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="callgate policy",
        description="Offline tools for a policy directory.",
        epilog="callgate policy status (a running sidecar's policy) is described by "
        "`callgate policy status --help`.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _check_parser(sub)
    _test_parser(sub)
    _eval_parser(sub)
    _coverage_parser(sub)
    _replay_parser(sub)
    return parser


_Sub = argparse._SubParsersAction


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults shown as argparse does, but for the shared settings, whose help names their
    variable and default already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        return text if "[env " in text else super()._get_help_string(action)


def _sub(sub: _Sub, name: str, help_text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text, formatter_class=_Help
    )
    return parser


def _setting(p: argparse.ArgumentParser, setting: Setting) -> None:
    """A setting `serve` takes too, with the same variable and default."""
    p.add_argument(
        setting.flag,
        dest=setting.dest,
        choices=setting.choices,
        default=None,
        metavar=setting.metavar,
        help=f"{setting.help} [env {setting.env}; default {setting.default}]",
    )


def _resolved(args: argparse.Namespace) -> argparse.Namespace:
    """Each shared setting the command line left out, from its variable, else its default."""
    for setting in SETTINGS:
        if not hasattr(args, setting.dest) or getattr(args, setting.dest) is not None:
            continue
        raw = os.environ.get(setting.env, "")
        if raw and raw not in setting.choices:
            raise UsageError(
                f"{setting.env}={raw!r}: expected one of: {', '.join(setting.choices)}"
            )
        setattr(args, setting.dest, raw or setting.default)
    return args


def _check_parser(sub: _Sub) -> None:
    p = _sub(
        sub,
        "check",
        "load, compile and check policies; list every problem with its "
        "file and line (type errors, unknown and unavailable builtins included)",
    )
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="DIR|FILE",
        help="a policy directory, or .rego and data files",
    )
    p.add_argument(
        "--prefix", default=DEFAULT_PREFIX, type=_prefix, help="the package callgate queries"
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    _setting(p, REGO_VERSION)
    p.set_defaults(handler=_check)


def _test_parser(sub: _Sub) -> None:
    p = _sub(sub, "test", "run the Rego unit tests (rules named test_*)")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list every test with its time, not only the failures",
    )
    p.add_argument(
        "--run",
        default=None,
        metavar="REGEX",
        help="only tests whose path (data.pkg.test_name) matches this regular expression",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument(
        "--engine",
        choices=("embedded", "opa", "both"),
        default="embedded",
        help="where the tests run: opa pushes the directory and its tests to "
        "--opa-url (a scratch OPA: its data is replaced meanwhile) and queries "
        "each test; both runs them on each and fails unless they agree",
    )
    p.add_argument(
        "--opa-url",
        default=os.environ.get("CALLGATE_OPA_URL", ""),
        metavar="URL",
        help="the OPA server (default: $CALLGATE_OPA_URL)",
    )
    p.add_argument(
        "--opa-token",
        default=os.environ.get("CALLGATE_OPA_TOKEN", ""),
        metavar="TOKEN",
        help="bearer token for OPA (default: $CALLGATE_OPA_TOKEN)",
    )
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_test)


def _eval_parser(sub: _Sub) -> None:
    p = _sub(sub, "eval", "evaluate one rule for an input; for `decision` also the verdict")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument(
        "--input",
        required=True,
        metavar="FILE",
        help="JSON input document, or - for standard input",
    )
    p.add_argument(
        "--rule", default="decision", type=_rule, help="the rule below --prefix to evaluate"
    )
    p.add_argument(
        "--prefix", default=DEFAULT_PREFIX, type=_prefix, help="the package callgate queries"
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="for every rule of the package that evaluated: file:line, whether its "
        "body succeeded, and its value",
    )
    p.add_argument(
        "--format",
        choices=("pretty", "json"),
        default="pretty",
        help="pretty for people, json for scripts",
    )
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=run_eval)


def _coverage_parser(sub: _Sub) -> None:
    p = _sub(sub, "coverage", "run the tests and report line coverage per file")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument("-v", "--verbose", action="store_true", help="list uncovered lines")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_coverage)


def _replay_parser(sub: _Sub) -> None:
    p = _sub(
        sub,
        "replay",
        "decide recorded decision inputs (the lines serve "
        "--log-decision-inputs writes) with a candidate policy directory and list what "
        "would change",
    )
    p.add_argument("candidate", type=Path, metavar="CANDIDATE_DIR")
    p.add_argument(
        "--inputs",
        required=True,
        metavar="FILE",
        help="the recorded inputs: a sidecar's log or the logged lines, one per "
        "line, or - for standard input",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="compare with this policy directory's decisions for the same inputs "
        "instead of the decisions the lines record",
    )
    p.add_argument(
        "--prefix", default=DEFAULT_PREFIX, type=_prefix, help="the package callgate queries"
    )
    p.add_argument(
        "--allow-changes", action="store_true", help="exit 0 even when verdicts would change"
    )
    p.add_argument(
        "--allow-bad-lines",
        action="store_true",
        help="exit 0 even when lines could not be replayed (they are still listed)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=50,
        metavar="N",
        help="list at most N changes in text output (0: all)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_replay)


def _replay(args: argparse.Namespace, out: Out) -> int:
    from gateway.cli.policy_replay import replay_command

    return replay_command(args, out)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _print_problems(exc: ConfigError, out: Out) -> None:
    problems = exc.problems if isinstance(exc, PolicyConfigError) else (exc,)
    for problem in problems:
        out.err(problem.message)
    count = len(problems)
    out.err(f"{count} problem{'s' * (count != 1)}: the policies were not loaded")


def _check(args: argparse.Namespace, out: Out) -> int:
    try:
        bundle = load_paths(args.paths, options(args))
        EmbeddedEngine(bundle, prefix=args.prefix)  # compiles and runs every static check
    except PolicyConfigError as exc:
        if args.format == "json":
            out.line(dump({"ok": False, "problems": [_problem_json(p) for p in exc.problems]}))
            return EXIT_FAILED
        raise
    if args.format == "json":
        out.line(
            dump(
                {
                    "ok": True,
                    "revision": bundle.revision,
                    "rules": sorted({r.path for r in bundle.rules}),
                }
            )
        )
        return EXIT_OK
    where = " ".join(str(p) for p in args.paths)
    out.line(f"{out.paint('ok', 'green')}: {where} revision {bundle.revision}")
    out.line(
        f"policies: {len(bundle.sources)}, test files: {len(bundle.test_sources)}, "
        f"data files: {len(bundle.data_files)}"
    )
    for text in _rule_lines(bundle, args.prefix):
        out.line(text)
    return EXIT_OK


def _problem_json(problem: PolicyConfigError) -> dict[str, Any]:
    return {
        "file": problem.file,
        "line": problem.line,
        "column": problem.column,
        "message": problem.detail,
    }


def _rule_lines(bundle: Bundle, prefix: str) -> list[str]:
    seen: dict[str, str] = {}
    for rule in bundle.rules:
        seen.setdefault(rule.path, f"{rule.file}:{rule.line}")
    lines = []
    for path in sorted(seen):
        mark = "" if path.startswith(prefix + ".") else "  (outside the queried prefix)"
        lines.append(f"  {path}  {seen[path]}{mark}")
    queried = [
        r
        for r in (
            "decision",
            "may_approve",
            "may_resolve",
            "may_read_audit",
            "may_list_runs",
            "may_read_quotas",
            "may_reset_quotas",
            "offer",
            "batch_policy",
            "result",
        )
        if f"{prefix}.{r}" not in seen
    ]
    if queried:
        lines.append(f"undefined (their fallback applies): {', '.join(queried)}")
    return ["rules:", *lines]


def _run(args: argparse.Namespace, *, coverage: bool) -> TestReport:
    match = getattr(args, "run", None)
    if match:
        try:
            re.compile(match)
        except re.error as exc:
            raise UsageError(f"--run {match!r} is not a regular expression: {exc}") from None
    return run_tests(load_bundle(args.directory, options(args)), coverage=coverage, match=match)


def _test(args: argparse.Namespace, out: Out) -> int:
    if args.engine != "embedded":
        from gateway.cli.policy_opa import test_on_opa

        return test_on_opa(args, out, _run)
    report = _run(args, coverage=False)
    if args.format == "json":
        out.line(
            dump(
                {
                    "passed": report.passed,
                    "failed": report.failed,
                    "tests": [result_json(r) for r in report.results],
                }
            )
        )
        return EXIT_OK if report.ok else EXIT_FAILED
    print_results(report, out, verbose=args.verbose)
    return finish(report, out, args.run)


def _coverage(args: argparse.Namespace, out: Out) -> int:
    report = _run(args, coverage=True)
    if args.format == "json":
        out.line(
            dump(
                {
                    "passed": report.passed,
                    "failed": report.failed,
                    "tests": [result_json(r) for r in report.results],
                    "files": [
                        {
                            "path": f.path,
                            "covered": list(f.covered),
                            "not_covered": list(f.not_covered),
                            "percent": round(f.percent, 1),
                        }
                        for f in report.coverage
                    ],
                }
            )
        )
        return EXIT_OK if report.ok else EXIT_FAILED
    print_results(report, out, verbose=False)
    for file in report.coverage:
        out.line(_coverage_line(file, verbose=args.verbose))
    return finish(report, out)


def _coverage_line(file: FileCoverage, *, verbose: bool) -> str:
    line = (
        f"{file.path}: {len(file.covered)} covered, {len(file.not_covered)} not covered "
        f"({file.percent:.1f}%)"
    )
    if verbose and file.not_covered:
        line += f"; not covered: {', '.join(str(n) for n in file.not_covered)}"
    return line


if __name__ == "__main__":
    raise SystemExit(run_policy_command(sys.argv[1:]))
