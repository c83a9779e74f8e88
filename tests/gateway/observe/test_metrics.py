"""Label values are bounded: names outside their known sets share one series and are not
remembered, however many a model invents."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from gateway.observe.hooks import OFF, Observe
from gateway.observe.metrics import Labels, PrometheusMetrics

LABELS = Labels(
    tools=frozenset({"get_weather"}),
    statuses=frozenset({"REJECTED"}),
    codes=frozenset({"unknown_tool"}),
    next_actions=frozenset({"CONTINUE"}),
    providers=frozenset({"openai.responses"}),
    methods=frozenset({"SubmitTurn"}),
    grpc_codes=frozenset({"OK"}),
)


def test_unknown_names_share_one_series_and_are_not_remembered() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(LABELS, registry)
    for i in range(500):
        metrics.call_result("REJECTED", "unknown_tool", f"invented_tool_{i}")
        metrics.decision("ALLOW", f"invented_tool_{i}", "embedded", 0.001)
        metrics.rpc(f"NoSuchMethod{i}", "WEIRD", 0.01)
    text = generate_latest(registry).decode()
    assert "invented_tool" not in text and "NoSuchMethod" not in text
    assert (
        'callgate_call_results_total{code="unknown_tool",status="REJECTED",tool="(unknown)"} 500.0'
    ) in text
    assert 'callgate_grpc_server_handled_total{code="(other)",method="(other)"} 500.0' in text
    assert len(metrics._results._by_values) == 1  # only the bounded key


def test_off_reports_nothing_and_costs_no_state() -> None:
    assert not OFF.enabled and not Observe().metrics.enabled
    OFF.metrics.turn("CONTINUE", "x")  # a no-op
    with OFF.tracer.span("x") as span:
        span.set_attribute("k", "v")
    assert OFF.tracer.headers() == {}


def test_every_metric_is_documented() -> None:
    from gateway.observe.metrics import StoreGauges

    registry = CollectorRegistry()
    PrometheusMetrics(LABELS, registry)
    names = {m.name for m in registry.collect()} | {
        m.name for m in StoreGauges(lambda: (0, 0)).collect()
    }
    page = (Path(__file__).parents[3] / "docs" / "operations.md").read_text()
    # (a counter's family is named without _total; the page names the series)
    missing = sorted(n for n in names if f"`{n}`" not in page and f"`{n}_total`" not in page)
    assert len(names) >= 12 and not missing, f"docs/operations.md does not describe {missing}"


def test_quota_rejections_are_counted_by_tool() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(LABELS, registry)
    metrics.quota_rejected("get_weather")
    metrics.quota_rejected("get_weather")
    metrics.quota_rejected("invented")
    text = generate_latest(registry).decode()
    assert 'callgate_quota_rejections_total{tool="get_weather"} 2.0' in text
    assert 'callgate_quota_rejections_total{tool="(unknown)"} 1.0' in text
