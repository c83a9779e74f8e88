"""OPA 1.9's answers to small policies, recorded, and the same questions put to callgate.

A fixture file (`tests/gateway/policy/opa_answers/*.json`) holds cases: modules, a Rego version,
a builtin-error mode, an input, a query, and what OPA 1.9.0 answered (recorded with the Data
API of `opa run --server`, `--v0-compatible` for v0 cases, `strict-builtin-errors=true` for
strict ones): `{"value": ...}`, `{"undefined": true}` or `{"error": "..."}` (a policy OPA
refuses, or an evaluation that fails). Sets are sorted arrays, as OPA writes them, and as the
engine writes them in JSON.

- `embedded_answer(case, tmp)`: what callgate's embedded engine answers, loading the modules
  as a policy directory would be loaded (the load-time checks included);
- `live_answer(case)`: what the real OPA answers now (None without one), so a live run
  proves the recording is still OPA's.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.errors import ConfigError
from gateway.policy.bundle import load_bundle
from gateway.policy.embedded import analyze
from gateway.policy.interpreter import is_panic
from gateway.policy.options import BuiltinErrors, RegoOptions, RegoVersion
from tests.support.opa import live_opa_url

FIXTURES = Path(__file__).parents[1] / "gateway" / "policy" / "opa_answers"


@dataclass(frozen=True)
class Case:
    name: str
    modules: dict[str, str]
    query: str
    expected: dict[str, Any]
    input: Any = None
    rego_version: RegoVersion = "v1"
    builtin_errors: BuiltinErrors = "strict"
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def options(self) -> RegoOptions:
        return RegoOptions(rego_version=self.rego_version, builtin_errors=self.builtin_errors)


def cases(name: str) -> list[Case]:
    doc = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    known = set(Case.__dataclass_fields__) - {"expected", "extra"}
    return [
        Case(
            expected=c["opa"],
            **{k: v for k, v in c.items() if k in known},
            extra={k: v for k, v in c.items() if k not in known | {"opa"}},
        )
        for c in doc["cases"]
    ]


def normal(value: Any) -> Any:
    """A value as OPA writes it in JSON: sets as sorted arrays, object keys as strings."""
    if isinstance(value, set | frozenset):
        items = [normal(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, list | tuple):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: normal(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------
# the embedded engine


def embedded_answer(case: Case, tmp: Path) -> dict[str, Any]:
    root = tmp / case.name
    for rel, text in case.modules.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    try:
        engine = analyze(load_bundle(root, case.options))
    except ConfigError as exc:
        return {"error": exc.message}
    try:
        if case.input is not None:
            engine.set_input_json(json.dumps(case.input))
        out = json.loads(engine.eval_query_as_json(case.query))  # sets of objects too
    except Exception as exc:  # noqa: BLE001  (the evaluation failed: that is the answer)
        return {"error": str(exc).split("Stack backtrace:")[0].strip()}
    except BaseException as exc:
        if not is_panic(exc):
            raise
        return {"error": f"panic: {exc}"}
    results = out.get("result") or []
    if not results:
        return {"undefined": True}
    return {"value": normal(results[0]["expressions"][0]["value"])}


# ---------------------------------------------------------------------------------------------
# a live OPA


def live_answer(case: Case) -> dict[str, Any] | None:
    """OPA's answer now; None when this machine has no OPA (of the case's Rego version)."""
    url = live_opa_url(v0_compatible=case.rego_version == "v0")
    if url is None:
        return None
    ids = [f"callgate-answers/{case.name}/{rel}" for rel in case.modules]
    try:
        for pid, text in zip(ids, case.modules.values(), strict=True):
            status, body = _request("PUT", f"{url}/v1/policies/{pid}", text.encode())
            if status != 200:
                return {"error": _errors(body)}
        return _query(url, case)
    finally:
        _delete(url, ids)


def _delete(url: str, ids: list[str]) -> None:
    """Delete the policies; OPA refuses to delete one that another still needs, so the rest
    are deleted first and it again, until a round deletes nothing."""
    left = list(ids)
    while left:
        kept = [
            pid
            for pid in left
            if _request("DELETE", f"{url}/v1/policies/{pid}", None)[0] not in (200, 404)
        ]
        if len(kept) == len(left):
            raise RuntimeError(f"OPA keeps policies {kept}")
        left = kept


def _query(url: str, case: Case) -> dict[str, Any]:
    path = "/".join(case.query.split(".")[1:])
    strict = "?strict-builtin-errors=true" if case.builtin_errors == "strict" else ""
    doc = {"input": case.input} if case.input is not None else {}
    status, body = _request("POST", f"{url}/v1/data/{path}{strict}", json.dumps(doc).encode())
    if status != 200:
        return {"error": _errors(body)}
    if "result" not in body:
        return {"undefined": True}
    return {"value": normal(body["result"])}


def _request(method: str, url: str, data: bytes | None) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310  (loopback)
            text = answer.read()
            return answer.status, json.loads(text) if text else {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _errors(body: Any) -> str:
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors:
        return "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors)
    return str(body.get("message", body)) if isinstance(body, dict) else str(body)


def same_outcome(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    """Equal values (or both undefined); for errors, both failing and the expected text's
    `match` part (when the case gives one) found in the other's message."""
    if "error" in expected or "error" in got:
        return "error" in expected and "error" in got
    return expected == got
