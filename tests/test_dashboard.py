"""docs/grafana-dashboard.json: valid JSON of a Grafana dashboard whose every PromQL expression
names only metrics callgate exports, with a panel for each thing an operator watches."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gateway.observe.metrics import Labels, PrometheusMetrics, StoreGauges

DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "grafana-dashboard.json"
METRIC = re.compile(r"\b(callgate_[a-z0-9_]+)")
LABELS = Labels(
    tools=frozenset({"t"}),
    statuses=frozenset({"REJECTED"}),
    codes=frozenset({"policy_denied"}),
    next_actions=frozenset({"CONTINUE"}),
    providers=frozenset(),
    methods=frozenset({"SubmitTurn"}),
    grpc_codes=frozenset({"OK"}),
)


def exported() -> set[str]:
    """Every sample name callgate's /metrics can carry (each metric reported once)."""
    registry = CollectorRegistry()
    m = PrometheusMetrics(LABELS, registry)
    m.decision("ALLOW", "t", "embedded", 0.001)
    m.call_result("REJECTED", "policy_denied", "t")
    m.tool_run("t", "SUCCEEDED", 0.01)
    m.store_commit("sqlite", 0.001)
    m.turn("CONTINUE", "")
    m.policy_reload("installed")
    m.shadow_disagreement()
    m.rpc("SubmitTurn", "OK", 0.01)
    registry.register(StoreGauges(lambda: (0, 0)))
    text = generate_latest(registry).decode()
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def expressions(board: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def test_the_dashboard_is_valid_json_with_its_panels() -> None:
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert board["title"] and board["uid"] and board["schemaVersion"] >= 30
    titles = " | ".join(p["title"].lower() for p in board["panels"])
    for wanted in (
        "decisions by verdict",
        "denials by reason code",
        "tool latency",
        "pending approvals",
        "unknown outcomes",
        "policy reloads",
    ):
        assert wanted in titles, f"no panel for {wanted}"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert all(p["datasource"]["uid"] == "${datasource}" for p in board["panels"])


def test_every_expression_names_an_exported_metric() -> None:
    known = exported()
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    named = {name for expr in expressions(board) for name in METRIC.findall(expr)}
    assert named, "no callgate metric in the dashboard"
    assert named <= known, f"not exported: {sorted(named - known)}"
    assert all(expr.count("(") == expr.count(")") for expr in expressions(board))


def test_the_check_finds_a_metric_that_does_not_exist() -> None:
    assert "callgate_decisions_total" in exported()
    assert "callgate_made_up_total" not in exported()
