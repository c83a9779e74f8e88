"""`callgate quotas`: a wrong combination of arguments is a usage error, before any request."""

from __future__ import annotations

import pytest

from tests.support.commands import callgate


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["quotas", "reset"], "reset needs the KEY"),
        (["quotas", "reset", "acme/k"], "reset needs --reason TEXT"),
        (["quotas", "list", "acme/k"], "the listing takes no KEY"),
    ],
)
def test_a_wrong_combination_is_a_usage_error(args: list[str], says: str) -> None:
    done = callgate(*args, env={"CALLGATE_TARGET": "127.0.0.1:9"})
    assert done.returncode == 2 and says in done.stderr
