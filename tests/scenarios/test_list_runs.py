"""ListRuns over gRPC: a caller's own runs newest first, by state, page by page; another
subject's runs only as the policy's may_list_runs allows, and a refusal that says so."""

from __future__ import annotations

import uuid

import pytest

from gateway import pb
from gateway.client import GatewayClient, error_code
from gateway.errors import InvalidRequest, PermissionDenied
from tests.support.paths import Connect


def listed(client: GatewayClient, **fields: object) -> pb.ListRunsResponse:
    return client.list_runs(**fields)


def test_a_callers_own_runs_newest_first_by_state_and_page(connect: Connect) -> None:
    mia = connect("mia-demo-token")
    tag = uuid.uuid4().hex[:8]
    ids = [f"lr-{tag}-{i}" for i in range(3)]
    for run_id in ids:
        mia.start_run(run_id=run_id)
    mia.submit_turn(run_id=ids[1], turn_id="t1", final=pb.FinalAnswer(text="done"))
    mine = [r.run_id for r in listed(mia, page_size=500).runs if r.run_id.startswith("lr-" + tag)]
    assert mine == ids[::-1]
    done = listed(mia, state=[pb.RUN_STATE_COMPLETED], page_size=500).runs
    assert ids[1] in {r.run_id for r in done} and all(
        r.state == pb.RUN_STATE_COMPLETED and r.subject == "mia" for r in done
    )
    seen: list[str] = []
    token = ""
    while True:
        page = listed(mia, page_size=1, page_token=token)
        seen += [r.run_id for r in page.runs]
        token = page.next_page_token
        if not token:
            break
    assert [s for s in seen if s in ids] == ids[::-1] and len(seen) == len(set(seen))
    assert not listed(mia).runs[0].calls  # summaries only: GetRun reads one in full


def test_another_subjects_runs_need_the_policys_grant(connect: Connect) -> None:
    mia, gina = connect("mia-demo-token"), connect("gina-demo-token")
    run_id = f"lr-{uuid.uuid4().hex[:8]}"
    mia.start_run(run_id=run_id)
    with pytest.raises(PermissionDenied) as err:
        listed(connect("olga-demo-token"), subject="mia")
    assert err.value.grpc_status == "PERMISSION_DENIED"
    assert error_code(err.value) == "permission_denied"
    assert "may_list_runs" in err.value.message
    assert "operator" in err.value.message
    operator = listed(connect("oscar-demo-token"), subject="mia", page_size=500).runs
    assert run_id in {r.run_id for r in operator}
    tenant = listed(connect("audrey-demo-token"), every_subject=True, page_size=500).runs
    assert run_id in {r.run_id for r in tenant} and {r.tenant for r in tenant} == {"acme"}
    assert run_id not in {r.run_id for r in listed(gina, page_size=500).runs}


@pytest.mark.parametrize(
    "fields,code",
    [
        ({"page_token": "garbage"}, "invalid_page_token"),
        ({"page_size": -1}, "invalid_argument"),
        ({"state": [42]}, "invalid_argument"),
        ({"subject": "mia", "every_subject": True}, "invalid_argument"),
    ],
)
def test_a_bad_listing_request_is_invalid_argument(
    connect: Connect, fields: dict[str, object], code: str
) -> None:
    with pytest.raises(InvalidRequest) as err:
        listed(connect("mia-demo-token"), **fields)
    assert err.value.grpc_status == "INVALID_ARGUMENT"
    assert error_code(err.value) == code
