"""The embedded policy engine: regorus (Rego in-process), fail-closed around every evaluation.

regorus `Engine` objects are unsendable (using one from another thread panics), so each thread
builds its own engine from the bundle's sources on first use; the constructor builds and
compiles the first one eagerly so a bad policy fails at start-up. An evaluation error, a
builtin error (`1/0`) or an engine panic (`pyo3_runtime.PanicException`, a BaseException)
becomes a DENY with `policy_error`; a panicked engine is rebuilt before its next use.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from datetime import datetime
from typing import Any, Final

import regorus

from gateway.errors import ConfigError
from gateway.model import Decision, Verdict, now_utc
from gateway.policy.bundle import (
    Bundle,
    PolicyConfigError,
    RuleInfo,
    config_error_from_regorus,
    rules_of_engine,
    short_regorus_message,
)

log = logging.getLogger(__name__)

DEFAULT_PREFIX: Final = "data.callgate"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_RULE = re.compile(rf"{_NAME}(\.{_NAME})*")
_PREFIX = re.compile(rf"data(\.{_NAME})+")
_UNKNOWN_FUNCTION = "could not find function"


class PolicyEvalError(Exception):
    """An evaluation failed: engine error, builtin error, panic or bad input."""

    def __init__(self, rule: str, message: str, *, panic: bool = False) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message
        self.panic = panic


class PolicyUndefined(PolicyEvalError):
    """The rule is undefined for this input (or not defined by the bundle at all)."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule, "undefined")


class _Undefined:
    """Marker for an undefined result (distinct from a JSON null)."""

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()


def is_panic(exc: BaseException) -> bool:
    """True for pyo3's PanicException (it derives from BaseException, not Exception)."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


# ---------------------------------------------------------------------------------------------
# building regorus engines


def build_regorus_engine(bundle: Bundle, *, include_tests: bool = False,
                         coverage: bool = False) -> Any:
    """A compiled regorus Engine with the bundle's policies and data; ConfigError if bad."""
    try:
        return _build(bundle, include_tests=include_tests, coverage=coverage)
    except ConfigError:
        raise
    except BaseException as exc:
        if not is_panic(exc):
            raise
        where = bundle.root.as_posix()
        raise PolicyConfigError(f"{where}: the engine panicked while loading: {exc}",
                                file=where) from exc


def _build(bundle: Bundle, *, include_tests: bool, coverage: bool) -> Any:
    engine = regorus.Engine()
    for name, text in bundle.named_sources(include_tests=include_tests):
        try:
            engine.add_policy(name, text)
        except RuntimeError as exc:
            raise config_error_from_regorus(exc, fallback_file=name) from exc
    where = bundle.root.as_posix()
    try:
        engine.add_data_json(json.dumps(bundle.data, allow_nan=False))
    except (RuntimeError, ValueError) as exc:
        raise PolicyConfigError(f"{where}: data rejected by the engine: "
                                f"{short_regorus_message(exc)}", file=where) from exc
    if coverage:
        engine.set_enable_coverage(True)
    try:  # regorus compiles on the first evaluation: force it with a trivial query
        engine.eval_query("true")
    except RuntimeError as exc:
        raise config_error_from_regorus(exc, fallback_file=where) from exc
    return engine


def check_builtins(engine: Any, rules: tuple[RuleInfo, ...]) -> None:
    """Refuse a policy calling a builtin this regorus build lacks (e.g. `crypto.sha256`).

    regorus reports a missing builtin only when the call is evaluated, which would turn into
    a deny of every such call at run time; probing the called names fails it at start-up.
    """
    called = _called_functions(engine)
    local = {(r.package, r.name.split(".")[0]) for r in rules}
    for name, file, line, package, aliases in called:
        head = name.split(".")[0]
        if head in ("data", "input") or head in aliases or (package, head) in local:
            continue
        if _builtin_missing(engine, name):
            raise PolicyConfigError(
                f"{file}:{line}: function {name} is not available in the embedded engine "
                "(regorus); use the OPA engine or supply it as an extension",
                file=file, line=line, detail=f"function {name} is not available")


def _builtin_missing(engine: Any, name: str) -> bool:
    try:
        engine.eval_query(f"{name}()")
    except RuntimeError as exc:
        return _UNKNOWN_FUNCTION in str(exc)
    except BaseException as exc:
        if not is_panic(exc):
            raise
    return False


