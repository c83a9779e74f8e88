"""Running the `callgate` command as a separate process."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.paths import ROOT


def callgate(
    *args: str, env: dict[str, str] | None = None, stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: its own process, the given variables added."""
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
