"""What a policy evaluation answers, as the runner sees it: pure mapping, no engine.

A `decision` value maps to ALLOW / DENY / APPROVAL_REQUIRED; anything undefined, malformed or
failing is a DENY carrying `policy_error` (never an allow). `PolicyEvalError` is a failed
evaluation, `PolicyUndefined` an undefined one, `UNDEFINED` the marker for an undefined value.
"""

from __future__ import annotations

import math
from typing import Any, Final

from gateway.model import Decision, Quota, Verdict
from gateway.quotas import MAX_AMOUNT, MAX_KEY_BYTES, MAX_QUOTAS_PER_CALL, MAX_WINDOW_S


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


class _Malformed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decision_from_value(value: Any, revision: str) -> Decision:
    """Map a `decision` value to a Decision; anything malformed → policy_error."""
    try:
        return _map_decision(value, revision)
    except _Malformed as exc:
        return error_decision(exc.message, revision)


def error_decision(message: str, revision: str) -> Decision:
    """The fail-closed answer: DENY carrying policy_error."""
    return Decision(
        verdict=Verdict.DENY,
        reasons=(f"policy_error: {message}",),
        policy_revision=revision,
        error=message,
    )


def _map_decision(value: Any, revision: str) -> Decision:
    if value is UNDEFINED:
        raise _Malformed("decision is undefined")
    if not isinstance(value, dict):
        raise _Malformed(f"decision is not an object ({type_name(value)})")
    allow = value.get("allow", UNDEFINED)
    if not isinstance(allow, bool):
        raise _Malformed(f"decision.allow is not a boolean ({type_name(allow)})")
    approval = _optional_bool(value, "approval_required")
    reasons = _reasons(value)
    ttl = _ttl(value)
    if allow and approval:
        raise _Malformed("decision has both allow and approval_required true")
    quotas = _quotas(value)
    if allow:
        return Decision(
            verdict=Verdict.ALLOW, reasons=reasons, policy_revision=revision, quotas=quotas
        )
    if approval:
        return Decision(
            verdict=Verdict.APPROVAL_REQUIRED,
            reasons=reasons,
            policy_revision=revision,
            approval_ttl_s=ttl,
            quotas=quotas,
        )
    return Decision(verdict=Verdict.DENY, reasons=reasons, policy_revision=revision)


def _optional_bool(value: dict[str, Any], key: str) -> bool:
    item = value.get(key, False)
    if not isinstance(item, bool):
        raise _Malformed(f"decision.{key} is not a boolean ({type_name(item)})")
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


def _quotas(value: dict[str, Any]) -> tuple[Quota, ...]:
    """decision.quotas: at most MAX_QUOTAS_PER_CALL objects, each well formed, no key twice."""
    items = value.get("quotas", [])
    if isinstance(items, set | frozenset):
        raise _Malformed("decision.quotas is a set; make it an array (a list comprehension)")
    if not isinstance(items, list | tuple):
        raise _Malformed(f"decision.quotas is not an array ({type_name(items)})")
    if len(items) > MAX_QUOTAS_PER_CALL:
        raise _Malformed(
            f"decision.quotas has {len(items)} quotas, over the limit of "
            f"{MAX_QUOTAS_PER_CALL} per call"
        )
    quotas = tuple(_quota(item, f"decision.quotas[{i}]") for i, item in enumerate(items))
    keys = [q.key for q in quotas]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise _Malformed(f"decision.quotas[{i}].key {key!r} is named twice")
    return quotas


def _quota(item: Any, where: str) -> Quota:
    if not isinstance(item, dict):
        raise _Malformed(f"{where} is not an object ({type_name(item)})")
    extra = sorted(set(item) - {"key", "limit", "window_s", "cost"}, key=str)
    if extra:
        raise _Malformed(f"{where} has an unknown field {extra[0]!r} (key, limit, window_s, cost)")
    key = item.get("key", UNDEFINED)
    if not isinstance(key, str) or not key:
        raise _Malformed(f"{where}.key is not a non-empty string ({type_name(key)})")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES or not key.isprintable():
        raise _Malformed(f"{where}.key is over {MAX_KEY_BYTES} bytes or holds control characters")
    limit = _number(item, "limit", where, zero=True)
    cost = _number(item, "cost", where, zero=True)
    window = _number(item, "window_s", where, zero=False)
    if not float(window).is_integer() or window > MAX_WINDOW_S:
        raise _Malformed(
            f"{where}.window_s is not a whole number of seconds from 1 to "
            f"{MAX_WINDOW_S} ({window!r})"
        )
    return Quota(key=key, limit=float(limit), window_s=int(window), cost=float(cost))


def _number(item: dict[str, Any], field: str, where: str, *, zero: bool) -> float:
    value = item.get(field, UNDEFINED)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Malformed(f"{where}.{field} is not a number ({type_name(value)})")
    low = value >= 0 if zero else value > 0
    if isinstance(value, float) and not math.isfinite(value) or not low or value > MAX_AMOUNT:
        bound = "0" if zero else "above 0"
        raise _Malformed(
            f"{where}.{field} is not a number from {bound} to {MAX_AMOUNT:g} ({value!r})"
        )
    return float(value)


def type_name(value: Any) -> str:
    """The Rego type name of a value (\"undefined\" for UNDEFINED)."""
    if value is UNDEFINED:
        return "undefined"
    names = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "number",
        float: "number",
        set: "set",
    }
    return names.get(type(value), type(value).__name__)
