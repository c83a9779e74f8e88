"""Runs OPA's own conformance cases (copied into `opa_conformance/`) through callgate's engine.

Each case gives modules, data, input, a query and either the bindings OPA returns
(`want_result`) or an error (`want_error`, `want_error_code`). A case passes when the engine
returns the same bindings (sets compared as OPA prints them: sorted arrays), or raises when OPA
raises. An engine panic is a failure, never a crash of the run.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gateway.policy.interpreter import is_panic
from gateway.policy.rego import add_policy, new_engine

CASES_DIR = Path(__file__).parent / "opa_conformance"


class _Loader(yaml.SafeLoader):
    """YAML as OPA's test runner reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

_UNSET: Any = object()


@dataclass(frozen=True)
class Case:
    file: str
    note: str
    query: str
    modules: tuple[str, ...]
    data: Any
    input: Any
    want: list[dict[str, Any]] | None  # None: an error is wanted
    sort_bindings: bool
    rego_v0: bool = False
    ordinal: int = 0  # how many cases of the same file and note come before this one

    @property
    def key(self) -> str:
        """`file :: note`, with `#n` for the n-th repeat of a note in a file."""
        return f"{self.file} :: {self.note}" + (f" #{self.ordinal}" if self.ordinal else "")

    @property
    def raw_input(self) -> Any:
        return None if self.input is _UNSET else self.input

    @property
    def has_input(self) -> bool:
        return self.input is not _UNSET


@dataclass(frozen=True)
class Outcome:
    case: Case
    passed: bool
    detail: str = ""
    panic: bool = False


def load_cases(root: Path = CASES_DIR) -> list[Case]:
    cases: list[Case] = []
    seen: Counter[tuple[str, str]] = Counter()
    for path in sorted(root.rglob("*.y*ml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
        v0 = doc.get("rego_version") == 0
        for raw in doc.get("cases") or []:
            case = _case(path.relative_to(root).as_posix(), raw, v0)
            cases.append(replace(case, ordinal=seen[case.file, case.note]))
            seen[case.file, case.note] += 1
    return cases


def _case(file: str, raw: dict[str, Any], rego_v0: bool) -> Case:
    wants_error = "want_error" in raw or "want_error_code" in raw
    if "input_term" in raw:
        input_value = json.loads(raw["input_term"])
    else:
        input_value = raw.get("input", _UNSET)
    return Case(
        file=file,
        note=raw["note"],
        query=raw["query"],
        modules=tuple(raw.get("modules") or ()),
        data=raw.get("data"),
        input=input_value,
        want=None if wants_error else raw.get("want_result") or [],
        sort_bindings=bool(raw.get("sort_bindings")),
        rego_v0=rego_v0,
    )


EngineFactory = Callable[..., Any]


def run_case(case: Case, factory: EngineFactory = new_engine) -> Outcome:
    try:
        results = _evaluate(case, factory)
    except Exception as exc:  # noqa: BLE001  (an engine error is an outcome here)
        return Outcome(case, case.want is None, f"error: {_first_line(exc)}")
    except BaseException as exc:
        if not is_panic(exc):
            raise
        return Outcome(case, False, f"panic: {exc}", panic=True)
    if case.want is None:
        return Outcome(case, False, f"wanted an error, got {results!r}")
    got = [_canonical(r) for r in results]
    want = [_canonical(r) for r in case.want]
    if case.sort_bindings:
        got, want = sorted(got, key=_dumps), sorted(want, key=_dumps)
    if got == want:
        return Outcome(case, True)
    return Outcome(case, False, f"got {_dumps(got)[:300]}, want {_dumps(want)[:300]}")


def _evaluate(case: Case, factory: EngineFactory) -> list[dict[str, Any]]:
    engine = factory(rego_v0=case.rego_v0)
    for index, module in enumerate(case.modules):
        add_policy(engine, f"module{index}.rego", module)
    if case.data is not None:
        engine.add_data_json(json.dumps(case.data))
    if case.input is not _UNSET:
        engine.set_input_json(json.dumps(case.input))
    out = json.loads(engine.eval_query_as_json(case.query))
    return [_bindings(r) for r in out.get("result", [])]


def _bindings(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (result.get("bindings") or {}).items() if not k.startswith("_")}


# OPA's order of values (ast.Compare): null < boolean < number < string < array < object < set.
# A set prints as an array in that order, which is how the cases write their wanted sets.


def _opa_key(value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, list | tuple):
        return (4, tuple(_opa_key(v) for v in value))
    if isinstance(value, dict):
        return (5, tuple(sorted((_opa_key(k), _opa_key(v)) for k, v in value.items())))
    if isinstance(value, set | frozenset):
        return (6, tuple(sorted(_opa_key(v) for v in value)))
    return (7, repr(value))


def _canonical(value: Any) -> Any:
    """A comparable form that keeps types apart (true is not 1) and orders sets as OPA does."""
    if isinstance(value, set | frozenset):
        return ["arr", [_canonical(v) for v in sorted(value, key=_opa_key)]]
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: _opa_key(kv[0]))
        return ["obj", [[_canonical(k), _canonical(v)] for k, v in items]]
    if isinstance(value, list | tuple):
        return ["arr", [_canonical(v) for v in value]]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int | float):
        return ["num", float(value) if abs(value) < 2**53 else str(value)]
    return [type(value).__name__, value]


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _first_line(exc: BaseException) -> str:
    text = str(exc).split("Stack backtrace:", 1)[0].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [repr(exc)])[0][:200]


def run_all(factory: EngineFactory = new_engine, cases: list[Case] | None = None) -> list[Outcome]:
    return [run_case(case, factory) for case in (cases or all_cases())]


@functools.cache
def all_cases() -> list[Case]:
    return load_cases()


def iter_failures(outcomes: list[Outcome]) -> Iterator[Outcome]:
    return (o for o in outcomes if not o.passed)
