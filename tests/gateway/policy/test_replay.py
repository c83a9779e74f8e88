"""Reading recorded decision inputs back and comparing a candidate's decisions with them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gateway.model import Verdict
from gateway.policy import EmbeddedEngine, load_bundle
from gateway.policy.embedded import input_json
from gateway.policy.recorded import BadLine, Recorded, Skipped, read_line
from gateway.policy.replay import Outcome, differences, replay
from tests.gateway.policy.inputs import WriteBundle

INPUT = {"call": {"tool": "get_weather", "args": {"city": "Berlin"}}}


def logged(input_doc: dict[str, Any], verdict: str = "ALLOW", **more: Any) -> str:
    digest = hashlib.sha256(input_json(input_doc).encode()).hexdigest()
    head = json.dumps(
        {"input_sha256": digest, "policy_revision": "sha256:r1", "verdict": verdict, **more}
    )
    return f'{head[:-1]}, "input": {input_json(input_doc)}}}'


def test_each_form_of_a_logged_line_reads_as_the_same_record() -> None:
    record = logged(INPUT, reasons=["ok"])
    text = f"2026-12-01 10:00:00,123 INFO callgate.decision_input: {record}"
    tagged = f"2026-12-01 10:00:00,123 INFO [2 pid 77] callgate.decision_input: {record}"
    as_json = json.dumps(
        {"time": "t", "level": "INFO", "logger": "callgate.decision_input", "message": record}
    )
    read = [read_line(n, line) for n, line in enumerate((record, text, tagged, as_json), 1)]
    assert all(isinstance(r, Recorded) for r in read)
    assert {
        (r.input_sha256, r.verdict, r.reasons, r.tool)
        for r in read  # type: ignore[union-attr]
    } == {
        (
            hashlib.sha256(input_json(INPUT).encode()).hexdigest(),
            Verdict.ALLOW,
            ("ok",),
            "get_weather",
        )
    }


def test_other_loggers_are_skipped_and_blank_lines_ignored() -> None:
    assert read_line(
        1, "2026-12-01 10:00:00,123 WARNING callgate.policy: reload refused"
    ) == Skipped(1, "callgate.policy")
    other = json.dumps({"time": "t", "level": "INFO", "logger": "callgate", "message": "up"})
    assert read_line(2, other) == Skipped(2, "callgate")
    assert read_line(3, "  \n") is None


def test_lines_that_are_not_decision_inputs_say_why() -> None:
    cases = {
        "GET / HTTP/1.1 200": "not a decision input",
        '{"input": {"a": 1}, "input": {}}': "not JSON",
        '{"input": {"call": {}}, "input_sha256': "not JSON",
        json.dumps({"input": INPUT, "input_sha256": "abc"}): "not a SHA-256",
        json.dumps({"input": INPUT, "reasons": "ok"}): "`reasons` is not a list of strings",
        json.dumps({"input": INPUT, "approval_ttl_s": 0}): "not a positive integer",
        json.dumps({"input": INPUT, "policy_revision": 7}): "`policy_revision` is not a str",
        json.dumps({"logger": "callgate.decision_input", "message": "oops"}): "not JSON",
        json.dumps({"input": {"n": 2**80}}): "not JSON",
    }
    for line, expected in cases.items():
        read = read_line(9, line)
        assert isinstance(read, BadLine) and read.line == 9, line
        assert expected in read.message, (line, read.message)
    assert isinstance(bad := read_line(4, b'{"input": {"x": "\xc3"}}'), BadLine)
    assert bad.message.startswith("not UTF-8 text")


def outcome(
    verdict: Verdict,
    reasons: tuple[str, ...] | None = (),
    ttl: int | None = None,
    error: bool = False,
) -> Outcome:
    return Outcome(verdict, reasons, ttl, error)


def test_differences_name_what_changed() -> None:
    allow, deny, ask = Verdict.ALLOW, Verdict.DENY, Verdict.APPROVAL_REQUIRED
    assert differences(outcome(allow, ("a", "b")), outcome(allow, ("b", "a"))) == ()
    assert differences(outcome(allow), outcome(deny, ("no",))) == ("verdict", "reasons")
    assert differences(
        outcome(deny, ("x",)), outcome(deny, ("policy_error: boom",), error=True)
    ) == ("policy_error", "reasons")
    assert differences(outcome(ask, ttl=60), outcome(ask, ttl=600)) == ("approval_ttl",)
    # a line from before reasons were logged: only the verdict can be compared
    assert differences(outcome(deny, None), outcome(deny, ("new",))) == ()
    assert differences(outcome(ask, None, None), outcome(ask, (), 600)) == ()


def test_replay_counts_by_tool_and_lists_unobserved_input(write_bundle: WriteBundle) -> None:
    root = write_bundle(
        {
            "p.rego": (
                'package callgate\n\ndefault decision := {"allow": true}\n\n'
                'decision := {"allow": false, "reasons": ["too far"]} if '
                "input.call.args.km > 100\n\n"
                'decision := {"allow": false, "approval_required": true, "approval_ttl_s": 60} '
                'if input.identity.role == "intern"\n'
            )
        }
    )
    engine = EmbeddedEngine(load_bundle(root))
    far = {"call": {"tool": "drive", "args": {"km": 500}}}
    lines = [
        logged(far, reasons=[]),
        logged(INPUT, reasons=[]),
        logged({"call": {"tool": "drive", "args": {"km": 5}}}, reasons=[]),
        "garbage",
        logged(far, verdict="DENY", reasons=["too far"]),
    ]
    report = replay(lines, engine, candidate_paths=engine.input_paths)
    assert (report.replayed, report.unchanged, report.verdicts_changed) == (4, 3, 1)
    assert report.transitions() == {"ALLOW→DENY": 1}
    assert [(c.line, c.tool, c.kinds) for c in report.changes] == [
        (1, "drive", ("verdict", "reasons"))
    ]
    assert {
        t: (c.replayed, c.verdicts_changed, c.unchanged) for t, c in report.by_tool.items()
    } == {"drive": (3, 1, 2), "get_weather": (1, 0, 1)}
    assert report.bad_lines == [
        BadLine(4, "not a decision input: neither a JSON object nor a callgate log line")
    ]
    assert report.unobserved == ("input.identity",)
    assert not report.ok(allow_changes=False, allow_bad_lines=True)
    assert not report.ok(allow_changes=True, allow_bad_lines=False)
    assert report.ok(allow_changes=True, allow_bad_lines=True)
