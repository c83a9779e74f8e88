"""`callgate policy test --engine opa|both`: the same Rego tests on OPA, agreeing with the
embedded engine (the stand-in OPA in every run; a live OPA when one is present)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gateway.cli.policy import run_policy_command
from tests.gateway.policy.inputs import DEFAULT_POLICIES, WriteBundle
from tests.support.opa import FakeOpa, live_opa_url

Capture = pytest.CaptureFixture[str]


@pytest.fixture(params=["opa-stand-in", "opa-live"])
def opa_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "opa-live":
        url = live_opa_url()
        if url is None:
            pytest.skip("no OPA: put `opa` on PATH or set CALLGATE_TEST_OPA_URL")
        yield url
        return
    with FakeOpa() as opa:
        yield opa.url


def test_the_default_tests_pass_on_both_engines_and_agree(opa_url: str, capsys: Capture) -> None:
    code = run_policy_command(
        ["test", str(DEFAULT_POLICIES), "--engine", "both", "--opa-url", opa_url]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "engines agree: embedded and OPA give the same outcome for all" in out
    assert out.splitlines()[-1].endswith("0 failed")


def test_a_failing_test_fails_on_opa_too(
    opa_url: str, write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndecision := {"allow": input.ok == true}\n',
            "p_test.rego": "package callgate_test\n\nimport data.callgate\n\n"
            'test_allows if callgate.decision.allow with input as {"ok": true}\n\n'
            'test_wrong if callgate.decision.allow with input as {"ok": false}\n\n'
            "test_div if 1 / 0 == 1\n",
        }
    )
    code = run_policy_command(
        ["test", str(root), "--engine", "opa", "--opa-url", opa_url, "--format", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    outcome = {t["name"].rsplit(".", 1)[1]: t.get("reason", "") for t in doc["tests"]}
    assert outcome["test_allows"] == "" and outcome["test_wrong"] == "undefined"
    assert outcome["test_div"].startswith("error: ")  # strict: a builtin error is an error


def test_each_definition_of_a_test_runs_on_opa_too(
    opa_url: str, write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package p\n\nx := 1\n\ntest_in_policy if x == 1\n\nok("a", _)\n',
            "p_test.rego": "package p\n\ntest_x if x == 1\n\ntest_x if x == 2\n\n"
            'test_x if ok("a", 2)\n',
        }
    )
    code = run_policy_command(
        ["test", str(root), "--engine", "both", "--opa-url", opa_url, "--format", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["differences"] == []
    assert [(t["name"], t["passed"]) for t in doc["tests"]] == [
        ("data.p.test_in_policy", True),
        ("data.p.test_x", True),
        ("data.p.test_x#01", False),
        ("data.p.test_x#02", True),
    ]


def test_engines_that_disagree_fail_naming_the_test(capsys: Capture) -> None:
    with FakeOpa() as opa:
        opa.fail_next(500, {"code": "internal_error", "message": "boom"}, queries_only=True)
        code = run_policy_command(
            ["test", str(DEFAULT_POLICIES), "--engine", "both", "--opa-url", opa.url]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "engines disagree on 1 test(s):" in out
    assert "embedded passed, OPA failed (error: OPA answered 500 (internal_error): boom)" in out


def test_opa_is_required_and_must_answer(capsys: Capture) -> None:
    assert run_policy_command(["test", str(DEFAULT_POLICIES), "--engine", "opa"]) == 2
    assert "needs --opa-url" in capsys.readouterr().err
    with FakeOpa() as opa:
        url = opa.url
    assert (
        run_policy_command(["test", str(DEFAULT_POLICIES), "--engine", "opa", "--opa-url", url])
        == 1
    )
    assert "unreachable" in capsys.readouterr().err
