"""`policy eval --explain`: for every rule of the queried package that evaluated, where it is,
whether its body succeeded and the value it produced.

Which rules evaluated comes from the engine's line coverage of one evaluation. Whether each
definition's body succeeded, and with what value, comes from evaluating that definition on its
own for the same input: a copy of it under a helper name is added to its module
(`gateway.policy.probe`); an `else` branch is copied as a rule of its own. A rule with several
definitions (`deny contains msg if ...` written three times) is shown once per definition; a
`default` shows its value; functions show that they were called (their bodies depend on their
arguments).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gateway.policy.bundle import Bundle
from gateway.policy.embedded import build_regorus_engine
from gateway.policy.interpreter import is_panic
from gateway.policy.probe import Outcome, Probe
from gateway.policy.syntax import dotted, extent, inner, position, text_of


@dataclass(frozen=True)
class RuleExplanation:
    rule: str  # data.callgate.deny
    file: str
    line: int
    kind: str  # body | else | default | function
    succeeded: bool | None = None  # None: not asked (default, function)
    values: tuple[Any, ...] = ()
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
        }
        if self.succeeded is not None:
            out["succeeded"] = self.succeeded
        if self.values:
            out["values"] = list(self.values)
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Explanation:
    package: str
    rules: tuple[RuleExplanation, ...]
    not_evaluated: int  # definitions of the package that this evaluation did not reach


@dataclass(frozen=True)
class _Definition:
    rule: str
    file: str
    line: int
    last_line: int
    kind: str  # body | else | default | function
    text: str = ""  # the definition as a rule, "{name}" standing for its new name
    collects: bool = False  # a partial set: its value lists the members this body adds

    def renamed(self, name: str) -> str:
        return self.text.replace("{name}", name, 1)


def explain(bundle: Bundle, query: str, package: str, input_text: str) -> Explanation:
    """Explain one evaluation of `query` (a rule path) for an input given as JSON text."""
    covered, modules = _coverage(bundle, query, input_text)
    definitions = [
        definition
        for file, source, module_package, rules in modules
        if module_package == package
        for rule in rules
        for definition in _of_rule(file, source, package, rule)
    ]
    evaluated = [d for d in definitions if _reached(d, covered.get(d.file, set()))]
    probes: dict[str, Probe] = {}
    helpers: dict[int, tuple[str, str]] = {}
    for index, definition in enumerate(evaluated):
        if definition.text:
            probe = probes.setdefault(definition.file, Probe(bundle, definition.file, package))
            helpers[index] = (definition.file, probe.add_rule(definition.renamed))
    outcomes = {file: probe.run(input_text) for file, probe in probes.items()}
    rules = [
        _explained(d, outcomes[helpers[i][0]][helpers[i][1]] if i in helpers else None)
        for i, d in enumerate(evaluated)
    ]
    return Explanation(
        package=package, rules=tuple(rules), not_evaluated=len(definitions) - len(evaluated)
    )


def _explained(definition: _Definition, outcome: Outcome | None) -> RuleExplanation:
    def made(**fields: Any) -> RuleExplanation:
        return RuleExplanation(
            rule=definition.rule,
            file=definition.file,
            line=definition.line,
            kind=definition.kind,
            **fields,
        )

    if outcome is None:
        return made()
    if outcome.error:
        return made(succeeded=False, error=outcome.error)
    if definition.kind == "default":
        return made(values=(outcome.value,))
    if definition.collects:
        return made(succeeded=outcome.succeeded, values=outcome.values)
    return made(succeeded=outcome.defined, values=(outcome.value,) if outcome.defined else ())


# ---------------------------------------------------------------------------------------------
# coverage of one evaluation


_Module = tuple[str, bytes, str, list[Any]]  # file, source, package, rules


def _coverage(
    bundle: Bundle, query: str, input_text: str
) -> tuple[dict[str, set[int]], list[_Module]]:
    engine = build_regorus_engine(bundle, coverage=True)
    engine.clear_coverage_data()
    engine.set_input_json(input_text)
    try:
        engine.eval_query(query)
    except BaseException as exc:  # the failure is reported by the caller; coverage still tells
        if not (isinstance(exc, Exception) or is_panic(exc)):
            raise
    report = json.loads(engine.get_coverage_report_as_json())
    covered = {f.get("path", ""): set(f.get("covered", [])) for f in report.get("files", [])}
    modules: list[_Module] = []
    for module in json.loads(engine.get_ast_as_json()):
        source = module.get("source", {})
        ast = module.get("ast", {})
        package = "data." + dotted(ast.get("package", {}).get("refr"))
        modules.append(
            (
                source.get("file", ""),
                source.get("contents", "").encode(),
                package,
                list(ast.get("rules", [])),
            )
        )
    return covered, modules


def _reached(definition: _Definition, lines: set[int]) -> bool:
    return any(definition.line <= line <= definition.last_line for line in lines)


# ---------------------------------------------------------------------------------------------
# rule definitions of a module


def _of_rule(file: str, source: bytes, package: str, rule: Any) -> Iterator[_Definition]:
    kind, node = inner(rule)
    whole = extent(source, rule)
    if whole is None:
        return
    if kind == "Default":
        name = text_of(source, node.get("refr"))
        line = position(source, whole[0])[0]
        yield _Definition(
            rule=f"{package}.{name}",
            file=file,
            line=line,
            last_line=line,
            kind="default",
            text="{name} := " + text_of(source, node.get("value")),
        )
        return
    head_kind, head = inner(node.get("head"))
    named = _name_extent(source, head.get("refr"))
    if named is None:
        return
    name = source[named[0] : named[1]].decode(errors="replace")
    path = f"{package}.{name}"
    line = position(source, whole[0])[0]
    last = position(source, whole[1])[0]
    if head_kind == "Func":
        yield _Definition(rule=path, file=file, line=line, last_line=last, kind="function")
        return
    bodies = node.get("bodies") or []
    first_end = (extent(source, bodies[0]) or whole)[1] if bodies else whole[1]
    text = (source[whole[0] : named[0]] + b"{name}" + source[named[1] : first_end]).decode(
        errors="replace"
    )
    yield _Definition(
        rule=path,
        file=file,
        line=line,
        last_line=position(source, first_end)[0],
        kind="body",
        text=text,
        collects=head_kind == "Set",
    )
    yield from _else_definitions(file, source, path, bodies[1:])


def _else_definitions(
    file: str, source: bytes, path: str, bodies: list[Any]
) -> Iterator[_Definition]:
    """A rule's `else` branches, each a definition of its own."""
    for body in bodies:
        found = extent(source, body)
        if found is None or not source[found[0] : found[1]].startswith(b"else"):
            continue
        rest = source[found[0] + len(b"else") : found[1]].decode(errors="replace")
        yield _Definition(
            rule=path,
            file=file,
            line=position(source, found[0])[0],
            last_line=position(source, found[1])[0],
            kind="else",
            text="{name}" + rest,
        )


def _name_extent(source: bytes, ref: Any) -> tuple[int, int] | None:
    """The part of a rule head naming the rule: `deny` of `deny contains`, `obj` of `obj[k]`,
    `a.b.c` of `a.b.c := 1`."""
    kind, node = inner(ref)
    if kind == "RefBrack":
        return _name_extent(source, node.get("refr"))
    return extent(source, ref)
