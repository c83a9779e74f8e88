"""`callgate policy replay`: the decision inputs a real sidecar logged, decided again by a
candidate policy directory.

A sidecar runs over the default policies with `--log-decision-inputs` and decides a few calls;
its log (stderr: the decision inputs among the other loggers' lines) is what is replayed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway import pb
from gateway.client import tool_call
from gateway.testing import READY
from tests.support.commands import callgate
from tests.support.paths import POLICIES
from tests.support.reloads import eventually, sidecar_over
from tests.support.scenarios import TRAIN, WEATHER

INPUTS_LOGGER = "callgate.decision_input"
BLOCK_WEATHER = (
    'package callgate\n\ndeny contains "weather is blocked today" if '
    'input.call.tool == "get_weather"\n'
)
CALLS = (
    ("w1", "get_weather", WEATHER),
    ("t1", "get_train_status", TRAIN),
    ("w2", "get_weather", {**WEATHER, "city": "Paris"}),
    # denied: alice is of tenant acme; book_ticket is not a tool of her roles
    ("e1", "list_events", {"tenant": "globex"}),
    ("b1", "book_ticket", {"train_number": "ICE123"}),
)


def record(tmp_path: Path, tools_dir: Path, *extra: str) -> tuple[Path, dict[str, str]]:
    """Run a sidecar that logs its decision inputs, decide CALLS as alice; the log file and
    the verdict of each call."""
    with sidecar_over(tmp_path, tools_dir, POLICIES, "--log-decision-inputs", *extra) as (
        proc,
        client,
    ):
        out = client.authorize(*(tool_call(cid, name, args) for cid, name, args in CALLS))
        verdicts = {
            d.call_id: pb.Verdict.Name(d.decision.verdict).removeprefix("VERDICT_")
            for d in out.decisions
        }
        eventually(
            lambda: True if sum(INPUTS_LOGGER in ln for ln in proc.lines) >= len(CALLS) else None,
            "every decision input to be logged",
        )
    log = tmp_path / "sidecar.log"
    # stdout's one line (the listening address) is not part of the log a sidecar writes
    log.write_text("".join(ln for ln in proc.lines if not ln.startswith(READY)))
    return log, verdicts


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory, tools_dir: Path
) -> tuple[Path, dict[str, str]]:
    return record(tmp_path_factory.mktemp("recorded"), tools_dir)


def candidate(tmp_path: Path, **files: str) -> Path:
    target = tmp_path / "candidate"
    shutil.copytree(POLICIES, target)
    for name, text in files.items():
        (target / name).write_text(text)
    return target


def replay_json(*args: str) -> tuple[int, dict[str, Any]]:
    out = callgate("policy", "replay", *args, "--format", "json")
    assert "Traceback" not in out.stderr
    return out.returncode, json.loads(out.stdout)


def test_the_serving_policy_replays_its_own_log_unchanged(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    log, verdicts = recorded
    assert set(verdicts.values()) >= {"ALLOW", "DENY"}, verdicts
    code, doc = replay_json(str(POLICIES), "--inputs", str(log))
    assert (code, doc["ok"]) == (0, True)
    assert doc["replayed"] == len(CALLS) and doc["unchanged"] == len(CALLS)
    assert doc["changes"] == [] and doc["bad_lines"] == []
    assert doc["skipped"] > 0, "the other loggers' lines of the log are skipped, not errors"
    assert doc["by_tool"]["get_weather"] == {
        "replayed": 2,
        "verdicts_changed": 0,
        "other_changes": 0,
        "unchanged": 2,
    }


def test_a_candidate_that_blocks_a_tool_shows_each_call_it_would_deny(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, verdicts = recorded
    assert verdicts["w1"] == verdicts["w2"] == "ALLOW"
    blocked = candidate(tmp_path, **{"block.rego": BLOCK_WEATHER})
    code, doc = replay_json(str(blocked), "--inputs", str(log))
    assert (code, doc["ok"]) == (1, False)
    assert doc["verdicts_changed"] == 2 and doc["transitions"] == {"ALLOW→DENY": 2}
    assert [c["tool"] for c in doc["changes"]] == ["get_weather", "get_weather"]
    change = doc["changes"][0]
    assert change["kinds"] == ["verdict", "reasons"] and change["verdict_changed"]
    allowed = "tool get_weather allowed for roles [member, traveler]"
    assert change["before"] == {"verdict": "ALLOW", "policy_error": False, "reasons": [allowed]}
    assert change["after"]["verdict"] == "DENY"
    assert change["after"]["reasons"] == ["weather is blocked today"]
    assert len(change["input_sha256"]) == 64 and change["recorded_revision"].startswith("sha")
    assert doc["by_tool"]["get_weather"]["verdicts_changed"] == 2
    assert doc["by_tool"]["get_train_status"] == {
        "replayed": 1,
        "verdicts_changed": 0,
        "other_changes": 0,
        "unchanged": 1,
    }
    assert (
        callgate(
            "policy", "replay", str(blocked), "--inputs", str(log), "--allow-changes"
        ).returncode
        == 0
    )


def test_the_text_report_names_each_change_and_counts_by_tool(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, _ = recorded
    blocked = candidate(tmp_path, **{"block.rego": BLOCK_WEATHER})
    out = callgate("policy", "replay", str(blocked), "--inputs", str(log))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    changed = [ln for ln in lines if ln.startswith("line ") and "ALLOW→DENY" in ln]
    assert len(changed) == 2 and all("get_weather" in ln for ln in changed)
    assert "    + weather is blocked today" in lines
    assert "    - tool get_weather allowed for roles [member, traveler]" in lines
    assert any(
        ln.split()
        == [
            "get_weather",
            "2",
            "replayed:",
            "2",
            "verdicts",
            "changed,",
            "0",
            "reasons",
            "changed,",
            "0",
            "unchanged",
        ]
        for ln in lines
    )
    assert lines[-1].startswith(f"{len(CALLS)} replayed: 2 verdicts changed (ALLOW→DENY 2)")
    assert "verdicts would change (--allow-changes to accept them)" in out.stderr


def test_a_changed_reason_is_shown_but_does_not_fail_the_run(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, verdicts = recorded
    assert verdicts["e1"] == verdicts["b1"] == "DENY"
    extra = 'package callgate\n\ndeny contains "and a second reason" if not tool_allowed\n'
    reworded = candidate(tmp_path, **{"extra.rego": extra})
    code, doc = replay_json(str(reworded), "--inputs", str(log))
    assert code == 0 and doc["verdicts_changed"] == 0
    kinds = {tuple(c["kinds"]) for c in doc["changes"]}
    assert kinds == {("reasons",)} and [c["tool"] for c in doc["changes"]] == ["book_ticket"]
    assert sorted(doc["changes"][0]["after"]["reasons"]) == [
        "and a second reason",
        "tool book_ticket not allowed for roles [member, traveler]",
    ]
    assert doc["by_tool"]["book_ticket"]["other_changes"] == 1


def test_hostile_lines_are_named_counted_and_fail_the_run(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, _ = recorded
    real = [ln for ln in log.read_text().splitlines() if INPUTS_LOGGER in ln]
    body = json.loads(real[0][real[0].index("{") :])
    edited = {**body, "input": {**body["input"], "call": {"tool": "get_weather"}}}
    hostile = [
        "not json at all",
        real[0][: len(real[0]) // 2],  # cut short
        json.dumps(edited),  # its input no longer hashes to its input_sha256
        json.dumps({"input": [1, 2]}),
        json.dumps({**body, "verdict": "MAYBE"}),
        '127.0.0.1 - - [01/Dec/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 12',
        '{"input": ' + "[" * 100000,
        json.dumps({"verdict": "ALLOW"}),
    ]
    mixed = tmp_path / "mixed.log"
    with mixed.open("wb") as f:
        f.write(log.read_bytes())
        for line in hostile:
            f.write(line.encode() + b"\n")
        f.write(b'{"input": {"call": {"tool": "\xff"}}}\n')
    first = len(log.read_text().splitlines()) + 1
    code, doc = replay_json(str(POLICIES), "--inputs", str(mixed))
    assert (code, doc["ok"]) == (1, False)
    assert doc["replayed"] == len(CALLS), "the good lines are replayed all the same"
    bad = {b["line"]: b["message"] for b in doc["bad_lines"]}
    assert sorted(bad) == list(range(first, first + len(hostile) + 1))
    messages = [bad[first + i] for i in range(len(hostile) + 1)]
    assert messages[0].startswith("not a decision input")
    assert "not JSON" in messages[1]
    assert "does not hash to its `input_sha256`" in messages[2]
    assert messages[3] == "`input` is not an object (array)"
    assert "`verdict` 'MAYBE' is not one of ALLOW, DENY, APPROVAL_REQUIRED" in messages[4]
    assert messages[5].startswith("not a decision input")
    assert "not JSON" in messages[6] and "deeper" in messages[6]
    assert "no `input` object" in messages[7]
    assert messages[8].startswith("not UTF-8 text")
    out = callgate("policy", "replay", str(POLICIES), "--inputs", str(mixed), "--allow-bad-lines")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"line {first}: not replayed: not a decision input" in out.stdout
    assert f"{len(hostile) + 1} lines not replayed" in out.stdout.splitlines()[-1]


def test_nothing_to_replay_fails_and_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("\n\n")
    out = callgate("policy", "replay", str(POLICIES), "--inputs", str(empty))
    assert out.returncode == 1 and "no decision input was replayed" in out.stderr
    out = callgate("policy", "replay", str(POLICIES), "--inputs", str(tmp_path / "nope"))
    assert out.returncode == 2 and "cannot read --inputs" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_export_of_inputs_alone_needs_a_baseline(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, _ = recorded
    inputs = [
        json.loads(ln[ln.index("{") :])["input"]
        for ln in log.read_text().splitlines()
        if INPUTS_LOGGER in ln
    ]
    export = tmp_path / "export.jsonl"
    export.write_text("".join(json.dumps({"input": i}) + "\n" for i in inputs))
    blocked = candidate(tmp_path, **{"block.rego": BLOCK_WEATHER})
    code, doc = replay_json(str(blocked), "--inputs", str(export))
    assert code == 1 and doc["replayed"] == 0
    assert all("records no verdict" in b["message"] for b in doc["bad_lines"])
    assert len(doc["bad_lines"]) == len(CALLS)
    code, doc = replay_json(str(blocked), "--inputs", str(export), "--baseline", str(POLICIES))
    assert code == 1 and doc["replayed"] == len(CALLS)
    assert doc["transitions"] == {"ALLOW→DENY": 2} and doc["baseline"].startswith("sha")


def test_the_engine_options_of_the_other_policy_commands_apply(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, _ = recorded
    failing = candidate(
        tmp_path,
        **{
            "number.rego": "package callgate\n\ndeny contains "
            '"numbered" if to_number(input.call.tool) > 0\n'
        },
    )
    code, doc = replay_json(str(failing), "--inputs", str(log))
    assert code == 1, "strict builtin errors (the default): every decision fails closed"
    assert doc["verdicts_changed"] == len(CALLS)
    assert all(c["after"]["policy_error"] for c in doc["changes"])
    assert doc["transitions"] == {"ALLOW→DENY": 3, "DENY (policy_error)": 2}
    code, doc = replay_json(str(failing), "--inputs", str(log), "--builtin-errors", "undefined")
    assert (code, doc["changes"]) == (0, [])
    v0 = tmp_path / "v0"
    v0.mkdir()
    (v0 / "p.rego").write_text(
        'package callgate\n\ndecision = {"allow": false, "reasons": ["closed"]} { true }\n'
    )
    code, doc = replay_json(str(v0), "--inputs", str(log), "--rego-version", "v0")
    assert code == 1 and doc["replayed"] == len(CALLS)
    assert all(c["after"]["reasons"] == ["closed"] for c in doc["changes"])
    out = callgate("policy", "replay", str(v0), "--inputs", str(log))
    assert out.returncode == 1 and "problem" in out.stderr and not out.stdout


@pytest.fixture
def json_log(tmp_path: Path, tools_dir: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    yield record(tmp_path, tools_dir, "--log-format", "json")


def test_a_json_log_replays_as_the_text_log_does(
    json_log: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    log, _ = json_log
    assert all(json.loads(ln)["logger"] for ln in log.read_text().splitlines() if ln)
    blocked = candidate(tmp_path, **{"block.rego": BLOCK_WEATHER})
    code, doc = replay_json(str(blocked), "--inputs", str(log))
    assert code == 1 and doc["replayed"] == len(CALLS) and doc["bad_lines"] == []
    assert doc["transitions"] == {"ALLOW→DENY": 2} and doc["skipped"] > 0
