"""Generated protobuf code must match proto/ (run `make proto` after changing a .proto)."""

from __future__ import annotations

import filecmp
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load_generator() -> object:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "scripts" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_current(tmp_path: Path) -> None:
    gen = _load_generator()
    written = gen.generate(tmp_path)  # type: ignore[attr-defined]
    committed = ROOT / "gateway" / "_proto"
    assert written, "the generator produced nothing"
    for path in written:
        rel = path.relative_to(tmp_path)
        assert (committed / rel).exists(), f"{rel} is missing: run `make proto`"
        assert filecmp.cmp(path, committed / rel, shallow=False), (
            f"{rel} is stale: run `make proto`"
        )
