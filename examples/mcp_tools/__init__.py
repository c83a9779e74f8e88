"""An example MCP server, built with the official `mcp` SDK: notes kept in its own SQLite file.

`examples.mcp_tools.server` serves the tools `get_note` (a read), `add_note` (a write that
honours callgate's idempotency key from the request's `_meta`) and `find_note` (the look-up
a `reconcile` section names), over stdio or streamable HTTP. `examples/mcp_tools/servers.yaml`
and the manifests in `examples/mcp_tools/tools/` point callgate at it.

The package imports nothing, so `python -m examples.mcp_tools.server` runs the module once.
"""
