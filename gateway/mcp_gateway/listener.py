"""The MCP listener: the SDK's low-level Server behind its streamable HTTP session manager, in
a Starlette app served by uvicorn on the sidecar's own event loop.

    /mcp                                       MCP (streamable HTTP), bearer token required
    /.well-known/oauth-protected-resource      RFC 9728 metadata naming the auth file's issuer
    /.well-known/oauth-protected-resource/mcp  the same, at the path RFC 9728 §3.1 derives

A request to `/mcp` without a token callgate accepts is answered 401 with `WWW-Authenticate:
Bearer resource_metadata="..."` by the SDK's middleware. Without a `jwt` section in the auth
file there is no authorization server to name: static tokens still work, and there is no
metadata document. With `--insecure-dev-identity` every caller is that subject, as on gRPC.
Sessions live in this process's memory (the SDK's session manager): a restart ends them, and
clients open new ones (and so new runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import BaseRoute, Route

from gateway.errors import ConfigError, RequestCode, RequestError
from gateway.identity import Authenticator
from gateway.mcp_gateway.bearer import CallerToken, CallerVerifier
from gateway.mcp_gateway.calls import McpGateway, run_id_for
from gateway.mcp_gateway.results import tool_error
from gateway.model import Identity

log = logging.getLogger("callgate.mcp")

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
# the libraries' own lines at INFO (every session opened, uvicorn's start-up steps) are noise
# beside callgate's; their warnings and errors still show
QUIET_LOGGERS = ("uvicorn", "mcp.server.streamable_http_manager", "mcp.server.streamable_http")
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
INSTRUCTIONS = (
    "Every tool call goes through callgate: it may be refused by policy, or wait "
    "for a person's approval. A refused or waiting call answers an error result "
    "whose text starts with its code and says what to do next."
)


@dataclass(frozen=True)
class McpSettings:
    """`--mcp-listen` and what goes with it."""

    listen: str  # HOST:PORT
    resource_url: str = ""  # "" → http(s)://HOST:PORT/mcp of the bound address
    max_body_bytes: int = 4 * 1024 * 1024
    tls_cert: Path | None = None
    tls_key: Path | None = None
    version: str = ""
    grace_s: float = 2.0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(listen: str) -> socket.socket:
    """The listening socket of HOST:PORT (one owner: no SO_REUSEPORT), or ConfigError."""
    host, _, port = listen.rpartition(":")
    try:
        return socket.create_server(
            (host.strip("[]"), int(port)), family=socket.AF_INET6 if ":" in host else socket.AF_INET
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"--mcp-listen {listen}: the address is in use (another callgate, "
                "or another program, listens there): choose another "
                "--mcp-listen (CALLGATE_MCP_LISTEN)"
            ) from exc
        raise ConfigError(f"--mcp-listen {listen}: cannot listen there: {exc}") from exc


class McpHandlers:
    """The Server's tools/list and tools/call: identity from the verified token, the run from
    the session, the rest in `McpGateway`."""

    def __init__(self, gateway: McpGateway, auth: Authenticator) -> None:
        self.gateway = gateway
        self.dev = auth.insecure_identity

    def identity(self, ctx: ServerRequestContext[Any, Any]) -> Identity:
        user = ctx.request.scope.get("user") if ctx.request is not None else None
        if isinstance(user, AuthenticatedUser) and isinstance(user.access_token, CallerToken):
            return user.access_token.identity
        if self.dev is not None:
            return self.dev
        raise RequestError(RequestCode.UNAUTHENTICATED, "this request carries no verified token")

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await self.gateway.list_tools(self.identity(ctx)))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            identity = self.identity(ctx)
            headers = ctx.request.headers if ctx.request is not None else {}
            run_id = run_id_for(headers.get(MCP_SESSION_ID_HEADER), dict(ctx.meta or {}))
            return await self.gateway.call_tool(identity, run_id, params.name, params.arguments)
        except RequestError as err:
            return tool_error(err.code.value, err.message)
        except Exception:  # a bug: the client still gets an answer, never a broken session
            log.exception("internal error in an MCP tools/call")
            return tool_error(
                RequestCode.INTERNAL.value,
                "callgate failed on this call; the "
                "error is in its log, and GetRun shows what was recorded",
            )


def build_app(
    handlers: McpHandlers, auth: Authenticator, settings: McpSettings, resource_url: str
) -> Starlette:
    """The SDK's pieces assembled: session manager, bearer middleware, metadata routes."""
    server: Server[Any] = Server(
        "callgate",
        version=settings.version,
        instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=_security(settings.listen, resource_url),
        max_request_body_size=settings.max_body_bytes,
    )
    endpoint: Any = StreamableHTTPASGIApp(manager)
    routes: list[BaseRoute] = []
    middleware: list[Middleware] = []
    if auth.insecure_identity is None:
        resource = AnyHttpUrl(resource_url)
        verifier = CallerVerifier(auth, resource_url)
        middleware = [
            Middleware(
                AuthenticationMiddleware,
                backend=BearerAuthBackend(verifier, resource_server_url=resource),
            ),
            Middleware(AuthContextMiddleware),
        ]
        metadata_url = None
        if auth.jwt_issuer:
            metadata_url = build_resource_metadata_url(resource)
            routes += _metadata_routes(resource, auth.jwt_issuer)
        endpoint = RequireAuthMiddleware(endpoint, [], metadata_url)
    routes.append(Route(MCP_PATH, endpoint=endpoint))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> Any:
        async with manager.run():
            yield

    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def _metadata_routes(resource: AnyHttpUrl, issuer: str) -> list[BaseRoute]:
    """The metadata at RFC 9728's derived path and at the bare well-known path."""
    derived = create_protected_resource_routes(
        resource, [AnyHttpUrl(issuer)], resource_name="callgate"
    )
    routes: list[BaseRoute] = list(derived)
    if urlsplit(str(build_resource_metadata_url(resource))).path != METADATA_PATH:
        first = derived[0]
        routes.append(Route(METADATA_PATH, endpoint=first.endpoint, methods=["GET", "OPTIONS"]))
    return routes


