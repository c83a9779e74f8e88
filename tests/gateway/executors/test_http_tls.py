"""https tools with a private CA and client certificates (docs/tools.md, "TLS"), against a real
TLS target on loopback: what is refused and how it is classified, then what works."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.executors.base import ExecutionContext
from gateway.model import CallStatus
from gateway.tools import Registry
from tests.gateway.executors.target import Reply, Target, running_target
from tests.support.executor_tools import ToolFactory, manifest
from tests.support.pki import CertificateAuthority

FAST = 2.0  # seconds: generous, a handshake on a busy machine; nothing here waits it out


@dataclass(frozen=True)
class Pki:
    """The tool service's CA and certificate, the CA of its clients, and what callgate may
    present: `agent` (signed by the clients' CA) and `stranger` (signed by another CA)."""

    directory: Path
    ca_file: Path
    other_ca_file: Path
    tools_ca: CertificateAuthority
    clients_ca: CertificateAuthority
    agent: tuple[Path, Path]
    stranger: tuple[Path, Path]

    def tls(self, *, ca: bool = True, cert: str = "", **extra: Any) -> dict[str, Any]:
        section: dict[str, Any] = {"ca_file": str(self.ca_file)} if ca else {}
        if cert:
            pair = self.agent if cert == "agent" else self.stranger
            section |= {"cert_file": str(pair[0]), "key_file": str(pair[1])}
        return section | extra


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    tools_ca, clients_ca = CertificateAuthority("tools CA"), CertificateAuthority("clients CA")
    other = CertificateAuthority("someone else's CA")
    return Pki(
        directory,
        tools_ca.write(directory, "tools-ca"),
        other.write(directory, "other-ca"),
        tools_ca,
        clients_ca,
        clients_ca.issue("agent").write(directory, "agent"),
        other.issue("stranger").write(directory, "stranger"),
    )


@contextmanager
def _target(pki: Pki, *, mutual: bool, dns: tuple[str, ...] = ()) -> Iterator[Target]:
    issued = pki.tools_ca.issue("tool", ips=() if dns else ("127.0.0.1",), dns=dns)
    name = f"tool-{'m' if mutual else 's'}{len(dns)}"
    context = issued.server_context(
        pki.directory, name, client_ca=pki.clients_ca if mutual else None
    )
    with running_target(context) as target:
        target.script("/t", Reply(200, {"ok": True}))
        yield target


@pytest.fixture
def https(pki: Pki) -> Iterator[Target]:
    """A tool service over https with a certificate of the tools' private CA."""
    with _target(pki, mutual=False) as target:
        yield target


@pytest.fixture
def mutual(pki: Pki) -> Iterator[Target]:
    """The same, and it requires a client certificate of the clients' CA."""
    with _target(pki, mutual=True) as target:
        yield target


def http(url: str, tls: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "http",
        "url": url,
        "timeout_s": FAST,
        **({"tls": tls} if tls is not None else {}),
    }


def not_sent(result: Any) -> None:
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        0,
    ), result
    assert result.error_message.endswith("(nothing was sent)")


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("effect", ["read", "write"])
async def test_a_private_ca_is_not_trusted_without_ca_file(
    make_tool: ToolFactory, ctx: ExecutionContext, https: Target, effect: str
) -> None:
    result = await make_tool(effect=effect, executor=http(f"{https.url}/t")).run({}, ctx)
    not_sent(result)
    assert (
        "the target's TLS certificate is not trusted: unable to get local issuer "
        "certificate (tls.ca_file names the CAs to trust)" in result.error_message
    )
    assert https.seen == []


async def test_a_ca_file_of_another_ca_is_not_trusted(
    make_tool: ToolFactory, ctx: ExecutionContext, https: Target, pki: Pki
) -> None:
    tls = {"ca_file": str(pki.other_ca_file)}
    result = await make_tool(effect="write", executor=http(f"{https.url}/t", tls)).run({}, ctx)
    not_sent(result)
    assert "not trusted" in result.error_message and https.seen == []


