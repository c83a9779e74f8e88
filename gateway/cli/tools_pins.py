"""`callgate tools pins` and `callgate tools approve`: tools' pinned definitions (docs/tools.md,
"Pinned definitions").

    callgate tools pins [NAME] [--json]
    callgate tools approve NAME [--fingerprint F] --reason TEXT
    callgate tools pins --db URL [--json]                        (offline, on the store)
    callgate tools approve NAME --db URL [--fingerprint F] --reason TEXT [--audit-key-file FILE]

`pins` lists each pinned tool (or only NAME): its pinned fingerprint, who pinned it and when,
and every other definition of it a sidecar has served since, with what changed and a diff.
`approve` pins the tool to another recorded definition (the newest, or the one `--fingerprint`
names) and appends a `pin` audit record. Through a running sidecar (ListToolPins,
ApproveToolPin) the policy's `may_pin_tools` decides who may; with `--db`, whoever can write
the store can, and the record is sealed with the store's audit key.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gateway.cli.common import UsageError, connected, option
from gateway.errors import ConfigError, RequestError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default="", metavar="NAME", help="pins, approve: the tool")
    option(p, "--db", default="", metavar="URL", help="pins, approve: offline, on this store")
    option(p, "--fingerprint", default="", metavar="F", help="approve: the definition to pin")
    option(p, "--reason", default="", metavar="TEXT", help="approve: why (audited; required)")
    option(
        p,
        "--audit-key-file",
        parse=Path,
        default=None,
        metavar="FILE",
        help="approve --db: the store's audit key (default: <sqlite file>-audit.key)",
    )


def _pin_dict(pin: Any, changed: Any, when: Callable[[Any], str] = str) -> dict[str, Any]:
    """One pin, from the wire's messages or (`when`: rfc3339) the store's records: the same
    field names."""
    return {
        "name": pin.name,
        "fingerprint": pin.fingerprint,
        "pinned_at": when(pin.pinned_at),
        "pinned_by": pin.pinned_by,
        "reason": pin.reason,
        "changed": [
            {
                "fingerprint": c.fingerprint,
                "first_seen_at": when(c.first_seen_at),
                "fields": list(c.fields),
                "diff": c.diff,
            }
            for c in changed
        ],
    }


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


async def _stored_pins(db: str, names: list[str]) -> list[dict[str, Any]]:
    from gateway.model import rfc3339
    from gateway.run.pin_desk import pin_views
    from gateway.store import open_store

    store = await open_store(db)
    try:
        wanted = names or None
        views = pin_views(await store.tool_pins(wanted), await store.tool_definitions(wanted))
    finally:
        await store.close()
    return [_pin_dict(v.pin, v.changed, rfc3339) for v in views]


def run_pins(ns: argparse.Namespace) -> int:
    names = [ns.name] if ns.name else []
    if ns.db:
        listing = asyncio.run(_stored_pins(ns.db, names))
    else:
        with connected(ns, timeout_s=60) as client:
            found = client.list_tool_pins(names)
        listing = [_pin_dict(p, p.changed) for p in found.pins]
    print(json.dumps({"pins": listing}, indent=2) if ns.json else _text(listing))
    return 0


def _approved(name: str, fingerprint: str, previous: str) -> str:
    if fingerprint == previous:
        return f"tool {name!r} is pinned to {fingerprint} already"
    return f"tool {name!r} pinned to {fingerprint} (was {previous})"


async def _approve_stored(ns: argparse.Namespace, key: Any, by: str) -> str:
    from gateway.model import Identity, now_utc
    from gateway.run.pin_desk import approve_pin, pin_request
    from gateway.store import open_store

    store = await open_store(ns.db, audit_key=key)
    try:
        asked = await pin_request(store, ns.name, ns.fingerprint)
        pin = await approve_pin(store, asked, by=Identity(by), reason=ns.reason, now=now_utc())
    except RequestError as exc:
        raise UsageError(exc.message) from None
    finally:
        await store.close()
    return _approved(ns.name, pin.fingerprint, asked.pinned.fingerprint)


def _audit_key(ns: argparse.Namespace) -> Any:
    from gateway.audit.keys import AuditKey
    from gateway.service.config import default_audit_key

    try:
        path = default_audit_key(ns.db, ns.audit_key_file)
    except ConfigError:
        path = None
    if path is None or not path.exists():
        raise UsageError(
            "--audit-key-file is required: the approval's record is sealed with the store's "
            "audit key"
        )
    return AuditKey.load(path)


def run_approve(ns: argparse.Namespace) -> int:
    if not ns.name:
        raise UsageError("approve needs the tool's NAME (callgate tools pins lists them)")
    if not ns.reason.strip():
        raise UsageError("approve needs --reason TEXT: the audit trail records why")
    if ns.db:
        by = f"{getpass.getuser()}@{socket.gethostname()}"
        print(asyncio.run(_approve_stored(ns, _audit_key(ns), by)))
        return 0
    with connected(ns, timeout_s=60) as client:
        done = client.approve_tool_pin(ns.name, reason=ns.reason, fingerprint=ns.fingerprint)
    print(_approved(ns.name, done.pin.fingerprint, done.previous_fingerprint))
    return 0