def _called_functions(engine: Any) -> list[tuple[str, str, int, str, set[str]]]:
    """(function name, file, line, package, import aliases) of every call in the policies."""
    found: list[tuple[str, str, int, str, set[str]]] = []
    seen: set[tuple[str, str]] = set()
    for module in json.loads(engine.get_ast_as_json()):
        source = module.get("source", {})
        file = source.get("file", "")
        ast = module.get("ast", {})
        package = "data." + _dotted(ast.get("package", {}).get("refr"))
        aliases = _import_aliases(ast.get("imports", []), source.get("contents", ""))
        for name, line in _calls(ast.get("rules", [])):
            if name and (file, name) not in seen:
                seen.add((file, name))
                found.append((name, file, line, package, aliases))
    return found


def _import_aliases(imports: list[Any], contents: str) -> set[str]:
    """Names an import binds: the `as` alias (a source span in the AST) or the last key."""
    aliases: set[str] = set()
    for imp in imports:
        if not isinstance(imp, dict):
            continue
        alias = imp.get("as")
        if isinstance(alias, dict) and isinstance(alias.get("start"), int):
            start, end = alias["start"], alias.get("end", alias["start"])
            aliases.add(contents.encode()[start:end].decode(errors="replace"))
        path = _dotted(imp.get("refr"))
        if path:
            aliases.add(path.split(".")[-1])
    return aliases


def _calls(node: Any) -> list[tuple[str, int]]:
    """Every `Call` node below node: (dotted function name, line)."""
    out: list[tuple[str, int]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            call = item.get("Call")
            if isinstance(call, dict):
                line = int(call.get("span", {}).get("line", 0))
                out.append((_dotted(call.get("fcn")), line))
            stack.extend(item.values())
    return out


def _dotted(ref: Any) -> str:
    """`a.b.c` for Var/RefDot chains; "" for anything else."""
    if not isinstance(ref, dict) or len(ref) != 1:
        return ""
    kind, node = next(iter(ref.items()))
    if kind == "Var":
        value = node.get("value")
        return value if isinstance(value, str) else ""
    if kind == "RefDot":
        base = _dotted(node.get("refr"))
        field_ = node.get("field")
        key = field_[1] if isinstance(field_, list) and len(field_) == 2 else None
        return f"{base}.{key}" if base and isinstance(key, str) else ""
    return ""


# ---------------------------------------------------------------------------------------------
# decision mapping (pure)


class _Malformed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decision_from_value(value: Any, revision: str) -> Decision:
    """Map a `decision` value to a Decision (docs/policies.md); malformed → policy_error."""
    try:
        return _map_decision(value, revision)
    except _Malformed as exc:
        return error_decision(exc.message, revision)


def error_decision(message: str, revision: str) -> Decision:
    """The fail-closed answer: DENY carrying policy_error."""
    return Decision(verdict=Verdict.DENY, reasons=(f"policy_error: {message}",),
                    policy_revision=revision, error=message)


def _map_decision(value: Any, revision: str) -> Decision:
    if value is UNDEFINED:
        raise _Malformed("decision is undefined")
    if not isinstance(value, dict):
        raise _Malformed(f"decision is not an object ({_type_name(value)})")
    allow = value.get("allow", UNDEFINED)
    if not isinstance(allow, bool):
        raise _Malformed(f"decision.allow is not a boolean ({_type_name(allow)})")
    approval = _optional_bool(value, "approval_required")
    reasons = _reasons(value)
    ttl = _ttl(value)
    if allow and approval:
        raise _Malformed("decision has both allow and approval_required true")
    if allow:
        return Decision(verdict=Verdict.ALLOW, reasons=reasons, policy_revision=revision)
    if approval:
        return Decision(verdict=Verdict.APPROVAL_REQUIRED, reasons=reasons,
                        policy_revision=revision, approval_ttl_s=ttl)
    return Decision(verdict=Verdict.DENY, reasons=reasons, policy_revision=revision)


def _optional_bool(value: dict[str, Any], key: str) -> bool:
    item = value.get(key, False)
    if not isinstance(item, bool):
        raise _Malformed(f"decision.{key} is not a boolean ({_type_name(item)})")
    return item


def _reasons(value: dict[str, Any]) -> tuple[str, ...]:
    reasons = value.get("reasons", [])
    if isinstance(reasons, set | frozenset):
        reasons = sorted(reasons, key=str)
    if not isinstance(reasons, list | tuple) or not all(isinstance(r, str) for r in reasons):
        raise _Malformed("decision.reasons is not a list of strings")
    return tuple(reasons)


def _ttl(value: dict[str, Any]) -> int | None:
    if "approval_ttl_s" not in value:
        return None
    ttl = value["approval_ttl_s"]
    if isinstance(ttl, float) and ttl.is_integer():
        ttl = int(ttl)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise _Malformed(f"decision.approval_ttl_s is not a positive integer ({ttl!r})")
    return ttl


def _type_name(value: Any) -> str:
    if value is UNDEFINED:
        return "undefined"
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
             int: "number", float: "number", set: "set"}
    return names.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------------------------
