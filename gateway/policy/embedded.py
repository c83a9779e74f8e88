"""The embedded policy engine: regorus (Rego in-process), fail-closed around every evaluation.

regorus `Engine` objects are unsendable (using one from another thread panics, and so does
dropping one on another thread), so each thread builds its own engine from the bundle's
sources on first use and keeps it in a per-thread table; a thread drops the engines of
revisions no longer alive itself, on its next build. The constructor checks and compiles the
bundle eagerly (unless the caller already did), so a bad policy fails before it serves.

Builtin errors: the engine raises where OPA (without strict-builtin-errors) would leave the
expression undefined. callgate's rule by default (`--builtin-errors strict`): a builtin error
anywhere in an evaluation fails it; for `decision` that is a DENY with `policy_error` naming
the builtin and its file:line; never an allow. With `--builtin-errors undefined` the engines
are built from guarded sources (`gateway.policy.undefined`) and a failing builtin leaves its
expression undefined, as on OPA by default. An engine panic (`pyo3_runtime.PanicException`, a
BaseException) is contained the same way and the panicked engine is rebuilt before its next
use.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import weakref
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson

from gateway.errors import ConfigError
from gateway.memo import Memo
from gateway.model import Decision, now_utc
from gateway.policy.base import DEFAULT_PREFIX
from gateway.policy.bundle import Bundle, rules_of_engine
from gateway.policy.checker import check, refusals
from gateway.policy.config_errors import (
    PolicyConfigError,
    config_error_from_regorus,
    short_regorus_message,
)
from gateway.policy.decision import (
    UNDEFINED,
    PolicyEvalError,
    PolicyUndefined,
    decision_from_value,
    error_decision,
    type_name,
)
from gateway.policy.failures import CallIndex, describe
from gateway.policy.guards import extensions
from gateway.policy.interpreter import is_panic
from gateway.policy.reads import InputView
from gateway.policy.rego import new_engine
from gateway.policy.results import ResultVerdict, result_verdict, withheld_for_error
from gateway.policy.sources import engine_sources

__all__ = [
    "DEFAULT_PREFIX",
    "UNDEFINED",
    "EmbeddedEngine",
    "PolicyEvalError",
    "PolicyUndefined",
    "analyze",
    "build_regorus_engine",
    "decision_from_value",
    "error_decision",
    "input_json",
    "is_panic",
]

log = logging.getLogger(__name__)

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_RULE = re.compile(rf"{_NAME}(\.{_NAME})*")
_PREFIX = re.compile(rf"data(\.{_NAME})+")


# ---------------------------------------------------------------------------------------------
# building and checking regorus engines


def build_regorus_engine(
    bundle: Bundle, *, include_tests: bool = False, coverage: bool = False, guard: bool = True
) -> Any:
    """A compiled regorus Engine with the bundle's policies and data; ConfigError if bad.
    With `--builtin-errors undefined` its builtin calls are guarded, unless `guard=False`
    (the texts as written, for the static checks)."""
    try:
        return _build(bundle, include_tests=include_tests, coverage=coverage, guard=guard)
    except ConfigError:
        raise
    except BaseException as exc:
        if not is_panic(exc):
            raise
        where = bundle.root.as_posix()
        raise PolicyConfigError(
            f"{where}: the engine panicked while loading: {exc}", file=where
        ) from exc


def _build(bundle: Bundle, *, include_tests: bool, coverage: bool, guard: bool) -> Any:
    where = bundle.root.as_posix()
    engine = new_engine(coverage=coverage, rego_v0=bundle.options.rego_v0)
    try:
        sources = engine_sources(bundle, include_tests=include_tests, guard=guard)
    except RuntimeError as exc:
        raise config_error_from_regorus(exc, fallback_file=where) from exc
    for name, nargs, fn in extensions(sources.guards):
        engine.add_extension(name, nargs, fn)
    for name, text in (*sources.texts, *sources.support_files):
        try:
            engine.add_policy(name, text)
        except RuntimeError as exc:
            raise config_error_from_regorus(exc, fallback_file=name) from exc
    try:
        engine.add_data_json(json.dumps(bundle.data, allow_nan=False))
    except (RuntimeError, ValueError) as exc:
        raise PolicyConfigError(
            f"{where}: data rejected by the engine: {short_regorus_message(exc)}", file=where
        ) from exc
    try:  # regorus compiles on the first evaluation: force it with a trivial query
        engine.eval_query("true")
    except RuntimeError as exc:
        refused = refusals(engine)  # what callgate refuses, said plainly, before the engine's
        if refused:
            raise PolicyConfigError.of(refused) from exc
        raise config_error_from_regorus(exc, fallback_file=where) from exc
    return engine


def analyze(bundle: Bundle, *, include_tests: bool = False) -> Any:
    """Compile the bundle and run the static checks; the compiled engine, or a
    PolicyConfigError listing every problem (type errors, unknown or unavailable builtins)."""
    engine = build_regorus_engine(bundle, include_tests=include_tests, guard=False)
    problems = check(engine, rules_of_engine(engine))
    if problems:
        raise PolicyConfigError.of(problems)
    if bundle.options.strict:
        return engine
    return build_regorus_engine(bundle, include_tests=include_tests)


def clean_copy(engine: Any) -> Any:
    """The engine to go on with after an evaluation failed: regorus keeps part of a failed
    evaluation's state (an error inside `walk` or a comprehension leaves the next evaluation
    of the rule empty or undefined: a `result` rule would then deliver what it redacts), and a
    clone starts clean (with the same policies, data, builtins and coverage so far)."""
    return engine.clone()


def input_json(input: dict[str, Any]) -> str:
    """The exact JSON text an input is evaluated as (and hashed as: `input_sha256`): compact,
    keys sorted, UTF-8 (orjson: several times faster than json on a run's history). Inputs are
    built from strictly read JSON, so they hold no NaN or infinity; what orjson refuses (an
    integer beyond 64 bits, a non-string key) falls back to json, which raises ValueError or
    TypeError for what is not JSON at all."""
    try:
        return orjson.dumps(input, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(
            input, allow_nan=False, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )


def input_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# per-thread engines


class _ThreadEngines(threading.local):
    """This thread's engines, by the EmbeddedEngine (revision) they belong to."""

    def __init__(self) -> None:
        self.engines: dict[int, tuple[weakref.ref[EmbeddedEngine], Any]] = {}

    def get(self, owner: EmbeddedEngine) -> Any:
        if len(self.engines) > 1:
            self._prune()
        entry = self.engines.get(id(owner))
        if entry is not None and entry[0]() is owner:
            return entry[1]
        return None

    def put(self, owner: EmbeddedEngine, engine: Any) -> None:
        self._prune()
        self.engines[id(owner)] = (weakref.ref(owner), engine)

    def _prune(self) -> None:
        """Drop, here on their own thread, the engines of revisions nobody holds any more."""
        for key, (ref, _) in list(self.engines.items()):
            if ref() is None:
                del self.engines[key]

    def forget(self, owner: EmbeddedEngine) -> None:
        self.engines.pop(id(owner), None)


_THREAD_ENGINES = _ThreadEngines()


# ---------------------------------------------------------------------------------------------
# decisions already made


def decision_memo() -> Memo[Decision]:
    """The latest decisions of a pure revision (gateway.policy.reads) by their exact input
    text: the same input, the same bundle and no builtin that looks at the clock or the world
    make the same decision, so it is not evaluated again."""
    return Memo(size=1024, max_key_chars=8192)


# ---------------------------------------------------------------------------------------------
# the engine


class EmbeddedEngine:
    """PolicyEngine on regorus; one regorus Engine per thread, built lazily from the bundle.

    `checked=True` skips the static checks (the caller ran `analyze` on this bundle already,
    e.g. on another thread during a reload); the engine of this thread is still built at once.
    """

    name = "embedded"

    def __init__(
        self, bundle: Bundle, prefix: str = DEFAULT_PREFIX, *, checked: bool = False
    ) -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ConfigError(f"policy prefix {prefix!r} is not a data path like data.callgate")
        self._bundle = bundle
        self._prefix = prefix
        self._loaded_at = now_utc()
        # Paths of rules the bundle defines: these may use the faster eval_rule (which raises
        # on an unknown path and answers None for undefined) where null means undefined anyway.
        self._rule_paths = frozenset(r.path for r in bundle.rules if not r.function)
        engine = build_regorus_engine(bundle) if checked else analyze(bundle)
        self._calls = CallIndex(engine, dict(bundle.named_sources()))
        self._view = InputView.of(engine)
        self._memo = decision_memo() if self._view.pure else None
        _THREAD_ENGINES.put(self, engine)

    # -- PolicyEngine -------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        return self._bundle.revision

    @property
    def loaded_at(self) -> datetime:
        return self._loaded_at

    @property
    def bundle(self) -> Bundle:
        return self._bundle

    @property
    def prefix(self) -> str:
        return self._prefix

    def decide(self, input: dict[str, Any]) -> Decision:
        try:
            text = self.input_text(input)
        except (TypeError, ValueError) as exc:
            return error_decision(f"input is not JSON: {exc}", self.revision)
        return self.decide_json(text)

    def reads(self, *path: str) -> bool:
        return self._view.reads(*path)

    @property
    def input_paths(self) -> frozenset[tuple[str, ...]] | None:
        """The input paths this revision's rules can observe (None: the whole input)."""
        return self._view.paths

    def visible(self, input: dict[str, Any]) -> dict[str, Any]:
        """A `decision` or `result` input as this revision is given it: only what its rules can
        observe (gateway.policy.reads)."""
        return self._view.project(input)

    def input_text(self, input: dict[str, Any]) -> str:
        """The JSON text of `visible(input)`. The whole input must be JSON all the same
        (TypeError or ValueError): a part no rule reads is no excuse for an input callgate
        cannot have meant to build."""
        seen = self.visible(input)
        if seen is not input:
            input_json(input)  # raises for what is not JSON anywhere in it
        return input_json(seen)

    def decide_json(self, text: str) -> Decision:
        """`decide` for an input already serialized with `input_json`."""
        memo = self._memo
        if memo is not None and (known := memo.get(text)) is not None:
            return known
        digest = input_sha256(text)
        try:
            value = self._value("decision", text, null_is_undefined=True)
        except PolicyEvalError as exc:
            return _with_input(error_decision(exc.message, self.revision), digest)
        decision = _with_input(decision_from_value(value, self.revision), digest)
        if memo is not None:
            memo.put(text, decision)
        return decision

    def allows(self, rule: str, input: dict[str, Any]) -> bool:
        try:
            return self._value(rule, _json(rule, input), null_is_undefined=True) is True
        except PolicyEvalError:
            return False

    def offer(self, input: dict[str, Any]) -> set[str] | None:
        try:
            value = self._value("offer", _json("offer", input))
        except PolicyEvalError:
            return set()
        if value is UNDEFINED:
            return None
        if isinstance(value, set | frozenset | list | tuple) and all(
            isinstance(v, str) for v in value
        ):
            return set(value)
        log.warning(
            "policy offer is not a set of tool names (%s); offering nothing", type_name(value)
        )
        return set()

    @property
    def defines_result(self) -> bool:
        return f"{self._prefix}.result" in self._rule_paths

    def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        """`result` (docs/policies.md): None at once when the bundle does not define it."""
        if not self.defines_result:
            return None
        try:
            text = self.input_text(input)  # what no rule reads is not handed to the engine
        except (TypeError, ValueError) as exc:
            return withheld_for_error(f"input is not JSON: {exc}")
        try:
            value = self._value("result", text, null_is_undefined=True)
        except PolicyEvalError as exc:
            return withheld_for_error(exc.message)
        return result_verdict(value)

    def partial_writes(self, input: dict[str, Any]) -> bool:
        try:
            value = self._value(
                "batch_policy", _json("batch_policy", input), null_is_undefined=True
            )
        except PolicyEvalError:
            return False
        return isinstance(value, dict) and value.get("partial_writes") is True

    def healthy(self) -> bool:
        try:
            out = self._eval("true", "{}")
        except PolicyEvalError:
            return False
        return out is True

    # -- raw access ---------------------------------------------------------------------------

    def eval_raw(self, rule: str, input: dict[str, Any]) -> Any:
        """The rule's value (sets stay Python sets); PolicyUndefined / PolicyEvalError."""
        value = self._value(rule, _json(rule, input))
        if value is UNDEFINED:
            raise PolicyUndefined(f"{self._prefix}.{rule}")
        return value

    # -- internals ----------------------------------------------------------------------------

    def _value(self, rule: str, text: str, *, null_is_undefined: bool = False) -> Any:
        """Value of `<prefix>.<rule>` for an input (JSON text), or UNDEFINED; raises
        PolicyEvalError.

        With null_is_undefined (for callers to whom both mean the same) a rule the bundle
        defines is evaluated with eval_rule, ~20 µs faster than a query.
        """
        if not _RULE.fullmatch(rule):
            raise PolicyEvalError(rule, "not a valid rule name")
        path = f"{self._prefix}.{rule}"
        if null_is_undefined and path in self._rule_paths:
            value = self._eval(path, text, as_rule=True)
            return UNDEFINED if value is None else value
        return self._eval(path, text)

    def _eval(self, query: str, text: str, *, as_rule: bool = False) -> Any:
        engine = self._engine(query)
        try:
            engine.set_input_json(text)
            if as_rule:
                return engine.eval_rule(query)
            out = engine.eval_query(query)
        except Exception as exc:  # RuntimeError from regorus (builtin errors, conflicts, ...)
            _THREAD_ENGINES.put(self, clean_copy(engine))
            del engine  # freed now, on its thread: the traceback must not keep it for the GC
            message = describe(exc, self._calls, query=query).message
            log.warning("policy evaluation of %s failed: %s", query, message)
            raise PolicyEvalError(query, message) from exc
        except BaseException as exc:
            if not is_panic(exc):
                raise
            _THREAD_ENGINES.forget(self)  # rebuilt before the next evaluation on this thread
            del engine
            log.error("policy engine panicked evaluating %s: %s", query, exc)
            raise PolicyEvalError(query, f"engine panic: {exc}", panic=True) from exc
        return _single_value(query, out)

    def _engine(self, query: str) -> Any:
        engine = _THREAD_ENGINES.get(self)
        if engine is None:
            try:
                engine = build_regorus_engine(self._bundle)
            except ConfigError as exc:
                raise PolicyEvalError(query, f"engine build failed: {exc}") from exc
            _THREAD_ENGINES.put(self, engine)
        return engine


def _json(rule: str, input: dict[str, Any]) -> str:
    try:
        return input_json(input)
    except (TypeError, ValueError) as exc:
        raise PolicyEvalError(rule, f"input is not JSON: {exc}") from exc


def _with_input(decision: Decision, digest: str) -> Decision:
    return replace(decision, input_sha256=digest)


def _single_value(query: str, out: Any) -> Any:
    results = out.get("result") if isinstance(out, dict) else None
    if not isinstance(results, list):
        raise PolicyEvalError(query, "engine returned no result list")
    if not results:
        return UNDEFINED
    if len(results) != 1:
        raise PolicyEvalError(query, f"query gave {len(results)} results")
    expressions = results[0].get("expressions") or []
    if len(expressions) != 1 or "value" not in expressions[0]:
        raise PolicyEvalError(query, "engine returned an unexpected result shape")
    return expressions[0]["value"]
