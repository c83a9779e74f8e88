"""`callgate demo` drives the travel scenario through a real sidecar and checks each outcome."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from examples.travel.service import TravelService
from gateway.testing import SidecarProcess
from tests.conftest import ROOT, sidecar_env

EXAMPLE_TOOLS = ROOT / "examples" / "travel" / "tools"


def run_demo(tmp_path: Path, travel: TravelService, effects_db: Path,
             token: str) -> subprocess.CompletedProcess[str]:
    """`callgate demo` as a user runs it, against a sidecar with the example set-up."""
    with SidecarProcess(tools=EXAMPLE_TOOLS, policies=ROOT / "policies", db=tmp_path / "d.db",
                        auth=ROOT / "examples" / "auth.yaml",
                        env=sidecar_env(travel, effects_db)) as proc:
        return subprocess.run(
            [sys.executable, "-m", "gateway.cli", "demo", "--target", proc.target,
             "--token", token, "--travel-url", travel.url],
            capture_output=True, text=True, timeout=120)


def test_demo_passes_against_the_example_setup(tmp_path: Path, travel: TravelService,
                                               effects_db: Path) -> None:
    done = run_demo(tmp_path, travel, effects_db, "alice-demo-token")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "call_weather" in done.stdout and "CALL_STATUS_SUCCEEDED" in done.stdout
    assert "0 failed" in done.stdout


def test_demo_fails_when_an_outcome_is_wrong(tmp_path: Path, travel: TravelService,
                                             effects_db: Path) -> None:
    # a caller of another tenant: the policy denies its trains, and the demo must notice
    done = run_demo(tmp_path, travel, effects_db, "gina-demo-token")
    assert done.returncode == 1, done.stdout
