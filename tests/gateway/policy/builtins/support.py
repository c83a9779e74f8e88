"""Evaluate a Rego expression on callgate's engine (the factory every engine comes from)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.policy.decision import UNDEFINED
from gateway.policy.failures import describe
from gateway.policy.rego import add_policy, new_engine


def rego(expr: str, **refs: Any) -> Any:
    """The value of `expr` (JSON-shaped: sets as sorted arrays); refs become `data.t.<name>`."""
    engine = new_engine()
    add_policy(engine, "t.rego", f"package t\n\nx := {expr}\n")
    if refs:
        engine.add_data_json(json.dumps({"t": refs}))
    out = json.loads(engine.eval_query_as_json("data.t.x"))
    results = out.get("result") or []
    return results[0]["expressions"][0]["value"] if results else UNDEFINED


def rego_set(expr: str, **refs: Any) -> set[Any]:
    value = rego(expr, **refs)
    assert isinstance(value, list), value
    return {json.dumps(v) if isinstance(v, list | dict) else v for v in value}


def rego_error(expr: str, **refs: Any) -> str:
    """The one-line failure of evaluating `expr` (it must fail)."""
    with pytest.raises(RuntimeError) as info:
        rego(expr, **refs)
    return describe(info.value).message
