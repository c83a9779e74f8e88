"""Gateway mode: callgate serving MCP (streamable HTTP at `/mcp`) to MCP clients.

    bearer     Authorization: Bearer → Identity, through the `--auth` configuration, a JWT
               accepted only for this listener's own URL (RFC 8707)
    calls      tools/list (the `offer` rule) and tools/call (one turn of one call in the
               session's run, through the runner's whole path), with stable retries
    results    a call's result as an MCP tool result (never a protocol error)
    listener   the SDK's low-level Server, its streamable HTTP app (with the protected
               resource metadata and the 401 answer) and the uvicorn listener on the loop

The MCP SDK does the protocol; nothing here reads or writes JSON-RPC itself.
"""
