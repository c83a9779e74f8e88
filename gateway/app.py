"""Assembles and runs the sidecar: registry, policy, store, runner, gRPC server, health."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from importlib.metadata import PackageNotFoundError, version

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from gateway import pb
from gateway.config import ServeConfig
from gateway.errors import ConfigError
from gateway.identity import Authenticator
from gateway.policy import load_engine
from gateway.runner import Runner
from gateway.server import StatusInfo, ToolGatewayService, add_to_server
from gateway.store.sqlite import SQLiteStore
from gateway.tools import Registry

log = logging.getLogger("callgate")

SERVICE = pb.DESCRIPTOR.services_by_name["ToolGateway"].full_name
HEALTH_INTERVAL_S = 5.0


def _version() -> str:
    try:
        return version("callgate")
    except PackageNotFoundError:
        return "dev"


class Sidecar:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.server: grpc.aio.Server | None = None
        self.store: SQLiteStore | None = None
        self.registry: Registry | None = None
        self.bound = ""
        self._health = health.aio.HealthServicer()
        self._runner: Runner | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> str:
        """Load everything (any problem raises ConfigError before listening); answers the
        address actually bound."""
        cfg = self.config
        cfg.check()
        auth = (Authenticator.from_file(cfg.auth) if cfg.auth
                else Authenticator.insecure(cfg.insecure_dev_identity))
        if cfg.auth is None:
            log.warning("INSECURE: no --auth; every caller is %r", cfg.insecure_dev_identity)
        self.registry = Registry.load(cfg.tools, limits=cfg.limits())
        policy = load_engine(cfg.policies, prefix=cfg.policy_prefix)
        self.store = await SQLiteStore.open(cfg.sqlite_path(),
                                            busy_timeout_s=cfg.db_busy_timeout_s,
                                            min_free_bytes=cfg.db_min_free_bytes)
        self._runner = Runner(store=self.store, registry=self.registry, policy=policy,
                              limits=cfg.limits())
        server = grpc.aio.server(options=[
            ("grpc.so_reuseport", 0),  # one owner per address: a second serve fails to bind
            ("grpc.max_receive_message_length", cfg.max_message_bytes)])
        add_to_server(
            ToolGatewayService(self._runner, auth, StatusInfo(self.store.name, _version())),
            server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            (SERVICE, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
             reflection.SERVICE_NAME), server)
        self.bound = self._bind(server, cfg.listen)
        await server.start()
        self.server = server
        await self._update_health()
        self._watch = asyncio.create_task(self._health_loop())
        return self.bound

    @staticmethod
    def _bind(server: grpc.aio.Server, listen: str) -> str:
        try:
            port = server.add_insecure_port(listen)
        except RuntimeError as exc:
            raise ConfigError(f"--listen {listen}: cannot listen there (is another callgate "
                              f"or another program using it?): {exc}") from exc
        if listen.startswith("unix:"):
            return listen
        host = listen.rsplit(":", 1)[0]
        return f"{host}:{port}"

    async def _update_health(self) -> None:
        assert self.store is not None and self._runner is not None
        store_ok = await self.store.healthy()
        policy_ok = self._runner.policy.healthy()
        serving = health_pb2.HealthCheckResponse.SERVING
        down = health_pb2.HealthCheckResponse.NOT_SERVING
        await self._health.set("callgate.store", serving if store_ok else down)
        await self._health.set("callgate.policy", serving if policy_ok else down)
        overall = serving if store_ok and policy_ok else down
        await self._health.set("", overall)
        await self._health.set(SERVICE, overall)

    async def _health_loop(self) -> None:
        while True:
            await asyncio.sleep(HEALTH_INTERVAL_S)
            await self._update_health()

    async def stop(self, grace: float = 2.0) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self.server is not None:
            await self.server.stop(grace)
        if self._runner is not None:  # turns being driven finish and commit first
            await self._runner.drain(timeout_s=30.0)
        if self.registry is not None:
            await self.registry.aclose()
        if self.store is not None:
            await self.store.close()


async def serve(config: ServeConfig) -> None:
    """Run in the foreground until SIGINT/SIGTERM."""
    sidecar = Sidecar(config)
    try:
        bound = await sidecar.start()
    except BaseException:
        await sidecar.stop(0)
        raise
    print(f"callgate listening on {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await sidecar.stop()
