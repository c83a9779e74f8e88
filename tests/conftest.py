"""Shared fixtures: the real travel service, a real sidecar process, gRPC clients."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import tests.support.fuzzing  # noqa: F401  (registers the Hypothesis profiles)
from examples.travel.service import TravelService, start_travel_service
from gateway.client import GatewayClient
from gateway.testing import SidecarProcess

settings.load_profile("bounded")  # `--hypothesis-profile fuzz` (make fuzz) overrides it

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"
POLICIES = ROOT / "policies"
AUTH = SUPPORT / "auth.yaml"


@pytest.fixture(scope="session")
def travel() -> Iterator[TravelService]:
    with start_travel_service() as service:
        yield service


@pytest.fixture
def fresh_travel(travel: TravelService) -> TravelService:
    travel.reset()
    return travel


@pytest.fixture(scope="session")
def tools_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example travel manifests plus the test write tools, in one --tools directory."""
    d = tmp_path_factory.mktemp("tools")
    for src in [*(ROOT / "examples" / "travel" / "tools").glob("*.yaml"),
                *(SUPPORT / "tools").glob("*.yaml")]:
        shutil.copy(src, d / src.name)
    return d


@pytest.fixture(scope="session")
def effects_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("effects") / "effects.db"


def sidecar_env(travel: TravelService, effects_db: Path) -> dict[str, str]:
    return {"CALLGATE_TRAVEL_URL": travel.url, "CALLGATE_TEST_EFFECTS_DB": str(effects_db),
            "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="session")
def sidecar(tmp_path_factory: pytest.TempPathFactory, travel: TravelService, tools_dir: Path,
            effects_db: Path) -> Iterator[SidecarProcess]:
    db = tmp_path_factory.mktemp("store") / "callgate.db"
    with SidecarProcess(tools=tools_dir, policies=POLICIES, db=db, auth=AUTH,
                        env=sidecar_env(travel, effects_db)) as proc:
        yield proc


Connect = Callable[[str], GatewayClient]


@pytest.fixture
def connect(sidecar: SidecarProcess) -> Iterator[Connect]:
    """connect(token) → a client of the shared sidecar (closed after the test)."""
    clients: list[GatewayClient] = []

    def make(token: str) -> GatewayClient:
        client = GatewayClient(sidecar.target, token, timeout_s=30)
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"
