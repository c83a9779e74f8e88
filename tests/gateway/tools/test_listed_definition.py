"""A tool on an MCP server: its definition holds the server's tools/list entry, so what the
server says must have a canonical form. One that does not (a lone UTF-16 surrogate, which a
server's JSON can carry as `\\ud800`) makes the definition unavailable, with the reason: the
pin check then fails closed as for a server that cannot be listed, never raising out of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.tools.definitions import DefinitionUnavailable
from tests.support.mcp_servers import HOSTILE, mcp_manifest, registry, stdio


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "shifty", "description": "Says \ud800 ok."},
        {"name": "shifty", "inputSchema": {"type": "object", "properties": {"\udc00": {}}}},
    ],
)
async def test_an_entry_without_a_canonical_form_is_unavailable(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    reg = registry(
        [mcp_manifest("shifty", server="hostile")],
        {"hostile": stdio("hostile", HOSTILE, tmp_path / "h.db")},
    )
    tool = reg.get("shifty")
    assert tool is not None

    async def listed() -> dict[str, Any]:
        return entry

    tool._listed = listed  # (the server's entry, as its session would give it)
    try:
        with pytest.raises(DefinitionUnavailable, match="surrogate"):
            await tool.definition()
    finally:
        await reg.aclose()
