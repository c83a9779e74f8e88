"""What an MCP client is answered for a call whose result the policy withheld."""

from __future__ import annotations

from gateway.errors import CallCode
from gateway.mcp_gateway.results import call_result
from gateway.model import CallResult, CallStatus


def test_a_withheld_result_is_a_tool_error_that_says_the_call_ran() -> None:
    withheld = CallResult(
        call_id="c1",
        tool="get_note",
        status=CallStatus.SUCCEEDED,
        output_json='{"result_withheld": {"reasons": ["secret"]}}',
        error_code=CallCode.RESULT_WITHHELD,
        error_message="the result policy withheld the result: secret",
    )
    answer = call_result(withheld)
    assert answer.is_error
    (text,) = answer.content
    assert text.text.startswith("result_withheld: the result policy withheld the result: secret")
    assert "do not repeat it" in text.text
    assert answer.structured_content is None


def test_a_delivered_result_is_its_output() -> None:
    answer = call_result(
        CallResult(
            call_id="c1", tool="get_note", status=CallStatus.SUCCEEDED, output_json='{"note": "x"}'
        )
    )
    assert not answer.is_error
    assert answer.structured_content == {"note": "x"}
