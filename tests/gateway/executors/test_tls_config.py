"""A tool's `tls` section at load (docs/tools.md, "TLS"): every file that cannot be used is
refused before the sidecar serves, in one line naming the manifest, the field and the
problem; what can be used loads once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from gateway.errors import ConfigError
from gateway.executors.config import TlsConfig
from gateway.executors.http import HttpClients
from gateway.tools import Registry
from tests.support.paths import AUTH, POLICIES, ROOT
from tests.support.pki import CertificateAuthority

URL = "https://127.0.0.1:9/t"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tls-files")
    ca = CertificateAuthority("tools CA")
    agent_cert, agent_key = ca.issue("agent").write(d, "agent")
    _, other_key = ca.issue("other").write(d, "other")
    for name, text in {"garbage.pem": "not PEM at all\n", "empty.pem": ""}.items():
        (d / name).write_text(text)
    key = serialization.load_pem_private_key(agent_key.read_bytes(), password=None)
    (d / "locked.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return {
        "dir": d,
        "ca": ca.write(d, "ca"),
        "cert": agent_cert,
        "key": agent_key,
        "other_key": other_key,
        "garbage": d / "garbage.pem",
        "empty": d / "empty.pem",
        "locked": d / "locked.key",
        "missing": d / "missing.pem",
    }


def tool(tls: dict[str, Any] | None = None, url: str = URL, **extra: Any) -> dict[str, Any]:
    executor: dict[str, Any] = {"type": "http", "url": url}
    if tls is not None:
        executor["tls"] = tls
    return {
        "name": "t",
        "version": "1",
        "effect": "write",
        "input_schema": {"type": "object"},
        "executor": executor,
        **extra,
    }


def load_problem(tmp_path: Path, content: dict[str, Any]) -> str:
    path = tmp_path / "tool.yaml"
    path.write_text(yaml.safe_dump(content), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Registry.load(tmp_path, env={})
    [line] = info.value.message.splitlines()
    assert line.startswith(f"{path}: "), line
    return line.removeprefix(f"{path}: ")


def pair(files: dict[str, Path], cert: str = "cert", key: str = "key") -> dict[str, str]:
    return {"cert_file": str(files[cert]), "key_file": str(files[key])}


CASES: list[tuple[str, Any, str]] = [
    (
        "missing_ca",
        lambda f: {"ca_file": str(f["missing"])},
        "executor.tls.ca_file: {missing}: cannot read it: No such file or directory",
    ),
    (
        "ca_is_a_folder",
        lambda f: {"ca_file": str(f["dir"])},
        "executor.tls.ca_file: {dir}: cannot read it: Is a directory",
    ),
    (
        "ca_not_pem",
        lambda f: {"ca_file": str(f["garbage"])},
        "executor.tls.ca_file: {garbage}: holds no PEM certificate",
    ),
    (
        "ca_empty",
        lambda f: {"ca_file": str(f["empty"])},
        "executor.tls.ca_file: {empty}: holds no PEM certificate",
    ),
    (
        "cert_without_key",
        lambda f: {"cert_file": str(f["cert"])},
        "executor.tls.key_file: cert_file needs its key_file",
    ),
    (
        "key_without_cert",
        lambda f: {"key_file": str(f["key"])},
        "executor.tls.cert_file: key_file needs its cert_file",
    ),
    (
        "missing_cert",
        lambda f: pair(f, cert="missing"),
        "executor.tls.cert_file: {missing}: cannot read it: No such file or directory",
    ),
    (
        "cert_not_pem",
        lambda f: pair(f, cert="garbage"),
        "executor.tls.cert_file: {garbage}: holds no PEM certificate",
    ),
    (
        "key_not_pem",
        lambda f: pair(f, key="garbage"),
        "executor.tls.key_file: {garbage}: holds no PEM private key",
    ),
    (
        "key_is_a_certificate",
        lambda f: pair(f, key="cert"),
        "executor.tls.key_file: {cert}: holds no PEM private key",
    ),
    (
        "encrypted_key",
        lambda f: pair(f, key="locked"),
        "executor.tls.key_file: {locked}: the key is encrypted; give an unencrypted PEM key",
    ),
    (
        "mismatched_key",
        lambda f: pair(f, key="other_key"),
        "executor.tls.key_file: {other_key}: is not the key of the certificate in cert_file {cert}",
    ),
    (
        "unknown_field",
        lambda f: {"cafile": str(f["ca"])},
        "executor.tls.cafile: Extra inputs are not permitted",
    ),
    (
        "bad_server_name",
        lambda f: {"server_name": "two words"},
        "executor.tls.server_name: String should match pattern",
    ),
    (
        "empty_path",
        lambda f: {"ca_file": ""},
        "executor.tls.ca_file: String should have at least 1 character",
    ),
]


@pytest.mark.parametrize(("case", "section", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_file_that_cannot_be_used_is_refused_at_load(
    tmp_path: Path, files: dict[str, Path], case: str, section: Any, expected: str
) -> None:
    problem = load_problem(tmp_path, tool(section(files)))
    assert problem.startswith(expected.format(**files)), problem


def test_an_expired_client_certificate_is_refused(tmp_path: Path) -> None:
    ca = CertificateAuthority("CA")
    cert, key = ca.issue("old", expired=True).write(tmp_path, "old")
    problem = load_problem(tmp_path, tool({"cert_file": str(cert), "key_file": str(key)}))
    assert problem.startswith(f"executor.tls.cert_file: {cert}: the certificate expired on ")


def test_a_certificate_not_for_clients_is_refused(tmp_path: Path) -> None:
    ca = CertificateAuthority("CA")
    cert, key = ca.issue("srv", usages=[ExtendedKeyUsageOID.SERVER_AUTH]).write(tmp_path, "s")
    problem = load_problem(tmp_path, tool({"cert_file": str(cert), "key_file": str(key)}))
    assert problem == (
        f"executor.tls.cert_file: {cert}: the certificate is not for client "
        "authentication (its extended key usage lacks clientAuth)"
    )


def test_tls_on_a_plain_http_url_is_refused(tmp_path: Path, files: dict[str, Path]) -> None:
    problem = load_problem(tmp_path, tool({"ca_file": str(files["ca"])}, url="http://h/t"))
    assert problem == "executor.tls: applies to https:// URLs only"


def test_a_look_ups_own_tls_is_checked_too(tmp_path: Path, files: dict[str, Path]) -> None:
    lookup = {
        "type": "http",
        "url": "https://127.0.0.1:9/b/{run_id}",
        "tls": {"ca_file": str(files["missing"])},
    }
    problem = load_problem(tmp_path, tool(reconcile=lookup))
    assert problem == (
        f"reconcile.tls.ca_file: {files['missing']}: cannot read it: No such file or directory"
    )


def test_a_placeholder_in_a_look_ups_host_is_refused(tmp_path: Path) -> None:
    problem = load_problem(
        tmp_path, tool(reconcile={"type": "http", "url": "https://{run_id}.h/b"})
    )
    assert problem == (
        "reconcile.url: placeholders may appear in the path and query only, not in the host or port"
    )


def test_every_tool_with_a_bad_file_is_named(tmp_path: Path, files: dict[str, Path]) -> None:
    bad = {"ca_file": str(files["missing"])}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(tool(bad)))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(tool(bad) | {"name": "b"}))
    with pytest.raises(ConfigError) as info:
        Registry.load(tmp_path, env={})
    assert [line.split(": ")[:2] for line in info.value.message.splitlines()] == [
        [str(tmp_path / "a.yaml"), "executor.tls.ca_file"],
        [str(tmp_path / "b.yaml"), "executor.tls.ca_file"],
    ]


async def test_relative_paths_are_taken_from_the_manifests_folder(
    tmp_path: Path, files: dict[str, Path]
) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    for name in ("ca", "cert", "key"):
        (certs / files[name].name).write_bytes(files[name].read_bytes())
    section = {
        "ca_file": "certs/ca.crt",
        "cert_file": "certs/agent.crt",
        "key_file": "certs/agent.key",
    }
    (tmp_path / "tool.yaml").write_text(yaml.safe_dump(tool(section)))
    registry = Registry.load(tmp_path, env={})  # run from another working directory
    await registry.aclose()
    (certs / "ca.crt").unlink()
    assert load_problem(tmp_path, tool(section)) == (
        f"executor.tls.ca_file: {certs / 'ca.crt'}: cannot read it: No such file or directory"
    )


def test_one_context_per_distinct_setting(files: dict[str, Path]) -> None:
    clients = HttpClients()
    mutual = TlsConfig(ca_file=str(files["ca"]), **pair(files))
    first = clients.route(URL, mutual, Path("/"))
    assert clients.route("https://other.example/x", mutual, Path("/")) is first
    named = clients.route(URL, mutual.model_copy(update={"server_name": "tool.test"}), Path("/"))
    assert named is not first and named.tls is first.tls
    assert clients.route(URL, TlsConfig(), Path("/")) is clients.route(URL, None, Path("/"))


def test_serve_refuses_a_bad_file_in_one_line(tmp_path: Path, files: dict[str, Path]) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "t.yaml").write_text(yaml.safe_dump(tool(pair(files, key="other_key"))))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gateway.cli",
            "serve",
            "--tools",
            str(tools),
            "--policies",
            str(POLICIES),
            "--auth",
            str(AUTH),
            "--db",
            str(tmp_path / "x.db"),
            "--listen",
            "127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (  # after the line about the audit key it made
        f"callgate serve: {tools / 't.yaml'}: executor.tls.key_file: {files['other_key']}: is "
        f"not the key of the certificate in cert_file {files['cert']}"
    )


def test_every_tls_field_is_documented() -> None:
    page = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    missing = [f for f in TlsConfig.model_fields if f"`tls.{f}`" not in page]
    assert not missing, f"docs/tools.md does not describe {missing}"
