"""`make run`: the example travel and workshop services, the sidecar with their tools and the
default policies, and the demo against them; then the sidecar keeps serving until Ctrl-C.

Ports come from CALLGATE_TRAVEL_PORT (default 8765), CALLGATE_WORKSHOP_PORT (default 8766) and
CALLGATE_LISTEN (default 127.0.0.1:50051); a port already in use is named with the variable
that moves it. The sidecar's settings read the variables `callgate serve` reads:
CALLGATE_TOOLS (default: both examples' manifests, copied into .callgate/tools),
CALLGATE_POLICIES (default policies/), CALLGATE_AUTH (default examples/auth.yaml) and
CALLGATE_DB (default .callgate/run.db). What it uses, and which variable changes each, is
printed before anything starts. State (the run store, the workshop's database) lives in
.callgate/.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from gateway.cli.common import UsageError, configure_logging, listen_address
from gateway.cli.demo import run_demo
from gateway.errors import ConfigError
from gateway.service.app import Sidecar
from gateway.service.config import ServeConfig

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".callgate"
DEMO_TOKEN = "alice-demo-token"  # examples/auth.yaml: a traveler and member of acme
DEMO_APPROVER = "olga-demo-token"  # an owner of acme: approves the demo's larger booking
EXAMPLES = ("travel", "workshop")


def example_tools() -> Path:
    """Every example's manifests in one --tools directory (rebuilt on each start)."""
    tools = STATE / "tools"
    shutil.rmtree(tools, ignore_errors=True)
    tools.mkdir(parents=True)
    for name in EXAMPLES:
        for manifest in (ROOT / "examples" / name / "tools").glob("*.yaml"):
            shutil.copy(manifest, tools / manifest.name)
    return tools


@dataclass(frozen=True)
class DevSettings:
    travel_port: int
    workshop_port: int
    listen: str
    db: str
    tools: Path | None = None  # None: the examples' manifests
    policies: Path = ROOT / "policies"
    auth: Path = ROOT / "examples" / "auth.yaml"

    def lines(self) -> list[str]:
        """What make run uses, each with the variable that changes it."""
        tools = (
            f"{self.tools} (CALLGATE_TOOLS)"
            if self.tools is not None
            else "the examples' five, from examples/travel/tools and examples/workshop/tools, "
            "copied into .callgate/tools (CALLGATE_TOOLS names another directory)"
        )
        return [
            f"travel service    127.0.0.1:{self.travel_port} (CALLGATE_TRAVEL_PORT)",
            f"workshop service  127.0.0.1:{self.workshop_port} (CALLGATE_WORKSHOP_PORT), "
            "its bookings in .callgate/workshop.db",
            f"sidecar           {self.listen} (CALLGATE_LISTEN)",
            f"tools             {tools}",
            f"policies          {_shown(self.policies)} (CALLGATE_POLICIES)",
            f"identities        {_shown(self.auth)} (CALLGATE_AUTH)",
            f"run store         {self.db} (CALLGATE_DB)",
        ]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _path(
    env: dict[str, str] | os._Environ[str], name: str, default: Path, *, directory: bool
) -> Path:
    raw = env.get(name)
    if not raw:
        return default
    path = Path(raw).expanduser()
    if directory and not path.is_dir():
        raise UsageError(f"{name}={raw!r}: no such directory")
    if not directory and not path.is_file():
        raise UsageError(f"{name}={raw!r}: no such file")
    return path


def _port(env: dict[str, str] | os._Environ[str], name: str, default: str) -> int:
    raw = env.get(name) or default
    if not raw.isdigit() or int(raw) > 65535:
        raise UsageError(f"{name}={raw!r}: expected a port number (0-65535; 0 picks a free one)")
    return int(raw)


def settings(env: dict[str, str] | os._Environ[str] = os.environ) -> DevSettings:
    travel_port = _port(env, "CALLGATE_TRAVEL_PORT", "8765")
    workshop_port = _port(env, "CALLGATE_WORKSHOP_PORT", "8766")
    listen = env.get("CALLGATE_LISTEN") or ServeConfig.model_fields["listen"].default
    try:
        listen_address(listen)
    except ValueError as exc:
        raise UsageError(f"CALLGATE_LISTEN={listen!r}: {exc}") from None
    db = env.get("CALLGATE_DB") or str(STATE / "run.db")
    tools = _path(env, "CALLGATE_TOOLS", STATE / "tools", directory=True)
    return DevSettings(
        travel_port,
        workshop_port,
        listen,
        db,
        tools=tools if env.get("CALLGATE_TOOLS") else None,
        policies=_path(env, "CALLGATE_POLICIES", ROOT / "policies", directory=True),
        auth=_path(env, "CALLGATE_AUTH", ROOT / "examples" / "auth.yaml", directory=False),
    )


def check_ports(dev: DevSettings) -> None:
    """Name a busy port and the variable that moves it, before anything starts."""
    for port, what, variable in (
        (dev.travel_port, "travel", "CALLGATE_TRAVEL_PORT"),
        (dev.workshop_port, "workshop", "CALLGATE_WORKSHOP_PORT"),
    ):
        if _in_use("127.0.0.1", port):
            raise UsageError(
                f"port {port} (the example {what} service) is in use: stop what "
                f"holds it, or choose another port, e.g. {variable}={_next(port)} "
                "make run"
            )
    if dev.listen.startswith("unix:"):
        return
    host, _, listen_port = dev.listen.rpartition(":")
    if _in_use(host.strip("[]"), int(listen_port)):
        raise UsageError(
            f"port {listen_port} (the sidecar, {dev.listen}) is in use: stop what "
            f"holds it, or choose another address, e.g. "
            f"CALLGATE_LISTEN={host}:{_next(int(listen_port))} make run"
        )


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
    from examples.workshop.service import start_workshop_service

    STATE.mkdir(exist_ok=True)
    travel = start_travel_service(port=dev.travel_port)
    workshop = start_workshop_service(STATE / "workshop.db", port=dev.workshop_port)
    for variable, service in (("CALLGATE_TRAVEL_URL", travel), ("CALLGATE_WORKSHOP_URL", workshop)):
        given = os.environ.setdefault(variable, service.url)
        if given != service.url:  # the manifests read it: say where their calls go
            print(
                f"  note: {variable}={given} is set: the example tools call it, not the "
                f"service started at {service.url}",
                flush=True,
            )
    config = ServeConfig(
        listen=dev.listen,
        tools=dev.tools or example_tools(),
        policies=dev.policies,
        auth=dev.auth,
        db=dev.db,
    )
    sidecar = Sidecar(config)
    try:
        bound = await sidecar.start()
        print(
            f"callgate listening on {bound}; example tools at {travel.url} (travel) and "
            f"{workshop.url} (workshop)",
            flush=True,
        )
        code = await asyncio.to_thread(
            lambda: run_demo(
                bound, DEMO_TOKEN, travel.url, workshop.url, approver_token=DEMO_APPROVER
            )
        )
        print(
            f"\nthe sidecar keeps serving on {bound} (token {DEMO_TOKEN}); Ctrl-C stops it",
            flush=True,
        )
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
        workshop.close()
        travel.close()


def run() -> int:
    configure_logging()
    try:
        dev = settings()
        check_ports(dev)
        print("make run uses:", *(f"  {line}" for line in dev.lines()), sep="\n", flush=True)
        return asyncio.run(main(dev))
    except (UsageError, ConfigError) as err:
        print(f"make run: {err.report() if isinstance(err, ConfigError) else err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
