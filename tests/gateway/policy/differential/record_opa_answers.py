"""Record OPA 1.9's answers for the differential corpus into `opa_answers.json`.

    PATH=/path/to/opa-1.9:$PATH python -m tests.gateway.policy.differential.record_opa_answers

The corpus is drawn from `strategies.py` by Hypothesis with a fixed seed (the same Hypothesis
version and strategies draw the same cases), `PER_TOPIC` cases per topic, duplicates dropped.
Each case is evaluated by

    opa eval --strict-builtin-errors --format json -d t.rego -i input.json data.t.r

(callgate queries OPA with strict builtin errors: docs/policies.md), and the answer stored as one of
`{"value": v}`, `{"undefined": true}` or `{"error": code, "stage": "compile"|"eval"}` (a
`rego_*` code is OPA refusing the module; an `eval_*` code an error while evaluating, and so
is a value OPA evaluates but cannot write as JSON, which its REST API fails on too). The
test (`test_differential.py`) needs no OPA: it compares the embedded engine with this file.
Run it again after changing the strategies, and commit the file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.gateway.policy.differential.strategies import (
    Case,
    arities,
    negations,
    numbers,
    objects,
    sprintfs,
)

FIXTURE = Path(__file__).with_name("opa_answers.json")
PER_TOPIC = 120
SEED = 20261201  # a fixed seed: the same Hypothesis version and strategies draw the same cases
TOPICS = {
    "negation": negations(),
    "sprintf": sprintfs(),
    "numbers": numbers(),
    "objects": objects(),
    "arity": arities(),
}


def draw_corpus() -> list[Case]:
    corpus: list[Case] = []
    seen: set[str] = set()
    for topic, strategy in TOPICS.items():
        drawn: list[Case] = []
        collect(strategy, drawn)
        for case in drawn:
            key = json.dumps([case["module"], case["input"]], sort_keys=True)
            if key not in seen:
                seen.add(key)
                corpus.append({"id": f"{topic}-{len(seen):04d}", **case})
    return corpus


def collect(strategy: st.SearchStrategy[Case], into: list[Case]) -> None:
    @seed(SEED)
    @settings(
        database=None,
        max_examples=PER_TOPIC,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def draw(case: Case) -> None:
        into.append(case)

    draw()


def opa_answer(opa: str, case: Case) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "t.rego").write_text(case["module"], encoding="utf-8")
        (root / "input.json").write_text(json.dumps(case["input"]), encoding="utf-8")
        done = subprocess.run(
            [
                opa,
                "eval",
                "--strict-builtin-errors",
                "--format",
                "json",
                "-d",
                str(root / "t.rego"),
                "-i",
                str(root / "input.json"),
                "data.t.r",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={},  # nothing of this machine in what OPA may answer (opa.runtime())
        )
    try:
        out = json.loads(done.stdout)
    except ValueError:  # evaluated, but OPA cannot write the value as JSON (`to_number("01")`)
        return {"error": "unprintable result", "stage": "eval", "message": done.stderr.strip()}
    if "errors" in out:
        code = str(out["errors"][0].get("code", ""))
        return {
            "error": code,
            "stage": "compile" if code.startswith("rego_") else "eval",
            "message": str(out["errors"][0].get("message", "")),
        }
    results = out.get("result") or []
    if not results:
        return {"undefined": True}
    return {"value": results[0]["expressions"][0]["value"]}


def main() -> int:
    opa = shutil.which("opa")
    if opa is None:
        print("no `opa` on PATH", file=sys.stderr)
        return 2
    version = subprocess.run([opa, "version"], capture_output=True, text=True, check=True)
    first = version.stdout.splitlines()[0] if version.stdout else ""
    if first != "Version: 1.9.0":
        print(f"want OPA 1.9.0, found {first!r}", file=sys.stderr)
        return 2
    corpus = draw_corpus()
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda case: opa_answer(opa, case), corpus))
    for case, answer in zip(corpus, answers, strict=True):
        case["opa"] = answer
    doc = {
        "opa_version": "1.9.0",
        "query": "data.t.r",
        "strict_builtin_errors": True,
        "cases": corpus,
    }
    FIXTURE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(corpus)} cases written to {FIXTURE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
