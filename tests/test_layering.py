"""Dependencies point one way: adapters never import gateway; the runner knows no gRPC/SQL."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_adapters_never_import_gateway() -> None:
    for path in (ROOT / "adapters").rglob("*.py"):
        bad = {m for m in imports(path) if m == "gateway" or m.startswith("gateway.")}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


CORE = ["runner.py", "judge.py", "batch.py", "execute.py", "settle.py", "resolution.py",
        "watch.py", "policy_input.py", "model.py", "arguments.py", "approvals.py",
        "approval_gate.py", "approval_desk.py", "expiry.py", "request_checks.py", "jsontext.py",
        "limits.py", "run_pages.py", "audit/events.py", "audit/keys.py", "audit/at_rest.py",
        "audit/chain.py", "audit/reader.py", "audit/export.py"]
FORBIDDEN_IN_CORE = ("gateway._proto", "gateway.pb", "gateway.server", "gateway.store.sqlite",
                     "gateway.store.postgres", "adapters")


def test_the_state_machine_knows_no_grpc_no_sql_and_no_provider() -> None:
    for name in CORE:
        mods = imports(ROOT / "gateway" / name)
        bad = {m for m in mods if m.split(".")[0] in {"grpc", "sqlite3", "psycopg"}
               or m.startswith(FORBIDDEN_IN_CORE)}
        assert not bad, f"gateway/{name} imports {bad}"


def test_identity_knows_no_grpc_and_the_runner_knows_no_identity_source() -> None:
    for path in (ROOT / "gateway" / "identity").rglob("*.py"):
        bad = {m for m in imports(path) if m.split(".")[0] == "grpc"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
    for name in CORE:
        bad = {m for m in imports(ROOT / "gateway" / name) if m.startswith("gateway.identity")}
        assert not bad, f"gateway/{name} imports {bad}"
