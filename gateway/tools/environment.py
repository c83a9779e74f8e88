"""`${VAR}` and `${VAR:-default}` in manifest string values, expanded from the environment
(`$${` keeps a literal `${`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from gateway.tools.problems import FieldPath, ManifestProblem

_ENV_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_text(text: str, field: FieldPath, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = env.get(name, "")
        if value:
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
    if isinstance(value, str):
        if "${" in value:
            return _expand_text(value, field, env)
        return sys.intern(value) if len(value) <= SHARED_CHARS else value
    if isinstance(value, list):
        return [expand_env(item, env, (*field, i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {
            (sys.intern(k) if type(k) is str else k): expand_env(v, env, (*field, str(k)))
            if isinstance(v, (str, list, dict))
            else v
            for k, v in value.items()
        }
    return value


SHARED_CHARS = 40  # strings up to this long are interned
