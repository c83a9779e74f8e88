"""Redacting by JSON pointer: the marker in place, the mask of each removed value, and a
pointer to nowhere withholding (fail closed)."""

from __future__ import annotations

import json
from typing import Any

from gateway.errors import CallCode
from gateway.executors.base import ExecutionResult
from gateway.model import CallRecord, CallStatus, RunRecord, RunState
from gateway.run.deliver import REDACTED, Deliverer
from gateway.tools import Registry
from tests.support.harness import ALICE, ScriptedPolicy, manifests
from tests.support.runs import TRAIN

OUTPUT = {"a": {"b": "secret-one", "list": ["x", "secret-two"]}, "~/": "tilde"}


async def _deliver(
    answer: Any, output: Any = OUTPUT, error_code: str = "", message: str = ""
) -> tuple[ExecutionResult, Any, Registry]:
    registry = Registry.from_manifests(manifests(), env={})
    policy = ScriptedPolicy(result_value=answer)
    rec = CallRecord(
        run_id="r",
        turn_id="t",
        call_id="c",
        index=0,
        tool="lookup_train",
        tool_version="1",
        arguments_json=json.dumps(TRAIN),
        arguments_sha256="s",
        effect="read",
        status=CallStatus.EXECUTING,
    )
    run = RunRecord(run_id="r", state=RunState.ACTIVE, subject="alice", tenant="acme")
    res = ExecutionResult(
        CallStatus.SUCCEEDED,
        output_json=json.dumps(output),
        error_code=error_code,
        error_message=message,
        attempts=1,
    )
    kept, delivery = await Deliverer(policy, registry).deliver(rec, res, run=run, identity=ALICE)
    await registry.aclose()
    return kept, delivery, registry


async def test_pointers_are_replaced_by_the_marker_and_masked() -> None:
    kept, delivery, registry = await _deliver(
        {"deliver": True, "redact": ["/a/b", "/a/list/1", "/~0~1"]}
    )
    assert json.loads(kept.output_json) == {
        "a": {"b": REDACTED, "list": ["x", REDACTED]},
        "~/": REDACTED,
    }
    assert kept.status is CallStatus.SUCCEEDED and kept.error_code == ""
    assert dict(delivery.masks) == {
        "/a/b": registry.audit_key.mask("secret-one"),
        "/a/list/1": registry.audit_key.mask("secret-two"),
        "/~0~1": registry.audit_key.mask("tilde"),
    }
    assert "secret" not in json.dumps(delivery.as_detail())


async def test_a_pointer_inside_another_is_redacted_with_it() -> None:
    kept, delivery, _ = await _deliver({"deliver": True, "redact": ["/a", "/a/b"]})
    assert json.loads(kept.output_json)["a"] == REDACTED
    assert [p for p, _ in delivery.masks] == ["/a/b", "/a"]


async def test_the_root_pointer_redacts_the_whole_output() -> None:
    kept, _, _ = await _deliver({"deliver": True, "redact": [""]})
    assert json.loads(kept.output_json) == REDACTED


async def test_a_pointer_to_nowhere_withholds() -> None:
    for pointer in ["/nope", "/a/list/2", "/a/list/01", "/a/b/c", "/a/list/-"]:
        kept, delivery, _ = await _deliver({"deliver": True, "redact": [pointer]})
        assert kept.error_code == CallCode.RESULT_WITHHELD.value, pointer
        assert "points to nowhere" in kept.error_message and "secret" not in kept.output_json
        assert delivery.withheld


async def test_a_note_quoting_a_redacted_value_is_scrubbed() -> None:
    note = "output violates output_schema: 'secret-one' is not of type 'integer'"
    kept, _, _ = await _deliver(
        {"deliver": True, "redact": ["/a/b"]}, error_code="output_invalid", message=note
    )
    assert "secret-one" not in kept.error_message and REDACTED in kept.error_message


async def test_nothing_to_redact_delivers_as_is() -> None:
    kept, delivery, _ = await _deliver({"deliver": True, "redact": [], "reasons": ["fine"]})
    assert delivery is None and json.loads(kept.output_json) == OUTPUT
