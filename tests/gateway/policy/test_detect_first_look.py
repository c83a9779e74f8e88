"""The default detectors' first look (`callgate.detect.may_hit` in policies/detect.rego) may only
ever pass too much: whenever a detector finds something in a document, the first look must
have let the document through, or the `result` rule would deliver what it exists to redact.
Checked on the embedded engine with generated strings built from the detectors' own material
(digits, separators, prefixes, marks), and against the card-number pattern the first look used
to search for."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gateway.policy.rego import add_policy, new_engine
from tests.gateway.policy.inputs import DEFAULT_POLICIES

PROBE = """package probe

import data.callgate.detect

first_look := detect.may_hit(input.doc)

found := detect.hits(input.doc)
"""

# the run of digits the first look searched the JSON text for before (a card number's shape)
DIGIT_RUN = re.compile(r"[0-9](?:[ -]?[0-9]){12}")

PIECES = st.sampled_from(
    [
        *"0123456789",
        " ",
        "-",
        "  ",
        "--",
        "@",
        ".",
        "x",
        "é",
        "٤",  # a digit of another script: not a card digit
        "example.com",
        "sk-",
        "AKIA",
        "ghp_",
        "github_pat_",
        "xoxb-",
        "AIza",
        "sk_live_",
        "eyJ",
        "Bearer ",
        "bearer abcdefghijklmnopqrstuvwxyz",
        "-----BEGIN RSA PRIVATE KEY-----",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "abcdefghijklmnopqrstuvwxyz0123456789",
    ]
)
TEXTS = st.lists(PIECES, max_size=24).map("".join)
DOCS = st.one_of(
    TEXTS,
    st.dictionaries(st.sampled_from(["a", "b/c", "n~"]), TEXTS, max_size=3),
    st.lists(TEXTS, max_size=3),
)


@pytest.fixture(scope="module")
def probe() -> Any:
    engine = new_engine()
    add_policy(engine, "detect.rego", (DEFAULT_POLICIES / "detect.rego").read_text())
    add_policy(engine, "probe.rego", PROBE)
    return engine


def ask(engine: Any, doc: Any) -> tuple[bool, dict[str, Any]]:
    engine.set_input_json(json.dumps({"doc": doc}))
    first_look = engine.eval_rule("data.probe.first_look")
    found = engine.eval_rule("data.probe.found")
    return first_look is True, found or {}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOCS)
@example(doc="card 4111 1111 1111 1111 on file")
@example(doc={"a": "5500-0000-0000-0004"})
@example(doc="me@example.com")
@example(doc={"n": "4222222222222"})  # 13 digits
@example(doc="Authorization: Bearer abcdefghijklmnop.qrstuv")
@example(doc=["token ghp_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"])
@example(doc="-----BEGIN EC PRIVATE KEY-----")
def test_the_first_look_passes_whatever_a_detector_finds(probe: Any, doc: Any) -> None:
    first_look, found = ask(probe, doc)
    if found:
        assert first_look, f"detectors found {found} in {doc!r}, the first look passed it by"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOCS)
@example(doc="4111-1111 1111-1111")
@example(doc="1 2 3 4 5 6 7 8 9 0 1 2 3")
def test_the_first_look_passes_every_digit_run_the_old_pattern_did(probe: Any, doc: Any) -> None:
    if DIGIT_RUN.search(json.dumps(doc)):
        assert ask(probe, doc)[0], f"a card-shaped run in {doc!r} was not let through"


@pytest.mark.parametrize(
    "doc",
    [
        {"train": "ICE123", "date": "2026-12-01", "delay_min": 4},
        {"city": "Berlin", "forecast": "light rain", "high_c": 7},
        {"order": "1234-5678-9012"},  # twelve digits
        "٤١١١ ١١١١ ١١١١ ١١١١",  # other scripts' digits
    ],
)
def test_the_first_look_lets_plain_results_go(probe: Any, doc: Any) -> None:
    assert ask(probe, doc) == (False, {})
