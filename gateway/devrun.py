"""`make run`: the example travel service, the sidecar with the example tools and default
policies, and the demo against them; then the sidecar keeps serving until Ctrl-C.

Ports come from CALLGATE_TRAVEL_PORT (default 8765) and CALLGATE_LISTEN (default
127.0.0.1:50051); a port already in use is named with the variable that moves it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from gateway.app import Sidecar
from gateway.config import ServeConfig
from gateway.demo import run_demo
from gateway.errors import ConfigError
from gateway.flags import UsageError, listen_address

ROOT = Path(__file__).resolve().parent.parent
DEMO_TOKEN = "alice-demo-token"


@dataclass(frozen=True)
class DevSettings:
    travel_port: int
    listen: str
    db: str


def settings(env: dict[str, str] | os._Environ[str] = os.environ) -> DevSettings:
    raw_port = env.get("CALLGATE_TRAVEL_PORT") or "8765"
    if not raw_port.isdigit() or int(raw_port) > 65535:
        raise UsageError(f"CALLGATE_TRAVEL_PORT={raw_port!r}: expected a port number "
                         "(0-65535; 0 picks a free one)")
    listen = env.get("CALLGATE_LISTEN") or "127.0.0.1:50051"
    try:
        listen_address(listen)
    except ValueError as exc:
        raise UsageError(f"CALLGATE_LISTEN={listen!r}: {exc}") from None
    db = env.get("CALLGATE_DB") or str(ROOT / ".callgate" / "run.db")
    return DevSettings(int(raw_port), listen, db)


def check_ports(dev: DevSettings) -> None:
    """Name a busy port and the variable that moves it, before anything starts."""
    if _in_use("127.0.0.1", dev.travel_port):
        raise UsageError(f"port {dev.travel_port} (the example travel service) is in use: stop "
                         f"what holds it, or choose another port, e.g. "
                         f"CALLGATE_TRAVEL_PORT={_next(dev.travel_port)} make run")
    if dev.listen.startswith("unix:"):
        return
    host, _, port = dev.listen.rpartition(":")
    if _in_use(host.strip("[]"), int(port)):
        raise UsageError(f"port {port} (the sidecar, {dev.listen}) is in use: stop what holds "
                         f"it, or choose another address, e.g. "
                         f"CALLGATE_LISTEN={host}:{_next(int(port))} make run")


def _in_use(host: str, port: int) -> bool:
    if port == 0:
        return False
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "busy"
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _next(port: int) -> int:
    return port + 1 if port < 65535 else 1024


async def main(dev: DevSettings) -> int:
    from examples.travel.service import start_travel_service

    travel = start_travel_service(port=dev.travel_port)
    os.environ.setdefault("CALLGATE_TRAVEL_URL", travel.url)
    config = ServeConfig(listen=dev.listen, tools=ROOT / "examples" / "travel" / "tools",
                         policies=ROOT / "policies", auth=ROOT / "examples" / "auth.yaml",
                         db=dev.db)
    sidecar = Sidecar(config)
    try:
        bound = await sidecar.start()
        print(f"callgate listening on {bound}; example tools at {travel.url}", flush=True)
        code = await asyncio.to_thread(run_demo, bound, DEMO_TOKEN, travel.url)
        print(f"\nthe sidecar keeps serving on {bound} (token {DEMO_TOKEN}); Ctrl-C stops it",
              flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if os.environ.get("CALLGATE_RUN_ONCE"):
            stop.set()
        await stop.wait()
        return code
    finally:
        await sidecar.stop()
        travel.close()


def run() -> int:
    try:
        dev = settings()
        check_ports(dev)
        return asyncio.run(main(dev))
    except (UsageError, ConfigError) as err:
        print(f"make run: {err.message if isinstance(err, ConfigError) else err}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
