"""Rego OPA 1.9 loads and the embedded engine did not: functions without a body, rules called
with `()`, Rego v0 (`--rego-version v0`). Each case's answer was recorded from OPA 1.9
(`opa_answers/compat.json`); with a live OPA the recording is checked again."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.cli.policy import run_policy_command
from gateway.policy.bundle import PolicyConfigError, load_bundle
from gateway.policy.compat import complete_bodyless_functions
from gateway.policy.embedded import EmbeddedEngine, analyze
from gateway.policy.options import SETTINGS, RegoOptions
from gateway.policy.rego import rewrite_source
from gateway.policy.rego_tests import run_tests
from tests.gateway.policy.inputs import WriteBundle
from tests.support.opa_answers import Case, cases, embedded_answer, live_answer, same_outcome

CASES = cases("compat.json")
V0 = RegoOptions(rego_version="v0")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_embedded_engine_answers_as_opa(case: Case, tmp_path: Path) -> None:
    got = embedded_answer(case, tmp_path)
    expected = case.extra.get("callgate", case.expected)  # a documented difference
    assert same_outcome(expected, got), (case.modules, got)
    if "callgate_error" in case.extra:
        assert case.extra["callgate_error"] in got["error"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_recorded_answer_is_opas(case: Case) -> None:
    answer = live_answer(case)
    if answer is None:
        pytest.skip("no OPA: put `opa` on PATH or set CALLGATE_TEST_OPA_URL")
    assert answer == case.expected


def test_a_function_without_a_body_keeps_every_line(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\nok("a", _)\nok(b,\n   c)\n\n'
            'decision := {"allow": ok("a", 1), "reasons": '
            '[to_number("x")]}\n'
        }
    )
    engine = EmbeddedEngine(load_bundle(root))
    decision = engine.decide({})
    assert decision.is_policy_error
    assert "p.rego:7:" in decision.reasons[0] and "to_number" in decision.reasons[0]


def test_several_bodies_split_keep_every_line_and_report_it(write_bundle: WriteBundle) -> None:
    source = (
        'package callgate\n\ndeny[msg] {\n  input.a\n  msg := "a"\n} {\n  input.b\n'
        '  msg := sprintf("%s", [to_number(input.b)])\n}\n\n'
        'decision := {"allow": count(deny) == 0, "reasons": [r | deny[r]]}\n'
    )
    written = rewrite_source("p.rego", source, rego_v0=True)
    pairs = list(zip(source.split("\n"), written.split("\n"), strict=True))
    assert [(n, old, new) for n, (old, new) in enumerate(pairs, 1) if old != new] == [
        (6, "} {", "} deny[msg] {")
    ], written
    engine = EmbeddedEngine(load_bundle(write_bundle({"p.rego": source}), V0))
    decision = engine.decide({"b": "x"})
    assert decision.is_policy_error and "p.rego:8:" in decision.reasons[0]
    assert engine.decide({"a": True}).reasons == ("a",)


def test_completion_stops_at_an_error_that_is_not_a_missing_body() -> None:
    seen: list[str] = []

    def parse(text: str) -> None:
        seen.append(text)
        if "f(x) := true" not in text:
            raise RuntimeError("--> p.rego:2:1\nerror: rule must have a body or assignment")
        raise RuntimeError("--> p.rego:3:5\nerror: expecting expression")

    assert (
        complete_bodyless_functions("package p\nf(x)\nx := {\n", parse)
        == "package p\nf(x) := true\nx := {\n"
    )
    assert len(seen) == 2
    assert complete_bodyless_functions("package p\nx\n", lambda _: parse("")) == "package p\nx\n"


def test_a_bare_name_is_not_taken_for_a_function(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": "package callgate\n\nallow\n"})
    with pytest.raises(PolicyConfigError) as caught:
        analyze(load_bundle(root))
    assert "p.rego:3:1" in caught.value.message


def test_tests_and_explanations_read_v0(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": "package callgate\n\ndefault allow = false\n\nallow { input.n == 1 }\n",
            "p_test.rego": 'package callgate\n\ntest_one { allow with input as {"n": 1} }\n\n'
            'test_two { x := 2\n  allow with input as {"n": x} }\n',
        }
    )
    with pytest.raises(PolicyConfigError, match="`if` keyword is required"):
        load_bundle(root)
    report = run_tests(load_bundle(root, V0))
    assert report.summary() == "1 passed, 1 failed"
    failed = report.results[1].failed
    assert failed is not None and failed.line == 6  # found by a probe written in v0


def test_every_policy_command_takes_the_rego_version(
    write_bundle: WriteBundle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndecision = {"allow": true} { true }\n',
            "p_test.rego": "package callgate\n\ntest_allow { decision.allow }\n",
        }
    )
    (root / "in.json").write_text("{}")
    assert run_policy_command(["check", str(root)]) == 1
    capsys.readouterr()
    assert run_policy_command(["check", str(root), "--rego-version", "v0"]) == 0
    assert (
        run_policy_command(
            ["eval", str(root), "--input", str(root / "in.json"), "--rego-version", "v0"]
        )
        == 0
    )
    assert run_policy_command(["coverage", str(root), "--rego-version", "v0"]) == 0
    monkeypatch.setenv("CALLGATE_REGO_VERSION", "v0")
    assert run_policy_command(["test", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"
    monkeypatch.setenv("CALLGATE_REGO_VERSION", "v2")
    assert run_policy_command(["test", str(root)]) == 2
    assert "CALLGATE_REGO_VERSION='v2': expected one of: v1, v0" in capsys.readouterr().err


def test_serve_and_the_policy_commands_take_the_same_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gateway.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    serve_help = " ".join(capsys.readouterr().out.split())
    assert run_policy_command(["test", "--help"]) == 0
    policy_help = " ".join(capsys.readouterr().out.split())
    for setting in SETTINGS:
        for text in (serve_help, policy_help):
            assert f"{setting.flag} {setting.metavar}" in text
            assert f"env {setting.env}; default {setting.default}" in text
