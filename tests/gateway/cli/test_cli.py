"""The `callgate` command: settings from flags and variables, one-line errors, never a
traceback for user error, quiet on a closed pipe, and help that lists every setting."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cli.main import build_parser, main
from gateway.testing import SidecarProcess
from gateway.version import callgate_version
from tests.support.commands import callgate
from tests.support.paths import AUTH, POLICIES, ROOT

TOOLS = ROOT / "examples" / "travel" / "tools"


def run_main(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str, **env: str
) -> tuple[int, str, str]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse: --help, --version and usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_the_brief_case_a_bad_serve_variable_does_not_stop_policy_test() -> None:
    done = callgate("policy", "test", "policies", env={"CALLGATE_DB_BUSY_TIMEOUT": "abc"})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "passed" in done.stdout


def test_a_bad_variable_names_itself_and_exits_2() -> None:
    done = callgate(
        "serve",
        "--tools",
        str(TOOLS),
        "--policies",
        str(POLICIES),
        env={"CALLGATE_DB_BUSY_TIMEOUT": "abc"},
    )
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "callgate serve: CALLGATE_DB_BUSY_TIMEOUT='abc': expected a number of seconds"
    )


@pytest.mark.parametrize(
    "args,env,expected",
    [
        (["serve", "--db-busy-timeout", "abc"], {}, "argument --db-busy-timeout: 'abc'"),
        (["serve", "--db-busy-timeout", "-1"], {}, "0 or more"),
        (["serve", "--listen", "nowhere"], {}, "argument --listen: 'nowhere': expected HOST:PORT"),
        (["serve", "--tools", "/no/such/dir"], {}, "argument --tools: '/no/such/dir': no such"),
        (["serve", "--engine", "wasm"], {}, "expected one of: embedded, opa, shadow"),
        (["serve", "--opa-policies", "pull"], {}, "expected one of: push, external"),
        (["serve", "--opa-timeout", "soon"], {}, "argument --opa-timeout: 'soon'"),
        (["serve", "--shadow-queue", "0"], {}, "expected a whole number, 1 or more"),
        (["serve"], {}, "--tools is required (or set CALLGATE_TOOLS)"),
        (
            ["serve", "--tools", str(TOOLS)],
            {"CALLGATE_POLICIES": "/nope"},
            "CALLGATE_POLICIES='/nope': no such directory",
        ),
        (["demo"], {"CALLGATE_TLS": "maybe"}, "CALLGATE_TLS='maybe': expected 1/0"),
        (["demo", "--tls-ca", "/no/ca.pem"], {}, "argument --tls-ca: '/no/ca.pem': no such file"),
        (
            ["policy", "status"],
            {"CALLGATE_TARGET": "host-without-port"},
            "CALLGATE_TARGET='host-without-port'",
        ),
        (["frobnicate"], {}, "invalid choice: 'frobnicate'"),
        (["serve", "--no-such-flag"], {}, "unrecognized arguments: --no-such-flag"),
        (["approvals", "approve"], {}, "callgate approvals: approve needs an APPROVAL_ID"),
        (["approvals", "list", "apr_1"], {}, "list takes no APPROVAL_ID"),
        (["approvals", "deny", "apr_1"], {}, "--reason is required"),
        (
            ["approvals", "list"],
            {"CALLGATE_STATUS": "maybe"},
            "CALLGATE_STATUS='maybe': expected all, or some of pending",
        ),
        (["approvals", "list", "--page-size", "0"], {}, "expected a number from 1 to 500"),
        (["approvals", "frobnicate"], {}, "invalid choice: 'frobnicate'"),
        (["serve", "--approval-ttl", "0"], {}, "expected a whole number of seconds, 1 or more"),
        (["audit", "--verdict", "maybe"], {}, "expected some of allow, deny"),
        (["audit", "--since", "yesterday"], {}, "expected an RFC 3339 time"),
        (["audit", "--callgate", "--tenant", "globex"], {}, "--callgate and --tenant name"),
        (["audit", "verify"], {}, "callgate audit verify: --db is required (or set CALLGATE_DB)"),
        (["audit", "prune", "--db", "x.db"], {}, "--before is required"),
        (
            ["audit", "prune", "--db", "postgresql://h/db", "--before", "2026-01-01"],
            {},
            "--audit-key-file is required",
        ),
        (["audit", "check-value", "x"], {}, "--audit-key-file is required"),
        (["audit", "export", "--db", "x.db", "--since", "-3"], {}, "expected a whole number"),
    ],
)
def test_usage_errors_are_one_line_naming_the_setting(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    expected: str,
) -> None:
    code, _, err = run_main(capsys, monkeypatch, *args, **env)
    assert code == 2
    assert expected in one_line(err)


def test_configuration_errors_at_start_up_exit_2_in_one_line(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("not a certificate")
    base = [
        "serve",
        "--tools",
        str(TOOLS),
        "--policies",
        str(POLICIES),
        "--auth",
        str(AUTH),
        "--db",
        str(tmp_path / "x.db"),
        "--listen",
        "127.0.0.1:0",
    ]
    for extra, expected in [
        (["--db", "mysql://db/x"], "expected PATH, sqlite:///PATH"),
        (["--tls-cert", str(cert)], "--tls-cert and --tls-key go together"),
        (["--tls-cert", str(cert), "--tls-key", str(cert)], "not a PEM certificate file"),
        (["--engine", "opa"], "--engine opa needs --opa-url URL"),
        (
            ["--engine", "shadow", "--opa-url", "ftp://opa"],
            "--opa-url 'ftp://opa': expected http://HOST:PORT",
        ),
        (
            ["--opa-url", "http://127.0.0.1:8181"],
            "--opa-url is used only with --engine opa or --engine shadow",
        ),
        (
            ["--engine", "opa", "--opa-url", "http://127.0.0.1:8181", "--reload-requires-tests"],
            "--reload-requires-tests runs the",
        ),
    ]:
        done = callgate(*base, *extra)
        assert done.returncode == 2, done.stderr
        assert expected in one_line(done.stderr)


def test_mtls_in_the_auth_file_needs_a_client_ca(tmp_path: Path) -> None:
    auth = tmp_path / "auth.yaml"
    auth.write_text("mtls:\n  identities: {'spiffe://a/b': {tenant: acme}}\n")
    done = callgate(
        "serve",
        "--tools",
        str(TOOLS),
        "--policies",
        str(POLICIES),
        "--auth",
        str(auth),
        "--db",
        str(tmp_path / "x.db"),
        "--listen",
        "127.0.0.1:0",
    )
    assert done.returncode == 2
    assert "needs --tls-cert, --tls-key and --tls-client-ca" in one_line(done.stderr)


def test_an_auth_file_with_a_repeated_key_stops_start_up_in_one_line(tmp_path: Path) -> None:
    auth = tmp_path / "auth.yaml"
    auth.write_text("tokens:\n  t1: {subject: alice}\n  t1: {subject: root, roles: [admin]}\n")
    done = callgate(
        "serve",
        "--tools",
        str(TOOLS),
        "--policies",
        str(POLICIES),
        "--auth",
        str(auth),
        "--db",
        str(tmp_path / "x.db"),
        "--listen",
        "127.0.0.1:0",
    )
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert str(auth) in line and "duplicate key 't1'" in line, line


def test_version(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run_main(capsys, monkeypatch, "--version")
    assert code == 0 and out.strip() == f"callgate {callgate_version()}"


def subcommands() -> Iterator[str]:
    parser = build_parser()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        yield from action.choices  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "command",
    [c for c in subcommands() if c != "policy"]
    + ["policy status", "audit verify", "audit export", "audit prune", "audit check-value"],
)
def test_every_option_in_help_shows_its_variable_and_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    code, out, _ = run_main(capsys, monkeypatch, *command.split(), "--help")
    assert code == 0
    flags = set(re.findall(r"^\s+(--[a-z-]+)", out, re.MULTILINE)) - {"--help"}
    assert flags, out
    text = " ".join(out.split())
    for flag in flags:
        env = "CALLGATE_" + flag[2:].replace("-", "_").upper()
        assert re.search(rf"\[env {env}(=1)?; (default|required)", text), (flag, out)


def test_policy_help_comes_from_the_policy_commands_and_names_status(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_main(capsys, monkeypatch, "policy", "--help")
    assert code == 0 and "coverage" in out and "callgate policy status" in out


def test_an_unreachable_sidecar_is_one_line_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = run_main(
        capsys, monkeypatch, "policy", "status", "--target", f"127.0.0.1:{port}"
    )
    assert code == 1 and "cannot reach the sidecar at" in one_line(err)


# argparse itself ignores a failed write of --help or --version (and exits 0)
@pytest.mark.parametrize(
    "args,status",
    [
        (["--help"], 0),
        (["--version"], 0),
        (["serve", "--help"], 0),
        (["policy", "test", "policies", "-v"], 141),
        (["policy", "check", "policies"], 141),
    ],
)
def test_a_closed_pipe_ends_quietly(args: list[str], status: int) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte (`callgate ... | head -0`)
    try:
        done = callgate(*args, stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (status, "")


# ---------------------------------------------------------------------------------------------
# who or how: a refused connection or token says which flag, variable or file to look at


def test_no_token_names_the_flag_the_variable_and_the_auth_file(sidecar: SidecarProcess) -> None:
    done = callgate("policy", "status", "--target", sidecar.target, env={"CALLGATE_TOKEN": ""})
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert "--token" in line and "CALLGATE_TOKEN" in line and "--auth file" in line, line
    assert "metadata" not in line


def test_a_wrong_token_names_the_flag_the_variable_and_the_auth_file(
    sidecar: SidecarProcess,
) -> None:
    done = callgate("approvals", "list", "--target", sidecar.target, "--token", "no-such-token")
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(
        "callgate approvals: UNAUTHENTICATED unauthenticated: the sidecar refused the token"
    ), line
    assert "--token" in line and "CALLGATE_TOKEN" in line and "--auth file" in line
    assert "metadata" not in line


def test_an_unreachable_sidecar_names_the_target_flag_and_variable() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for command in (["policy", "status"], ["runs", "list"], ["tools", "list"], ["audit"]):
        done = callgate(*command, "--target", f"127.0.0.1:{port}", "--token", "t")
        assert done.returncode == 1, done.stderr
        line = one_line(done.stderr)
        assert f"127.0.0.1:{port}" in line and "--target" in line, line
        assert "CALLGATE_TARGET" in line and "callgate serve" in line, line
