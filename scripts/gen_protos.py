"""Generate the Python protobuf/gRPC modules from proto/ into gateway/_proto/.

Run by `make proto`; tests/gateway/test_proto_drift.py runs it into a temporary directory and
fails when the committed output differs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
PACKAGE = "gateway._proto"


def generate(out_dir: Path) -> list[Path]:
    """Compile every .proto under proto/ into out_dir; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in PROTO_DIR.rglob("*.proto"))
    import grpc_tools

    include = str(Path(grpc_tools.__file__).parent / "_proto")
    args = [
        "protoc",
        f"-I{PROTO_DIR}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written: list[Path] = []
    for path in sorted(out_dir.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = path.read_text()
        # generated modules import each other as top-level `callgate.v1`; make them package-relative
        fixed = re.sub(
            r"^from callgate\.v1 import", f"from {PACKAGE}.callgate.v1 import", text, flags=re.M
        )
        if fixed != text:
            path.write_text(fixed)
        written.append(path)
    for d in [out_dir, *[p for p in out_dir.rglob("*") if p.is_dir()]]:
        init = d / "__init__.py"
        if not init.exists():
            init.write_text("")
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "gateway" / "_proto"
    generate(target)
