"""`make run`: the example travel and workshop services, the sidecar with their tools and the
default policies, and the demo against them; then the sidecar keeps serving until Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

from gateway.app import Sidecar
from gateway.config import ServeConfig
from gateway.demo import run_demo

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".callgate"
TRAVEL_PORT = int(os.environ.get("CALLGATE_TRAVEL_PORT", "8765"))
WORKSHOP_PORT = int(os.environ.get("CALLGATE_WORKSHOP_PORT", "8766"))
LISTEN = os.environ.get("CALLGATE_LISTEN", "127.0.0.1:50051")
DEMO_TOKEN = "alice-demo-token"
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


async def main() -> int:
    from examples.travel.service import start_travel_service
    from examples.workshop.service import start_workshop_service

    STATE.mkdir(exist_ok=True)
    travel = start_travel_service(port=TRAVEL_PORT)
    workshop = start_workshop_service(STATE / "workshop.db", port=WORKSHOP_PORT)
    os.environ.setdefault("CALLGATE_TRAVEL_URL", travel.url)
    os.environ.setdefault("CALLGATE_WORKSHOP_URL", workshop.url)
    config = ServeConfig(listen=LISTEN, tools=example_tools(), policies=ROOT / "policies",
                         auth=ROOT / "examples" / "auth.yaml",
                         db=os.environ.get("CALLGATE_DB", str(STATE / "run.db")))
    sidecar = Sidecar(config)
    try:
        bound = await sidecar.start()
        print(f"callgate listening on {bound}; example tools at {travel.url} (travel) and "
              f"{workshop.url} (workshop)", flush=True)
        code = await asyncio.to_thread(run_demo, bound, DEMO_TOKEN, travel.url, workshop.url)
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
        workshop.close()
        travel.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
