"""Engine builtins whose errors carry no file and line, re-registered so that they do.

The engine reports most builtin errors at the call (`p.rego:5:14`), but a few (the JSON, YAML
and unit parsers, the time parsers) fail with a bare message. Registered as extensions, the same
builtins run on a plain engine of the calling thread and their errors come back located.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension

UNLOCATED: tuple[tuple[str, int], ...] = (
    ("json.unmarshal", 1),
    ("yaml.unmarshal", 1),
    ("units.parse", 1),
    ("units.parse_bytes", 1),
    ("time.parse_duration_ns", 1),
    ("time.parse_ns", 2),
    ("time.parse_rfc3339_ns", 1),
)
_local = threading.local()


def _plain_engine() -> Any:
    engine = getattr(_local, "engine", None)
    if engine is None:
        from gateway.policy.interpreter import bare_engine  # the one place engines are made

        engine = _local.engine = bare_engine()
    return engine


def native(name: str, nargs: int) -> Callable[..., Any]:
    """The engine's own builtin `name`, run on a plain engine of the calling thread."""
    query = f"{name}({', '.join(f'input[{i}]' for i in range(nargs))})"

    def call(*args: Any) -> Any:
        engine = _plain_engine()
        try:
            engine.set_input_json(json.dumps(list(args)))
            out = json.loads(engine.eval_query_as_json(query))
        except RuntimeError as exc:
            raise BuiltinError(_message(exc)) from None
        results = out.get("result") or []
        if not results:
            raise BuiltinError("undefined")
        return results[0]["expressions"][0]["value"]

    return call


def _message(exc: RuntimeError) -> str:
    """The `error: ...` line of the engine's text (its location is the helper query's)."""
    text = str(exc).split("Stack backtrace:", 1)[0].strip()
    errors = [
        line[len("error:") :].strip() for line in text.splitlines() if line.startswith("error:")
    ]
    return errors[-1] if errors else (text.splitlines() or ["failed"])[0]


EXTENSIONS = tuple(Extension(name, nargs, native(name, nargs)) for name, nargs in UNLOCATED)
