"""Property-based fuzzing against a real sidecar over real gRPC.

Hypothesis sends hostile SubmitTurn, Authorize and StartRun requests, mutated provider
responses and streams for every provider, and starts sidecars on mutated manifests and policy
data. After every example:
- no RPC answered INTERNAL or UNKNOWN, and every refusal carries a stable code;
- the sidecar serves (health SERVING) and logged no internal error;
- the same run accepts a valid turn, or answers the documented code for its state;
- no invalid call executed (what ran is read from the travel service);
- every call ID of an accepted turn is answered once;
- GetRun works.

`make test` runs the bounded profile; `make fuzz` the long one (tests/support/fuzzing.py).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from adapters import PROVIDERS
from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, RequestError, error_code, tool_call
from gateway.testing import SidecarFailed, SidecarProcess
from tests.support.fuzzing import (
    HOSTILE_TEXTS,
    JSON_VALUES,
    complete_responses,
    mutated,
    mutated_stream,
    streams,
)
from tests.support.paths import AUTH, POLICIES, ROOT, sidecar_env
from tests.support.scenarios import TRAIN, WEATHER

EXAMPLE_TOOLS = ROOT / "examples" / "travel" / "tools"
SCHEMAS = {
    m["name"]: m["input_schema"]
    for m in (yaml.safe_load(p.read_text()) for p in EXAMPLE_TOOLS.glob("*.yaml"))
}
NEVER = {"INTERNAL", "UNKNOWN"}
# statuses gRPC itself answers (no callgate code): a message over the receive limit
NATIVE = {"RESOURCE_EXHAUSTED"}


def few() -> Any:
    """Settings for examples that each start a sidecar: a twelfth of the profile's count."""
    return settings(max_examples=max(3, settings.default.max_examples // 12))


@pytest.fixture(scope="module")
def gw(sidecar: SidecarProcess) -> Iterator[GatewayClient]:
    with GatewayClient(sidecar.target, "alice-demo-token", timeout_s=60) as client:
        yield client


def attempt(fn: Callable[[], Any]) -> Any:
    """fn's answer, or its error after checking it is a documented refusal: the sidecar named
    its code (in the gRPC error the client's error is raised from)."""
    try:
        return fn()
    except RequestError as err:
        assert err.grpc_status not in NEVER, (err.grpc_status, err.message)
        wire = err.__cause__
        assert isinstance(wire, grpc.RpcError), err
        assert error_code(wire) or err.grpc_status in NATIVE, (err.grpc_status, err.message)
        return err


# ---------------------------------------------------------------------- the oracle


def _strict_object(text: str) -> Any:
    """An independent strict reading (json + hooks): None when any rule is broken."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("duplicate key")
        return dict(items)

    def integer(s: str) -> int:
        if len(s) > 17 or abs(int(s)) > 2**53 - 1:
            raise ValueError("integer range")
        return int(s)

    def number(s: str) -> float:
        if abs(float(s)) == float("inf"):
            raise ValueError("range")
        return float(s)

    try:
        value = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_int=integer,
            parse_float=number,
            parse_constant=lambda c: 1 / 0,
        )
        json.dumps(value).encode()
        text.encode()
        if re.search(r"\\u[dD][89a-fA-F]", text):
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, ZeroDivisionError, RecursionError, UnicodeError):
        return None
    return value if isinstance(value, dict) else None


def may_run(tool: str, arguments_json: str) -> bool:
    """Whether a call could legitimately execute: strict JSON satisfying the tool's schema."""
    args = _strict_object(arguments_json)
    return (
        tool in SCHEMAS and args is not None and Draft202012Validator(SCHEMAS[tool]).is_valid(args)
    )


# ---------------------------------------------------------------------- after every example


def check_afterwards(
    gw: GatewayClient, sidecar: SidecarProcess, travel: TravelService, run_id: str
) -> None:
    with grpc.insecure_channel(sidecar.target) as ch:
        health = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=30)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    assert "internal error" not in sidecar.output and "a bug in the adapter" not in sidecar.output
    run = attempt(lambda: gw.get_run(run_id))
    if isinstance(run, RequestError):
        assert error_code(run) == "run_not_found", run.message
        return
    stored = {c.call_id: c for c in run.calls}
    for request in travel.stats()["requests"]:
        if request["run_id"] == run_id and request["call_id"] in stored:
            rec = stored[request["call_id"]]
            assert rec.status != pb.CALL_STATUS_REJECTED, rec
            assert may_run(rec.tool, rec.arguments_json), rec
    follow = f"valid-{uuid.uuid4().hex[:8]}"
    out = attempt(
        lambda: gw.submit_calls(run_id, follow, tool_call(follow, "get_weather", WEATHER))
    )
    if isinstance(out, RequestError):
        assert error_code(out) in {"run_paused", "run_finished"}, out.message
    else:
        assert [r.call_id for r in out.results] in ([follow], []), out
    attempt(lambda: gw.get_run(run_id))


def answered_once(out: Any, ids: list[str]) -> None:
    if isinstance(out, pb.TurnOutcome) and out.results:
        assert [r.call_id for r in out.results] == ids


# ---------------------------------------------------------------------- SubmitTurn, Authorize

IDS = st.one_of(
    st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True),
    st.sampled_from(["", "x" * 257, "bad\x07id", "é" * 20, "\u202e", "a b"]),
)
NAMES = st.sampled_from(
    ["get_weather", "get_train_status", "launch", "", "x" * 300, "get_weather\n", "book_ticket"]
)


