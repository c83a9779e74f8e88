"""Policy data files are read by the one strict JSON reader, and YAML aliases are bounded."""

from __future__ import annotations

import pytest

from gateway.policy import load_bundle
from gateway.policy.bundle import PolicyConfigError
from tests.gateway.policy.inputs import WriteBundle

POLICY = 'package callgate\n\ndecision := {"allow": true}\n'


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"a": 1, "a": 2}', "duplicate"),
        ('{"a": "\\ud800"}', "surrogate"),
        ('{"a": 1e400}', "range"),
        ('{"a": ' + "[" * 2000 + "]" * 2000 + "}", "deeper"),
    ],
)
def test_json_data_breaking_a_rule_is_refused_naming_the_file(
    write_bundle: WriteBundle, text: str, why: str
) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": text})
    with pytest.raises(PolicyConfigError) as info:
        load_bundle(root)
    assert "data.json" in str(info.value) and why in str(info.value)


def test_a_yaml_alias_bomb_in_data_is_refused(write_bundle: WriteBundle) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    root = write_bundle({"p.rego": POLICY, "data.yaml": "\n".join(lines) + "\n"})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml: .*alias"):
        load_bundle(root)


def test_a_yaml_value_that_contains_itself_is_refused(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.yaml": "a: &a [*a]\n"})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml: .*alias"):
        load_bundle(root)


def test_a_lone_surrogate_in_yaml_data_is_refused(write_bundle: WriteBundle) -> None:
    """`\\ud800` in a double-quoted YAML string is half a UTF-16 pair: the engine and every
    hash of the data would meet text that is not Unicode; refused at load, naming the line."""
    root = write_bundle({"p.rego": POLICY, "data.yaml": 'a: 1\nb: "x \\ud800"\n'})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml:2: .*surrogate"):
        load_bundle(root)


def test_an_integer_too_long_to_read_in_yaml_data_is_refused(write_bundle: WriteBundle) -> None:
    """Python reads at most 4,300 digits of an integer and raises ValueError beyond: it was
    an unexplained error out of the load; now the file's problem, naming the line."""
    root = write_bundle({"p.rego": POLICY, "data.yaml": "a: 1\nb: " + "7" * 5000 + "\n"})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml:2: .*5000 digits"):
        load_bundle(root)
