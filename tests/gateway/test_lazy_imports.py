"""What a sidecar imports at start-up: the MCP client (the mcp SDK: about a third of a second
and tens of MB) only when a tool uses an MCP server or MCP is served; the OPA client (aiohttp,
opa-python-client, requests: a tenth of a second, 11 MB) only with --engine opa or shadow;
httpx only for signing keys fetched from a URL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
LAZY = {"mcp", "mcp_types", "httpx2", "aiohttp", "opa_client", "requests", "httpx"}
import gateway.cli.main, gateway.cli.serve, gateway.service.app
from pathlib import Path
from gateway.tools import Registry
Registry.load(Path(sys.argv[1]), env={"CALLGATE_TRAVEL_URL": "http://127.0.0.1:1"})
print(sorted({m.split(".")[0] for m in sys.modules} & LAZY))
"""


def test_serving_http_tools_imports_no_mcp_client() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "examples" / "travel" / "tools")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
