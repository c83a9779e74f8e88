"""The loop regression matrix as tests: every regression case of a tool-calling loop × every
provider, through the reference loop against a real sidecar and the real example services, each
cell holding four facts (tests/support/matrix.py). `make regression` prints the same cells as a
table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.loop import ModelRequest, ScriptedModel
from tests.support.matrix import Bench, Cell, bench, correlation, run_cell
from tests.support.matrix_cases import CASES, PROVIDERS
from tests.support.wire_checks import results_by_call_id


@pytest.fixture(scope="module")
def cells() -> Iterator[Bench]:
    with bench() as b:
        yield b


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", list(CASES))
async def test_cell(cells: Bench, case: str, provider: str) -> None:
    fn, token = CASES[case]
    report = await run_cell(cells, case, provider, fn, token)
    assert report.ok, report.explain()


def test_a_result_under_another_call_id_breaks_correlation(cells: Bench) -> None:
    """The correlation fact is not vacuous: swapped results are caught."""
    items = [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_train",
                    "content": '{"city":"Berlin"}',
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_weather",
                    "content": '{"train_number":"ICE123"}',
                },
            ],
        }
    ]
    assert set(results_by_call_id("anthropic.messages", items)) == {"call_train", "call_weather"}
    cell = Cell(cells, "anthropic.messages", "swapped", "alice-demo-token")
    model = ScriptedModel([])
    model.requests.append(ModelRequest("r", "anthropic.messages", items, [], 1))
    cell.models.append(model)
    markers = {"call_train": '"ICE123"', "call_weather": '"Berlin"'}
    assert correlation(cell, {"correlation_markers": markers}) == {
        "call_train": False,
        "call_weather": False,
    }
