"""A rejected policy says where, once: the first error at its real place (an unclosed brace at
the brace, not at the end of the file where the parser gave up), and every problem listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.policy import load_bundle
from gateway.policy.base import RejectedReload
from gateway.policy.brackets import still_open
from gateway.policy.bundle import PolicyConfigError

UNCLOSED = "package callgate\n\nfoo if {\n\tinput.x == 1\n\nbar := 2\n"


def rejected(tmp_path: Path, **files: str) -> PolicyConfigError:
    for name, text in {
        "ok.rego": 'package callgate\n\ndecision := {"allow": true}\n',
        **files,
    }.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(PolicyConfigError) as err:
        load_bundle(tmp_path)
    return err.value


def test_an_unclosed_brace_is_reported_where_it_opens(tmp_path: Path) -> None:
    err = rejected(tmp_path, **{"broken.rego": UNCLOSED})
    name = (tmp_path / "broken.rego").as_posix()
    assert (err.file, err.line, err.column) == (name, 3, 8)
    assert err.message == (
        f"{name}:3:8: this {{ is never closed: the file ends (line 7) before its }}"
    )
    assert err.message.count("broken.rego") == 1


@pytest.mark.parametrize(
    "text,where",
    [
        ("a := {\n", (1, 6)),
        ('a := "{" \n# a { in a comment\nb if {\n', (3, 6)),
        ("a := `{`\nb := [1, {\n", (2, 10)),
        ("a := {1: [2\n", (1, 10)),
        ("a := {}\n", None),
    ],
)
def test_the_unclosed_bracket_is_found_outside_strings_and_comments(
    text: str, where: tuple[int, int] | None
) -> None:
    found = still_open(text)
    assert (found[-1][1:] if found else None) == where


def test_a_bracket_closed_later_is_not_blamed(tmp_path: Path) -> None:
    err = rejected(tmp_path, **{"b.rego": "package callgate\n\nx if {\n\ty := \n}\n"})
    assert (err.line, err.column) == (4, 7) and "never closed" not in err.message
    err = rejected(tmp_path, **{"b.rego": "package callgate\n\na := [1, 2\nb := 3\n"})
    assert (err.line, err.column) == (3, 6)
    assert err.message.endswith("this [ is not closed: the parser expected ] at line 4, column 1")


def test_every_problem_is_kept_and_listed(tmp_path: Path) -> None:
    err = rejected(
        tmp_path, **{"a.rego": UNCLOSED, "b.rego": "package callgate\n\nx if {\n\ty := \n}\n"}
    )
    assert len(err.problems) == 2
    rejection = RejectedReload.of(err)
    # b's braces are closed: its error stays where the parser found it
    assert [(Path(p.file).name, p.line) for p in rejection.problems] == [
        ("a.rego", 3),
        ("b.rego", 4),
    ]
    assert rejection.message == err.problems[0].message  # the first, without a count
    assert "more problem" not in rejection.message
