"""Export: one JSON object per record with OPA's decision-log fields and callgate's own."""

from __future__ import annotations

import json

from gateway.audit import export
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditRecord

KEY = AuditKey(b"k" * 32)


def record(**changes: object) -> AuditRecord:
    base: dict[str, object] = dict(
        seq=7,
        time="2026-11-29T21:00:00.000000Z",
        kind="decision",
        subject="tina",
        tenant="acme",
        run_id="r1",
        turn_id="t1",
        call_id="c1",
        provider="openai.responses",
        tool="pay",
        tool_version="1",
        arguments_summary_json=json.dumps(
            {"payer": {"email": KEY.mask("ann@example.com")}, "amount": 3}
        ),
        arguments_sha256="hmac-sha256:x",
        decision_json=json.dumps(
            {
                "verdict": "APPROVAL_REQUIRED",
                "reasons": ["writes need approval"],
                "policy_revision": "sha256:rev",
                "approval_ttl_s": 60,
                "error": "",
                "input_sha256": "hmac-sha256:y",
            }
        ),
        status="PENDING_APPROVAL",
        error_code="approval_required",
        execution_count=0,
        policy_revision="sha256:rev",
        prev_hash="p" * 64,
        hash="h" * 64,
        verdict="APPROVAL_REQUIRED",
        actor="tina",
        actor_tenant="acme",
        approval_id="apr_1",
        message="",
        detail_json="",
        layout=4,
        key_id=KEY.key_id,
        seal="s" * 64,
    )
    base.update(changes)
    return AuditRecord(**base)  # type: ignore[arg-type]


def test_a_decision_reads_like_an_opa_decision_log_entry() -> None:
    line = json.loads(export.line(record()))
    assert line["decision_id"] == "h" * 64 and line["path"] == "callgate/decision"
    assert line["result"] == {
        "allow": False,
        "approval_required": True,
        "reasons": ["writes need approval"],
    }
    assert (line["timestamp"], line["revision"], line["requested_by"]) == (
        "2026-11-29T21:00:00.000000Z",
        "sha256:rev",
        "tina",
    )
    assert line["input"]["call"]["args"]["amount"] == 3
    assert line["input"]["identity"] == {"subject": "tina", "tenant": "acme"}
    assert line["masked"] == ["/input/call/args/payer/email"]
    assert line["labels"]["app"] == "callgate"
    own = line["callgate"]
    assert (own["seq"], own["kind"], own["approval_id"], own["seal"]) == (
        7,
        "decision",
        "apr_1",
        "s" * 64,
    )
    assert own["decision"]["input_sha256"] == "hmac-sha256:y"


def test_records_without_a_decision_or_a_run() -> None:
    line = json.loads(
        export.line(
            record(
                kind="policy", decision_json=None, run_id="", actor="", arguments_summary_json=""
            )
        )
    )
    assert line["result"] is None and line["input"]["run"] is None
    assert (line["path"], line["requested_by"], line["masked"]) == (
        "callgate/policy",
        "callgate",
        [],
    )
