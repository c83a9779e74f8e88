"""A copy of the default policies whose approvals expire quickly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.paths import POLICIES


def short_ttl_policies(into: Path, ttl_s: int) -> Path:
    """The default policies, with approval requests open for ttl_s seconds."""
    shutil.copytree(POLICIES, into)
    data = json.loads((into / "data.json").read_text())
    data["callgate"]["config"]["approval_ttl_s"] = ttl_s
    (into / "data.json").write_text(json.dumps(data))
    return into
