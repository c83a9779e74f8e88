"""Build the `callgate-client` wheel: the client and the reference loop without the sidecar.

    python scripts/build_client.py [--out DIR]     (default dist/)

The wheel holds `gateway.client`, `gateway.loop`, the framework integrations
(`gateway.frameworks`), the wire contract (`gateway.pb` and the generated `gateway._proto`),
`gateway.errors`, `gateway.tls` and the provider adapters (standard library only), and depends
on grpcio, grpcio-status and protobuf alone; the frameworks come with the same extras as in the
`callgate` distribution (`callgate-client[agents]`, `callgate-client[langgraph]`). It holds the
same modules as the `callgate` distribution: install one or the other.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what the client distribution is made of, relative to the repository
FILES = [
    "gateway/__init__.py",
    "gateway/py.typed",
    "gateway/pb.py",
    "gateway/errors.py",
    "gateway/tls.py",
]
PACKAGES = ["gateway/_proto", "gateway/client", "gateway/loop", "gateway/frameworks", "adapters"]
DEPENDENCIES = ("grpcio", "grpcio-status", "protobuf")
EXTRAS = ("agents", "langgraph")  # the frameworks' packages, as the main distribution's extras


def extras() -> dict[str, list[str]]:
    """The main distribution's framework extras, the same in the client's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {name: project["optional-dependencies"][name] for name in EXTRAS}


def requirements() -> list[str]:
    """The main distribution's own version bounds of the client's three dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [
        d
        for d in project["dependencies"]
        if d.split(">")[0].split("=")[0].split("[")[0].strip() in DEPENDENCIES
    ]
    assert len(found) == len(DEPENDENCIES), found
    return found


def stage(into: Path) -> Path:
    """Copy the client's modules into `into` with a pyproject of their own; answers it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for rel in FILES:
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, into / rel)
    for rel in PACKAGES:
        shutil.copytree(
            ROOT / rel, into / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    deps = ", ".join(f'"{d}"' for d in requirements())
    optional = "\n".join(f"{name} = {json.dumps(reqs)}" for name, reqs in extras().items())
    (into / "pyproject.toml").write_text(
        f"""[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "callgate-client"
version = "{project["version"]}"
description = "The client and reference agent loop of the callgate sidecar"
requires-python = "{project["requires-python"]}"
dependencies = [{deps}]

[project.optional-dependencies]
{optional}

[tool.setuptools.packages.find]
include = ["gateway*", "adapters*"]

[tool.setuptools.package-data]
"*" = ["py.typed"]
""",
        encoding="utf-8",
    )
    return into


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    out = parser.parse_args(argv).out.resolve()
    with tempfile.TemporaryDirectory(prefix="callgate-client-") as tmp:
        staged = stage(Path(tmp))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--quiet",
                "-w",
                str(out),
                str(staged),
            ]
        )
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
