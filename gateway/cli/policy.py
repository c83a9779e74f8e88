"""`callgate policy check|test|eval|coverage`: offline policy tools (no sidecar).

    check DIR|FILE...                 load, compile and check; every problem with file and line
    test DIR [-v] [--run REGEX] [--engine embedded|opa|both --opa-url URL]
                                      run the Rego unit tests; last line "N passed, M failed";
                                      on OPA too (both: the engines must agree)
    eval DIR --input FILE|- [--rule decision] [--explain] [--format pretty|json]
                                      evaluate one rule; for `decision` also the verdict
    coverage DIR [-v]                 run the tests with coverage; per-file line counts

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
    all       2 on a usage error (a bad flag, an unreadable --input, a bad --run pattern)

Colours are used only when the output is a terminal (and NO_COLOR is not set).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.cli.common import UsageError
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
from gateway.jsontext import read_object
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import Decision
from gateway.policy.bundle import Bundle, PolicyConfigError, load_bundle, load_paths
from gateway.policy.decision import (
    UNDEFINED,
    PolicyEvalError,
    PolicyUndefined,
    decision_from_value,
    error_decision,
)
from gateway.policy.embedded import DEFAULT_PREFIX, EmbeddedEngine, input_json
from gateway.policy.explain import Explanation, explain
from gateway.policy.options import BUILTIN_ERRORS, REGO_VERSION, SETTINGS, Setting
from gateway.policy.rego_tests import FileCoverage, TestReport, run_tests, show

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
        _silence_stdout()      # reports a command killed by SIGPIPE
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="callgate policy", description="Offline tools for a policy directory.",
        epilog="callgate policy status (a running sidecar's policy) is described by "
               "`callgate policy status --help`.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _check_parser(sub)
    _test_parser(sub)
    _eval_parser(sub)
    _coverage_parser(sub)
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
        name, help=help_text, description=help_text, formatter_class=_Help)
    return parser


def _setting(p: argparse.ArgumentParser, setting: Setting) -> None:
    """A setting `serve` takes too, with the same variable and default."""
    p.add_argument(setting.flag, dest=setting.dest, choices=setting.choices, default=None,
                   metavar=setting.metavar,
                   help=f"{setting.help} [env {setting.env}; default {setting.default}]")


def _resolved(args: argparse.Namespace) -> argparse.Namespace:
    """Each shared setting the command line left out, from its variable, else its default."""
    for setting in SETTINGS:
        if not hasattr(args, setting.dest) or getattr(args, setting.dest) is not None:
            continue
        raw = os.environ.get(setting.env, "")
        if raw and raw not in setting.choices:
            raise UsageError(f"{setting.env}={raw!r}: expected one of: "
                             f"{', '.join(setting.choices)}")
        setattr(args, setting.dest, raw or setting.default)
    return args


def _check_parser(sub: _Sub) -> None:
    p = _sub(sub, "check", "load, compile and check policies; list every problem with its "
             "file and line (type errors, unknown and unavailable builtins included)")
    p.add_argument("paths", nargs="+", type=Path, metavar="DIR|FILE",
                   help="a policy directory, or .rego and data files")
    p.add_argument("--prefix", default=DEFAULT_PREFIX, type=_prefix,
                   help="the package callgate queries")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    _setting(p, REGO_VERSION)
    p.set_defaults(handler=_check)


def _test_parser(sub: _Sub) -> None:
    p = _sub(sub, "test", "run the Rego unit tests (rules named test_*)")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every test with its time, not only the failures")
    p.add_argument("--run", default=None, metavar="REGEX",
                   help="only tests whose path (data.pkg.test_name) matches this regular "
                        "expression")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument("--engine", choices=("embedded", "opa", "both"), default="embedded",
                   help="where the tests run: opa pushes the directory and its tests to "
                        "--opa-url (a scratch OPA: its data is replaced meanwhile) and queries "
                        "each test; both runs them on each and fails unless they agree")
    p.add_argument("--opa-url", default=os.environ.get("CALLGATE_OPA_URL", ""),
                   metavar="URL", help="the OPA server (default: $CALLGATE_OPA_URL)")
    p.add_argument("--opa-token", default=os.environ.get("CALLGATE_OPA_TOKEN", ""),
                   metavar="TOKEN", help="bearer token for OPA (default: $CALLGATE_OPA_TOKEN)")
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_test)


def _eval_parser(sub: _Sub) -> None:
    p = _sub(sub, "eval", "evaluate one rule for an input; for `decision` also the verdict")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument("--input", required=True, metavar="FILE",
                   help="JSON input document, or - for standard input")
    p.add_argument("--rule", default="decision", type=_rule,
                   help="the rule below --prefix to evaluate")
    p.add_argument("--prefix", default=DEFAULT_PREFIX, type=_prefix,
                   help="the package callgate queries")
    p.add_argument("--explain", action="store_true",
                   help="for every rule of the package that evaluated: file:line, whether its "
                        "body succeeded, and its value")
    p.add_argument("--format", choices=("pretty", "json"), default="pretty",
                   help="pretty for people, json for scripts")
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_eval)


def _coverage_parser(sub: _Sub) -> None:
    p = _sub(sub, "coverage", "run the tests and report line coverage per file")
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument("-v", "--verbose", action="store_true", help="list uncovered lines")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    _setting(p, REGO_VERSION)
    _setting(p, BUILTIN_ERRORS)
    p.set_defaults(handler=_coverage)


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
        out.line(dump({"ok": True, "revision": bundle.revision,
                        "rules": sorted({r.path for r in bundle.rules})}))
        return EXIT_OK
    where = " ".join(str(p) for p in args.paths)
    out.line(f"{out.paint('ok', 'green')}: {where} revision {bundle.revision}")
    out.line(f"policies: {len(bundle.sources)}, test files: {len(bundle.test_sources)}, "
             f"data files: {len(bundle.data_files)}")
    for text in _rule_lines(bundle, args.prefix):
        out.line(text)
    return EXIT_OK


def _problem_json(problem: PolicyConfigError) -> dict[str, Any]:
    return {"file": problem.file, "line": problem.line, "column": problem.column,
            "message": problem.detail}


def _rule_lines(bundle: Bundle, prefix: str) -> list[str]:
    seen: dict[str, str] = {}
    for rule in bundle.rules:
        seen.setdefault(rule.path, f"{rule.file}:{rule.line}")
    lines = []
    for path in sorted(seen):
        mark = "" if path.startswith(prefix + ".") else "  (outside the queried prefix)"
        lines.append(f"  {path}  {seen[path]}{mark}")
    queried = [r for r in ("decision", "may_approve", "may_resolve", "may_read_audit",
                           "may_list_runs", "offer", "batch_policy", "result")
               if f"{prefix}.{r}" not in seen]
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
    return run_tests(load_bundle(args.directory, options(args)), coverage=coverage,
                     match=match)


def _test(args: argparse.Namespace, out: Out) -> int:
    if args.engine != "embedded":
        from gateway.cli.policy_opa import test_on_opa
        return test_on_opa(args, out, _run)
    report = _run(args, coverage=False)
    if args.format == "json":
        out.line(dump({"passed": report.passed, "failed": report.failed,
                        "tests": [result_json(r) for r in report.results]}))
        return EXIT_OK if report.ok else EXIT_FAILED
    print_results(report, out, verbose=args.verbose)
    return finish(report, out, args.run)


def _coverage(args: argparse.Namespace, out: Out) -> int:
    report = _run(args, coverage=True)
    if args.format == "json":
        out.line(dump({"passed": report.passed, "failed": report.failed,
                        "tests": [result_json(r) for r in report.results],
                        "files": [{"path": f.path, "covered": list(f.covered),
                                   "not_covered": list(f.not_covered),
                                   "percent": round(f.percent, 1)} for f in report.coverage]}))
        return EXIT_OK if report.ok else EXIT_FAILED
    print_results(report, out, verbose=False)
    for file in report.coverage:
        out.line(_coverage_line(file, verbose=args.verbose))
    return finish(report, out)


def _coverage_line(file: FileCoverage, *, verbose: bool) -> str:
    line = (f"{file.path}: {len(file.covered)} covered, {len(file.not_covered)} not covered "
            f"({file.percent:.1f}%)")
    if verbose and file.not_covered:
        line += f"; not covered: {', '.join(str(n) for n in file.not_covered)}"
    return line


def _eval(args: argparse.Namespace, out: Out) -> int:
    input_doc = _read_input(args.input)
    bundle = load_bundle(args.directory, options(args))
    engine = EmbeddedEngine(bundle, prefix=args.prefix)
    result = _Evaluation.of(engine, args.rule, input_doc)
    explanation = None
    if args.explain:
        package = args.prefix
        explanation = explain(bundle, f"{args.prefix}.{args.rule}", package,
                              input_json(input_doc))
    if args.format == "json":
        out.line(dump(result.to_json(explanation)))
    else:
        result.print(out)
        if explanation is not None:
            _print_explanation(explanation, out)
    return result.status


def _read_input(name: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"cannot read --input {name}: {reason}") from None
    try:
        return read_object(text, max_depth=MAX_JSON_DEPTH_CAP)
    except ValueError as exc:  # strict JSON: says which rule the text breaks
        raise UsageError(f"--input {name}: {exc}") from None


class _Evaluation:
    """One rule's value for an input, and for `decision` the verdict callgate derives."""

    def __init__(self, rule: str, revision: str, value: Any, error: str,
                 decision: Decision | None) -> None:
        self.rule = rule
        self.revision = revision
        self.value = value
        self.error = error
        self.decision = decision

    @classmethod
    def of(cls, engine: EmbeddedEngine, rule: str, input_doc: dict[str, Any]) -> _Evaluation:
        value: Any = UNDEFINED
        error = ""
        try:
            value = engine.eval_raw(rule, input_doc)
        except PolicyUndefined:
            pass
        except PolicyEvalError as exc:
            error = exc.message
        decision = None
        if rule == "decision":
            decision = (error_decision(error, engine.revision) if error
                        else decision_from_value(value, engine.revision))
        return cls(f"{engine.prefix}.{rule}", engine.revision, value, error, decision)

    @property
    def status(self) -> int:
        if self.error or self.value is UNDEFINED:
            return EXIT_FAILED
        if self.decision is not None and self.decision.is_policy_error:
            return EXIT_FAILED
        return EXIT_OK

    def print(self, out: Out) -> None:
        if self.error:
            out.err(f"evaluation failed: {self.error}")
        elif self.value is UNDEFINED:
            out.line(out.paint("undefined", "yellow"))
        else:
            out.line(dump(self.value))
        if self.decision is not None:
            _print_verdict(self.decision, out)
        elif not self.error:
            out.line(f"policy revision: {self.revision}")

    def to_json(self, explanation: Explanation | None) -> dict[str, Any]:
        doc: dict[str, Any] = {"rule": self.rule, "revision": self.revision,
                               "defined": self.value is not UNDEFINED}
        if self.value is not UNDEFINED:
            doc["value"] = json.loads(dump(self.value))
        if self.error:
            doc["error"] = self.error
        if self.decision is not None:
            d = self.decision
            doc["decision"] = {"verdict": d.verdict.value, "reasons": list(d.reasons),
                               "policy_error": d.is_policy_error,
                               "approval_ttl_s": d.approval_ttl_s}
        if explanation is not None:
            doc["explanation"] = {"package": explanation.package,
                                  "rules": [r.to_json() for r in explanation.rules],
                                  "not_evaluated": explanation.not_evaluated}
        return doc


