"""callgate's own counters and histograms (gateway.observe.counting) read at a scrape exactly as
prometheus_client's metrics do, given the same reports: the same families, samples, labels and
values (the `_created` timestamps aside)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gateway.observe.metrics import Labels, PrometheusMetrics

LABELS = Labels(
    tools=frozenset({"get_weather", "reserve_seat"}),
    statuses=frozenset({"SUCCEEDED", "REJECTED"}),
    codes=frozenset({"policy_denied"}),
    next_actions=frozenset({"CONTINUE", "DONE"}),
    providers=frozenset({"openai.responses"}),
    methods=frozenset({"Authorize", "SubmitTurn"}),
    grpc_codes=frozenset({"OK", "INVALID_ARGUMENT"}),
)

NAMES = st.sampled_from(["get_weather", "reserve_seat", "invented", ""])
SECONDS = st.one_of(
    st.floats(min_value=-1.0, max_value=100.0, allow_nan=False),
    st.sampled_from([0.00005, 0.001, 2.5, 60.0, 0.0, math.inf, math.nan]),  # bounds; NaN
)
REPORTS = st.one_of(
    st.tuples(
        st.just("decision"),
        st.sampled_from(["ALLOW", "DENY", "?"]),
        NAMES,
        st.sampled_from(["embedded", "opa"]),
        SECONDS,
    ),
    st.tuples(
        st.just("call_result"),
        st.sampled_from(["SUCCEEDED", "REJECTED", "?"]),
        st.sampled_from(["policy_denied", "", "?"]),
        NAMES,
    ),
    st.tuples(st.just("tool_run"), NAMES, st.sampled_from(["SUCCEEDED", "?"]), SECONDS),
    st.tuples(st.just("store_commit"), st.sampled_from(["sqlite", "postgresql", "?"]), SECONDS),
    st.tuples(st.just("turn"), st.sampled_from(["CONTINUE", "?"]), NAMES),
    st.tuples(st.just("policy_reload"), st.sampled_from(["installed", "rejected", "?"])),
    st.tuples(st.just("tools_reload"), st.sampled_from(["unchanged", "?"])),
    st.tuples(st.just("shadow_disagreement")),
    st.tuples(st.just("quota_rejected"), NAMES),
    st.tuples(
        st.just("rpc"),
        st.sampled_from(["Authorize", "X"]),
        st.sampled_from(["OK", "INVALID_ARGUMENT", "?"]),
        SECONDS,
    ),
)


def scrape(registry: CollectorRegistry) -> str:
    """The exposition without the `_created` timestamps (when each series began)."""
    text = generate_latest(registry).decode()
    return "\n".join(line for line in text.splitlines() if "_created" not in line)


def both() -> tuple[tuple[PrometheusMetrics, CollectorRegistry], ...]:
    out = []
    for counting in (True, False):
        registry = CollectorRegistry()
        out.append((PrometheusMetrics(LABELS, registry, counting=counting), registry))
    return tuple(out)


@settings(max_examples=150, deadline=None)
@given(reports=st.lists(REPORTS, max_size=40))
def test_a_scrape_reads_as_prometheus_clients_own(reports: list[tuple[Any, ...]]) -> None:
    (ours, our_registry), (theirs, their_registry) = both()
    for name, *args in reports:
        getattr(ours, name)(*args)
        getattr(theirs, name)(*args)
    assert scrape(our_registry) == scrape(their_registry)


def test_created_series_are_written_for_every_child() -> None:
    (ours, registry), _ = both()
    ours.rpc("Authorize", "OK", 0.01)
    ours.turn("DONE", "openai.responses")
    text = generate_latest(registry).decode()
    samples = [s.name for f in text_string_to_metric_families(text) for s in f.samples]
    created = {name for name in samples if name.endswith("_created")}
    assert {
        "callgate_grpc_server_handled_created",
        "callgate_grpc_server_handling_seconds_created",
        "callgate_turns_created",
        "callgate_shadow_disagreements_created",  # unlabelled: one series from the start
    } <= created
