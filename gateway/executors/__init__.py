"""How a tool runs: `python`, `http` and `mcp` executors, reconcile look-ups (docs/tools.md).

`build_executor` turns the manifest sections of one tool into an `Executor`; the registry owns
the `HttpClients` every http executor and look-up of its tools shares, and the `McpSessions`
of the MCP servers file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.executors.base import ExecutionContext, ExecutionResult, Executor
from gateway.executors.config import (
    ExecutorConfig,
    HttpExecutorConfig,
    HttpReconcileConfig,
    IdempotencyConfig,
    ManifestFieldError,
    McpExecutorConfig,
    McpReconcileConfig,
    PythonExecutorConfig,
    PythonReconcileConfig,
    ReconcileConfig,
    RetryConfig,
    TlsConfig,
)
from gateway.executors.http import HttpClients, HttpExecutor, HttpLookup
from gateway.executors.http1 import Route, target
from gateway.executors.mcp_servers import StartFailed
from gateway.executors.proxy import Proxies, ProxySettingError
from gateway.executors.python import PythonExecutor, PythonLookup, ToolFunction, load_function
from gateway.executors.reconcile import Lookup, Reconciler
from gateway.executors.results import unknown
from gateway.executors.tls import TlsFileError
from gateway.model import Effect

if TYPE_CHECKING:  # the MCP client (the mcp SDK, a few hundred ms and tens of MB) is imported
    # only when a tool uses an MCP server
    from gateway.executors.mcp_sessions import McpSessions, ServerLink

__all__ = [
    "ExecutionContext",
    "ExecutionResult",
    "Executor",
    "ExecutorConfig",
    "HttpClients",
    "HttpExecutorConfig",
    "HttpReconcileConfig",
    "IdempotencyConfig",
    "Listed",
    "ManifestFieldError",
    "Proxies",
    "PythonExecutorConfig",
    "PythonReconcileConfig",
    "ReconcileConfig",
    "RetryConfig",
    "StartFailed",
    "TlsConfig",
    "ToolExecutor",
    "build_executor",
    "mcp_listing",
]


class Sender(Protocol):
    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult: ...

    async def send_once(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult: ...


class ToolExecutor:
    """A tool's sender plus its reconcile path; implements the `Executor` protocol."""

    def __init__(self, sender: Sender, reconciler: Reconciler, effect: Effect) -> None:
        self._sender = sender
        self._reconciler = reconciler
        self._effect = effect

    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return await self._sender.execute(args, ctx)

    async def reconcile(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        if self._effect is Effect.READ:
            return unknown("reads are not reconciled; repeat the read instead", attempts=0)
        return await self._reconciler.reconcile(args, ctx)

    async def aclose(self) -> None:
        return None  # shared http clients are closed by their registry


def _function(spec: str, field: tuple[str | int, ...]) -> ToolFunction:
    try:
        return load_function(spec)
    except ValueError as exc:
        raise ManifestFieldError(field, str(exc)) from exc


def _route(
    clients: HttpClients, section: str, url: str, tls: TlsConfig | None, base: Path
) -> Route:
    try:
        return clients.route(url, tls, base)
    except TlsFileError as exc:
        raise ManifestFieldError((section, "tls", exc.field), exc.message) from exc
    except ProxySettingError as exc:
        raise ManifestFieldError((section, "url"), str(exc)) from exc


def _mcp_link(sessions: McpSessions | None, server: str) -> ServerLink:
    link = sessions.link(server) if sessions is not None else None
    if link is not None:
        return link
    if sessions is None or not sessions.source:
        raise ManifestFieldError(
            ("executor", "server"),
            f"MCP server {server!r} is not declared: no MCP servers file was given (--mcp-servers)",
        )
    declared = ", ".join(sessions.names()) or "none"
    raise ManifestFieldError(
        ("executor", "server"),
        f"MCP server {server!r} is not declared in {sessions.source} (declared: {declared})",
    )


Listed = Callable[[], Awaitable[dict[str, Any] | None]]


def mcp_listing(cfg: ExecutorConfig, mcp: McpSessions | None, name: str) -> Listed | None:
    """For a tool on an MCP server, its entry in the server's tools/list as its session
    lists it now (raises StartFailed when it cannot be had); for any other tool, None."""
    if not isinstance(cfg, McpExecutorConfig):
        return None
    link = _mcp_link(mcp, cfg.server)
    tool = cfg.tool or name
    from gateway.executors.mcp import listed_entry

    return lambda: listed_entry(link, tool)


@dataclass(frozen=True)
class Targets:
    """What executors share: the http client, the MCP sessions, the manifest's folder."""

    clients: HttpClients
    base: Path = Path(".")
    mcp: McpSessions | None = None


def _sender(
    cfg: ExecutorConfig, *, effect: Effect, retry: RetryConfig, targets: Targets, name: str
) -> Sender:
    clients, base = targets.clients, targets.base
    if isinstance(cfg, McpExecutorConfig):
        from gateway.executors.mcp import McpExecutor

        return McpExecutor(
            link=_mcp_link(targets.mcp, cfg.server),
            tool=cfg.tool or name,
            timeout_s=cfg.timeout_s,
            effect=effect,
            max_attempts=retry.max_attempts,
            backoff_s=retry.backoff_s,
        )
    if isinstance(cfg, PythonExecutorConfig):
        return PythonExecutor(
            _function(cfg.function, ("executor", "function")),
            timeout_s=cfg.timeout_s,
            effect=effect,
            max_attempts=retry.max_attempts,
            backoff_s=retry.backoff_s,
        )
    return HttpExecutor(
        url=cfg.url,
        timeout_s=cfg.timeout_s,
        headers=cfg.headers,
        clients=clients,
        effect=effect,
        max_attempts=retry.max_attempts,
        backoff_s=retry.backoff_s,
        route=_route(clients, "executor", cfg.url, cfg.tls, base),
    )


def _lookup_tls(cfg: HttpReconcileConfig, executor: ExecutorConfig) -> TlsConfig | None:
    """The look-up's own tls, else the executor's when the look-up goes to its origin."""
    if cfg.tls is not None or not isinstance(executor, HttpExecutorConfig):
        return cfg.tls
    return executor.tls if target(cfg.url).origin == target(executor.url).origin else None


def _lookup(cfg: ReconcileConfig, executor: ExecutorConfig, targets: Targets) -> Lookup:
    clients, base = targets.clients, targets.base
    if isinstance(cfg, McpReconcileConfig):
        if not isinstance(executor, McpExecutorConfig):
            raise ManifestFieldError(
                ("reconcile", "type"),
                "an mcp look-up calls a tool of "
                "the executor's MCP server: the executor must be mcp",
            )
        from gateway.executors.mcp import McpLookup

        return McpLookup(
            link=_mcp_link(targets.mcp, executor.server),
            tool=cfg.tool,
            arguments=cfg.arguments,
            timeout_s=cfg.timeout_s,
        )
    if isinstance(cfg, PythonReconcileConfig):
        return PythonLookup(
            _function(cfg.function, ("reconcile", "function")), timeout_s=cfg.timeout_s
        )
    route = _route(clients, "reconcile", cfg.url, _lookup_tls(cfg, executor), base)
    return HttpLookup(
        url=cfg.url, timeout_s=cfg.timeout_s, headers=cfg.headers, clients=clients, route=route
    )


def build_executor(
    cfg: ExecutorConfig,
    *,
    effect: Effect,
    retry: RetryConfig,
    idempotency: IdempotencyConfig,
    reconcile: ReconcileConfig | None,
    clients: HttpClients,
    base: Path = Path("."),
    mcp: McpSessions | None = None,
    name: str = "",
) -> ToolExecutor:
    """Raises ManifestFieldError (e.g. a python function that cannot be imported, a TLS file
    that cannot be used, an MCP server not declared); relative paths in the manifest are taken
    from base; `name` (the tool's) is the default MCP tool name."""
    if effect is Effect.WRITE and not idempotency.enforced_by_target:
        retry = RetryConfig(max_attempts=1, backoff_s=retry.backoff_s)
    targets = Targets(clients, base, mcp)
    sender = _sender(cfg, effect=effect, retry=retry, targets=targets, name=name)
    lookup = _lookup(reconcile, cfg, targets) if reconcile is not None else None
    resend = sender.send_once if idempotency.enforced_by_target else None
    after_s = reconcile.after_s if reconcile is not None else 0.0
    return ToolExecutor(sender, Reconciler(lookup, after_s=after_s, resend=resend), effect)
