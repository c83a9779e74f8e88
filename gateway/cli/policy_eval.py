"""`callgate policy eval`: one rule evaluated for an input; for `decision` also the verdict
callgate derives, and with --explain the definitions that made it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gateway.cli.common import UsageError
from gateway.cli.policy_output import (
    EXIT_FAILED,
    EXIT_OK,
    Out,
    dump,
    options,
)
from gateway.jsontext import read_object
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.model import Decision
from gateway.policy.bundle import load_bundle
from gateway.policy.decision import (
    UNDEFINED,
    PolicyEvalError,
    PolicyUndefined,
    decision_from_value,
    error_decision,
)
from gateway.policy.embedded import EmbeddedEngine, input_json
from gateway.policy.explain import Explanation, explain
from gateway.policy.rego_tests import show


def run_eval(args: argparse.Namespace, out: Out) -> int:
    input_doc = _read_input(args.input)
    bundle = load_bundle(args.directory, options(args))
    engine = EmbeddedEngine(bundle, prefix=args.prefix)
    result = _Evaluation.of(engine, args.rule, input_doc)
    explanation = None
    if args.explain:
        package = args.prefix
        explanation = explain(bundle, f"{args.prefix}.{args.rule}", package, input_json(input_doc))
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

    def __init__(
        self, rule: str, revision: str, value: Any, error: str, decision: Decision | None
    ) -> None:
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
            decision = (
                error_decision(error, engine.revision)
                if error
                else decision_from_value(value, engine.revision)
            )
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
        doc: dict[str, Any] = {
            "rule": self.rule,
            "revision": self.revision,
            "defined": self.value is not UNDEFINED,
        }
        if self.value is not UNDEFINED:
            doc["value"] = json.loads(dump(self.value))
        if self.error:
            doc["error"] = self.error
        if self.decision is not None:
            d = self.decision
            doc["decision"] = {
                "verdict": d.verdict.value,
                "reasons": list(d.reasons),
                "policy_error": d.is_policy_error,
                "approval_ttl_s": d.approval_ttl_s,
            }
        if explanation is not None:
            doc["explanation"] = {
                "package": explanation.package,
                "rules": [r.to_json() for r in explanation.rules],
                "not_evaluated": explanation.not_evaluated,
            }
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
    out.line(
        out.paint(f"explanation ({explanation.package}: rules evaluated for this input)", "bold")
    )
    width = max((len(f"{r.file}:{r.line}") for r in explanation.rules), default=0)
    names = max((len(r.rule) for r in explanation.rules), default=0)
    for rule in explanation.rules:
        where = f"{rule.file}:{rule.line}".ljust(width)
        out.line(f"  {where}  {rule.rule.ljust(names)}  {_outcome(rule, out)}")
    if explanation.not_evaluated:
        out.line(
            out.paint(
                f"  ({explanation.not_evaluated} rule definitions of the package "
                "were not evaluated)",
                "dim",
            )
        )


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