def _security(listen: str, resource_url: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection on a loopback listener (as the SDK sets it up): only loopback
    Host and Origin headers, and the resource URL's own."""
    host = listen.rpartition(":")[0]
    if not _is_loopback(host):
        return None
    own = urlsplit(resource_url)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*LOOPBACK_HOSTS, own.netloc],
        allowed_origins=[f"http://{h}" for h in LOOPBACK_HOSTS]
        + [f"https://{h}" for h in LOOPBACK_HOSTS]
        + [f"{own.scheme}://{own.netloc}"],
    )


class McpListener:
    """Serves MCP until stopped; `start()` answers the resource URL (`/mcp`)."""

    def __init__(self, gateway: McpGateway, auth: Authenticator, settings: McpSettings) -> None:
        self.handlers = McpHandlers(gateway, auth)
        self.auth = auth
        self.settings = settings
        self.url = ""
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._loop_task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        settings = self.settings
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        sock = self._socket = bind(settings.listen)
        host = settings.listen.rpartition(":")[0]
        scheme = "https" if settings.tls_cert else "http"
        self.url = settings.resource_url or (f"{scheme}://{host}:{sock.getsockname()[1]}{MCP_PATH}")
        app = build_app(self.handlers, self.auth, settings, self.url)
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=max(1, round(settings.grace_s)),
            ssl_certfile=settings.tls_cert,
            ssl_keyfile=settings.tls_key,
        )
        config.load()
        server = self._server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup(sockets=[sock])
        except SystemExit as exc:  # uvicorn's answer to an app that fails to start
            raise ConfigError(
                f"--mcp-listen {settings.listen}: the MCP app did not start (see the log)"
            ) from exc
        self._loop_task = asyncio.create_task(server.main_loop())
        log.info("serving MCP at %s", self.url)
        return self.url

    async def stop(self) -> None:
        """Stop accepting, let open requests finish (the grace), end the sessions."""
        server = self._server
        if server is not None and self._loop_task is not None:
            server.should_exit = True
            await self._loop_task
            await server.shutdown(sockets=[self._socket] if self._socket else None)
        elif self._socket is not None:
            self._socket.close()
        self._server = None
