"""`make run`: the example travel service, the sidecar with the example tools and default
policies, and the demo against them; then the sidecar keeps serving until Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from gateway.app import Sidecar
from gateway.config import ServeConfig
from gateway.demo import run_demo
from gateway.errors import CallgateError

ROOT = Path(__file__).resolve().parent.parent
TRAVEL_PORT = int(os.environ.get("CALLGATE_TRAVEL_PORT", "8765"))
LISTEN = os.environ.get("CALLGATE_LISTEN", "127.0.0.1:50051")
DEMO_TOKEN = "alice-demo-token"


class PortTaken(Exception):
    pass


async def main() -> int:
    from examples.travel.service import start_travel_service

    try:
        travel = start_travel_service(port=TRAVEL_PORT)
    except OSError as exc:
        raise PortTaken(f"the example travel service cannot listen on 127.0.0.1:{TRAVEL_PORT}: "
                        f"{exc.strerror or exc}; stop what uses it or set "
                        "CALLGATE_TRAVEL_PORT to a free port") from exc
    os.environ.setdefault("CALLGATE_TRAVEL_URL", travel.url)
    config = ServeConfig(listen=LISTEN, tools=ROOT / "examples" / "travel" / "tools",
                         policies=ROOT / "policies", auth=ROOT / "examples" / "auth.yaml",
                         db=os.environ.get("CALLGATE_DB", str(ROOT / ".callgate" / "run.db")))
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
    """`make run`: problems starting up are one line on stderr and exit code 2."""
    try:
        return asyncio.run(main())
    except PortTaken as exc:
        print(f"make run: {exc}", file=sys.stderr)
    except CallgateError as exc:
        print(f"make run: {exc.message} (set CALLGATE_LISTEN to another address)",
              file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(run())
