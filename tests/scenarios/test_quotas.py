"""A quota holds exactly across replicas under concurrent load.

The default bundle with its example quota switched on (at most 10 seat reservations per
participant a day): 40 reservations of one participant arrive at once, spread over two sidecar
processes sharing one PostgreSQL schema, or over the two workers of `serve --workers 2` on
one SQLite file. Exactly 10 run — counted in the workshop service's own database — and 30 are
rejected `quota_exceeded`. Operators then see the usage and reset it (`callgate quotas`).
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from tests.support.commands import callgate
from tests.support.paths import AUTH, POLICIES, NewDb, sidecar_env
from tests.support.sidecars import key_for

LIMIT = 10
CALLS = 40
KEY = "acme/seat_reservations/mia"


def quota_policies(into: Path, per_day: int) -> Path:
    shutil.copytree(POLICIES, into)
    data = json.loads((into / "data.json").read_text())
    data["callgate"]["config"]["workshop"]["reservations_per_day"] = per_day
    (into / "data.json").write_text(json.dumps(data))
    return into


@contextmanager
def serving(
    db_kind: str,
    db: str,
    policies: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Iterator[list[str]]:
    """Two serving processes on one store: two replicas (PostgreSQL) or `--workers 2`
    (SQLite); answers the targets to spread the clients over."""
    common = {
        "tools": tools_dir,
        "policies": policies,
        "db": db,
        "auth": AUTH,
        "audit_key": key_for(db),
        "env": sidecar_env(travel, effects_db, workshop),
    }
    with ExitStack() as stack:
        if db_kind == "sqlite":
            proc = stack.enter_context(SidecarProcess(**common, workers=2))  # type: ignore[arg-type]
            yield [proc.target]
        else:
            procs = [
                stack.enter_context(SidecarProcess(**common))  # type: ignore[arg-type]
                for _ in range(2)
            ]
            yield [p.target for p in procs]


def reserve(target: str, start: threading.Barrier, i: int) -> pb.CallResult:
    run_id = f"quota-{uuid.uuid4().hex[:10]}"
    seat = {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}
    with GatewayClient(target, "mia-demo-token", timeout_s=120, own_connection=True) as c:
        c.start_run(run_id=run_id)
        start.wait(timeout=60)
        out = c.submit_calls(run_id, "t1", tool_call(f"w{i}", "reserve_seat", seat))
    (result,) = out.results
    return result


def test_forty_concurrent_reservations_against_a_limit_of_ten(
    db_kind: str,
    new_db: NewDb,
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    policies = quota_policies(tmp_path / "policies", LIMIT)
    with (
        serving(
            db_kind, new_db(), policies, travel, tools_dir, effects_db, fresh_workshop
        ) as targets,
        ThreadPoolExecutor(CALLS) as pool,
    ):
        start = threading.Barrier(CALLS)
        results = list(
            pool.map(lambda i: reserve(targets[i % len(targets)], start, i), range(CALLS))
        )
        ran = [r for r in results if r.status == pb.CALL_STATUS_SUCCEEDED]
        refused = [r for r in results if r.error.code == "quota_exceeded"]
        assert (len(ran), len(refused)) == (LIMIT, CALLS - LIMIT)
        assert all(
            r.status == pb.CALL_STATUS_REJECTED
            and r.execution_count == 0
            and f"quota '{KEY}' is exhausted: 10 of 10 used" in r.error.message
            for r in refused
        )
        assert len(fresh_workshop.reservations()) == LIMIT  # the service's own count

        env = {"CALLGATE_TARGET": targets[0]}
        listed = callgate(
            "quotas", "--key", "acme/", "--json", env={**env, "CALLGATE_TOKEN": "audrey-demo-token"}
        )
        assert listed.returncode == 0, listed.stderr
        (usage,) = json.loads(listed.stdout)["quotas"]
        assert (usage["key"], usage["used"], usage["limit"], usage["reservations"]) == (
            KEY,
            10,
            10,
            "10",
        )
        refused_cli = callgate(
            "quotas", "--key", "acme/", env={**env, "CALLGATE_TOKEN": "mia-demo-token"}
        )
        assert refused_cli.returncode == 1 and "may_read_quotas refused" in refused_cli.stderr
        reset = callgate(
            "quotas",
            "reset",
            KEY,
            "--reason",
            "load test over",
            env={**env, "CALLGATE_TOKEN": "oscar-demo-token"},
        )
        assert reset.returncode == 0, reset.stderr
        assert "10 reservation(s) given back" in reset.stdout
        again = reserve(targets[-1], threading.Barrier(1), CALLS)
        assert again.status == pb.CALL_STATUS_SUCCEEDED
        with GatewayClient(targets[0], "audrey-demo-token") as auditor:
            kinds = [r.kind for r in auditor.query_audit(subject="oscar")]
        assert "quota" in kinds


def test_an_unknown_key_cannot_be_reset(sidecar: SidecarProcess) -> None:
    done = callgate(
        "quotas",
        "reset",
        "acme/never",
        "--reason",
        "x",
        env={"CALLGATE_TARGET": sidecar.target, "CALLGATE_TOKEN": "oscar-demo-token"},
    )
    assert done.returncode == 1 and "quota_not_found" in done.stderr
