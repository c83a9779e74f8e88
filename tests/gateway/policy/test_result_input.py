"""The `result` rule is handed only what the bundle's rules can read of its input, as
`decision` is: less to serialize and hand to the engine per result, the same verdict. A part
of the input that is not JSON still withholds the result, read or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.reload import prepare

BUNDLE = """package callgate

decision := {"verdict": "ALLOW", "reasons": ["ok"]}

result := {"deliver": true, "redact": [], "reasons": [input.result.output.note]} if {
	input.tool.effect == "read"
}
"""


@pytest.fixture
def engine(tmp_path: Path) -> EmbeddedEngine:
    (tmp_path / "policy.rego").write_text(BUNDLE)
    return EmbeddedEngine(prepare(tmp_path, "data.callgate"))


def result_input(**extra: Any) -> dict[str, Any]:
    return {
        "action": "result",
        "call": {"id": "c1", "tool": "lookup", "args": {"q": "x" * 500}},
        "tool": {"name": "lookup", "effect": "read"},
        "run": {"id": "r1", "labels": {"team": "y" * 500}},
        "result": {"status": "SUCCEEDED", "output": {"note": "seen"}, "schema_problems": []},
        **extra,
    }


def test_the_engine_is_handed_only_what_the_rules_read(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed: list[str] = []
    value = engine._value

    def spy(rule: str, text: str, **kw: Any) -> Any:
        handed.append(text)
        return value(rule, text, **kw)

    monkeypatch.setattr(engine, "_value", spy)
    verdict = engine.result(result_input())
    assert verdict is not None and verdict.deliver and verdict.reasons == ("seen",)
    (text,) = handed
    assert '"note":"seen"' in text and '"effect":"read"' in text
    assert "yyy" not in text and "xxx" not in text and "schema_problems" not in text


def test_a_part_that_is_not_json_withholds_though_no_rule_reads_it(
    engine: EmbeddedEngine,
) -> None:
    verdict = engine.result(result_input(run={"id": "r1", "labels": {"bad": {1, 2}}}))
    assert verdict is not None and not verdict.deliver
    assert any("not JSON" in r for r in verdict.reasons)
