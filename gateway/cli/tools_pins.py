"""`callgate tools pins` and `callgate tools approve`: tools' pinned definitions, offline on
the store (docs/tools.md, "Pinned definitions").

    callgate tools pins --db URL [--json]
    callgate tools approve NAME --db URL [--fingerprint F] --reason TEXT [--audit-key-file FILE]

`pins` lists each pinned tool: its pinned fingerprint, who pinned it and when, and every other
definition of it a sidecar has served since, with what changed and a diff. `approve` pins the
tool to another recorded definition (the newest, or the one `--fingerprint` names) and
appends a `pin` audit record, sealed with the store's audit key. Whoever can write the store
can approve; an operator's approval through a running sidecar (a `may_pin_tools` grant) is not
in this build.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import socket
from pathlib import Path
from typing import Any

from gateway.cli.common import UsageError, option
from gateway.errors import ConfigError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default="", metavar="NAME", help="approve: the tool")
    option(p, "--db", default="", metavar="URL", help="pins, approve: the sidecar's --db")
    option(p, "--fingerprint", default="", metavar="F", help="approve: the definition to pin")
    option(p, "--reason", default="", metavar="TEXT", help="approve: why (audited; required)")
    option(
        p,
        "--audit-key-file",
        parse=Path,
        default=None,
        metavar="FILE",
        help="approve: the store's audit key (default: <sqlite file>-audit.key)",
    )


def _listing(pins: dict[str, Any], seen: list[Any]) -> list[dict[str, Any]]:
    from gateway.pins import changed_fields, diff_text, read_definition

    out = []
    for name, pin in sorted(pins.items()):
        others = [s for s in seen if s.name == name and s.fingerprint != pin.fingerprint]
        out.append(
            {
                "name": name,
                "fingerprint": pin.fingerprint,
                "pinned_at": pin.pinned_at.isoformat(),
                "pinned_by": pin.pinned_by,
                "reason": pin.reason,
                "changed": [
                    {
                        "fingerprint": s.fingerprint,
                        "first_seen_at": s.first_seen_at.isoformat(),
                        "fields": changed_fields(
                            read_definition(pin.definition_json),
                            read_definition(s.definition_json),
                        ),
                        "diff": diff_text(pin.definition_json, s.definition_json),
                    }
                    for s in others
                ],
            }
        )
    return out


def _text(listing: list[dict[str, Any]]) -> str:
    if not listing:
        return "no tool is pinned"
    lines = []
    for t in listing:
        by = t["pinned_by"] or "callgate (first seen)"
        lines.append(f"{t['name']}  {t['fingerprint']}  pinned {t['pinned_at']} by {by}")
        for c in t["changed"]:
            lines.append(
                f"  changed: {c['fingerprint']} (first seen {c['first_seen_at']}): "
                f"{', '.join(c['fields']) or 'its definition'}"
            )
            lines += ["    " + line for line in c["diff"].splitlines()]
    return "\n".join(lines)


async def _pins(db: str) -> list[dict[str, Any]]:
    from gateway.store import open_store

    store = await open_store(db)
    try:
        return _listing(await store.tool_pins(), await store.tool_definitions())
    finally:
        await store.close()


def run_pins(ns: argparse.Namespace) -> int:
    if not ns.db:
        raise UsageError("pins needs --db URL: the store the sidecar serves from")
    listing = asyncio.run(_pins(ns.db))
    print(json.dumps({"pins": listing}, indent=2) if ns.json else _text(listing))
    return 0


async def _approve(ns: argparse.Namespace, key: Any, by: str) -> str:
    from gateway.audit import events
    from gateway.model import Identity, now_utc
    from gateway.pins import ToolPin, short
    from gateway.store import open_store

    store = await open_store(ns.db, audit_key=key)
    try:
        pins = await store.tool_pins([ns.name])
        seen = await store.tool_definitions([ns.name])
        if ns.name not in pins:
            raise UsageError(f"no tool named {ns.name!r} is pinned in this store")
        previous = pins[ns.name].fingerprint
        wanted = ns.fingerprint or (seen[-1].fingerprint if seen else "")
        if wanted == previous:
            return f"tool {ns.name!r} is pinned to {short(previous)} already"
        pin = ToolPin(ns.name, wanted, "", now_utc(), by, ns.reason)
        who = Identity(by)
        stored = await store.approve_pin(
            pin, lambda p: [events.tool_pinned(p, by=who, previous=previous)]
        )
        if stored is None:
            raise UsageError(
                f"no definition {wanted!r} of tool {ns.name!r} was ever served "
                "(callgate tools pins lists them)"
            )
        return f"tool {ns.name!r} pinned to {stored.fingerprint} (was {previous})"
    finally:
        await store.close()


def run_approve(ns: argparse.Namespace) -> int:
    from gateway.audit.keys import AuditKey
    from gateway.service.config import default_audit_key

    if not ns.name or not ns.db:
        raise UsageError("approve needs the tool's NAME and --db URL")
    if not ns.reason.strip():
        raise UsageError("approve needs --reason TEXT: the audit trail records why")
    try:
        path = default_audit_key(ns.db, ns.audit_key_file)
    except ConfigError:
        path = None
    if path is None or not path.exists():
        raise UsageError(
            "--audit-key-file is required: the approval's record is sealed with the store's "
            "audit key"
        )
    by = f"{getpass.getuser()}@{socket.gethostname()}"
    print(asyncio.run(_approve(ns, AuditKey.load(path), by)))
    return 0
