"""A real sidecar serving gateway mode (`serve --mcp-listen`), its tools on the workshop and
travel services, callers identified by static tokens and by JWTs of a test identity provider;
and the MCP SDK's own client (streamable HTTP) to reach it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway.testing import SidecarProcess
from tests.support.idp import IdentityProvider
from tests.support.paths import POLICIES, example_tools, sidecar_env

MCP_LINE = "callgate MCP at "
AUTH = """\
tokens:
  mia-demo-token:  {subject: mia,  tenant: acme, roles: [member]}
  bob-demo-token:  {subject: bob,  tenant: acme, roles: [traveler]}
  olga-demo-token: {subject: olga, tenant: acme, roles: [owner]}
  audrey-demo-token: {subject: audrey, tenant: acme, roles: [auditor]}
jwt:
  issuer: %s
  audiences: [callgate]
  jwks_file: jwks.json
  claims: {subject: sub, tenant: tenant_id, roles: roles}
"""


@dataclass(frozen=True)
class Gateway:
    sidecar: SidecarProcess
    url: str  # the MCP endpoint, http://127.0.0.1:PORT/mcp
    idp: IdentityProvider

    @property
    def origin(self) -> str:
        return self.url.removesuffix("/mcp")


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, travel: TravelService, workshop: WorkshopService
) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("mcp-gateway")
    idp = IdentityProvider()
    idp.write_jwks(tmp / "jwks.json")
    (tmp / "auth.yaml").write_text(AUTH % idp.issuer)
    with SidecarProcess(
        tools=example_tools(tmp / "tools"),
        policies=POLICIES,
        db=tmp / "callgate.db",
        auth=tmp / "auth.yaml",
        extra_args=["--mcp-listen", "127.0.0.1:0"],
        env=sidecar_env(travel, tmp / "effects.db", workshop),
    ) as proc:
        lines = [line for line in proc.lines if line.startswith(MCP_LINE)]
        assert lines, proc.output
        yield Gateway(proc, lines[0].removeprefix(MCP_LINE).strip(), idp)


def http_client(token: str = "") -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session (the handshake revision: one session, one run)."""
    async with (
        http_client(token) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
