"""Every definition of a test rule is a test of its own, named as `opa test` names it.

Two definitions of `test_x` in one package are one rule to the engine: if either body
succeeds the rule is true, so a failing definition hides behind a passing one. OPA's tester
renames the second and later definitions before it evaluates anything (`test_x#01`,
`test_x#02`, ...: `rewriteDuplicateTestNames` in OPA's `v1/tester/runner.go`; it counts every
rule whose name starts with `test_`, defaults and functions included, per package across the
modules). `numbered` does the same in a copy of the bundle made for the test run: each later
definition's name is replaced at its head by a rule name the package does not use
(`test_x__01`), every line staying where it was, and the test is reported as OPA reports it,
`data.pkg.test_x#01`. Both engines run that copy, so their results pair up by name.

Across files of one package the count goes by file name; OPA follows the order of its module
map, which is not fixed, so only there may the numbers differ from a given `opa test` run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gateway.policy.bundle import Bundle
from gateway.policy.compat import Module
from gateway.policy.rego import rewrite_source
from gateway.policy.sources import parsed
from gateway.policy.syntax import inner, span

TEST_PREFIX = "test_"


@dataclass(frozen=True)
class NumberedBundle:
    """The bundle to test, and the name to show for each renamed rule."""

    bundle: Bundle
    shown: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (package, rule) → name

    def name_of(self, package: str, rule: str) -> str:
        return self.shown.get((package, rule), rule)


@dataclass(frozen=True)
class _Head:
    file: str
    package: str
    name: str
    line: int
    col: int


def numbered(bundle: Bundle) -> NumberedBundle:
    """The bundle with the second and later definitions of each test renamed (the bundle
    itself when no test is defined twice); RuntimeError if a source does not parse."""
    v0 = bundle.options.rego_v0
    named = bundle.named_sources(include_tests=True)
    modules = parsed([(n, rewrite_source(n, t, rego_v0=v0)) for n, t in named], rego_v0=v0)
    taken = {(h.package, h.name) for m in modules.values() for h in _heads(m, any_name=True)}
    seen: dict[tuple[str, str], int] = {}
    renames: dict[str, list[tuple[_Head, str]]] = {}
    shown: dict[tuple[str, str], str] = {}
    for name, _ in named:
        for head in _heads(modules[name], any_name=False) if name in modules else ():
            key = (head.package, head.name)
            count = seen[key] = seen.get(key, -1) + 1
            if count:
                new = _unused(f"{head.name}__{count:02d}", head.package, taken)
                renames.setdefault(name, []).append((head, new))
                shown[(head.package, new)] = f"{head.name}#{count:02d}"
    if not renames:
        return NumberedBundle(bundle)
    return NumberedBundle(_renamed(bundle, renames), shown)


def _heads(module: Module, *, any_name: bool) -> Iterator[_Head]:
    """The first name of each rule head (only those of tests unless any_name), in order."""
    for rule in module.ast.get("rules") or []:
        kind, body = inner(rule)
        ref = body.get("refr") if kind == "Default" else inner(body.get("head"))[1].get("refr")
        var = _first_var(ref)
        name = var.get("value") if var else None
        if not isinstance(name, str) or not (any_name or name.startswith(TEST_PREFIX)):
            continue
        where = span(var)
        yield _Head(
            module.file, module.package, name, int(where.get("line", 0)), int(where.get("col", 0))
        )


def _first_var(ref: Any) -> dict[str, Any] | None:
    while True:
        kind, node = inner(ref)
        if kind == "Var":
            return node
        if kind not in ("RefDot", "RefBrack"):
            return None
        ref = node.get("refr")


def _unused(candidate: str, package: str, taken: set[tuple[str, str]]) -> str:
    while (package, candidate) in taken:
        candidate += "_"
    taken.add((package, candidate))
    return candidate


def _renamed(bundle: Bundle, renames: dict[str, list[tuple[_Head, str]]]) -> Bundle:
    def rename(rel: str, text: str) -> str:
        for head, new in renames.get(bundle.source_name(rel), []):
            text = _rename_at(text, head, new)
        return text

    return replace(
        bundle,
        sources={r: rename(r, t) for r, t in bundle.sources.items()},
        test_sources={r: rename(r, t) for r, t in bundle.test_sources.items()},
    )


def _rename_at(text: str, head: _Head, new: str) -> str:
    """text with the name at head's line and column replaced (the line is the author's: the
    engine's text differs only after the heads of completed functions)."""
    lines = text.split("\n")
    line = lines[head.line - 1]
    start = head.col - 1
    if line[start : start + len(head.name)] != head.name:  # a column counted in bytes
        start = len(line.encode()[:start].decode(errors="ignore"))
    if line[start : start + len(head.name)] != head.name:
        raise RuntimeError(
            f"--> {head.file}:{head.line}:{head.col}\nerror: cannot number "
            f"the definitions of {head.name}"
        )
    lines[head.line - 1] = line[:start] + new + line[start + len(head.name) :]
    return "\n".join(lines)
