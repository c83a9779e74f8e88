"""`--builtin-errors strict|undefined`: a builtin error fails the evaluation, or leaves its
expression undefined as OPA does by default, on both engines. The answers were recorded from
OPA 1.9 (`opa_answers/builtin_errors.json`); with a live OPA the recording is checked again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.cli.policy import run_policy_command
from gateway.policy.bundle import PolicyConfigError, load_bundle
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.opa.client import OpaConnection, OpaSettings
from gateway.policy.opa.engine import OpaEngine
from gateway.policy.options import RegoOptions
from gateway.policy.rego_tests import run_tests
from gateway.policy.sources import engine_sources
from tests.gateway.policy.inputs import WriteBundle
from tests.support.opa import FakeOpa
from tests.support.opa_answers import Case, cases, embedded_answer, live_answer, same_outcome

CASES = cases("builtin_errors.json")
UNDEFINED = RegoOptions(builtin_errors="undefined")
Capture = pytest.CaptureFixture[str]

DENY_ON_COUNT = """package callgate

deny contains "too many" if to_number(input.count) > 3

decision := {"allow": count(deny) == 0, "reasons": [r | some r in deny]}
"""


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_embedded_engine_answers_as_opa(case: Case, tmp_path: Path) -> None:
    got = embedded_answer(case, tmp_path)
    assert same_outcome(case.expected, got), (case.modules, got)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_recorded_answer_is_opas(case: Case) -> None:
    answer = live_answer(case)
    if answer is None:
        pytest.skip("no OPA: put `opa` on PATH or set CALLGATE_TEST_OPA_URL")
    assert answer == case.expected


def test_a_decision_is_denied_or_decided_on_as_the_mode_says(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": DENY_ON_COUNT})
    strict = EmbeddedEngine(load_bundle(root)).decide({"count": "lots"})
    assert strict.is_policy_error and "to_number failed at" in strict.reasons[0]
    undefined = EmbeddedEngine(load_bundle(root, UNDEFINED))
    assert undefined.decide({"count": "lots"}).verdict.value == "ALLOW"
    assert undefined.decide({"count": "9"}).reasons == ("too many",)


def test_the_static_checks_read_the_calls_as_written(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": 'package callgate\n\nx := concat(", ", 42)\n'})
    with pytest.raises(PolicyConfigError, match="rego_type_error: concat: invalid argument 2"):
        EmbeddedEngine(load_bundle(root, UNDEFINED))


def test_guarded_sources_keep_every_line(write_bundle: WriteBundle) -> None:
    text = (
        'package p\n\nx := count(split(\n  input.s,\n  ","))\n\n'
        'y if { split(input.s, ",",\n  parts); parts[0] == "a" }\n\nz := (1 + 2) * 3\n'
    )
    bundle = load_bundle(write_bundle({"p.rego": text}), UNDEFINED)
    [(_, guarded)] = engine_sources(bundle).texts
    assert guarded.count("\n") == text.count("\n")
    assert guarded.splitlines()[2].startswith("x := data.__callgate_undefined.g_count(")
    assert "parts = __callgate_guard.split(input.s," in guarded
    assert engine_sources(bundle, guard=False).texts == ((bundle.source_name("p.rego"), text),)


def test_a_builtin_replaced_with_with_keeps_its_errors(write_bundle: WriteBundle) -> None:
    """The replacement applies to the name as written, so such a builtin is not guarded: its
    errors fail the evaluation (never a silently different answer)."""
    root = write_bundle(
        {
            "p.rego": "package p\n\nn := to_number(input.n)\n",
            "p_test.rego": "package p\n\ntest_mocked if n == 1 with to_number as 1 with "
            'input as {"n": "x"}\n\ntest_bad if not n with '
            'input as {"n": "x"}\n',
        }
    )
    results = {r.case.name: r for r in run_tests(load_bundle(root, UNDEFINED)).results}
    assert results["test_mocked"].passed
    assert results["test_bad"].reason.startswith("error: to_number failed at")


def test_tests_run_in_the_mode_asked_for(
    write_bundle: WriteBundle, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_bundle(
        {
            "p.rego": DENY_ON_COUNT,
            "p_test.rego": "package callgate\n\ntest_lots_is_allowed if "
            'decision.allow with input as {"count": "lots"}\n',
        }
    )
    assert run_policy_command(["test", str(root)]) == 1
    assert "error: to_number failed at" in capsys.readouterr().out
    assert run_policy_command(["test", str(root), "--builtin-errors", "undefined"]) == 0
    monkeypatch.setenv("CALLGATE_BUILTIN_ERRORS", "undefined")
    assert run_policy_command(["coverage", str(root)]) == 0
    (root / "in.json").write_text('{"count": "lots"}')
    assert run_policy_command(["eval", str(root), "--input", str(root / "in.json")]) == 0
    assert "verdict: ALLOW" in capsys.readouterr().out
    monkeypatch.setenv("CALLGATE_BUILTIN_ERRORS", "strict")
    assert (
        run_policy_command(
            ["eval", str(root), "--input", str(root / "in.json"), "--format", "json"]
        )
        == 1
    )
    assert json.loads(capsys.readouterr().out)["decision"]["policy_error"] is True


def test_opa_is_asked_for_strict_builtin_errors_only_in_strict_mode(
    write_bundle: WriteBundle,
) -> None:
    import asyncio

    root = write_bundle({"p.rego": DENY_ON_COUNT})
    with FakeOpa() as opa:
        for options, expected in ((RegoOptions(), True), (UNDEFINED, False)):

            async def ask(options: RegoOptions = options) -> None:
                engine = OpaEngine(
                    OpaConnection(OpaSettings(opa.url, timeout_s=5)),
                    "data.callgate",
                    mode="push",
                    options=options,
                )
                await engine.install_bundle(
                    engine.prepare(root, "data.callgate", require_tests=False)
                )
                await engine.decide({"count": "1"})
                await engine.close()

            opa.requests.clear()
            asyncio.run(ask())
            [query] = [path for method, path, _ in opa.requests if method == "POST"]
            assert ("strict-builtin-errors=true" in query) is expected


def test_undefined_tests_agree_with_opa(write_bundle: WriteBundle, capsys: Capture) -> None:
    from tests.support.opa import live_opa_url

    url = live_opa_url()
    if url is None:
        pytest.skip("no OPA: put `opa` on PATH or set CALLGATE_TEST_OPA_URL")
    root = write_bundle(
        {
            "p.rego": DENY_ON_COUNT,
            "p_test.rego": "package callgate\n\ntest_lots if decision.allow with "
            'input as {"count": "lots"}\n\ntest_nine if not '
            'decision.allow with input as {"count": "9"}\n',
        }
    )
    for mode, code in (("undefined", 0), ("strict", 1)):
        assert (
            run_policy_command(
                ["test", str(root), "--engine", "both", "--opa-url", url, "--builtin-errors", mode]
            )
            == code
        )
        assert "engines agree" in capsys.readouterr().out


def test_a_guarded_builtin_that_reads_the_clock_keeps_decisions_from_being_remembered(
    write_bundle: WriteBundle,
) -> None:
    from gateway.policy.embedded import build_regorus_engine
    from gateway.policy.reads import InputView

    root = write_bundle(
        {"p.rego": 'package callgate\n\nx := io.jwt.decode_verify(input.t, {"secret": "s"})\n'}
    )
    engine = build_regorus_engine(load_bundle(root, UNDEFINED))
    assert "__callgate_undefined.g_io__jwt__decode_verify(" in engine.get_ast_as_json()
    assert InputView.of(engine).pure is False


def test_an_error_left_strict_names_its_builtin_on_a_guarded_line(
    write_bundle: WriteBundle,
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndecision := {"allow": count([1]) == '
            "rand.intn(input.n, 10)}\n"
        }
    )
    decision = EmbeddedEngine(load_bundle(root, UNDEFINED)).decide({"n": 1})
    assert decision.is_policy_error
    assert "rand.intn failed at " in decision.reasons[0], decision.reasons


def test_a_module_whose_calls_cannot_be_guarded_is_refused_saying_so(
    write_bundle: WriteBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.policy import undefined

    monkeypatch.setattr(undefined.Rewrite, "text", lambda self: "package callgate\n\nx := (\n")
    root = write_bundle({"p.rego": 'package callgate\n\nn := to_number("1")\n'})
    with pytest.raises(PolicyConfigError) as caught:
        EmbeddedEngine(load_bundle(root, UNDEFINED))
    message = caught.value.message
    del caught  # no cycle keeping the engine's frames
    assert "p.rego:4:" in message and "load it with --builtin-errors strict" in message
