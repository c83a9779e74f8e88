"""The OPA engine against OPA's recorded answers (replayed from loopback), and the stand-in OPA
checked against the same recording.

The recorded decision requests were made without `strict-builtin-errors` (and one with
`metrics`): the replay ignores those two parameters where the recording has no builtin error
to tell them apart (`example.rego`'s decision rules call no builtin that can fail on these
inputs). The builtin-error exchanges are matched exactly.
"""

from __future__ import annotations

import copy
import http.client
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.model import Verdict
from gateway.policy.bundle import Bundle, PolicyConfigError
from gateway.policy.decision import UNDEFINED, PolicyEvalError
from gateway.policy.opa.client import OpaConnection, OpaSettings
from gateway.policy.opa.engine import NO_BUNDLE, OpaEngine, bundle_revision
from gateway.policy.opa.push import push_bundle
from tests.support.opa import FakeOpa, ReplayOpa, exchange, transcript

EXAMPLE = Path(__file__).parent / "opa_rest" / "example.rego"
LENIENT = frozenset({"strict-builtin-errors", "metrics"})


def body_of(title: str) -> dict[str, Any]:
    body: dict[str, Any] = exchange(title)["request"]["body"]
    return body


def lenient(*titles: str) -> list[dict[str, Any]]:
    items = []
    for title in titles:
        item = copy.deepcopy(exchange(title))
        item["lenient"] = True
        items.append(item)
    return items


def strict(*titles: str) -> list[dict[str, Any]]:
    return [copy.deepcopy(exchange(t)) for t in titles]


@pytest.fixture
async def replay() -> AsyncIterator[Any]:
    servers: list[ReplayOpa] = []
    engines: list[OpaEngine] = []

    async def make(items: list[dict[str, Any]], mode: str = "push") -> OpaEngine:
        server = ReplayOpa(items, lenient=LENIENT)
        server.__enter__()
        servers.append(server)
        engine = OpaEngine(
            OpaConnection(OpaSettings(server.url, timeout_s=5)), "data.callgate", mode=mode
        )  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.close()
    for server in servers:
        assert not server.unmatched, server.unmatched
        server.__exit__()


def inp(title: str) -> dict[str, Any]:
    value: dict[str, Any] = body_of(title)["input"]
    return value


# ---------------------------------------------------------------------------------------------
# decisions as OPA answered them


@pytest.mark.parametrize(
    ("title", "verdict", "reasons"),
    [
        ("decision: read allowed", Verdict.ALLOW, ()),
        (
            "decision: tool not allowed",
            Verdict.DENY,
            ('tool "rm_rf" is not allowed for role set ["member"]',),
        ),
        ("decision: write needs approval", Verdict.APPROVAL_REQUIRED, ("writes need approval",)),
        ("decision: write approved", Verdict.ALLOW, ("approved",)),
    ],
)
async def test_decisions_map_as_recorded(
    replay: Any, title: str, verdict: Verdict, reasons: tuple[str, ...]
) -> None:
    engine = await replay(lenient(title))
    decision = await engine.decide(inp(title))
    assert (decision.verdict, decision.reasons, decision.error) == (verdict, reasons, "")
    assert decision.input_sha256
    if verdict == Verdict.APPROVAL_REQUIRED:
        assert decision.approval_ttl_s == 900


async def test_every_query_asks_for_strict_builtin_errors() -> None:
    with ReplayOpa(lenient("decision: read allowed"), lenient=LENIENT) as server:
        engine = OpaEngine(OpaConnection(OpaSettings(server.url)), "data.callgate", mode="push")
        await engine.decide(inp("decision: read allowed"))
        await engine.close()
    assert [r[1] for r in server.requests] == [
        "/v1/data/callgate/decision?strict-builtin-errors=true"
    ]


async def test_a_grant_is_a_boolean_result(replay: Any) -> None:
    engine = await replay(lenient("may_approve: owner, different subject"))
    assert await engine.allows("may_approve", inp("may_approve: owner, different subject"))


async def test_an_undefined_document_is_undefined_and_denies(replay: Any) -> None:
    engine = await replay(
        lenient("undefined document (no such rule)", "decision after delete (undefined)")
    )
    value, _ = await engine.value(
        "no_such_rule", json.dumps(inp("undefined document (no such rule)"))
    )
    assert value is UNDEFINED
    decision = await engine.decide(inp("decision after delete (undefined)"))
    assert decision.verdict is Verdict.DENY and decision.is_policy_error
    assert "decision is undefined" in decision.error


async def test_a_builtin_error_fails_the_evaluation(replay: Any) -> None:
    engine = await replay(strict("builtin error with strict-builtin-errors"))
    with pytest.raises(PolicyEvalError) as caught:
        await engine.value("ratio", json.dumps({"a": 1, "b": 0}))
    message = caught.value.message
    assert "500" in message and "eval_builtin_error: div: divide by zero" in message
    assert "callgate/example.rego:42" in message


