"""The size budget: no module of the product over 600 lines, no function over 50.

Past either is the signal to split by responsibility before it hurts; the generated protobuf
code is not ours to split.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 50


def sources() -> list[Path]:
    return sorted(
        p
        for package in ("gateway", "adapters")
        for p in (ROOT / package).rglob("*.py")
        if "_proto" not in p.parts
    )


def oversized(path: Path, text: str) -> list[str]:
    found = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{path}: {lines} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno}: {node.name} has {length} lines")
    return found


def test_no_module_or_function_is_over_its_budget() -> None:
    found = [
        problem
        for path in sources()
        for problem in oversized(path.relative_to(ROOT), path.read_text(encoding="utf-8"))
    ]
    assert not found, "over the size budget:\n" + "\n".join(found)


def test_the_budget_check_finds_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    assert oversized(Path("m.py"), f"def f() -> None:\n{body}\n") == ["m.py:1: f has 51 lines"]
    assert oversized(Path("m.py"), "def f() -> None:\n    pass\n") == []
