"""Evaluating parts of rules: helper rules appended to a copy of a policy module.

`--explain` asks whether each body of a rule succeeded and what it produced; a failing test
asks which of its expressions failed and what the values on each side were. Both are answered
the same way: a helper rule `__callgate_probe_N contains v if { <body statements>; v := <value> }`
(in Rego v0 `__callgate_probe_N[v] { ... }`) is added to the module of the rule (same package,
same imports, same `with` clauses), and the copy is evaluated for the same input. Each helper is
evaluated on its own, so one that fails does not hide the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gateway.policy.bundle import Bundle
from gateway.policy.embedded import build_regorus_engine, clean_copy
from gateway.policy.failures import describe
from gateway.policy.interpreter import is_panic

HELPER_PREFIX = "__callgate_probe_"
_VALUE = "__callgate_value"


@dataclass(frozen=True)
class Outcome:
    """What a helper produced: its value (JSON; sets as arrays), undefined, or an error."""

    value: Any = None
    defined: bool = False
    error: str = ""

    @property
    def values(self) -> tuple[Any, ...]:
        """The members of a helper that collects values (a `contains` helper)."""
        return tuple(self.value) if self.defined and isinstance(self.value, list) else ()

    @property
    def succeeded(self) -> bool:
        return bool(self.values) and not self.error


class Probe:
    """Helper rules for one module of a bundle, evaluated together on a copy of it."""

    def __init__(
        self, bundle: Bundle, module_name: str, package: str, *, include_tests: bool = False
    ) -> None:
        self._bundle = bundle
        self._module = module_name  # the engine's name of the module: bundle.source_name(rel)
        self._package = package  # data.x.y
        self._include_tests = include_tests
        self._helpers: dict[str, str] = {}

    def add(self, body: list[str], value: str) -> str:
        """A helper collecting `value` for each way the statements succeed; its name."""
        lines = [*body, f"{_VALUE} := ({value})"]
        head = (
            "{name}[" + _VALUE + "] {{"
            if self._bundle.options.rego_v0
            else "{name} contains " + _VALUE + " if {{"
        )
        return self.add_rule(
            lambda name: head.format(name=name) + "\n  " + "\n  ".join(lines) + "\n}"
        )

    def add_rule(self, text: Callable[[str], str]) -> str:
        """A helper rule written by text(name) (a copy of a rule under a new name); its name."""
        name = f"{HELPER_PREFIX}{len(self._helpers)}"
        self._helpers[name] = text(name)
        return name

    def run(self, input_text: str | None) -> dict[str, Outcome]:
        if not self._helpers:
            return {}
        try:
            engine = self._engine(list(self._helpers.values()))
        except Exception:  # noqa: BLE001  (a helper that does not compile: try each alone)
            return {name: self._run_alone(name, input_text) for name in self._helpers}
        # each on its own copy: after a part that fails, the engine may answer the next wrongly
        return {
            name: _evaluate(clean_copy(engine), f"{self._package}.{name}", input_text)
            for name in self._helpers
        }

    def _run_alone(self, name: str, input_text: str | None) -> Outcome:
        try:
            engine = self._engine([self._helpers[name]])
        except Exception as exc:  # noqa: BLE001
            return Outcome(error=f"cannot evaluate this part on its own: {describe(exc).message}")
        return _evaluate(engine, f"{self._package}.{name}", input_text)

    def _engine(self, helpers: list[str]) -> Any:
        sources = dict(self._bundle.sources)
        tests = dict(self._bundle.test_sources)
        for rel in list(sources) + list(tests):
            if self._bundle.source_name(rel) == self._module:
                target = sources if rel in sources else tests
                target[rel] = target[rel] + "\n\n" + "\n\n".join(helpers) + "\n"
        copy = replace(self._bundle, sources=sources, test_sources=tests)
        return build_regorus_engine(copy, include_tests=self._include_tests)


def _evaluate(engine: Any, query: str, input_text: str | None) -> Outcome:
    try:
        if input_text is not None:
            engine.set_input_json(input_text)
        out = json.loads(engine.eval_query_as_json(query))
    except Exception as exc:  # noqa: BLE001  (the part failed: that is the answer)
        return Outcome(error=describe(exc).message)
    except BaseException as exc:
        if not is_panic(exc):
            raise
        return Outcome(error=f"engine panic: {exc}")
    results = out.get("result") or []
    if not results:
        return Outcome()
    return Outcome(value=results[0]["expressions"][0]["value"], defined=True)
