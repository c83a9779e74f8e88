"""The repository stands on its own: nothing in it reads a path above its root.

A user's clone has nothing beside it, so a test, script, Makefile target or CI step that reaches
outside the checkout works only on the machine it was written on. This scans every tracked text
file that runs (Python, shell, Makefile, CI, JavaScript) for references that climb above the
repository root, and checks that copied fixtures say where they came from.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUNNABLE = re.compile(r"(\.py|\.sh|\.js|\.mjs|Makefile|\.ci/run|\.toml)$")
# `..` as a path segment, a parent of the root (ROOT.parent, parents[2] on a depth-1 file...),
# or an absolute path into the machine's neighbouring folders
OUTSIDE = [
    re.compile(r"(^|[\"'\s=(/])\.\./"),
    re.compile(r"ROOT\s*\.\s*parent"),
    re.compile(r"/work/(?!main\b)"),
]


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / line for line in out.splitlines() if line]


def test_no_runnable_file_reaches_above_the_repository() -> None:
    offenders = []
    for path in tracked_files():
        rel = path.relative_to(ROOT).as_posix()
        if not RUNNABLE.search(rel) or rel.startswith(("gateway/_proto/", "clients/node/node_")):
            continue
        if rel == "tests/test_self_contained.py":
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert not offenders, "reads outside the repository:\n" + "\n".join(offenders)


def test_every_fixture_folder_names_its_sources() -> None:
    folders = {
        p.parent
        for p in tracked_files()
        if "fixtures" in p.relative_to(ROOT).parts and p.name != "_sources.md"
    }
    missing = [
        f.relative_to(ROOT).as_posix()
        for f in sorted(folders)
        if not (f / "_sources.md").is_file() and f.parent.name == "fixtures"
    ]
    assert not missing, f"fixture folders without a _sources.md: {missing}"