async def test_the_ca_file_replaces_the_system_cas(
    make_tool: ToolFactory,
    ctx: ExecutionContext,
    https: Target,
    pki: Pki,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The system's trust (here SSL_CERT_FILE, naming the tools' CA) is not added to it."""
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_file))
    tls = {"ca_file": str(pki.other_ca_file)}
    result = await make_tool(executor=http(f"{https.url}/t", tls)).run({}, ctx)
    not_sent(result)


async def test_a_certificate_for_another_name_is_refused(
    make_tool: ToolFactory, ctx: ExecutionContext, pki: Pki
) -> None:
    with _target(pki, mutual=False, dns=("tool.test",)) as target:
        result = await make_tool(executor=http(f"{target.url}/t", pki.tls())).run({}, ctx)
        not_sent(result)
        assert (
            "IP address mismatch, certificate is not valid for '127.0.0.1'" in result.error_message
        )
        assert "tls.server_name names the name to expect" in result.error_message
        named = make_tool(
            name="named", executor=http(f"{target.url}/t", pki.tls(server_name="tool.test"))
        )
        assert (await named.run({}, ctx)).status is CallStatus.SUCCEEDED
        assert len(target.seen) == 1


async def test_an_expired_certificate_is_refused_without_a_hint_that_would_not_help(
    make_tool: ToolFactory, ctx: ExecutionContext, pki: Pki
) -> None:
    issued = pki.tools_ca.issue("tool", ips=["127.0.0.1"], expired=True)
    with running_target(issued.server_context(pki.directory, "expired")) as target:
        result = await make_tool(executor=http(f"{target.url}/t", pki.tls())).run({}, ctx)
        assert target.seen == []
    not_sent(result)
    assert "not trusted: certificate has expired (nothing was sent)" in result.error_message


@pytest.mark.parametrize("effect", ["read", "write"])
async def test_no_client_certificate_is_refused_before_the_request_is_read(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, pki: Pki, effect: str
) -> None:
    """Under TLS 1.3 the request is written before the target checks the certificate; its
    refusal (an alert) still means nothing was read: a write is FAILED, not UNKNOWN."""
    tool = make_tool(effect=effect, executor=http(f"{mutual.url}/t", pki.tls()))
    result = await tool.run({"seat": "12A"}, ctx)
    not_sent(result)
    assert (
        "the target refused the TLS handshake (TLSV13_ALERT_CERTIFICATE_REQUIRED)"
        in result.error_message
    )
    assert mutual.refused(1) == ["PEER_DID_NOT_RETURN_A_CERTIFICATE"]
    assert mutual.seen == []


async def test_a_client_certificate_of_another_ca_is_refused(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, pki: Pki
) -> None:
    tool = make_tool(effect="write", executor=http(f"{mutual.url}/t", pki.tls(cert="stranger")))
    result = await tool.run({}, ctx)
    not_sent(result)
    assert "TLSV1_ALERT_UNKNOWN_CA" in result.error_message
    assert mutual.refused(1) == ["CERTIFICATE_VERIFY_FAILED"] and mutual.seen == []


async def test_a_connection_lost_after_an_accepted_handshake_is_not_a_refusal(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, pki: Pki
) -> None:
    """A new connection that the target accepted and then dropped without answering: the
    write may have applied."""
    mutual.script("/t", Reply(drop=True))
    tool = make_tool(effect="write", executor=http(f"{mutual.url}/t", pki.tls(cert="agent")))
    result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.UNKNOWN,
        "outcome_unknown",
        1,
    )
    assert [s.client_cert for s in mutual.seen] == ["agent"] and mutual.refused(0) == []


# --------------------------------------------------------------------------- accepted


async def test_with_the_ca_file_the_call_succeeds(
    make_tool: ToolFactory, ctx: ExecutionContext, https: Target, pki: Pki
) -> None:
    tool = make_tool(effect="write", executor=http(f"{https.url}/t", pki.tls()))
    result = await tool.run({"seat": "12A"}, ctx)
    assert (result.status, result.output_json, result.attempts) == (
        CallStatus.SUCCEEDED,
        '{"ok": true}',
        1,
    )
    [seen] = https.seen
    assert (seen.body, seen.headers["Idempotency-Key"], seen.client_cert) == (
        {"seat": "12A"},
        "run-1:call-1",
        "",
    )


async def test_mutual_tls_presents_the_client_certificate(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, pki: Pki
) -> None:
    tool = make_tool(effect="write", executor=http(f"{mutual.url}/t", pki.tls(cert="agent")))
    for _ in range(2):
        assert (await tool.run({}, ctx)).status is CallStatus.SUCCEEDED
    assert [s.client_cert for s in mutual.seen] == ["agent", "agent"]
    assert len({s.peer for s in mutual.seen}) == 1  # one kept-alive connection


async def test_tools_with_different_certificates_never_share_a_connection(
    ctx: ExecutionContext, mutual: Target, pki: Pki
) -> None:
    """Connections are kept per origin and TLS setting: a connection that presented one
    tool's certificate never carries another tool's request, while tools with the same
    setting share one."""
    url = f"{mutual.url}/t"
    registry = Registry.from_manifests(
        [
            manifest("a", executor=http(url, pki.tls(cert="agent"))),
            manifest("b", executor=http(url, pki.tls(cert="agent"))),
            manifest("c", executor=http(url, pki.tls())),
        ],
        env={},
    )
    try:
        results = {}
        for name in ("a", "b", "c", "a"):
            tool = registry.get(name)
            assert tool is not None
            results[name] = await tool.run({}, ctx)
    finally:
        await registry.aclose()
    assert [r.status for r in results.values()] == [
        CallStatus.SUCCEEDED,
        CallStatus.SUCCEEDED,
        CallStatus.FAILED,
    ]
    assert [s.client_cert for s in mutual.seen] == ["agent"] * 3
    assert len({s.peer for s in mutual.seen}) == 1
    assert mutual.refused(1) == ["PEER_DID_NOT_RETURN_A_CERTIFICATE"]


async def test_a_look_up_at_the_executors_origin_uses_its_tls(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, pki: Pki
) -> None:
    mutual.script("/t", Reply(503))
    mutual.script("/bookings/run-1%3Acall-1", Reply(200, {"booking": "B-1"}))
    tool = make_tool(
        effect="write",
        executor=http(f"{mutual.url}/t", pki.tls(cert="agent")),
        reconcile={
            "type": "http",
            "url": f"{mutual.url}/bookings/{{idempotency_key}}",
            "after_s": 0,
        },
    )
    assert (await tool.run({}, ctx)).status is CallStatus.UNKNOWN
    found = await tool.reconcile({}, ctx)
    assert (found.status, json.loads(found.output_json)) == (
        CallStatus.SUCCEEDED,
        {"booking": "B-1"},
    )
    assert [(s.method, s.client_cert) for s in mutual.seen] == [("POST", "agent"), ("GET", "agent")]


async def test_a_look_up_elsewhere_has_its_own_tls(
    make_tool: ToolFactory, ctx: ExecutionContext, mutual: Target, https: Target, pki: Pki
) -> None:
    """Not the executor's origin: the executor's tls is not used (the system's CAs do not
    know the tools' CA), until the look-up names its own."""
    mutual.script("/t", Reply(503))
    https.script("/b/run-1", Reply(200, {"booking": "B-2"}))
    lookup = {"type": "http", "url": f"{https.url}/b/{{run_id}}", "after_s": 0}
    executor = http(f"{mutual.url}/t", pki.tls(cert="agent"))
    plain = make_tool(name="plain", effect="write", executor=executor, reconcile=lookup)
    await plain.run({}, ctx)
    still = await plain.reconcile({}, ctx)
    assert still.status is CallStatus.UNKNOWN and "not trusted" in still.error_message
    own = make_tool(
        name="own", effect="write", executor=executor, reconcile=lookup | {"tls": pki.tls()}
    )
    await own.run({}, ctx)
    assert (await own.reconcile({}, ctx)).status is CallStatus.SUCCEEDED
