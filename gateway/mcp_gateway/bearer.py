"""Who an MCP request comes from: the SDK's token verifier over callgate's `--auth`.

The SDK's bearer middleware asks `CallerVerifier.verify_token` for every request to `/mcp`; a
token callgate refuses answers None, and the SDK answers 401 with `WWW-Authenticate: Bearer
resource_metadata="..."` (the refusal's reason is logged by the authenticator, never sent).
A JWT is accepted only when its audience is this listener's resource URL (RFC 8707); a static
token of the auth file is bound to this gateway by that file and is accepted as it is on gRPC.
"""

from __future__ import annotations

from mcp.server.auth.provider import AccessToken

from gateway.errors import Unauthenticated
from gateway.identity import Authenticator, Credentials
from gateway.model import Identity


class CallerToken(AccessToken):
    """The SDK's access token, carrying the callgate identity it was verified as."""

    identity: Identity


class CallerVerifier:
    """`mcp.server.auth.provider.TokenVerifier` over callgate's authenticator."""

    def __init__(self, auth: Authenticator, resource_url: str) -> None:
        self.auth = auth.for_audience(resource_url)
        self.resource_url = resource_url

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            who = await self.auth.authenticate(Credentials(authorization=f"Bearer {token}"))
        except Unauthenticated:
            return None
        # The session belongs to this principal: the SDK serves a session only to the
        # credential that opened it (client_id, issuer, subject).
        return CallerToken(
            token=token,
            client_id=f"{who.tenant}/{who.subject}",
            scopes=[],
            resource=self.resource_url,
            subject=who.subject,
            identity=who,
        )
