"""bench.instructions reads callgrind's output files and writes its report."""

from __future__ import annotations

from bench.instructions import Counted, callgrind_totals, report

DUMP = """# callgrind format
version: 1
summary: 0
events: Ir
fl=(1) x.c
fn=(1) f
16 3
totals: 2912050503
"""


def test_the_totals_line_is_the_count() -> None:
    assert callgrind_totals(DUMP) == 2912050503
    assert callgrind_totals("# callgrind format\nsummary: 0\ntotals: 0\n") == 0
    assert callgrind_totals("") == 0


def test_the_report_gives_each_sidecar_against_the_plain_one() -> None:
    text = report(
        [
            Counted("plain", "Authorize", 2000, 3_200_000_000),
            Counted("metrics", "Authorize", 1000, 1_632_000_000),
        ]
    )
    assert "Authorize              plain        2000         1,600,000   1.000x" in text
    assert "Authorize              metrics      1000         1,632,000   1.020x" in text


def test_the_report_puts_the_common_path_over_its_floor() -> None:
    text = report(
        [
            Counted("plain", "Authorize", 2000, 2_000_000_000),
            Counted("plain", "Authorize, new args", 1000, 1_500_000_000),
            Counted("echo", "Echo (the floor)", 1000, 500_000_000),
        ]
    )
    assert "Echo (the floor)       echo         1000           500,000 \n" in text
    assert "  Authorize, new args      3.00x" in text
    assert "  Authorize                2.00x" in text
