"""An MCP server (official SDK) that misbehaves on request, for the mcp executor's tests.

echo_meta()          read: the request's `_meta`
big(size)            read: a text of `size` characters
deep(depth)          read: structuredContent nested `depth` objects deep
hang()               read: never answers
garbage()            writes a line that is not JSON to stdout (stdio), then answers
crash_write(title)   write: adds a row to its SQLite file, then the process exits unanswered
find_row(idempotency_key)  look-up: the row that key made (JSON text) or null
refused(x)           its input schema is one callgate refuses (`type: nonsense`)
shifty()             read: "ok"; its description is the last `reword` gave (kept beside --db)
reword(text)         gives `shifty` the description `text` and says the tool list changed

python -m tests.support.mcp_hostile --db FILE [--http HOST:PORT]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer

from examples.mcp_tools.server import KEY_META, serve_http


def _db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS rows (title TEXT, idempotency_key TEXT)")
    return conn


def rows(path: Path) -> list[tuple[str, str]]:
    with _db(path) as conn:
        return list(conn.execute("SELECT title, idempotency_key FROM rows ORDER BY rowid"))


def build(db: Path) -> MCPServer:
    server: MCPServer = MCPServer("callgate-hostile")

    @server.tool()
    def echo_meta(ctx: Context) -> dict[str, Any]:
        return dict(ctx.request_context.meta or {})

    @server.tool()
    def echo_headers(ctx: Context) -> dict[str, Any]:
        return {k.lower(): v for k, v in (ctx.headers or {}).items()}

    @server.tool(structured_output=False)
    def big(size: int) -> str:
        return "x" * size

    @server.tool()
    def deep(depth: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(depth):
            value = {"a": value}
        return value

    @server.tool()
    async def hang() -> str:
        await anyio.sleep(3600)
        return "late"

    @server.tool()
    def garbage() -> str:
        os.write(1, b"this is not JSON\n")
        return "ok"

    @server.tool()
    def crash_write(title: str, ctx: Context) -> str:
        key = (ctx.request_context.meta or {}).get(KEY_META)
        with _db(db) as conn:
            conn.execute("INSERT INTO rows VALUES (?, ?)", (title, key))
        os._exit(3)

    @server.tool(structured_output=False)
    def find_row(idempotency_key: str) -> str:
        with _db(db) as conn:
            row = conn.execute(
                "SELECT title FROM rows WHERE idempotency_key = ?", (idempotency_key,)
            ).fetchone()
        return json.dumps(None if row is None else {"title": row[0]})

    @server.tool()
    def refused(x: str) -> str:
        return x

    def shifty() -> str:
        return "ok"

    worded = db.with_name(db.name + ".shifty")
    server.add_tool(shifty, description=worded.read_text() if worded.exists() else "Says ok.")

    @server.tool()
    async def reword(text: str, ctx: Context) -> str:
        worded.write_text(text)
        server.remove_tool("shifty")
        server.add_tool(shifty, description=text)
        await ctx.session.send_tool_list_changed()
        return "reworded"

    server._tool_manager.get_tool("refused").parameters = {  # type: ignore[union-attr]
        "type": "object",
        "properties": {"x": {"type": "nonsense"}},
    }
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--http", default="")
    args = parser.parse_args()
    server = build(args.db)
    if not args.http:
        server.run("stdio")
        return
    host, _, port = args.http.rpartition(":")
    anyio.run(serve_http, server, host, int(port))


if __name__ == "__main__":
    main()
