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
    errors = file.with_name(file.name + ".stderr")  # a file: a full pipe would block the child
    with errors.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [*CHILD, framework, "start", target, token, run_id, str(file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
            env=ENV,
        )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)
        lines.put(None)  # the child's output ended (it exited)

    threading.Thread(target=read, daemon=True).start()
    try:
        said = [lines.get(timeout=timeout_s), lines.get(timeout=timeout_s)]
    except queue.Empty:
        said = [None]
    if None in said:
        proc.kill()
        raise AssertionError(f"the child did not get to the interrupt: {errors.read_text()}")
    answer, blocked = (json.loads(line or "") for line in said)
    assert blocked == {"blocked": True}
    return proc, answer


def killed(proc: subprocess.Popen[str]) -> int:
    proc.kill()
    code = proc.wait(timeout=30)
    for stream in (proc.stdin, proc.stdout):
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