@st.composite
def arguments(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from([WEATHER, TRAIN]))
    kind = draw(st.sampled_from(["valid", "hostile", "mutated", "raw"]))
    if kind == "valid":
        return json.dumps(base)
    if kind == "hostile":
        field = draw(st.sampled_from(sorted(base)))
        text = json.dumps(base)
        return text.replace(json.dumps(base[field]), draw(HOSTILE_TEXTS), 1)
    if kind == "mutated":
        return json.dumps(draw(mutated(base, 2)))
    return draw(HOSTILE_TEXTS | st.text(max_size=40))


CALLS = st.lists(st.tuples(IDS, NAMES, arguments(), st.booleans()), min_size=1, max_size=5)
EVENTS = st.sampled_from(
    ["tool_request"] * 4 + ["final", "refusal", "incomplete", "paused", "provider_error"]
)


def start(gw: GatewayClient, provider: str = "") -> str:
    run_id = f"fz-{uuid.uuid4().hex[:12]}"
    gw.start_run(run_id=run_id, provider=provider)
    return run_id


@given(
    calls=CALLS,
    event=EVENTS,
    text=st.text(max_size=60),
    usage=st.tuples(st.integers(-5, 2**63 - 1), st.integers(-5, 2**63 - 1)),
)
def test_submit_turn(
    gw: GatewayClient,
    sidecar: SidecarProcess,
    travel: TravelService,
    calls: list[tuple[str, str, str, bool]],
    event: str,
    text: str,
    usage: tuple[int, int],
) -> None:
    run_id = start(gw)
    fields: dict[str, Any] = {"usage": pb.Usage(input_tokens=usage[0], output_tokens=usage[1])}
    if event == "tool_request":
        fields["tool_request"] = pb.ToolRequest(
            calls=[
                pb.ToolCall(call_id=i, name=n, arguments_json=a, partial=c) for i, n, a, c in calls
            ]
        )
    elif event == "provider_error":
        fields["provider_error"] = pb.ProviderError(kind="server", message=text, retryable=True)
    else:
        message = {
            "final": pb.FinalAnswer,
            "refusal": pb.Refusal,
            "incomplete": pb.Incomplete,
            "paused": pb.Paused,
        }[event]
        fields[event] = message(
            **({"text": text} if event in ("final", "refusal") else {"reason": text})
        )
    out = attempt(lambda: gw.submit_turn(run_id=run_id, turn_id="t1", **fields))
    if event == "tool_request":
        answered_once(out, [c[0] for c in calls])
    check_afterwards(gw, sidecar, travel, run_id)


