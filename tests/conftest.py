"""Shared fixtures: the real travel and workshop services, a real sidecar process, gRPC
clients, and fresh stores of either kind (SQLite, PostgreSQL)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import tests.support.fuzzing  # noqa: F401  (registers the Hypothesis profiles)
from examples.travel.service import TravelService, start_travel_service
from examples.workshop.service import WorkshopService, start_workshop_service
from gateway.client import GatewayClient
from gateway.testing import SidecarProcess
from tests.support import databases
from tests.support.paths import AUTH, POLICIES, SUPPORT, Connect, NewDb, example_tools, sidecar_env

settings.load_profile("bounded")  # `--hypothesis-profile fuzz` (make fuzz) overrides it


@pytest.fixture(scope="session")
def travel() -> Iterator[TravelService]:
    with start_travel_service() as service:
        yield service


@pytest.fixture
def fresh_travel(travel: TravelService) -> TravelService:
    travel.reset()
    return travel


@pytest.fixture(scope="session")
def workshop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkshopService]:
    db = tmp_path_factory.mktemp("workshop") / "workshop.db"
    with start_workshop_service(db) as service:
        yield service


@pytest.fixture
def fresh_workshop(workshop: WorkshopService) -> WorkshopService:
    workshop.reset()
    return workshop


@pytest.fixture(scope="session")
def tools_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example manifests plus the test write tools, in one --tools directory."""
    return example_tools(tmp_path_factory.mktemp("tools"), SUPPORT / "tools")


@pytest.fixture(scope="session")
def effects_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("effects") / "effects.db"


@pytest.fixture(scope="session")
def sidecar(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Iterator[SidecarProcess]:
    db = tmp_path_factory.mktemp("store") / "callgate.db"
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=db,
        auth=AUTH,
        env=sidecar_env(travel, effects_db, workshop),
    ) as proc:
        yield proc


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A PostgreSQL database of this test session's own (its URL); missing server: error."""
    with databases.session_database() as url:
        yield url


@pytest.fixture(params=databases.KINDS)
def db_kind(request: pytest.FixtureRequest) -> str:
    """Each test using it runs once per store kind."""
    return str(request.param)


@pytest.fixture
def new_db(db_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> NewDb:
    """new_db() → the --db of a fresh, empty store of db_kind (call it again for another)."""
    count = 0

    def make() -> str:
        nonlocal count
        count += 1
        if db_kind == "sqlite":
            return str(tmp_path / f"store-{count}.db")
        return databases.new_schema(request.getfixturevalue("pg_database"))

    return make


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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """An `opa` the tests started (tests/support/opa.py) ends with them."""
    from tests.support.opa import stop_live_opa

    stop_live_opa()
