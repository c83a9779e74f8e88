"""The notes MCP server (official `mcp` SDK): a read, a write and a look-up over SQLite.

    get_note(note_id)        read: {"note_id", "title", "body", "idempotency_key"}; an
                             unknown id is a tool error ("no note ...")
    add_note(title, body)    write: one row; the request's `_meta["io.callgate/idempotency-key"]`
                             is stored with it, and a key seen before answers the row it made
                             instead of adding another
    find_note(idempotency_key)  look-up: the row that key made as JSON text, or `null`

Run it over stdio (what a servers file's `command` starts):

    python -m examples.mcp_tools.server --db notes.db

or over streamable HTTP at `/mcp` (port 0 picks a free port; the first line printed is
`MCP server at http://HOST:PORT/mcp`):

    python -m examples.mcp_tools.server --db notes.db --http 127.0.0.1:0

In-process: `build_server(db)` answers the `MCPServer`; `notes(db)` reads the rows back.
"""

from __future__ import annotations

import argparse
import json
import socket
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

KEY_META = "io.callgate/idempotency-key"

_SCHEMA = """CREATE TABLE IF NOT EXISTS notes (
    note_id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL,
    idempotency_key TEXT UNIQUE)"""


def _connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(_SCHEMA)
    return conn


def notes(db: Path) -> list[dict[str, Any]]:
    """Every row of the notes file, in the order they were added."""
    with _connect(db) as conn:
        return [dict(r) for r in conn.execute("SELECT * FROM notes ORDER BY rowid")]


def _row(conn: sqlite3.Connection, column: str, value: str) -> dict[str, Any] | None:
    # column is one of two names written below, never input
    row = conn.execute(f"SELECT * FROM notes WHERE {column} = ?", (value,)).fetchone()
    return None if row is None else dict(row)


def _key(ctx: Context) -> str | None:
    meta = ctx.request_context.meta or {}
    key = meta.get(KEY_META)
    return key if isinstance(key, str) and key else None


def build_server(db: Path) -> MCPServer:
    """The notes server over the SQLite file db (created when missing)."""
    server: MCPServer = MCPServer("callgate-example-notes")
    _connect(db).close()

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    def get_note(note_id: str) -> dict[str, Any]:
        """One note by its id."""
        with _connect(db) as conn:
            row = _row(conn, "note_id", note_id)
        if row is None:
            raise ToolError(f"no note {note_id!r}")
        return row

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
        )
    )
    def add_note(title: str, body: str, ctx: Context) -> dict[str, Any]:
        """Add a note; answers the note as stored."""
        key = _key(ctx)
        with _connect(db) as conn:
            if key is not None and (seen := _row(conn, "idempotency_key", key)) is not None:
                return seen
            note_id = uuid.uuid4().hex[:12]
            conn.execute("INSERT INTO notes VALUES (?, ?, ?, ?)", (note_id, title, body, key))
            row = _row(conn, "note_id", note_id)
        assert row is not None
        return row

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
    def find_note(idempotency_key: str) -> str:
        """The note an idempotency key made, as JSON text; `null` when there is none."""
        with _connect(db) as conn:
            return json.dumps(_row(conn, "idempotency_key", idempotency_key))

    return server


async def serve_http(server: MCPServer, host: str, port: int) -> None:
    """Serve `server` over streamable HTTP at /mcp; prints the URL once listening."""
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)  # connections wait in the backlog from now on
    bound = sock.getsockname()[1]
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"MCP server at http://{host}:{bound}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", type=Path, default=Path("notes.db"), help="the SQLite file")
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        default="",
        help="serve streamable HTTP at /mcp instead of stdio",
    )
    args = parser.parse_args(argv)
    server = build_server(args.db)
    if not args.http:
        server.run("stdio")
        return
    host, _, port = args.http.rpartition(":")
    try:
        anyio.run(serve_http, server, host.strip("[]") or "127.0.0.1", int(port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
