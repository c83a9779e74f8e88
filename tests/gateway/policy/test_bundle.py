"""load_bundle: sources, OPA-style data merging, revision, and located ConfigErrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.policy import load_bundle
from gateway.policy.bundle import PolicyConfigError
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle

POLICY = "package callgate\n\nallow if input.x == 1\n"


def test_default_bundle_loads() -> None:
    bundle = load_bundle(DEFAULT_POLICIES)
    assert set(bundle.sources) == {"callgate.rego", "detect.rego", "results.rego"}
    assert set(bundle.test_sources) == {
        "callgate_test.rego",
        "detect_test.rego",
        "results_test.rego",
    }
    assert bundle.data["callgate"]["config"]["tenants"]["acme"]["trains"] == [
        "ICE123",
        "ICE456",
        "RE7",
    ]
    assert bundle.packages == ("data.callgate", "data.callgate.detect")
    assert {"decision", "result"} <= {r.name for r in bundle.rules}
    assert bundle.revision.startswith("sha256:") and len(bundle.revision) == 7 + 16


def test_revision_is_stable(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": {"a": 1}})
    assert load_bundle(root).revision == load_bundle(root).revision


def test_revision_changes_with_policy_and_data_not_tests(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": POLICY,
            "data.json": {"a": 1},
            "p_test.rego": "package callgate\n\ntest_a if true\n",
        }
    )
    first = load_bundle(root).revision

    (root / "p_test.rego").write_text("package callgate\n\ntest_b if true\n")
    assert load_bundle(root).revision == first

    (root / "data.json").write_text('{"a": 2}')
    second = load_bundle(root).revision
    assert second != first

    (root / "p.rego").write_text(POLICY + "\ndeny if input.x == 2\n")
    third = load_bundle(root).revision
    assert third not in (first, second)

    (root / "extra.rego").write_text("package other\n\nq := 1\n")
    assert load_bundle(root).revision != third


def test_test_files_are_not_served(write_bundle: WriteBundle) -> None:
    bundle = load_bundle(
        write_bundle({"p.rego": POLICY, "sub/p_test.rego": "package t\n\ntest_a if true\n"})
    )
    assert list(bundle.sources) == ["p.rego"]
    assert list(bundle.test_sources) == ["sub/p_test.rego"]
    assert [n for n, _ in bundle.named_sources()] == [(bundle.root / "p.rego").as_posix()]


def test_data_files_mount_at_their_directory(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": POLICY,
            "data.json": {"callgate": {"config": {"ttl": 5}}},
            "a/b/data.json": {"x": 1},
            "a/b/data.yaml": "y: [1, 2]\nwhen: 2026-01-01\n",
            "a/c/data.yml": "- one\n- two\n",
            ".hidden/data.json": "not even json",
        }
    )
    data = load_bundle(root).data
    assert data == {
        "callgate": {"config": {"ttl": 5}},
        "a": {"b": {"x": 1, "y": [1, 2], "when": "2026-01-01"}, "c": ["one", "two"]},
    }


def test_conflicting_data_keys_rejected(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": {"a": {"b": 1}}, "a/data.json": {"b": 2}})
    with pytest.raises(
        ConfigError,
        match=r"bundle/data\.json: data\.a\.b conflicts with "
        r"a value from .*/a/data\.json",
    ):
        load_bundle(root)


def test_data_shadowing_a_rule_rejected(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": {"callgate": {"allow": True}}})
    with pytest.raises(
        ConfigError,
        match=r"data\.callgate\.allow conflicts with rule "
        r"data\.callgate\.allow defined at .*p\.rego:3",
    ):
        load_bundle(root)


def test_bad_policy_names_file_and_line(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {"good.rego": POLICY, "bad.rego": "package callgate\n\nallow if {\n  input.a ==\n}\n"}
    )
    with pytest.raises(PolicyConfigError) as info:
        load_bundle(root)
    err = info.value
    assert isinstance(err, ConfigError)
    assert err.file.endswith("bundle/bad.rego")
    assert err.line == 5
    assert err.detail == "expecting expression"
    assert str(err).endswith("bad.rego:5:1: expecting expression")
    assert "backtrace" not in str(err).lower()


def test_pre_v1_syntax_is_rejected(write_bundle: WriteBundle) -> None:
    root = write_bundle({"old.rego": "package callgate\n\nallow {\n  true\n}\n"})
    with pytest.raises(PolicyConfigError, match=r"old\.rego:3:7: `if` keyword is required"):
        load_bundle(root)


def test_bad_json_names_the_file(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "sub/data.json": '{"a": 1,\n "b": }'})
    with pytest.raises(PolicyConfigError) as info:
        load_bundle(root)
    assert info.value.file.endswith("sub/data.json")
    assert info.value.line == 2
    assert "sub/data.json:2:7: invalid JSON" in str(info.value)


def test_bad_yaml_names_the_file(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.yaml": "a: [1, 2\nb: 3\n"})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml:\d+: invalid YAML"):
        load_bundle(root)


def test_top_level_data_must_be_an_object(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": "[1, 2]"})
    with pytest.raises(PolicyConfigError, match="top-level data must be an object"):
        load_bundle(root)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_bundle(tmp_path / "nope")


def test_directory_without_policies(write_bundle: WriteBundle) -> None:
    root = write_bundle({"data.json": {}, "only_test.rego": "package t\n\ntest_a if true\n"})
    with pytest.raises(ConfigError, match="no .rego policy files"):
        load_bundle(root)


def test_non_finite_numbers_rejected(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.json": '{"a": NaN}'})
    with pytest.raises(PolicyConfigError, match=r"data\.json: invalid JSON: NaN"):
        load_bundle(root)


def test_a_data_key_written_twice_is_refused_naming_the_line(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": POLICY, "data.yaml": "limits:\n  max: 1\n  max: 1000\n"})
    with pytest.raises(PolicyConfigError, match=r"data\.yaml:3: .*duplicate key 'max'") as info:
        load_bundle(root)
    assert info.value.line == 3
