"""Assembles and runs the sidecar: registry, policy, store, runner, gRPC server, health."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from gateway import pb
from gateway.approvals.desk import ApprovalDesk
from gateway.audit import events
from gateway.audit.at_rest import RedactStored
from gateway.audit.keys import AuditKey
from gateway.errors import ConfigError, StoreUnavailable
from gateway.executors.mcp_servers import load_servers
from gateway.identity import Authenticator
from gateway.model import now_utc
from gateway.observe.hooks import Metrics, Observe
from gateway.policy import EmbeddedEngine
from gateway.policy.reload import ReloadingEngine, ReloadTarget, prepare
from gateway.policy.shadow import Disagreement, ShadowEngine, audit_event
from gateway.policy.watch import PolicyReloader, ReloadResult
from gateway.run.runner import Runner
from gateway.service import collector
from gateway.service.config import ServeConfig
from gateway.service.observed import observed
from gateway.service.startup import NewFiles, check_listen_free, in_use_error
from gateway.service.telemetry import MetricsEndpoint, build_observe
from gateway.service.tools_reload import ToolsReloader, ToolsReloadResult
from gateway.store import RunStore, open_store
from gateway.tls import ServerCertificates, describe
from gateway.tools import Registry
from gateway.tools.live import LiveRegistry
from gateway.version import callgate_version
from gateway.wire.server import GenericOnly, StatusInfo, ToolGatewayService, add_to_server

if TYPE_CHECKING:
    from gateway.executors.mcp_sessions import McpSessions
    from gateway.policy.opa.engine import OpaEngine

    ServingPolicy = ReloadingEngine | OpaEngine | ShadowEngine
    from gateway.mcp_gateway.listener import McpListener

log = logging.getLogger("callgate")

SERVICE = pb.DESCRIPTOR.services_by_name["ToolGateway"].full_name
HEALTH_INTERVAL_S = 5.0
HEALTH_INTERVAL_DOWN_S = 1.0  # while a component is down: notice its recovery sooner
RELOAD_COMPONENT = "callgate.policy.reload"
TOOLS_RELOAD_COMPONENT = "callgate.tools.reload"
SHADOW_COMPONENT = "callgate.policy.shadow"


class Sidecar:
    def __init__(
        self, config: ServeConfig, *, worker: bool = False, observe: Observe | None = None
    ) -> None:
        """`worker`: one of the processes of `serve --workers` (`gateway.service.supervisor`): it
        its port (SO_REUSEPORT) and its SQLite store's notifications with the others.
        `observe`: what it reports to (default: what the settings ask for)."""
        self.config = config
        self.worker = worker
        self.observe = observe
        self.metrics: MetricsEndpoint | None = None
        self.mcp: McpListener | None = None
        self.mcp_url = ""
        self._mcp_sessions: McpSessions | None = None
        self.server: grpc.aio.Server | None = None
        self.store: RunStore | None = None
        self.registry: LiveRegistry | None = None
        self.tools_reloader: ToolsReloader | None = None
        self.bound = ""
        self._health = health.aio.HealthServicer()
        self._runner: Runner | None = None
        self._desk: ApprovalDesk | None = None
        self._watch: asyncio.Task[None] | None = None
        self._auth: Authenticator | None = None
        self.policy: ServingPolicy | None = None
        self._serving = True
        self.reloader: PolicyReloader | None = None
        self._reload_task: asyncio.Task[None] | None = None
        self._tools_task: asyncio.Task[None] | None = None
        self._health_update: asyncio.Task[None] | None = None
        self._stopped = False

    async def start(self) -> str:
        """Load everything (any problem raises ConfigError before listening); answers the
        address actually bound. A start that fails stops what it started and removes the
        files it created (`gateway.service.startup`)."""
        cfg = self.config
        cfg.check()
        if not self.worker:  # the workers of `serve --workers` share the port by design
            check_listen_free(cfg.listen)
        created = NewFiles.before_start(cfg.db, None)
        try:
            return await self._start(cfg)
        except BaseException:
            await self.stop(0)
            created.remove()
            raise

    async def _start(self, cfg: ServeConfig) -> str:
        certificates = _certificates(cfg)
        auth = self._auth = _authenticator(cfg, certificates)
        await auth.start()
        server = self.server = _grpc_server(cfg, worker=self.worker)
        self.bound = self._bind(server, cfg.listen, certificates)  # the port is ours from here
        key, new_secret = AuditKey.load_or_new(cfg.audit_key_path())
        self._mcp_sessions = _mcp_sessions(cfg)
        self.registry = LiveRegistry(
            Registry.load(cfg.tools, limits=cfg.limits(), audit_key=key, mcp=self._mcp_sessions)
        )
        obs = self.observe = self.observe or build_observe(
            cfg, (t.name for t in self.registry.tools())
        )
        policy = await self._load_policy()
        self.store = await self._open_store(cfg, key, self.registry, obs)
        if isinstance(policy, ShadowEngine):
            policy.record = self._shadow_recorder(self.store, obs)
        self._runner = Runner(
            store=self.store,
            registry=self.registry,
            policy=policy,
            approval_ttl_s=cfg.approval_ttl_s,
            limits=cfg.limits(),
            observe=obs,
            pins=cfg.pin_modes(),
        )
        self._desk = ApprovalDesk(self._runner)
        self._add_service(server, auth, policy, self.store.name, obs)
        _add_health_and_reflection(server, self._health)
        await server.start()
        if cfg.metrics_listen:
            self.metrics = MetricsEndpoint(cfg.metrics_listen, self.store, obs.metrics)
            self.metrics.start()
        if cfg.mcp_listen:
            await self._start_mcp(cfg, auth, self._runner)
        log.info("listening with %s", describe(certificates))
        if new_secret is not None:  # the last step that can fail: a refused start writes none
            _keep_new_key(cfg, key, new_secret)
        self._desk.start()
        await self._update_health()
        self._watch = asyncio.create_task(self._health_loop())
        self._reload_task = asyncio.create_task(self._watch_policies())
        self._watch_tools(key)
        return self.bound

    async def _open_store(
        self, cfg: ServeConfig, key: AuditKey, registry: LiveRegistry, obs: Observe
    ) -> RunStore:
        store = await open_store(
            cfg.db,
            busy_timeout_s=cfg.db_busy_timeout_s,
            min_free_bytes=cfg.db_min_free_bytes,
            audit_key=key,
            stored=RedactStored(registry),
            share_notifications=self.worker,
        )
        return observed(store, obs.metrics)

    def _add_service(
        self,
        server: grpc.aio.Server,
        auth: Authenticator,
        policy: ServingPolicy,
        store_name: str,
        obs: Observe,
    ) -> None:
        """The ToolGateway service on the server, with what GetStatus reports."""
        assert self._runner is not None and self._desk is not None
        status = StatusInfo(
            store_name,
            callgate_version(),
            rejected_reload=lambda: policy.last_rejected,
            shadow=policy.stats if isinstance(policy, ShadowEngine) else lambda: None,
        )
        service = ToolGatewayService(self._runner, self._desk, auth, status, observe=obs)
        add_to_server(service, server)

    def _watch_tools(self, key: AuditKey) -> None:
        """Reload --tools as start-up loaded it (same limits, same audit key)."""
        cfg, registry = self.config, self.registry
        assert registry is not None
        limits = cfg.limits()
        self.tools_reloader = ToolsReloader(
            registry,
            cfg.tools,
            lambda d: Registry.load(d, limits=limits, audit_key=key, mcp=self._mcp_sessions),
            interval_s=cfg.tools_poll_interval_s,
            on_result=self._tools_reloaded,
        )
        self._tools_task = asyncio.create_task(self._pins_then_reloads(self.tools_reloader))

    async def _pins_then_reloads(self, reloader: ToolsReloader) -> None:
        """The start-up set's definitions recorded, then the tools watched for changes.

        Recording 10,000 definitions (a row and an audit record each) takes about 0.4 s, so
        it is done once serving rather than before: a call that comes first records its own
        tool's definition as it is checked (`PinBook`), the same first definition either way.
        No reload is looked for before it is done, so a definition replaced by a reload is
        never recorded after its successor (changes meanwhile are found at the first scan,
        a SIGHUP is kept for it)."""
        try:
            await self._observe_pins()
        except Exception:  # the calls still check and record their own tool's definition
            log.exception("the tools' definitions could not be recorded at start-up")
        await reloader.run()

    async def _observe_pins(self) -> None:
        """Record the serving manifests' definitions: the first of each tool is its pin."""
        pins = self._runner.pins if self._runner is not None else None
        if pins is None or self.registry is None:
            return
        try:
            await pins.observe(self.registry.tools())
        except StoreUnavailable as err:  # checked again at each call, which fails closed
            log.warning("the tools' definitions could not be recorded: %s", err)

    async def _tools_reloaded(self, result: ToolsReloadResult) -> None:
        """Count every tools reload; audit a new set and each distinct rejection."""
        if self.observe is not None:
            self.observe.metrics.tools_reload(result.outcome)
        if result.outcome == "installed":
            await self._observe_pins()
        self._health_soon()  # callgate.tools.reload says whether a rejection stands
        if not result.news or self.store is None:
            return
        now, rejected = now_utc(), result.rejection
        event = (
            events.tools_rejected(
                file=rejected.file,
                line=rejected.line,
                message=rejected.message,
                serving=result.revision,
                now=now,
                problems=tuple(p.message for p in rejected.problems),
            )
            if rejected is not None
            else events.tools_installed(
                revision=result.revision,
                previous=result.previous,
                tools=len(self.registry or ()),
                now=now,
            )
        )
        try:
            await self.store.append_audit([event])
        except StoreUnavailable as err:
            log.warning("the audit record of a tools reload could not be written: %s", err)

    async def _start_mcp(self, cfg: ServeConfig, auth: Authenticator, runner: Runner) -> None:
        """Gateway mode: MCP clients on --mcp-listen, through the same runner (imported only
        when on)."""
        from gateway.mcp_gateway.calls import McpGateway
        from gateway.mcp_gateway.listener import McpListener, McpSettings

        self.mcp = McpListener(
            McpGateway(runner),
            auth,
            McpSettings(
                cfg.mcp_listen,
                cfg.mcp_resource_url,
                max_body_bytes=cfg.max_message_bytes,
                tls_cert=cfg.tls_cert,
                tls_key=cfg.tls_key,
                version=callgate_version(),
            ),
        )
        self.mcp_url = await self.mcp.start()

    @staticmethod
    def _shadow_recorder(
        store: RunStore, obs: Observe
    ) -> Callable[[Disagreement], Awaitable[None]]:
        async def record(found: Disagreement) -> None:
            obs.metrics.shadow_disagreement()
            await store.append_audit([audit_event(found)])

        return record

    async def _load_policy(self) -> ServingPolicy:
        """The first revision, checked as every reload is; a bad one stops start-up."""
        cfg = self.config
        if cfg.engine == "opa":
            return await self._load_opa()
        bundle = prepare(
            cfg.policies,
            cfg.policy_prefix,
            require_tests=cfg.reload_requires_tests,
            options=cfg.rego_options(),
        )
        first = EmbeddedEngine(bundle, prefix=cfg.policy_prefix, checked=True)
        embedded = ReloadingEngine(first, log_inputs=cfg.log_decision_inputs)
        policy: ReloadingEngine | ShadowEngine = embedded
        if cfg.engine == "shadow":
            push = cfg.opa_policies == "push"
            policy = ShadowEngine(
                embedded, self._opa_engine(), queue_size=cfg.shadow_queue, push=push
            )
            if push:
                await policy.push_to_opa(bundle)
        self.policy = policy
        self._watch_directory(policy)
        return policy

    async def _load_opa(self) -> OpaEngine:
        cfg = self.config
        engine = self.policy = self._opa_engine()
        if cfg.opa_policies == "push":
            await engine.install_bundle(
                engine.prepare(cfg.policies, cfg.policy_prefix, require_tests=False)
            )
            self._watch_directory(engine)
        else:
            log.info(
                "OPA at %s serves its own bundles: --policies %s is not used",
                cfg.opa_url,
                cfg.policies,
            )
        return engine

    def _opa_engine(self) -> OpaEngine:
        from gateway.policy.opa.client import OpaConnection  # aiohttp: only with OPA
        from gateway.policy.opa.engine import OpaEngine

        cfg = self.config
        return OpaEngine(
            OpaConnection(cfg.opa_settings()),
            cfg.policy_prefix,
            mode=cfg.opa_policies,
            on_change=self._health_soon,
            options=cfg.rego_options(),
        )

    def _watch_directory(self, target: ReloadTarget) -> None:
        cfg = self.config
        self.reloader = PolicyReloader(
            target,
            cfg.policies,
            cfg.policy_prefix,
            require_tests=cfg.reload_requires_tests,
            interval_s=cfg.policy_poll_interval_s,
            on_change=self._health_soon,
            on_news=self._audit_reload,
            metrics=self.observe.metrics if self.observe is not None else Metrics(),
        )

    async def _audit_reload(self, result: ReloadResult) -> None:
        """An audit record of a policy revision installed, or of a rejection not seen before."""
        now = now_utc()
        rejected = result.rejection
        event = (
            events.policy_rejected(
                file=rejected.file,
                line=rejected.line,
                column=rejected.column,
                message=rejected.message,
                serving=result.revision,
                now=now,
                problems=tuple(asdict(p) for p in rejected.problems),
            )
            if rejected is not None
            else events.policy_installed(
                revision=result.revision, previous=result.previous, now=now
            )
        )
        if self.store is None:
            return
        try:
            await self.store.append_audit([event])
        except StoreUnavailable as err:
            log.warning("the audit record of a policy reload could not be written: %s", err)

    async def _watch_policies(self) -> None:
        if self.reloader is not None:
            await self.reloader.run()

    def reload_policies(self) -> None:
        """Reload the policy and tool directories now (SIGHUP)."""
        if self.reloader is not None:
            self.reloader.request()
        if self.tools_reloader is not None:
            self.tools_reloader.request()

    def _health_soon(self) -> None:
        if self.store is not None and self._runner is not None:
            loop = asyncio.get_running_loop()
            self._health_update = loop.create_task(self._update_health())

    @staticmethod
    def _bind(
        server: grpc.aio.Server, listen: str, certificates: ServerCertificates | None = None
    ) -> str:
        try:
            port = (
                server.add_secure_port(listen, certificates.credentials())
                if certificates
                else server.add_insecure_port(listen)
            )
        except RuntimeError as exc:  # taken since check_listen_free looked, or not bindable
            if "in use" in str(exc) or "Failed to bind" in str(exc):
                raise in_use_error(listen) from exc
            raise ConfigError(f"--listen {listen}: cannot listen there: {exc}") from exc
        if listen.startswith("unix:"):
            return listen
        host = listen.rsplit(":", 1)[0]
        return f"{host}:{port}"

    async def _update_health(self) -> None:
        assert self.store is not None and self._runner is not None
        store_ok = await self.store.healthy()
        policy_ok = await self._runner.policy.healthy()
        serving = health_pb2.HealthCheckResponse.SERVING
        down = health_pb2.HealthCheckResponse.NOT_SERVING
        await self._health.set("callgate.store", serving if store_ok else down)
        await self._health.set("callgate.policy", serving if policy_ok else down)
        # The newest policy files were rejected: the previous revision still decides (so
        # callgate.policy and the sidecar stay SERVING), and this component says so.
        rejected = self.policy is not None and self.policy.last_rejected is not None
        await self._health.set(RELOAD_COMPONENT, down if rejected else serving)
        tools_rejected = self.registry is not None and self.registry.last_rejected is not None
        await self._health.set(TOOLS_RELOAD_COMPONENT, down if tools_rejected else serving)
        shadow_ok = True
        if isinstance(self.policy, ShadowEngine):  # OPA decides nothing: its own component
            shadow_ok = await self.policy.opa_healthy()
            await self._health.set(SHADOW_COMPONENT, serving if shadow_ok else down)
        overall = serving if store_ok and policy_ok else down
        self._serving = store_ok and policy_ok and shadow_ok
        await self._health.set("", overall)
        await self._health.set(SERVICE, overall)

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(HEALTH_INTERVAL_S if self._serving else HEALTH_INTERVAL_DOWN_S)
            await self._update_health()

    async def stop(self, grace: float = 2.0) -> None:
        """Stop serving and close everything (once: a second call does nothing)."""
        if self._stopped:
            return
        self._stopped = True
        if self.store is not None:  # WatchRun streams end now: their clients reconnect
            self.store.close_watches()
        for task in (self._watch, self._reload_task, self._tools_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._desk is not None:  # no approval expires while shutting down
            await self._desk.close()
        # both listeners stop accepting; their open requests get the grace, together
        await asyncio.gather(
            *(
                stop
                for stop in (
                    self.mcp.stop() if self.mcp is not None else None,
                    self.server.stop(grace) if self.server is not None else None,
                )
                if stop is not None
            )
        )
        if self._runner is not None:  # turns being driven finish and commit first
            await self._runner.drain(timeout_s=30.0)
        if self.policy is not None and not isinstance(self.policy, ReloadingEngine):
            await self.policy.close()  # OPA's connection
        if self.registry is not None:
            await self.registry.aclose()
        if self.store is not None:
            await self.store.close()
        if self._auth is not None:
            await self._auth.aclose()
        self._stop_observing()

    def _stop_observing(self) -> None:
        """The /metrics listener closed; spans still batched sent (or dropped) now."""
        if self.metrics is not None:
            self.metrics.stop()
        if self.observe is not None:
            self.observe.tracer.shutdown()


def _grpc_server(cfg: ServeConfig, *, worker: bool) -> grpc.aio.Server:
    return grpc.aio.server(
        options=[
            # one owner per address, so a second serve fails to bind; the workers of one
            # `serve --workers` share it (the supervisor checked that nobody else has it)
            ("grpc.so_reuseport", 1 if worker else 0),
            ("grpc.max_receive_message_length", cfg.max_message_bytes),
        ]
    )


def _add_health_and_reflection(
    server: grpc.aio.Server, servicer: health.aio.HealthServicer
) -> None:
    generic = GenericOnly(server)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, generic)
    names = (SERVICE, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
    # (what `reflection.enable_server_reflection` does for a grpc.aio server)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        reflection.aio.ReflectionServicer((*names, reflection.SERVICE_NAME)), generic
    )


