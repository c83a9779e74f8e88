"""Record what OPA 1.9 itself answers for the conformance cases in `opa_conformance/`.

    PATH=/path/to/opa-1.9:$PATH python -m tests.gateway.policy.record_opa_conformance

The cases were transcribed from OPA's repository after 1.9, and some of their expected
results are a later release's (exact arithmetic beyond 64 bits, `array.flatten`,
`strings.split_n`, glob and semver fixes). callgate's reference is OPA 1.9 as callgate runs
it, so each case is evaluated with `opa eval --format json --strict-builtin-errors` (and
`--v0-compatible` for Rego v0 files), with the case's modules, data and input, and the answer
is stored by case key in `opa_conformance/_opa-1.9-answers.json`: `{"bindings": [...]}` (what
`opa eval` returns, variables starting with `_` left out) or `{"error": code}`.
`test_conformance.py` compares the embedded engine with these answers without OPA.
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

from tests.gateway.policy.conformance import CASES_DIR, Case, all_cases

ANSWERS = CASES_DIR / "_opa-1.9-answers.json"


def opa_answer(opa: str, case: Case) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        command = [opa, "eval", "--format", "json", "--strict-builtin-errors"]
        if case.rego_v0:
            command.append("--v0-compatible")
        for index, module in enumerate(case.modules):
            (root / f"m{index}.rego").write_text(module, encoding="utf-8")
            command += ["-d", str(root / f"m{index}.rego")]
        if case.data is not None:
            (root / "data.json").write_text(json.dumps(case.data), encoding="utf-8")
            command += ["-d", str(root / "data.json")]
        if case.has_input:
            (root / "input.json").write_text(json.dumps(case.raw_input), encoding="utf-8")
            command += ["-i", str(root / "input.json")]
        done = subprocess.run(  # an empty environment: opa.runtime() answers with it
            [*command, case.query],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={},
        )
    try:
        out = json.loads(done.stdout)
    except ValueError:  # OPA could not print its result (a number it cannot write as JSON)
        return {"error": "unprintable result"}
    if "errors" in out:
        return {"error": str(out["errors"][0].get("code", "error"))}
    bindings = [
        {k: v for k, v in (r.get("bindings") or {}).items() if not k.startswith("_")}
        for r in out.get("result") or []
    ]
    return {"bindings": bindings}


def main() -> int:
    opa = shutil.which("opa")
    if opa is None:
        print("no `opa` on PATH", file=sys.stderr)
        return 2
    version = subprocess.run([opa, "version"], capture_output=True, text=True, check=True)
    if not version.stdout.startswith("Version: 1.9.0\n"):
        print(f"want OPA 1.9.0, found {version.stdout.splitlines()[:1]}", file=sys.stderr)
        return 2
    cases = all_cases()
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda case: opa_answer(opa, case), cases))
    doc = {
        "opa_version": "1.9.0",
        "strict_builtin_errors": True,
        "answers": {case.key: answer for case, answer in zip(cases, answers, strict=True)},
    }
    ANSWERS.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(cases)} answers written to {ANSWERS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
