"""`serve --metrics-listen`: a scripted run over real gRPC, then `/metrics` scraped and its
counts checked, and no subject, tenant, run ID, call ID, argument value, token or unknown tool
name anywhere in what it serves."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import tool_call
from gateway.errors import Unauthenticated
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH, POLICIES, sidecar_env
from tests.support.scenarios import TRAIN, WEATHER, by_id
from tests.support.scrape import metrics_url, samples, scrape, value
from tests.support.sidecars import own_sidecar

FOREIGN = {"train_number": "TGV9", "date": "2026-12-01"}
ROGUE_TOOL = "exfiltrate_everything_zq"
SEATS = {"event_id": "ws-acme-1", "participant": "mia", "seats": 3}
RUN_A, RUN_B = f"runa-{uuid.uuid4().hex[:8]}", f"runb-{uuid.uuid4().hex[:8]}"
CALLS = ("callzq-1", "callzq-2", "callzq-3", "callzq-4", "callzq-5", "callzq-6", "callzq-7")
SECRETS = [
    RUN_A,
    RUN_B,
    *CALLS,
    ROGUE_TOOL,
    "alice",
    "mia",
    "acme",
    TRAIN["train_number"],
    WEATHER["city"],
    TRAIN["date"],
    "TGV9",
    "ws-acme-1",
    "-token",
]


@pytest.fixture(scope="module")
def sidecar(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Iterator[SidecarProcess]:
    with own_sidecar(
        tmp_path_factory.mktemp("metrics"),
        travel,
        tools_dir,
        effects_db,
        workshop=workshop,
        extra=("--metrics-listen", "127.0.0.1:0"),
    ) as proc:
        yield proc


def scripted_run(sidecar: SidecarProcess) -> None:
    """Two reads; a denial and an unknown tool; a booking that waits for approval; an
    Authorize; a refused token."""
    with sidecar.client("alice-demo-token") as alice, sidecar.client("mia-demo-token") as mia:
        alice.start_run(run_id=RUN_A)
        ok = alice.submit_calls(
            RUN_A,
            "turn-1",
            tool_call(CALLS[0], "get_train_status", TRAIN),
            tool_call(CALLS[1], "get_weather", WEATHER),
        )
        assert {r.status for r in ok.results} == {pb.CALL_STATUS_SUCCEEDED}
        no = by_id(
            alice.submit_calls(
                RUN_A,
                "turn-2",
                tool_call(CALLS[2], "get_train_status", FOREIGN),
                tool_call(CALLS[3], ROGUE_TOOL, TRAIN),
            )
        )
        assert (no[CALLS[2]].error.code, no[CALLS[3]].error.code) == (
            "policy_denied",
            "unknown_tool",
        )
        mia.start_run(run_id=RUN_B)
        paused = mia.submit_calls(
            RUN_B,
            "turn-1",
            tool_call(CALLS[4], "check_availability", {"event_id": "ws-acme-1"}),
            tool_call(CALLS[5], "reserve_seat", SEATS),
        )
        assert paused.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
        (allowed,) = alice.authorize(tool_call(CALLS[6], "get_train_status", TRAIN)).decisions
        assert allowed.decision.verdict == pb.VERDICT_ALLOW
    with sidecar.client("no-such-token") as stranger, pytest.raises(Unauthenticated) as refused:
        stranger.get_status()
    assert refused.value.grpc_status == "UNAUTHENTICATED"


def test_a_scripted_run_is_counted_and_names_nothing_private(
    sidecar: SidecarProcess, fresh_travel: TravelService, fresh_workshop: WorkshopService
) -> None:
    url = metrics_url(sidecar)
    before = samples(scrape(url))
    assert value(before, "callgate_pending_approvals") == 0
    scripted_run(sidecar)
    text = scrape(url)
    found = samples(text)

    def delta(name: str, **labels: str) -> float:
        return value(found, name, **labels) - value(before, name, **labels)

    decisions = "callgate_decisions_total"
    assert delta(decisions, verdict="ALLOW", tool="get_train_status", engine="embedded") == 2
    assert delta(decisions, verdict="ALLOW", tool="get_weather", engine="embedded") == 1
    assert delta(decisions, verdict="DENY", tool="get_train_status", engine="embedded") == 1
    assert (
        delta(decisions, verdict="APPROVAL_REQUIRED", tool="reserve_seat", engine="embedded") == 1
    )
    assert delta("callgate_policy_eval_duration_seconds_count", engine="embedded") == 6
    results = "callgate_call_results_total"
    assert delta(results, status="SUCCEEDED", code="none", tool="get_train_status") == 1
    assert delta(results, status="SUCCEEDED", code="none", tool="check_availability") == 1
    assert delta(results, status="REJECTED", code="policy_denied", tool="get_train_status") == 1
    assert delta(results, status="REJECTED", code="unknown_tool", tool="(unknown)") == 1
    assert (
        sum(v for (name, _), v in found.items() if name == results)
        - sum(v for (name, _), v in before.items() if name == results)
        == 5
    )  # not the pending one
    tools = "callgate_tool_duration_seconds_count"
    assert delta(tools, tool="get_weather", outcome="SUCCEEDED") == 1
    assert delta(tools, tool="get_train_status", outcome="SUCCEEDED") == 1
    turns = "callgate_turns_total"
    assert delta(turns, next_action="CONTINUE", provider="none") == 2
    assert delta(turns, next_action="PAUSED_FOR_APPROVAL", provider="none") == 1
    assert value(found, "callgate_pending_approvals") == 1
    assert value(found, "callgate_unknown_outcome_calls") == 0
    assert delta("callgate_store_commit_duration_seconds_count", store="sqlite") >= 5
    handled = "callgate_grpc_server_handled_total"
    assert delta(handled, method="SubmitTurn", code="OK") == 3
    assert delta(handled, method="Authorize", code="OK") == 1
    assert delta(handled, method="GetStatus", code="UNAUTHENTICATED") == 1
    assert delta("callgate_grpc_server_handling_seconds_count", method="StartRun") == 2
    assert value(found, "callgate_shadow_disagreements_total") == 0
    for secret in SECRETS:
        assert secret not in text, f"/metrics names {secret!r}"


def test_a_paused_turn_counts_once(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService
) -> None:
    """A turn that pauses for an approval and settles again once it is decided is one turn,
    counted by the NextAction it first settled with."""
    url = metrics_url(sidecar)
    run_id = f"runc-{uuid.uuid4().hex[:8]}"
    with sidecar.client("mia-demo-token") as mia, sidecar.client("olga-demo-token") as olga:
        mia.start_run(run_id=run_id)
        before = samples(scrape(url))
        paused = mia.submit_calls(run_id, "turn-1", tool_call("w1", "reserve_seat", SEATS))
        assert paused.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
        answer = olga.decide_approval(
            by_id(paused)["w1"].approval_id, approve=True, reason="checked"
        )
        assert answer.result.status == pb.CALL_STATUS_SUCCEEDED
        assert mia.resume_run(run_id).next == pb.NEXT_ACTION_CONTINUE  # settled again
        found = samples(scrape(url))
    turns = [
        (key, v - before.get(key, 0))
        for key, v in found.items()
        if key[0] == "callgate_turns_total" and v != before.get(key, 0)
    ]
    assert len(turns) == 1 and turns[0][1] == 1, turns
    assert (
        value(found, "callgate_turns_total", next_action="PAUSED_FOR_APPROVAL", provider="none")
        - value(before, "callgate_turns_total", next_action="PAUSED_FOR_APPROVAL", provider="none")
        == 1
    )


def test_a_turn_paused_on_an_unknown_outcome_counts_once(
    sidecar: SidecarProcess, fresh_workshop: WorkshopService
) -> None:
    """The same for a turn an operator's ResolveCall settles again."""
    url = metrics_url(sidecar)
    run_id = f"rund-{uuid.uuid4().hex[:8]}"
    fresh_workshop.control(
        reserve_seat={"apply_then_drop": True, "times": 1}, lookup={"status": 500}
    )  # booked, its answer lost, no look-up
    with sidecar.client("mia-demo-token") as mia, sidecar.client("oscar-demo-token") as oscar:
        mia.start_run(run_id=run_id)
        before = samples(scrape(url))
        paused = mia.submit_calls(
            run_id,
            "turn-1",
            tool_call(
                "w1", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": 1}
            ),
        )
        assert paused.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        oscar.resolve_call(run_id, "w1", pb.CALL_STATUS_FAILED, reason="not in the database")
        assert mia.resume_run(run_id).next == pb.NEXT_ACTION_CONTINUE  # settled again
        found = samples(scrape(url))
    turns = {
        dict(key[1])["next_action"]: v - before.get(key, 0)
        for key, v in found.items()
        if key[0] == "callgate_turns_total" and v != before.get(key, 0)
    }
    assert turns == {"PAUSED_UNKNOWN_OUTCOME": 1}


def test_a_reload_is_counted(
    tmp_path: Path, travel: TravelService, tools_dir: Path, effects_db: Path
) -> None:
    import shutil

    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    with SidecarProcess(
        tools=tools_dir,
        policies=policies,
        db=tmp_path / "cg.db",
        auth=AUTH,
        env=sidecar_env(travel, effects_db),
        extra_args=("--metrics-listen", "127.0.0.1:0", "--policy-poll-interval", "0.05"),
    ) as proc:
        url = metrics_url(proc)
        (policies / "broken.rego").write_text("package callgate\nthis is not rego\n")
        reloads = "callgate_policy_reloads_total"
        assert _eventually(lambda: value(samples(scrape(url)), reloads, result="rejected") == 1)
        (policies / "broken.rego").unlink()  # the serving revision again
        assert _eventually(lambda: value(samples(scrape(url)), reloads, result="unchanged") == 1)


def _eventually(condition: object, timeout_s: float = 30) -> bool:
    import time

    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False
