"""Running `tests.support.framework_child` from a test: start it, read its one answer with a
bounded wait, kill it, and run the resuming process to the end."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

CHILD = [sys.executable, "-m", "tests.support.framework_child"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def started(
    framework: str, target: str, token: str, run_id: str, file: Path, timeout_s: float = 90
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """The child of the first phase, once it has printed what callgate holds (and blocks)."""
    proc = subprocess.Popen(
        [*CHILD, framework, "start", target, token, run_id, str(file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(line) for line in proc.stdout or ()], daemon=True
    ).start()
    try:
        answer = json.loads(lines.get(timeout=timeout_s))
        assert json.loads(lines.get(timeout=timeout_s)) == {"blocked": True}
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"the child said nothing in time: {proc.stderr}") from None
    return proc, answer


def killed(proc: subprocess.Popen[str]) -> int:
    proc.kill()
    code = proc.wait(timeout=30)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return code


def resumed(framework: str, target: str, token: str, run_id: str, file: Path) -> dict[str, Any]:
    """The second phase, in a new process, to its end."""
    done = subprocess.run(
        [*CHILD, framework, "resume", target, token, run_id, str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return answer
