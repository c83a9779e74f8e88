"""Decisions on the wire: built field by field, the same message as the plain construction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway import pb
from gateway.model import Decision, Quota, Verdict
from gateway.run.authorize import AuthorizeDecision
from gateway.wire import convert


def plain(decisions: list[AuthorizeDecision]) -> pb.AuthorizeResponse:
    """The response as keyword arguments describe it."""
    return pb.AuthorizeResponse(
        decisions=[
            pb.CallDecision(
                call_id=d.call_id,
                decision=pb.Decision(
                    verdict=pb.Verdict.Value(f"VERDICT_{d.decision.verdict.value}"),
                    reasons=list(d.decision.reasons),
                    policy_revision=d.decision.policy_revision,
                    quotas=[
                        pb.Quota(key=q.key, limit=q.limit, window_s=q.window_s, cost=q.cost)
                        for q in d.decision.quotas
                    ],
                    tools_revision=d.decision.tools_revision,
                ),
                error=pb.Error(code=d.error_code, message=d.error_message),
            )
            for d in decisions
        ]
    )


text = st.text(max_size=12)
quotas = st.builds(
    Quota,
    key=text,
    limit=st.floats(0, 1e6),
    window_s=st.integers(0, 2**31 - 1),
    cost=st.floats(0, 1e3),
)
decisions = st.builds(
    Decision,
    verdict=st.sampled_from(list(Verdict)),
    reasons=st.lists(text, max_size=3).map(tuple),
    policy_revision=text,
    quotas=st.lists(quotas, max_size=2).map(tuple),
    tools_revision=text,
)
answers = st.builds(
    AuthorizeDecision,
    call_id=text,
    decision=decisions,
    error_code=st.sampled_from(["", "invalid_arguments", "unknown_tool"]),
    error_message=text,
)


@given(st.lists(answers, max_size=4))
def test_the_response_is_the_plain_one(given_decisions: list[AuthorizeDecision]) -> None:
    built = convert.authorize_to(given_decisions)
    want = plain(given_decisions)
    assert built == want
    assert built.SerializeToString(deterministic=True) == want.SerializeToString(deterministic=True)
    for one in built.decisions:  # present even when empty, as before
        assert one.HasField("decision") and one.HasField("error")


def test_no_decision_is_an_empty_message() -> None:
    assert convert.decision_to(None) == pb.Decision()
