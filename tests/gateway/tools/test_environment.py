"""`${VAR}` expansion in manifests: the copy, and where a problem is."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.tools.environment import SHARED_CHARS, expand_env
from gateway.tools.problems import FieldPath, ManifestProblem

ENV = {"HOST": "example.test", "EMPTY": "", "PORT": "8080"}
_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def reference(value: Any, env: dict[str, str], field: FieldPath = ()) -> Any:
    """The definition, written plainly: every string value expanded, keys left as they are,
    the first unset variable without a default raised with its field."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            escaped, name, default = m.groups()
            if escaped:
                return m.group(0)[1:]
            if env.get(name):
                return env[name]
            if default is not None:
                return default
            if name in env:
                return ""
            raise ManifestProblem(field, f"environment variable {name} is not set")

        return _REF.sub(one, value)
    if isinstance(value, list):
        return [reference(v, env, (*field, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: reference(v, env, (*field, str(k))) for k, v in value.items()}
    return value


texts = st.one_of(
    st.sampled_from(
        [
            "${HOST}",
            "http://${HOST}:${PORT}/x",
            "${EMPTY}",
            "${EMPTY:-fallback}",
            "${MISSING:-dflt}",
            "$${HOST}",
            "${MISSING}",
            "$$5",
            "string",
            "x" * (SHARED_CHARS + 1),
        ]
    ),
    st.text(max_size=12),
)
scalars = st.one_of(texts, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=4),
    ),
    max_leaves=20,
)


@given(values)
def test_expansion_is_the_definition(value: Any) -> None:
    try:
        want = reference(value, ENV)
    except ManifestProblem as exc:
        with pytest.raises(ManifestProblem) as got:
            expand_env(value, ENV)
        assert (got.value.field, str(got.value).split(" (")[0]) == (exc.field, str(exc))
    else:
        assert expand_env(value, ENV) == want


def test_the_copy_shares_keys_and_short_strings() -> None:
    a = expand_env({"".join(["ty", "pe"]): "".join(["str", "ing"]), "d": "x" * 99}, {})
    b = expand_env({"type": "string", "d": "".join(["x"] * 99)}, {})
    key_a, key_b = next(iter(a)), next(iter(b))
    assert key_a is key_b is sys.intern("type")
    assert a["type"] is b["type"] and a["d"] is not b["d"]


def test_a_problem_names_its_field_in_lists_and_mappings() -> None:
    manifest = {"executor": {"headers": [{"A": "ok"}, {"B": "Bearer ${NO_TOKEN}"}]}}
    with pytest.raises(ManifestProblem) as got:
        expand_env(manifest, {}, ("tools", 0))
    assert got.value.field == ("tools", 0, "executor", "headers", 1, "B")
    assert "NO_TOKEN is not set" in str(got.value)


def test_a_variable_that_is_not_utf8_is_a_problem_naming_it() -> None:
    """The environment holds bytes: one that is not UTF-8 reaches Python with lone surrogates
    (os.environ's surrogateescape), which no manifest text, canonical JSON or hash can hold.
    It is refused naming the variable and the field, not written into the tool."""
    manifest = {"executor": {"url": "http://${HOST}/x", "headers": {"A": "${RAW}"}}}
    with pytest.raises(ManifestProblem) as got:
        expand_env(manifest, {**ENV, "RAW": "caf\udce9"})
    assert got.value.field == ("executor", "headers", "A")
    assert "RAW" in str(got.value) and "UTF-8" in str(got.value)
    assert expand_env(manifest, {**ENV, "RAW": "café"})["executor"]["headers"]["A"] == "café"
