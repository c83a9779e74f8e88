"""`callgate demo` drives the travel and workshop scenarios through a real sidecar and checks
each outcome."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway.client import GatewayClient
from gateway.testing import SidecarProcess
from tests.support.paths import ROOT, example_tools, sidecar_env

Quotas = dict[str, tuple[float, float]]  # a sidecar's quota keys: (used, limit)


def run_demo(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService, effects_db: Path, token: str
) -> tuple[subprocess.CompletedProcess[str], Quotas]:
    """`callgate demo` as a user runs it, against a sidecar with the example set-up; and the
    sidecar's quota keys afterwards, as an operator lists them."""
    with SidecarProcess(
        tools=example_tools(tmp_path / "tools"),
        policies=ROOT / "policies",
        db=tmp_path / "d.db",
        auth=ROOT / "examples" / "auth.yaml",
        env=sidecar_env(travel, effects_db, workshop),
    ) as proc:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gateway.cli",
                "demo",
                "--target",
                proc.target,
                "--token",
                token,
                "--travel-url",
                travel.url,
                "--workshop-url",
                workshop.url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        with GatewayClient(proc.target, "oscar-demo-token") as operator:
            listed = operator.list_quotas(prefix="acme/").quotas
        return done, {q.key: (q.used, q.limit) for q in listed}


def test_demo_passes_against_the_example_setup(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService, effects_db: Path
) -> None:
    done, quotas = run_demo(tmp_path, travel, workshop, effects_db, "alice-demo-token")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "call_weather" in done.stdout and "CALL_STATUS_SUCCEEDED" in done.stdout
    assert "call_book" in done.stdout and "0 failed" in done.stdout
    # the demo's three bookings, in the service's database: one seat, three seats an owner
    # approved, and one seat whose answer was lost (booked once all the same)
    booked = workshop.reservations()
    assert [(b["participant"], b["seats"]) for b in booked] == [
        ("alice", 1),
        ("alice", 3),
        ("alice", 1),
    ]
    assert [b["idempotency_key"].split(":")[1] for b in booked] == [
        "call_book",
        "call_book3",
        "call_lost",
    ]
    assert "approved by olga" in done.stdout
    # the default bundle's quota: availability checks, at most 120 a minute per caller
    assert quotas["acme/calls/check_availability/alice"] == (1, 120)


def test_demo_fails_when_an_outcome_is_wrong(
    tmp_path: Path, travel: TravelService, workshop: WorkshopService, effects_db: Path
) -> None:
    # a caller of another tenant: the policy denies its trains, and the demo must notice
    done, _ = run_demo(tmp_path, travel, workshop, effects_db, "gina-demo-token")
    assert done.returncode == 1, done.stdout
