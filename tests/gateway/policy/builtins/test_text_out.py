"""A supplied builtin never hands the engine a string that is not Unicode text.

Python strings can hold lone UTF-16 surrogates (JSON's `"\\ud800"` decodes to one); handed to
the engine, one crashed the whole process (a segmentation fault: a policy that decoded a
hostile token took the sidecar down). OPA, in Go, writes such text as U+FFFD; so does
callgate now, for every value a supplied builtin answers. Each case runs in a process of its
own, so a crash fails the test rather than the test run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

# a token whose payload is {"a":"\ud800"} (a JSON escape of a lone surrogate)
TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhIjoiXHVkODAwIn0.c2ln"


def evaluated(expr: str) -> subprocess.CompletedProcess[str]:
    program = (
        "import json, sys\n"
        "from tests.gateway.policy.builtins.support import rego\n"
        "print(json.dumps(rego(sys.argv[1])))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", program, expr],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        # OPA 1.9's answer, asked of it
        (f'io.jwt.decode("{TOKEN}")', [{"alg": "HS256", "typ": "JWT"}, {"a": "\ufffd"}, "736967"]),
        ('strings.render_template("{{.a}}", {"a": "x"})', "x"),
        # (OPA refuses this template, "invalid syntax"; callgate renders it: what matters
        # here is that the process lives)
        ('strings.render_template("{{\\"\\\\ud800\\"}}", {})', "\ufffd"),
    ],
)
def test_a_lone_surrogate_reaches_the_policy_as_u_fffd(expr: str, want: object) -> None:
    done = evaluated(expr)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert json.loads(done.stdout) == want


def test_every_kind_of_value_is_made_text() -> None:
    from gateway.policy.builtins.base import valid_text

    assert valid_text("a\ud800b") == "a\ufffdb"
    assert valid_text({"k\udc00": ["x\ud800", 1, None, True, 1.5]}) == {
        "k\ufffd": ["x\ufffd", 1, None, True, 1.5]
    }
    assert valid_text({"\ud800", "a"}) == {"\ufffd", "a"}
    same = {"a": ["é", 1]}
    assert valid_text(same) is same  # nothing to replace: the value itself, not a copy