# the engine


class EmbeddedEngine:
    """PolicyEngine on regorus; one regorus Engine per thread, built lazily from the bundle."""

    name = "embedded"

    def __init__(self, bundle: Bundle, prefix: str = DEFAULT_PREFIX) -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ConfigError(f"policy prefix {prefix!r} is not a data path like data.callgate")
        self._bundle = bundle
        self._prefix = prefix
        self._local = threading.local()
        self._loaded_at = now_utc()
        # Paths of rules the bundle defines: these may use the faster eval_rule (which raises
        # on an unknown path and answers None for undefined) where null means undefined anyway.
        self._rule_paths = frozenset(r.path for r in bundle.rules if not r.function)
        engine = build_regorus_engine(bundle)
        check_builtins(engine, rules_of_engine(engine))
        self._local.engine = engine

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
            value = self._value("decision", input, null_is_undefined=True)
        except PolicyEvalError as exc:
            return error_decision(exc.message, self.revision)
        return decision_from_value(value, self.revision)

    def allows(self, rule: str, input: dict[str, Any]) -> bool:
        try:
            return self._value(rule, input, null_is_undefined=True) is True
        except PolicyEvalError:
            return False

    def offer(self, input: dict[str, Any]) -> set[str] | None:
        try:
            value = self._value("offer", input)
        except PolicyEvalError:
            return set()
        if value is UNDEFINED:
            return None
        if isinstance(value, set | frozenset | list | tuple) and all(
                isinstance(v, str) for v in value):
            return set(value)
        log.warning("policy offer is not a set of tool names (%s); offering nothing",
                    _type_name(value))
        return set()

    def partial_writes(self, input: dict[str, Any]) -> bool:
        try:
            value = self._value("batch_policy", input, null_is_undefined=True)
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
        value = self._value(rule, input)
        if value is UNDEFINED:
            raise PolicyUndefined(f"{self._prefix}.{rule}")
        return value

    # -- internals ----------------------------------------------------------------------------

    def _value(self, rule: str, input: dict[str, Any], *,
               null_is_undefined: bool = False) -> Any:
        """Value of `<prefix>.<rule>` for input, or UNDEFINED; raises PolicyEvalError.

        With null_is_undefined (for callers to whom both mean the same) a rule the bundle
        defines is evaluated with eval_rule, ~20 µs faster than a query.
        """
        if not _RULE.fullmatch(rule):
            raise PolicyEvalError(rule, "not a valid rule name")
        try:
            input_json = json.dumps(input, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PolicyEvalError(rule, f"input is not JSON: {exc}") from exc
        path = f"{self._prefix}.{rule}"
        if null_is_undefined and path in self._rule_paths:
            value = self._eval(path, input_json, as_rule=True)
            return UNDEFINED if value is None else value
        return self._eval(path, input_json)

    def _eval(self, query: str, input_json: str, *, as_rule: bool = False) -> Any:
        engine = self._engine(query)
        try:
            engine.set_input_json(input_json)
            if as_rule:
                return engine.eval_rule(query)
            out = engine.eval_query(query)
        except Exception as exc:  # RuntimeError from regorus (builtin errors, conflicts, ...)
            message = _eval_message(query, exc)
            log.warning("policy evaluation of %s failed: %s", query, message)
            raise PolicyEvalError(query, message) from exc
        except BaseException as exc:
            if not is_panic(exc):
                raise
            self._local.engine = None  # rebuilt before the next evaluation on this thread
            log.error("policy engine panicked evaluating %s: %s", query, exc)
            raise PolicyEvalError(query, f"engine panic: {exc}", panic=True) from exc
        return _single_value(query, out)

    def _engine(self, query: str) -> Any:
        engine = getattr(self._local, "engine", None)
        if engine is None:
            try:
                engine = build_regorus_engine(self._bundle)
            except ConfigError as exc:
                raise PolicyEvalError(query, f"engine build failed: {exc}") from exc
            self._local.engine = engine
        return engine


def _eval_message(query: str, exc: BaseException) -> str:
    """`file:line:col: message` when regorus locates the error, else `query: message`."""
    located = config_error_from_regorus(exc)
    return located.message if located.line is not None else f"{query}: {located.detail}"


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