async def test_a_4xx_answer_denies_naming_opas_message(replay: Any) -> None:
    recorded = copy.deepcopy(exchange("malformed request body"))
    recorded["request"]["body"] = {"input": inp("decision: read allowed")}
    recorded["lenient"] = True
    engine = await replay([recorded])
    decision = await engine.decide(inp("decision: read allowed"))
    assert decision.verdict is Verdict.DENY and decision.is_policy_error
    assert "400 (invalid_parameter)" in decision.error
    assert "malformed input document" in decision.error


async def test_provenance_without_bundles_is_recorded_as_no_bundle(replay: Any) -> None:
    engine = await replay(lenient("decision with provenance and metrics"), mode="external")
    decision = await engine.decide(inp("decision with provenance and metrics"))
    assert decision.verdict is Verdict.ALLOW and decision.policy_revision == NO_BUNDLE


def test_bundle_revision_from_provenance() -> None:
    assert bundle_revision({"bundles": {"authz": {"revision": "r42"}}}) == "r42"
    assert (
        bundle_revision({"bundles": {"b": {"revision": "2"}, "a": {"revision": "1"}}}) == "a@1,b@2"
    )
    assert bundle_revision({"bundles": {"authz": {}}}) == "authz@unrevisioned"
    assert bundle_revision({"version": "1.9.0"}) == NO_BUNDLE


async def test_health_as_recorded(replay: Any) -> None:
    engine = await replay(strict("health"))
    assert await engine.healthy()


# ---------------------------------------------------------------------------------------------
# pushing a policy directory, as OPA answered it


def bundle(
    sources: dict[str, str], data: dict[str, Any] | None = None, revision: str = "sha256:test"
) -> Bundle:
    return Bundle(
        root=Path("policies"),
        sources=sources,
        test_sources={},
        data=data or {},
        data_files=("data.json",) if data else (),
        revision=revision,
    )


EXAMPLE_BUNDLE = bundle(
    {"example.rego": EXAMPLE.read_text(encoding="utf-8")}, {"roles": body_of("put data")}
)


async def test_push_uploads_policy_and_data_then_deletes(replay: Any) -> None:
    engine = await replay(strict("put policy: ok", "put data", "delete policy"))
    pushed = await push_bundle(engine.connection, EXAMPLE_BUNDLE, None)
    assert pushed.ids == {"callgate/example.rego"}
    emptied = bundle({}, {"roles": body_of("put data")}, revision="sha256:empty")
    await push_bundle(engine.connection, emptied, pushed)  # data unchanged: nothing sent


async def test_opa_parse_errors_name_file_and_line(replay: Any) -> None:
    broken = bundle({"broken.rego": exchange("put policy: parse error")["request"]["body"]})
    engine = await replay(strict("put policy: parse error"))
    with pytest.raises(PolicyConfigError) as caught:
        await push_bundle(engine.connection, broken, None)
    problems = caught.value.problems
    assert [(p.file, p.line) for p in problems] == [("policies/broken.rego", 4)] * 2
    assert "OPA: rego_parse_error: unexpected eof token" in problems[0].message


# ---------------------------------------------------------------------------------------------
# the stand-in OPA answers the recorded requests as OPA did


def send(url: str, request: dict[str, Any]) -> tuple[int, Any]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    body = request["body"]
    text = body if isinstance(body, str) else json.dumps(body) if body is not None else None
    headers = {"Content-Type": request["content_type"]} if request["content_type"] else {}
    conn.request(request["method"], request["path"], body=text, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw else None


def comparable(title: str, body: Any) -> Any:
    """What must be equal: everything, except OPA's own wording of errors (codes, files and
    rows must match), the policy AST and the timing metrics."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    out.pop("metrics", None)
    if "errors" in out:
        out["errors"] = [
            {
                "code": e["code"],
                "file": e.get("location", {}).get("file"),
                "row": e.get("location", {}).get("row"),
            }
            for e in out["errors"]
        ]
        out["errors"] = out["errors"][:1]
    if title == "builtin error with strict-builtin-errors":
        out["errors"] = [{"code": e["code"]} for e in out["errors"]]
    if title == "list policies":
        out["result"] = [{"id": p["id"], "raw": p["raw"]} for p in out["result"]]
    if title == "malformed request body":
        out["message"] = out["message"].split(":")[0]
    return out


def test_the_stand_in_answers_the_transcript_as_opa_did() -> None:
    with FakeOpa() as opa:
        for item in transcript():
            status, body = send(opa.url, item["request"])
            title = item["title"]
            assert status == item["response"]["status"], title
            assert comparable(title, body) == comparable(title, item["response"]["body"]), title
