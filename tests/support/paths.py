"""Where the tests find the repository's parts, the example tools copied for a sidecar, the
environment a sidecar with them needs, and the types of the shared fixtures."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway.client import GatewayClient

ROOT = Path(__file__).resolve().parents[2]  # the repository
SUPPORT = ROOT / "tests" / "support"
POLICIES = ROOT / "policies"
AUTH = ROOT / "examples" / "auth.yaml"  # the demo identities: one cast for demo, docs, tests


def example_tools(into: Path, *extra: Path) -> Path:
    """The travel and workshop manifests (plus extra directories') in one --tools directory."""
    into.mkdir(parents=True, exist_ok=True)
    for folder in (
        ROOT / "examples" / "travel" / "tools",
        ROOT / "examples" / "workshop" / "tools",
        *extra,
    ):
        for src in folder.glob("*.yaml"):
            shutil.copy(src, into / src.name)
    return into


def sidecar_env(
    travel: TravelService, effects_db: Path, workshop: WorkshopService | None = None
) -> dict[str, str]:
    env = {
        "CALLGATE_TRAVEL_URL": travel.url,
        "CALLGATE_TEST_EFFECTS_DB": str(effects_db),
        "PYTHONPATH": str(ROOT),
    }
    if workshop is not None:
        env["CALLGATE_WORKSHOP_URL"] = workshop.url
    return env


NewDb = Callable[[], str]


Connect = Callable[[str], GatewayClient]