def _print_verdict(decision: Decision, out: Out) -> None:
    extra = f", approval_ttl_s {decision.approval_ttl_s}" if decision.approval_ttl_s else ""
    error = " (policy_error)" if decision.error else ""
    colour = {"ALLOW": "green", "DENY": "red"}.get(decision.verdict.value, "yellow")
    out.line(f"verdict: {out.paint(decision.verdict.value, colour)}{error}{extra}")
    for reason in decision.reasons:
        out.line(f"  reason: {reason}")
    out.line(f"policy revision: {decision.policy_revision}")


def _print_explanation(explanation: Explanation, out: Out) -> None:
    out.line("")
    out.line(out.paint(f"explanation ({explanation.package}: rules evaluated for this input)",
                       "bold"))
    width = max((len(f"{r.file}:{r.line}") for r in explanation.rules), default=0)
    names = max((len(r.rule) for r in explanation.rules), default=0)
    for rule in explanation.rules:
        where = f"{rule.file}:{rule.line}".ljust(width)
        out.line(f"  {where}  {rule.rule.ljust(names)}  {_outcome(rule, out)}")
    if explanation.not_evaluated:
        out.line(out.paint(f"  ({explanation.not_evaluated} rule definitions of the package "
                           "were not evaluated)", "dim"))


def _outcome(rule: Any, out: Out) -> str:
    if rule.error:
        return f"{out.paint('error', 'red')}  {rule.error}"
    if rule.kind == "function":
        return out.paint("function (called)", "dim")
    if rule.kind == "default":
        return f"{out.paint('default', 'dim')}  {show(rule.values[0], 120)}"
    label = "else " if rule.kind == "else" else ""
    if not rule.succeeded:
        return out.paint(f"{label}body failed", "red")
    values = rule.values
    shown = show(values[0], 120) if len(values) == 1 else show(list(values), 120)
    return f"{out.paint(f'{label}body succeeded', 'green')}  {shown}"


if __name__ == "__main__":
    raise SystemExit(run_policy_command(sys.argv[1:]))
