"""`serve --mcp-listen` as a process: its settings refused at start-up in one line, and with
`--workers` one worker serving MCP beside the others' gRPC."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway.testing import ServeTLS, SidecarProcess, run_serve_expecting_failure
from tests.gateway.mcp_gateway.conftest import MCP_LINE, mcp_session
from tests.support.paths import AUTH, POLICIES, example_tools, sidecar_env
from tests.support.pki import CertificateAuthority


def serve_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--tools",
        str(example_tools(tmp_path / "tools")),
        "--policies",
        str(POLICIES),
        "--db",
        str(tmp_path / "callgate.db"),
        "--auth",
        str(AUTH),
        "--listen",
        "127.0.0.1:0",
        *extra,
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mcp-listen", "0.0.0.0:0"], "--mcp-listen 0.0.0.0:0 listens on every interface"),
        (
            ["--mcp-resource-url", "https://gw.example/mcp"],
            "--mcp-resource-url is used only with --mcp-listen",
        ),
        (
            ["--mcp-listen", "127.0.0.1:0", "--mcp-resource-url", "ftp://x"],
            "argument --mcp-resource-url: 'ftp://x': expected an http:// or https:// URL",
        ),
        (["--mcp-listen", "unix:/tmp/x.sock"], "--mcp-listen"),
    ],
)
def test_bad_mcp_settings_stop_start_up_in_one_line(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    code, output = run_serve_expecting_failure(serve_args(tmp_path, *extra))
    assert code == 2, output
    assert message in output and "Traceback" not in output
    assert not (tmp_path / "callgate.db").exists()  # a refused start leaves nothing


def test_a_taken_mcp_port_stops_start_up(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, output = run_serve_expecting_failure(
            serve_args(tmp_path, "--mcp-listen", f"127.0.0.1:{port}")
        )
    assert code == 2, output
    assert f"--mcp-listen 127.0.0.1:{port}: the address is in use" in output
    assert "Traceback" not in output and not (tmp_path / "callgate.db").exists()


async def test_with_workers_the_first_serves_mcp(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService
) -> None:
    with SidecarProcess(
        tools=example_tools(tmp_path / "tools"),
        policies=POLICIES,
        db=tmp_path / "callgate.db",
        auth=AUTH,
        workers=2,
        extra_args=["--mcp-listen", "127.0.0.1:0"],
        env=sidecar_env(travel, tmp_path / "effects.db", workshop),
    ) as proc:
        urls = [
            line.removeprefix(MCP_LINE).strip() for line in proc.lines if line.startswith(MCP_LINE)
        ]
        assert len(urls) == 1, proc.output
        async with mcp_session(urls[0], "mia-demo-token") as mia:
            result = await mia.call_tool("check_availability", {"event_id": "ws-acme-1"})
        assert not result.is_error


async def test_with_tls_mcp_is_served_over_https(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService
) -> None:
    ca = CertificateAuthority("test CA")
    cert, key = ca.issue("server", ips=["127.0.0.1"]).write(tmp_path, "server")
    with SidecarProcess(
        tools=example_tools(tmp_path / "tools"),
        policies=POLICIES,
        db=tmp_path / "callgate.db",
        auth=AUTH,
        tls=ServeTLS(cert, key),
        extra_args=["--mcp-listen", "127.0.0.1:0"],
        env=sidecar_env(travel, tmp_path / "effects.db", workshop),
    ) as proc:
        url = next(
            line.removeprefix(MCP_LINE).strip() for line in proc.lines if line.startswith(MCP_LINE)
        )
        assert url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(ca.write(tmp_path, "ca")))
        async with (
            httpx2.AsyncClient(
                verify=trust, headers={"Authorization": "Bearer mia-demo-token"}
            ) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = {t.name for t in (await session.list_tools()).tools}
        assert "reserve_seat" in listed
        async with httpx2.AsyncClient(verify=trust) as http:
            metadata = (
                await http.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource")
            ).json()
        assert metadata["resource"] == url


async def test_with_an_insecure_dev_identity_every_client_is_that_subject(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService
) -> None:
    with SidecarProcess(
        tools=example_tools(tmp_path / "tools"),
        policies=POLICIES,
        db=tmp_path / "callgate.db",
        extra_args=["--insecure-dev-identity", "dev", "--mcp-listen", "127.0.0.1:0"],
        env=sidecar_env(travel, tmp_path / "effects.db", workshop),
    ) as proc:
        url = next(
            line.removeprefix(MCP_LINE).strip() for line in proc.lines if line.startswith(MCP_LINE)
        )
        async with mcp_session(url, "") as dev:  # no token asked for
            listed = {t.name for t in (await dev.list_tools()).tools}
        async with httpx2.AsyncClient() as http:
            metadata = await http.get(
                url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource"
            )
    assert listed >= {"reserve_seat", "get_weather"}  # the dev identity's role is tester: all
    assert metadata.status_code == 404  # no issuer to name