@given(calls=CALLS, with_run=st.booleans())
def test_authorize(
    gw: GatewayClient,
    sidecar: SidecarProcess,
    travel: TravelService,
    calls: list[tuple[str, str, str, bool]],
    with_run: bool,
) -> None:
    run_id = start(gw)
    out = attempt(
        lambda: gw.authorize(
            *[tool_call(i, n, a, partial=c) for i, n, a, c in calls],
            run_id=run_id if with_run else "",
        )
    )
    if isinstance(out, pb.AuthorizeResponse):
        assert [d.call_id for d in out.decisions] == [c[0] for c in calls]
        for decision, (_, name, args, partial) in zip(out.decisions, calls, strict=True):
            if decision.decision.verdict == pb.VERDICT_ALLOW:
                assert not partial and may_run(name, args), decision
    check_afterwards(gw, sidecar, travel, run_id)


LABELS = st.dictionaries(st.text(max_size=12), st.text(max_size=40), max_size=5)


@given(
    run_id=IDS,
    provider=st.sampled_from(["", *PROVIDERS, "openai", "x" * 300]),
    api_version=st.sampled_from(["", "v1", "2023-06-01", "bogus"]),
    budget=st.tuples(*[st.integers(-3, 2**31 - 1)] * 4),
    labels=LABELS,
    conversation=st.one_of(st.just(""), HOSTILE_TEXTS, st.builds(json.dumps, JSON_VALUES)),
)
def test_start_run(
    gw: GatewayClient,
    sidecar: SidecarProcess,
    travel: TravelService,
    run_id: str,
    provider: str,
    api_version: str,
    budget: tuple[int, int, int, int],
    labels: dict[str, str],
    conversation: str,
) -> None:
    run_id = f"{run_id}-{uuid.uuid4().hex[:6]}" if run_id.startswith("call_") else run_id
    b = pb.Budget(
        max_turns=budget[0],
        max_tool_calls=budget[1],
        max_total_tokens=budget[2],
        max_retries=budget[3],
    )
    run = attempt(
        lambda: gw.start_run(
            run_id=run_id,
            provider=provider,
            api_version=api_version,
            budget=b,
            labels=labels,
            conversation_json=conversation,
        )
    )
    if isinstance(run, pb.Run):
        check_afterwards(gw, sidecar, travel, run.run_id)


# ---------------------------------------------------------------------- raw provider input


def _submit_raw(gw: GatewayClient, run_id: str, body: Any) -> Any:
    return gw.submit_provider_response(
        run_id, json.dumps(body), turn_id=f"turn-{uuid.uuid4().hex[:8]}", timeout_s=60
    )


