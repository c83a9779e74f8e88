"""`callgate policy check|test|eval|coverage` as a user meets them: output and exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli import policy as commands
from gateway.cli.policy import run_policy_command
from tests.gateway.policy.inputs import REPO, WriteBundle, call_input, identity

POLICIES = REPO / "policies"
POLICY = "package callgate\n\ndefault allow := false\n\nallow if input.x == 1\n"
TESTS = """package callgate_test

import data.callgate

test_allows_one if callgate.allow with input as {"x": 1}

test_wrong_expectation if {
  callgate.allow with input as {"x": 2}
}
"""
Capture = pytest.CaptureFixture[str]


def write_input(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(doc))
    return str(path)


OLGA_WRITE = call_input(
    "reserve_seat", "write", {"event_id": "ws-acme-1"}, identity("olga", "acme", "organizer")
)
OLGA_FOREIGN = call_input(
    "get_train_status", "read", {"train_number": "X1"}, identity("olga", "acme", "organizer")
)


# -- check ------------------------------------------------------------------------------------


def test_check_lists_every_problem_with_file_and_line(
    write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\nx := concat(", ", 42)\n\ny := upper(1, 2, 3)\n',
            "q.rego": "package callgate\n\nz if {\n",
        }
    )
    assert run_policy_command(["check", str(root)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert any(
        line.endswith("q.rego:4:1: expecting expression") or "q.rego:" in line for line in err
    )
    assert err[-1] == "1 problem: the policies were not loaded"  # a syntax error stops there

    (root / "q.rego").unlink()
    assert run_policy_command(["check", str(root)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split("/bundle/")[1].split(": rego_type_error")[0] for line in err[:-1]] == [
        "p.rego:3:19",
        "p.rego:5:6",
    ]
    assert err[-1] == "2 problems: the policies were not loaded"


def test_check_a_type_error_fails_instead_of_denying_at_run_time(
    write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle(
        {
            "p.rego": 'package callgate\n\ndecision := {"allow": true, '
            '"reasons": [concat(", ", 42)]}\n'
        }
    )
    assert run_policy_command(["check", str(root)]) == 1
    assert "rego_type_error: concat: invalid argument 2" in capsys.readouterr().err


def test_check_takes_files(write_bundle: WriteBundle, capsys: Capture) -> None:
    root = write_bundle({"a.rego": POLICY, "b.rego": "package other\n\nz := 1\n"})
    assert run_policy_command(["check", str(root / "a.rego"), str(root / "b.rego")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "data.other.z" in out and "data.callgate.allow" in out
    assert run_policy_command(["check", str(root / "missing.rego")]) == 1
    assert "missing.rego: no such file or directory" in capsys.readouterr().err


def test_check_json(write_bundle: WriteBundle, capsys: Capture) -> None:
    root = write_bundle({"p.rego": "package callgate\n\nx := upper(1)\n"})
    assert run_policy_command(["check", str(root), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["problems"][0]["line"] == 3
    assert run_policy_command(["check", str(POLICIES), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["revision"].startswith("sha256:")


# -- test -------------------------------------------------------------------------------------


def test_test_summary_and_failure_details(write_bundle: WriteBundle, capsys: Capture) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    assert run_policy_command(["test", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 passed, 1 failed"
    fail = out.index(next(line for line in out if line.startswith("FAIL ")))
    assert out[fail].startswith("FAIL data.callgate_test.test_wrong_expectation (")
    assert out[fail + 1].endswith('p_test.rego:8: callgate.allow with input as {"x": 2}')
    assert out[fail + 2].strip() == "value: false"
    assert not any(line.startswith("PASS") for line in out)


def test_test_verbose_lists_every_test_with_its_time(
    write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    run_policy_command(["test", str(root), "-v"])
    out = capsys.readouterr().out.splitlines()
    passed = next(line for line in out if line.startswith("PASS"))
    assert passed.startswith("PASS data.callgate_test.test_allows_one (")
    assert passed.endswith("ms")


def test_test_run_regex(write_bundle: WriteBundle, capsys: Capture) -> None:
    root = write_bundle({"p.rego": POLICY, "p_test.rego": TESTS})
    assert run_policy_command(["test", str(root), "--run", "allows_.*"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed"
    assert run_policy_command(["test", str(root), "--run", "("]) == 2
    assert "--run '(' is not a regular expression" in capsys.readouterr().err


def test_test_default_policies_pass(capsys: Capture) -> None:
    assert run_policy_command(["test", str(POLICIES)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"{int(last.split()[0])} passed, 0 failed"


def test_test_without_tests_fails(write_bundle: WriteBundle, capsys: Capture) -> None:
    assert run_policy_command(["test", str(write_bundle({"p.rego": POLICY}))]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == "0 passed, 0 failed"
    assert "no tests found" in captured.err


REPEATED = {
    "p.rego": "package p\n\nx := 1\n",
    "p_test.rego": "package p\n\ntest_x if x == 1\n\ntest_x if x == 2\n",
}


def test_each_definition_of_a_test_is_listed_and_counted(
    write_bundle: WriteBundle, capsys: Capture
) -> None:
    root = write_bundle(REPEATED)
    assert run_policy_command(["test", str(root), "-v"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PASS data.p.test_x (") and out[0].count("p_test.rego:3)") == 1
    assert out[1].startswith("FAIL data.p.test_x#01 (") and "p_test.rego:5)" in out[1]
    assert out[-1] == "1 passed, 1 failed"
    assert run_policy_command(["test", str(root), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(t["name"], t["line"], t["passed"]) for t in doc["tests"]] == [
        ("data.p.test_x", 3, True),
        ("data.p.test_x#01", 5, False),
    ]
    assert (doc["passed"], doc["failed"]) == (1, 1)
    assert run_policy_command(["coverage", str(root), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in doc["tests"]] == ["data.p.test_x", "data.p.test_x#01"]
    assert run_policy_command(["coverage", str(root)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 1 failed"


# -- eval -------------------------------------------------------------------------------------


def test_eval_exits_0_for_any_decision_even_deny(tmp_path: Path, capsys: Capture) -> None:
    for doc, verdict in ((OLGA_WRITE, "APPROVAL_REQUIRED"), (OLGA_FOREIGN, "DENY")):
        assert (
            run_policy_command(["eval", str(POLICIES), "--input", write_input(tmp_path, doc)]) == 0
        )
        assert f"verdict: {verdict}" in capsys.readouterr().out


def test_eval_exits_1_when_undefined_or_failing(
    tmp_path: Path, write_bundle: WriteBundle, capsys: Capture
) -> None:
    path = write_input(tmp_path, OLGA_WRITE)
    assert (
        run_policy_command(["eval", str(POLICIES), "--input", path, "--rule", "no_such_rule"]) == 1
    )
    assert capsys.readouterr().out.splitlines()[0] == "undefined"
    root = write_bundle({"p.rego": 'package callgate\n\ndecision := {"allow": 1 / 0}\n'})
    assert run_policy_command(["eval", str(root), "--input", path]) == 1
    captured = capsys.readouterr()
    assert "div failed at " in captured.err and "divide by zero" in captured.err
    assert "verdict: DENY (policy_error)" in captured.out


def test_eval_json_format(tmp_path: Path, capsys: Capture) -> None:
    path = write_input(tmp_path, OLGA_WRITE)
    assert run_policy_command(["eval", str(POLICIES), "--input", path, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["defined"] is True and doc["value"]["approval_required"] is True
    assert doc["decision"]["verdict"] == "APPROVAL_REQUIRED"
    assert doc["revision"].startswith("sha256:")


def test_eval_input_from_stdin_and_usage_errors(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(OLGA_WRITE)))
    assert run_policy_command(["eval", str(POLICIES), "--input", "-"]) == 0
    capsys.readouterr()
    assert run_policy_command(["eval", str(POLICIES), "--input", str(tmp_path / "no")]) == 2
    assert "cannot read --input" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    assert run_policy_command(["eval", str(POLICIES), "--input", str(bad)]) == 2
    assert "not an object" in capsys.readouterr().err


def test_eval_explain_shows_each_rule_body(tmp_path: Path, capsys: Capture) -> None:
    path = write_input(tmp_path, OLGA_FOREIGN)
    assert run_policy_command(["eval", str(POLICIES), "--input", path, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "\033[" not in out  # not a terminal: no colour
    lines = [line.strip() for line in out.splitlines()]
    deny = [line for line in lines if " data.callgate.deny " in f" {line} "]
    assert any(
        "body succeeded" in line and '"train X1 is outside tenant acme"' in line for line in deny
    ), deny
    assert any("body failed" in line for line in deny)
    decision = [
        line
        for line in lines
        if "policies/callgate.rego:" in line and "data.callgate.decision" in line
    ]
    assert any("default" in line for line in decision)
    assert any(
        "body succeeded" in line and '"allow":false' in line.replace(" ", "") for line in decision
    )


def test_eval_explain_json(tmp_path: Path, capsys: Capture) -> None:
    path = write_input(tmp_path, OLGA_FOREIGN)
    run_policy_command(["eval", str(POLICIES), "--input", path, "--explain", "--format", "json"])
    rules = json.loads(capsys.readouterr().out)["explanation"]["rules"]
    fired = [r for r in rules if r["rule"] == "data.callgate.deny" and r.get("succeeded")]
    assert fired and all(r["file"].endswith("policies/callgate.rego") for r in fired)
    assert fired[0]["values"] == ["train X1 is outside tenant acme"]
    assert all(isinstance(r["line"], int) for r in rules)


def test_colour_only_on_a_terminal(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    run_policy_command(["eval", str(POLICIES), "--input", write_input(tmp_path, OLGA_FOREIGN)])
    assert "\033[31mDENY\033[0m" in terminal.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    terminal.truncate(0)
    run_policy_command(["eval", str(POLICIES), "--input", write_input(tmp_path, OLGA_FOREIGN)])
    assert "\033[" not in terminal.getvalue()


# -- coverage, usage, help --------------------------------------------------------------------


def test_coverage(capsys: Capture) -> None:
    assert run_policy_command(["coverage", str(POLICIES)]) == 0
    out = capsys.readouterr().out
    assert "policies/callgate.rego: " in out
    assert " covered, " in out and " not covered (" in out


def test_usage_errors_exit_2(capsys: Capture) -> None:
    assert run_policy_command(["frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert run_policy_command(["eval", str(POLICIES)]) == 2  # --input is required
    assert "--input" in capsys.readouterr().err
    assert run_policy_command(["eval", str(POLICIES), "--input", "-", "--rule", "a b"]) == 2
    assert "is not a rule name" in capsys.readouterr().err
    assert run_policy_command(["check", str(POLICIES), "--prefix", "callgate"]) == 2
    assert "is not a package path" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("check", ["--prefix", "--format"]),
        ("test", ["--verbose", "--run", "--format"]),
        ("eval", ["--input", "--rule", "--prefix", "--explain", "--format"]),
        ("coverage", ["--verbose", "--format"]),
        (
            "replay",
            [
                "--inputs",
                "--baseline",
                "--allow-changes",
                "--allow-bad-lines",
                "--rego-version",
                "--builtin-errors",
                "--format",
            ],
        ),
    ],
)
def test_help_lists_options(command: str, options: list[str], capsys: Capture) -> None:
    assert run_policy_command([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert all(option in out for option in options)


def test_bad_policies_print_no_traceback(write_bundle: WriteBundle) -> None:
    root = write_bundle({"p.rego": "package callgate\n\nx if {\n"})
    proc = subprocess.run(
        [sys.executable, "-m", "gateway.cli.policy", "check", str(root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "p.rego:4:1" in proc.stderr


def test_a_closed_pipe_ends_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli.policy", "coverage", "-v", str(POLICIES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the command writes
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141  # as the rest of the command line (docs/operations.md)
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_module_docstring_documents_exit_codes() -> None:
    doc = commands.__doc__ or ""
    assert "eval      0 the rule produced a value" in doc
