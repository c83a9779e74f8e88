"""The options of `callgate tools import`, apart from the import itself: `callgate` parses its
command line without loading the MCP SDK, which reads OpenTelemetry's settings when imported."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli.common import existing_file, nonempty, option


def tool_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise ValueError("expected tool names separated by commas")
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    option(
        p,
        "--mcp-servers",
        parse=existing_file,
        metavar="FILE",
        help="import: the MCP servers file (as serve --mcp-servers takes it)",
    )
    option(p, "--server", parse=nonempty, metavar="NAME", help="import: a server of that file")
    option(
        p,
        "--out",
        parse=Path,
        metavar="DIR",
        help="import: the directory the manifests are written to",
    )
    option(
        p,
        "--read",
        parse=tool_names,
        default=[],
        metavar="TOOL[,TOOL...]",
        help="import: the tools to import as effect: read (every other one is a write)",
    )
