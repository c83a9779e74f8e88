"""`${VAR}` and `${VAR:-default}` in manifest string values, expanded from the environment
(`$${` keeps a literal `${`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from gateway.jsontext import has_lone_surrogate
from gateway.tools.problems import FieldPath, ManifestProblem

_ENV_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_text(text: str, field: FieldPath, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = env.get(name, "")
        if value:
            if has_lone_surrogate(value):  # (os.environ's stand-ins for bytes not UTF-8)
                raise ManifestProblem(
                    field,
                    f"environment variable {name} is not UTF-8 text (its bytes could not be "
                    "decoded): a manifest holds only text",
                )
            return value
        if default is not None:
            return default
        if name in env:
            return ""
        raise ManifestProblem(
            field,
            f"environment variable {name} is not set "
            f"(write ${{{name}:-default}} to give a default)",
        )

    return _ENV_REF.sub(replace, text)


def expand_env(value: Any, env: Mapping[str, str], field: FieldPath = ()) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string value (not in keys).

    The copy's keys and short strings are interned: thousands of manifests repeat the same
    few ("type", "properties", "string", ...), and a sidecar keeps every manifest."""
    try:
        return _copied(value, env)
    except ManifestProblem:
        _located(value, env, field)  # the same walk, naming the field on the way
        raise


def _copied(value: Any, env: Mapping[str, str]) -> Any:
    """`expand_env` without field paths: a manifest has dozens of values, and only a problem
    needs to say where it is."""
    if isinstance(value, dict):
        return {(_intern(k) if type(k) is str else k): _copied(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(item, env) for item in value]
    if isinstance(value, str):
        return _text(value, env)
    return value


def _text(text: str, env: Mapping[str, str]) -> str:
    if "${" in text:
        return _expand_text(text, (), env)
    return _intern(text) if len(text) <= SHARED_CHARS else text


def _located(value: Any, env: Mapping[str, str], field: FieldPath) -> None:
    """Raise the first problem of value's strings with the field it is in."""
    if isinstance(value, str):
        if "${" in value:
            _expand_text(value, field, env)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _located(item, env, (*field, i))
    elif isinstance(value, dict):
        for k, v in value.items():
            _located(v, env, (*field, str(k)))


_intern = sys.intern
SHARED_CHARS = 40  # strings up to this long are interned
