"""What the model reads, under a framework, for a call whose result the policy withheld."""

from __future__ import annotations

from gateway import pb
from gateway.frameworks.results import call_text


def test_a_withheld_result_reads_as_an_error_that_says_the_call_ran() -> None:
    result = pb.CallResult(
        call_id="c1",
        tool="get_note",
        status=pb.CALL_STATUS_SUCCEEDED,
        output_json='{"result_withheld": {"reasons": ["secret"]}}',
        error=pb.Error(code="result_withheld", message="withheld"),
    )
    text = call_text(result)
    assert text.error
    assert "withheld" in text.text and "Do not repeat" in text.text
    assert "secret" not in text.text


def test_a_delivered_result_reads_as_its_output() -> None:
    text = call_text(
        pb.CallResult(
            call_id="c1",
            tool="get_note",
            status=pb.CALL_STATUS_SUCCEEDED,
            output_json='{"note": "x"}',
        )
    )
    assert (text.text, text.error) == ('{"note": "x"}', False)