def _keep_new_key(cfg: ServeConfig, key: AuditKey, secret: bytes) -> None:
    """Write the audit key this start made; refuse if another process wrote one meanwhile
    (what this process sealed would not check with it)."""
    path = cfg.audit_key_path()
    if AuditKey.write_new(path, secret).key_id != key.key_id:
        raise ConfigError(
            f"--audit-key-file {path}: another process created it while this "
            "one started; start again (it will use that key)"
        )


def _mcp_sessions(cfg: ServeConfig) -> McpSessions | None:
    """The servers of --mcp-servers (sessions start when a call needs one)."""
    if cfg.mcp_servers is None:
        return None
    servers = load_servers(cfg.mcp_servers, os.environ)
    from gateway.executors.mcp_sessions import McpSessions  # the mcp SDK: only when used

    return McpSessions(
        servers,
        max_event_bytes=2 * cfg.max_output_bytes + 65536,
        source=f"--mcp-servers {cfg.mcp_servers}",
    )


def _certificates(cfg: ServeConfig) -> ServerCertificates | None:
    if cfg.tls_cert is None or cfg.tls_key is None:
        return None
    return ServerCertificates(cfg.tls_cert, cfg.tls_key, cfg.tls_client_ca)


def _authenticator(cfg: ServeConfig, certificates: ServerCertificates | None) -> Authenticator:
    if cfg.auth is None:
        log.warning("INSECURE: no --auth; every caller is %r", cfg.insecure_dev_identity)
        return Authenticator.insecure(cfg.insecure_dev_identity)
    auth = Authenticator.from_file(cfg.auth)
    if auth.wants_client_certificates and not (certificates and certificates.mutual):
        raise ConfigError(
            f"--auth {cfg.auth}: mtls identifies callers by client certificate: "
            "serve needs --tls-cert, --tls-key and --tls-client-ca"
        )
    return auth


async def serve(config: ServeConfig, *, worker: bool = False) -> None:
    """Run in the foreground until SIGINT/SIGTERM (a worker also stops when its standard
    input closes: its supervisor is gone)."""
    sidecar = Sidecar(config, worker=worker)
    with collector.young_collections_only():
        bound = await sidecar.start()  # a start that fails has stopped what it started
    collector.tune_for_serving()
    if sidecar.mcp_url:
        print(f"callgate MCP at {sidecar.mcp_url}", flush=True)
    print(f"callgate listening on {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, sidecar.reload_policies)
    if worker:
        loop.add_reader(sys.stdin.fileno(), _stop_at_end_of_input, stop)
    await stop.wait()
    await sidecar.stop()


def _stop_at_end_of_input(stop: asyncio.Event) -> None:
    try:
        data = os.read(sys.stdin.fileno(), 4096)
    except BlockingIOError:
        return
    if not data:
        asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
        stop.set()
