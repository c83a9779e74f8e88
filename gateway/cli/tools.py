"""`callgate tools list`: the tools the caller may use, from a running sidecar (ListTools);
`callgate tools import`: manifests for an MCP server's tools (`gateway.cli.tools_import`).

    callgate tools list [--schema] [--provider P] [--json]
    callgate tools import --mcp-servers FILE --server NAME --out DIR [--read TOOL,...]

A table of name, version, effect and description by default (the tools the policy's `offer`
lists for the caller); `--schema` adds each tool's input schema; `--json` prints the answer:
the tools as their manifests describe them and, under `declarations`, the same tools as the
`--provider`'s tool declarations (what a loop sends the model).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from gateway.cli.common import connected, nonempty, option, switch
from gateway.cli.runs import table
from gateway.cli.tools_import import add_arguments as add_import_arguments
from gateway.cli.tools_import import run_import

ACTIONS = ("list", "import")


def add_parser(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("tools", help="list the tools you may use; import an MCP server's",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=ACTIONS, help="what to do")
    client_options(p)
    switch(p, "--schema", help="show each tool's input schema")
    option(p, "--provider", parse=nonempty, default="openai.responses", metavar="PROVIDER",
           help="whose tool declarations --json includes (openai.responses, "
           "anthropic.messages, ...)")
    switch(p, "--json", help="print the answer as JSON")
    add_import_arguments(p)
    p.set_defaults(handler=run)


def run(ns: argparse.Namespace) -> int:
    if ns.action == "import":
        return run_import(ns)
    with connected(ns, timeout_s=30) as client:
        answer = client.list_tools(ns.provider)
    if ns.json:
        print(json.dumps({"tools": [_tool(t) for t in answer.tools],
                          "declarations": json.loads(answer.tools_json or "[]")}, indent=2))
    else:
        print(text(answer.tools, schema=ns.schema))
    return 0


def _tool(t: Any) -> dict[str, Any]:
    return {"name": t.name, "version": t.version, "effect": t.effect,
            "description": t.description, "input_schema": json.loads(t.input_schema_json)}


def text(tools: Any, *, schema: bool) -> str:
    if not tools:
        return "no tools (the policy's offer lists none for you)"
    lines = table(("TOOL", "VERSION", "EFFECT", "DESCRIPTION"),
                  ((t.name, t.version, t.effect, " ".join(t.description.split()))
                   for t in tools))
    if schema:
        for t in tools:
            shown = json.dumps(json.loads(t.input_schema_json), indent=2, sort_keys=True)
            lines += ["", f"{t.name} {t.version} input schema:",
                      *("  " + line for line in shown.splitlines())]
    return "\n".join(lines)
