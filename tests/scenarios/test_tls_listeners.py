"""TLS and mutual TLS listeners, with certificates made at test time, over real gRPC.

Client certificates identify callers (a SPIFFE ID, mapped to tenant and roles by the auth
file); a certificate from another CA never completes the handshake; certificate files are
picked up again when they change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import RequestError, error_code, tool_call
from gateway.testing import ServeTLS, SidecarProcess
from gateway.tls import ClientTLS
from tests.support.paths import POLICIES, sidecar_env
from tests.support.pki import CertificateAuthority
from tests.support.scenarios import TRAIN

AGENT = "spiffe://acme.test/ns/travel/sa/agent-a"
STRANGER = "spiffe://acme.test/ns/travel/sa/stranger"


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca: CertificateAuthority
    other: CertificateAuthority
    ca_file: Path
    other_file: Path
    server: ServeTLS

    def client(self, name: str, *, uri: str, ca: CertificateAuthority | None = None) -> ClientTLS:
        issued = (ca or self.ca).issue(name, uris=[uri])
        cert, key = issued.write(self.dir, name)
        return ClientTLS(ca=self.ca_file, cert=cert, key=key)


def make_pki(directory: Path, *, mutual: bool) -> Pki:
    ca, other = CertificateAuthority("acme CA"), CertificateAuthority("other CA")
    cert, key = ca.issue("sidecar", dns=["localhost"], ips=["127.0.0.1"]).write(directory, "server")
    ca_file = ca.write(directory, "ca")
    return Pki(
        directory,
        ca,
        other,
        ca_file,
        other.write(directory, "other-ca"),
        ServeTLS(cert, key, ca_file if mutual else None),
    )


def write_auth(directory: Path, **sections: object) -> Path:
    path = directory / "auth.yaml"
    path.write_text(yaml.safe_dump(sections))
    return path


@pytest.fixture(scope="module")
def mtls(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
) -> Iterator[tuple[SidecarProcess, Pki]]:
    base = tmp_path_factory.mktemp("mtls")
    pki = make_pki(base, mutual=True)
    auth = write_auth(
        base,
        tokens={"ops-token": {"subject": "oscar", "tenant": "acme", "roles": ["operator"]}},
        mtls={
            "subject_from": "san_uri",
            "identities": {AGENT: {"tenant": "acme", "roles": ["traveler"]}},
        },
    )
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=base / "cg.db",
        auth=auth,
        tls=pki.server,
        env=sidecar_env(travel, effects_db),
    ) as proc:
        yield proc, pki


def test_a_client_certificate_identifies_the_caller(
    mtls: tuple[SidecarProcess, Pki], run_id: str
) -> None:
    sidecar, pki = mtls
    with sidecar.client(tls=pki.client("agent-a", uri=AGENT), timeout_s=30) as agent:
        run = agent.start_run(run_id=run_id)
        assert (run.subject, run.tenant) == (AGENT, "acme")
        out = agent.submit_calls(run_id, "t1", tool_call("c1", "get_train_status", TRAIN))
        assert out.results[0].status == pb.CALL_STATUS_SUCCEEDED  # traveler of tenant acme
    # a bearer token on a mutual-TLS connection names the caller instead
    with sidecar.client("ops-token", tls=pki.client("agent-a2", uri=AGENT)) as ops:
        assert ops.start_run(run_id=run_id + "-ops").subject == "oscar"


def test_the_command_line_connects_with_a_client_certificate(
    mtls: tuple[SidecarProcess, Pki],
) -> None:
    sidecar, pki = mtls
    agent = pki.client("agent-cli", uri=AGENT)
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "policy", "status", "--target", sidecar.target],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "CALLGATE_TLS_CA": str(pki.ca_file),
            "CALLGATE_TLS_CLIENT_CERT": str(agent.cert),
            "CALLGATE_TLS_CLIENT_KEY": str(agent.key),
        },
    )
    assert done.returncode == 0, done.stderr
    assert "engine:           embedded" in done.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "policy", "status", "--target", sidecar.target],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 1 and "cannot reach the sidecar at" in plain.stderr
    assert "--tls" in plain.stderr  # a plaintext client is told of the TLS options
    assert "Traceback" not in plain.stderr


def test_a_certificate_of_the_ca_naming_no_listed_identity_is_unauthenticated(
    mtls: tuple[SidecarProcess, Pki], run_id: str
) -> None:
    sidecar, pki = mtls
    with sidecar.client(tls=pki.client("stranger", uri=STRANGER)) as stranger:
        with pytest.raises(RequestError) as err:
            stranger.start_run(run_id=run_id)
    assert err.value.grpc_status == "UNAUTHENTICATED"
    assert error_code(err.value) == "unauthenticated"
    assert "not listed under mtls.identities" in (err.value.message or "")


def test_a_certificate_from_another_ca_never_completes_the_handshake(
    mtls: tuple[SidecarProcess, Pki], run_id: str
) -> None:
    sidecar, pki = mtls
    forged = pki.client("forged", uri=AGENT, ca=pki.other)  # the right name, the wrong CA
    for tls in (forged, ClientTLS(ca=pki.ca_file)):  # and no certificate at all
        with sidecar.client(tls=tls, timeout_s=10) as client:
            with pytest.raises(RequestError) as err:
                client.start_run(run_id=run_id)
        assert err.value.grpc_status == "UNAVAILABLE"
    assert "CERTIFICATE_VERIFY_FAILED" in sidecar.output  # the sidecar's log says why


def test_a_plaintext_client_or_one_trusting_another_ca_cannot_connect(
    mtls: tuple[SidecarProcess, Pki], run_id: str
) -> None:
    sidecar, pki = mtls
    agent = pki.client("agent-b", uri=AGENT)
    wrong_trust = ClientTLS(ca=pki.other_file, cert=agent.cert, key=agent.key)
    for client in (sidecar.client(timeout_s=10), sidecar.client(tls=wrong_trust, timeout_s=10)):
        with client, pytest.raises(RequestError) as err:
            client.start_run(run_id=run_id)
        assert err.value.grpc_status == "UNAVAILABLE"


def test_certificates_are_reloaded_when_their_files_change(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    pki = make_pki(tmp_path, mutual=False)
    auth = write_auth(tmp_path, tokens={"t": {"subject": "tina", "roles": ["tester"]}})
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=tmp_path / "cg.db",
        auth=auth,
        tls=pki.server,
        env=sidecar_env(travel, effects_db),
    ) as sidecar:
        trusts_old, trusts_new = ClientTLS(ca=pki.ca_file), ClientTLS(ca=pki.other_file)
        assert _connects(sidecar, trusts_old) and not _connects(sidecar, trusts_new)

        # a renewal that does not load (its key belongs to another certificate) is refused
        renewal = pki.other.issue("sidecar", dns=["localhost"], ips=["127.0.0.1"])
        _replace(pki.server.cert, renewal.cert_pem)
        assert _connects(sidecar, trusts_old) and not _connects(sidecar, trusts_new)
        assert "keeping the previous TLS certificates" in sidecar.output

        # the key follows: from the next connection on the renewed certificate is served
        _replace(pki.server.key, renewal.key_pem)
        assert _connects(sidecar, trusts_new) and not _connects(sidecar, trusts_old)
        assert "TLS certificates reloaded" in sidecar.output


def test_tls_without_client_certificates_identifies_by_token(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    pki = make_pki(tmp_path, mutual=False)
    auth = write_auth(tmp_path, tokens={"t": {"subject": "tina", "roles": ["tester"]}})
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=tmp_path / "cg.db",
        auth=auth,
        tls=pki.server,
        env=sidecar_env(travel, effects_db),
    ) as sidecar:
        with sidecar.client("t", tls=ClientTLS(ca=pki.ca_file)) as client:
            assert client.get_status().engine == "embedded"
        with sidecar.client("t", tls=ClientTLS(ca=pki.ca_file)) as client:
            assert client.start_run(run_id="tls-run").subject == "tina"


def _connects(sidecar: SidecarProcess, tls: ClientTLS) -> bool:
    with sidecar.client("t", tls=tls, timeout_s=10) as client:  # a new channel: a handshake
        try:
            client.get_status()
        except RequestError as err:
            assert err.grpc_status == "UNAVAILABLE", err
            return False
    return True


def _replace(path: Path, content: bytes) -> None:
    """Write next to the file and move into place, the way certificate renewals do."""
    staged = path.with_suffix(".new")
    staged.write_bytes(content)
    os.replace(staged, path)
