"""A public Rego library's own tests give the same results under `callgate policy test` as
under `opa test` (`rego_library/_sources.md`): every test but the listed ones."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.policy.bundle import load_bundle
from gateway.policy.options import RegoOptions
from gateway.policy.rego_tests import run_tests

LIBRARY = Path(__file__).parent / "rego_library"
RECORDED: dict[str, dict[str, bool]] = json.loads(
    (LIBRARY / "_opa-1.9-results.json").read_text(encoding="utf-8")
)
AS_OPA_TEST = RegoOptions(rego_version="v0", builtin_errors="undefined")

# memory limits in exabytes, held in thousandths: numbers of 2^64 or more, which the engine
# refuses with an error naming them
KNOWN_DIFFERENCES = {
    "data.k8scontainerratios.test_input_violations_mem_E",
    "data.k8scontainerratios.test_input_violations_mem_Ei",
}


@pytest.fixture(scope="module")
def ours() -> dict[str, dict[str, bool]]:
    """callgate's result for each test of each directory."""
    found = {}
    for directory in RECORDED:
        report = run_tests(load_bundle(LIBRARY / directory, AS_OPA_TEST))
        found[directory] = {r.case.path: r.passed for r in report.results}
    return found


@pytest.mark.parametrize("directory", sorted(RECORDED))
def test_each_test_has_opas_result(directory: str, ours: dict[str, dict[str, bool]]) -> None:
    got, opa = ours[directory], RECORDED[directory]
    assert set(got) == set(opa), "the same tests, named as OPA names them"
    differing = {name for name in opa if got[name] != opa[name]}
    assert differing == KNOWN_DIFFERENCES & set(opa)


def test_the_agreement_count(ours: dict[str, dict[str, bool]]) -> None:
    pairs = [
        (got.get(name), passed)
        for d, tests in RECORDED.items()
        for name, passed in tests.items()
        for got in (ours[d],)
    ]
    assert len(pairs) == 98
    assert sum(a == b for a, b in pairs) == 96


@pytest.mark.skipif(shutil.which("opa") is None, reason="no opa on PATH")
@pytest.mark.parametrize("directory", sorted(RECORDED))
def test_the_recording_is_opas(directory: str) -> None:
    out = subprocess.run(
        ["opa", "test", "--v0-compatible", "--format", "json", str(LIBRARY / directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    results = {
        f"data.{t['package'].removeprefix('data.')}.{t['name']}": not (
            t.get("fail") or t.get("error")
        )
        for t in json.loads(out.stdout)
    }
    assert results == RECORDED[directory]
