"""`callgate tools list`: the tools the caller may use, from a running sidecar (ListTools);
`callgate tools import`: manifests for an MCP server's tools (`gateway.cli.tools_import`).
`callgate tools status`: the tool set serving and its last reload (GetStatus).

    callgate tools list [--schema] [--provider P] [--json]
    callgate tools import --mcp-servers FILE --server NAME --out DIR [--read TOOL,...]
    callgate tools status [--json]
    callgate tools pins [NAME] [--db URL] [--json]
    callgate tools approve NAME [--db URL] [--fingerprint F] --reason TEXT

A table of name, version, effect and description by default (the tools the policy's `offer`
lists for the caller); `--schema` adds each tool's input schema; `--json` prints the answer:
the tools as their manifests describe them and, under `declarations`, the same tools as the
`--provider`'s tool declarations (what a loop sends the model).

`status` prints the serving tool-set revision (a hash of the canonical manifests, recorded with
every decision), when it was loaded and, when the newest `--tools` files were rejected, each
problem (file and what); it exits 1 then, so a deploy script can wait for a reload to take.

`pins` and `approve` read and move tools' pinned definitions, through a running sidecar as the
policy's `may_pin_tools` allows, or offline on the store with `--db` (`gateway.cli.tools_pins`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from gateway.cli.common import connected, nonempty, option, switch
from gateway.cli.runs import table
from gateway.cli.tools_import_options import add_arguments as add_import_arguments
from gateway.cli.tools_pins import add_arguments as add_pin_arguments
from gateway.cli.tools_pins import run_approve, run_pins
from gateway.errors import CallgateError

ACTIONS = ("list", "import", "status", "pins", "approve")


def add_parser(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "tools",
        help="list the tools you may use; import an MCP server's; the tool set's status",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=ACTIONS, help="what to do")
    client_options(p)
    switch(p, "--schema", help="show each tool's input schema")
    option(
        p,
        "--provider",
        parse=nonempty,
        default="openai.responses",
        metavar="PROVIDER",
        help="whose tool declarations --json includes (openai.responses, anthropic.messages, ...)",
    )
    switch(p, "--json", help="print the answer as JSON")
    add_import_arguments(p)
    add_pin_arguments(p)
    p.set_defaults(handler=run)


def run(ns: argparse.Namespace) -> int:
    if ns.action == "import":
        from gateway.cli.tools_import import run_import

        return run_import(ns)
    if ns.action == "status":
        return status(ns)
    if ns.action == "pins":
        return run_pins(ns)
    if ns.action == "approve":
        return run_approve(ns)
    with connected(ns, timeout_s=30) as client:
        answer = client.list_tools(ns.provider)
    if ns.json:
        print(
            json.dumps(
                {
                    "tools": [_tool(t) for t in answer.tools],
                    "declarations": json.loads(answer.tools_json or "[]"),
                },
                indent=2,
            )
        )
    else:
        print(text(answer.tools, schema=ns.schema))
    return 0


def status(ns: argparse.Namespace) -> int:
    with connected(ns, timeout_s=30) as client:
        answer = client.get_status()
    rejected = (
        answer.last_rejected_tools_reload if answer.HasField("last_rejected_tools_reload") else None
    )
    problems = (
        [{"file": p.file, "line": p.line or None, "message": p.message} for p in rejected.problems]
        if rejected is not None
        else []
    )
    if ns.json:
        print(
            json.dumps(
                {
                    "tools_revision": answer.tools_revision,
                    "loaded_at": answer.tools_loaded_at,
                    "tools": list(answer.tools),
                    "rejected": None
                    if rejected is None
                    else {
                        "at": rejected.at,
                        "file": rejected.file,
                        "line": rejected.line or None,
                        "message": rejected.message,
                        "problems": problems,
                    },
                },
                indent=2,
            )
        )
    else:
        print(
            f"tools revision:   {answer.tools_revision}\nloaded at:        "
            f"{answer.tools_loaded_at}\ntools:            {', '.join(answer.tools)}"
        )
        if rejected is not None:
            print(
                f"rejected reload:  at {rejected.at}, still serving the revision above",
                *(f"  {p['message']}" for p in problems),
                sep="\n",
            )
    if rejected is None:
        return 0
    raise CallgateError(
        f"the newest --tools files were rejected ({len(problems)} problem"
        f"{'s' * (len(problems) != 1)}): fix them and the sidecar reloads them "
        "itself (or on SIGHUP)"
    )


def _tool(t: Any) -> dict[str, Any]:
    return {
        "name": t.name,
        "version": t.version,
        "effect": t.effect,
        "description": t.description,
        "input_schema": json.loads(t.input_schema_json),
    }


def text(tools: Any, *, schema: bool) -> str:
    if not tools:
        return "no tools (the policy's offer lists none for you)"
    lines = table(
        ("TOOL", "VERSION", "EFFECT", "DESCRIPTION"),
        ((t.name, t.version, t.effect, " ".join(t.description.split())) for t in tools),
    )
    if schema:
        for t in tools:
            shown = json.dumps(json.loads(t.input_schema_json), indent=2, sort_keys=True)
            lines += [
                "",
                f"{t.name} {t.version} input schema:",
                *("  " + line for line in shown.splitlines()),
            ]
    return "\n".join(lines)
