"""`serve --workers 2 --metrics-listen`: one `/metrics` with every worker's samples summed
(Prometheus' multiprocess mode), served by worker 1, the store's gauges once."""

from __future__ import annotations

from pathlib import Path

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, tool_call
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH, POLICIES, sidecar_env
from tests.support.scenarios import TRAIN
from tests.support.scrape import metrics_url, samples, scrape, value

CONNECTIONS = 32  # each its own connection: the kernel spreads them over both workers


def test_every_workers_counts_are_served(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    with SidecarProcess(
        tools=tools_dir,
        policies=POLICIES,
        db=tmp_path / "cg.db",
        auth=AUTH,
        env=sidecar_env(travel, effects_db),
        workers=2,
        extra_args=("--metrics-listen", "127.0.0.1:0"),
    ) as proc:
        url = metrics_url(proc)
        for i in range(CONNECTIONS):
            with GatewayClient(proc.target, "alice-demo-token", own_connection=True) as client:
                (answer,) = client.authorize(
                    tool_call(f"c{i}", "get_train_status", TRAIN)
                ).decisions
                assert answer.decision.verdict == pb.VERDICT_ALLOW
        text = scrape(url)
        found = samples(text)
    # were only the serving worker's samples shown, about half would be missing
    assert (
        value(
            found,
            "callgate_decisions_total",
            verdict="ALLOW",
            tool="get_train_status",
            engine="embedded",
        )
        == CONNECTIONS
    )
    assert (
        value(found, "callgate_grpc_server_handled_total", method="Authorize", code="OK")
        == CONNECTIONS
    )
    assert text.count("\ncallgate_pending_approvals ") == 1
    assert value(found, "callgate_pending_approvals") == 0