def _submit_stream(gw: GatewayClient, run_id: str, events: list[Any], hostile: str | None) -> Any:
    texts = [json.dumps(e) for e in events] or ["{}"]
    if hostile is not None:
        texts[len(texts) // 2] = hostile

    return gw.submit_provider_stream(
        run_id, texts, turn_id=f"turn-{uuid.uuid4().hex[:8]}", timeout_s=60
    )


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@given(data=st.data())
def test_provider_responses(
    gw: GatewayClient,
    sidecar: SidecarProcess,
    travel: TravelService,
    provider: str,
    data: st.DataObject,
) -> None:
    run_id = start(gw, provider)
    body = data.draw(mutated(data.draw(st.sampled_from(complete_responses(provider)))))
    out = attempt(lambda: _submit_raw(gw, run_id, body))
    if isinstance(out, pb.TurnOutcome):
        assert len({r.call_id for r in out.results}) == len(out.results)
    check_afterwards(gw, sidecar, travel, run_id)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@given(data=st.data(), hostile=st.none() | HOSTILE_TEXTS)
def test_provider_streams(
    gw: GatewayClient,
    sidecar: SidecarProcess,
    travel: TravelService,
    provider: str,
    data: st.DataObject,
    hostile: str | None,
) -> None:
    run_id = start(gw, provider)
    events = data.draw(mutated_stream(data.draw(st.sampled_from(streams(provider)))))
    out = attempt(lambda: _submit_stream(gw, run_id, events, hostile))
    if isinstance(out, pb.TurnOutcome):
        assert len({r.call_id for r in out.results}) == len(out.results)
    check_afterwards(gw, sidecar, travel, run_id)


# ---------------------------------------------------------------------- manifests, policy data

SCHEMA_PARTS = st.sampled_from(
    [
        {"pattern": "^(a+)+$"},
        {"pattern": "(?=x)"},
        {"pattern": "^[a-z]+$"},
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {"patternProperties": {"^x": {}}},
        {"type": "nonsense"},
        {"maxLength": -1},
        {"$ref": "https://example.com/s.json"},
        {},
    ]
)


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    manifest = yaml.safe_load((EXAMPLE_TOOLS / "get_weather.yaml").read_text())
    if draw(st.booleans()):
        manifest["input_schema"]["properties"]["city"].update(draw(SCHEMA_PARTS))
    result: dict[str, Any] = draw(mutated(manifest, 2)) if draw(st.booleans()) else manifest
    return result


def serve_or_refuse(
    tmp: Path, travel: TravelService, effects_db: Path, tools: Path, policies: Path
) -> None:
    """Start a sidecar: it refuses with one clear line (no traceback), or it serves calls."""
    proc = SidecarProcess(
        tools=tools,
        policies=policies,
        db=tmp / "cg.db",
        auth=AUTH,
        env=sidecar_env(travel, effects_db),
    )
    try:
        proc.start()
    except SidecarFailed as failed:
        assert failed.returncode != 0
        assert "Traceback" not in failed.output, failed.output
        assert str(tools) in failed.output or str(policies) in failed.output, failed.output
        return
    try:
        _one_call(proc)
    finally:
        proc.stop()


def _one_call(proc: SidecarProcess) -> None:
    with GatewayClient(proc.target, "alice-demo-token", timeout_s=60) as c:
        run_id = start(c)
        attempt(lambda: c.submit_calls(run_id, "t1", tool_call("c1", "get_weather", WEATHER)))
        attempt(
            lambda: c.authorize(
                tool_call("c2", "get_weather", {"city": "a" * 30 + "!", "date": "x"})
            )
        )
        c.get_run(run_id)
    assert "internal error" not in proc.output


@few()
@given(manifest=manifests(), as_json=st.booleans())
def test_manifests(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    effects_db: Path,
    manifest: dict[str, Any],
    as_json: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz-tools")
    tools = tmp / "tools"
    tools.mkdir()
    name = "tool.json" if as_json else "tool.yaml"
    (tools / name).write_text(json.dumps(manifest) if as_json else yaml.safe_dump(manifest))
    serve_or_refuse(tmp, travel, effects_db, tools, POLICIES)


@few()
@given(data=st.data())
def test_policy_data(
    tmp_path_factory: pytest.TempPathFactory,
    travel: TravelService,
    effects_db: Path,
    tools_dir: Path,
    data: st.DataObject,
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz-policies")
    policies = tmp / "policies"
    policies.mkdir()
    for source in POLICIES.glob("*.rego"):
        (policies / source.name).write_text(source.read_text())
    base = json.loads((POLICIES / "data.json").read_text())
    text = json.dumps(data.draw(mutated(base, 3)))
    if data.draw(st.booleans()):
        text = text.replace('"acme"', data.draw(HOSTILE_TEXTS), 1)
    (policies / "data.json").write_text(text)
    serve_or_refuse(tmp, travel, effects_db, tools_dir, policies)
