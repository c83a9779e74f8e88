"""`callgate audit`: the audit trail, from a running sidecar or straight from its store.

    callgate audit [--run-id RUN] [--call-id C] [--tool T] [--subject S] [--tenant T]
                   [--verdict allow,deny] [--status succeeded,...] [--since TIME]
                   [--until TIME] [--after-seq N] [--limit N] [--tail N] [--follow] [--json]
    callgate audit verify --db URL [--audit-key-file FILE]
    callgate audit export --db URL [--since SEQ] [--output FILE]
    callgate audit prune --db URL --before DATE [--audit-key-file FILE]
    callgate audit check-value --audit-key-file FILE [VALUE] [--json-value JSON]
                   [--digest HEX] [--mask MASK]

The first asks the sidecar (QueryAudit): a table by default, whose last column (WHY) is the
record's message, or its decision's reasons (`--wide`: in full); one JSON object per line with
`--json` (numbers as numbers, `detail` and `arguments_summary` as JSON); `--follow` keeps
printing new records as the sidecar commits them (it is woken by the
store, it does not poll) until Ctrl-C. The others open the store itself. `verify` exits 1 at
the first broken link, naming the record; `check-value` exits 1 when a value does not match a
mask.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import socket
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway import pb
from gateway.cli.audit_text import WHY_CHARS, print_records
from gateway.cli.common import Parser, UsageError, connected, nonempty, option, switch

OFFLINE = ("verify", "export", "prune", "check-value")
VERDICTS = ("allow", "deny", "approval_required", "unspecified")
STATUSES = (
    "succeeded",
    "rejected",
    "failed",
    "unknown",
    "pending_approval",
    "held",
    "executing",
    "not_run",
)


# ---------------------------------------------------------------------- values


def names(choices: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        found = tuple(dict.fromkeys(n.strip().lower() for n in text.split(",") if n.strip()))
        if not found or any(n not in choices for n in found):
            raise ValueError(f"expected some of {', '.join(choices)} (comma-separated)")
        return found

    parse.__name__ = "names"
    return parse


def count(text: str) -> int:
    if not text.strip().isdigit():
        raise ValueError("expected a whole number, 0 or more")
    return int(text)


def rfc3339(text: str) -> str:
    """A time as QueryAudit takes it (RFC 3339 with a zone; a date alone is midnight UTC)."""
    return when(text).isoformat().replace("+00:00", "Z")


def when(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            "expected an RFC 3339 time such as 2026-11-29T21:00:00Z, or a date such as 2026-11-01"
        ) from None
    if t.tzinfo is None:
        if len(text.strip()) > 10:
            raise ValueError("the time has no zone: end it with Z or +HH:MM")
        t = t.replace(tzinfo=UTC)
    return t


# ---------------------------------------------------------------------- the query command


def add_parser(sub: Any, client_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "audit",
        help="query (from the sidecar), verify, export or prune the audit trail",
        description=__doc__,
    )
    client_options(p)
    _selection_options(p)
    _page_options(p)
    switch(p, "--follow", help="keep printing new records as they are written (Ctrl-C ends)")
    switch(
        p,
        "--wide",
        help="the WHY column (the record's message or reasons) in full, not "
        f"cut at {WHY_CHARS} characters",
    )
    switch(p, "--json", help="one JSON object per record and line, with typed fields")
    p.set_defaults(handler=run_query)


def _selection_options(p: argparse.ArgumentParser) -> None:
    """Which records: by run, call, tool, subject, tenant, verdict or status."""
    option(p, "--run-id", default="", metavar="RUN", help="one run's records")
    option(p, "--call-id", default="", metavar="CALL", help="one call's records")
    option(p, "--tool", default="", metavar="NAME", help="one tool's records")
    option(
        p,
        "--subject",
        default="",
        metavar="SUBJECT",
        help="the records of one subject's runs (and Authorize calls)",
    )
    option(
        p,
        "--tenant",
        default="",
        metavar="TENANT",
        help="another tenant's records (as the policy's may_read_audit allows)",
    )
    switch(p, "--callgate", help="callgate's own records: policy reloads, prunes")
    option(
        p,
        "--verdict",
        parse=names(VERDICTS),
        default=(),
        metavar="VERDICT[,VERDICT]",
        help=f"only these verdicts: {', '.join(VERDICTS)}",
    )
    option(
        p,
        "--status",
        parse=names(STATUSES),
        default=(),
        metavar="STATUS[,STATUS]",
        help="only these call statuses: succeeded, rejected, failed, unknown, ...",
    )


def _page_options(p: argparse.ArgumentParser) -> None:
    """When the records were written, and which page of them."""
    option(
        p,
        "--since",
        parse=rfc3339,
        default="",
        metavar="TIME",
        help="records written at or after TIME (RFC 3339, or a date)",
    )
    option(
        p, "--until", parse=rfc3339, default="", metavar="TIME", help="records written before TIME"
    )
    option(
        p,
        "--after-seq",
        parse=count,
        default=0,
        metavar="N",
        help="records after seq N (the next page)",
    )
    option(p, "--limit", parse=count, default=0, metavar="N", help="at most N records (0: all)")
    option(
        p,
        "--tail",
        parse=count,
        default=0,
        metavar="N",
        help="start with the last N matching records",
    )


def query_fields(ns: argparse.Namespace) -> dict[str, Any]:
    if ns.callgate and ns.tenant:
        raise UsageError("--callgate and --tenant name different records: give one")
    fields: dict[str, Any] = dict(
        run_id=ns.run_id,
        call_id=ns.call_id,
        tool=ns.tool,
        subject=ns.subject,
        verdict=[getattr(pb, f"VERDICT_{v.upper()}") for v in ns.verdict],
        status=[getattr(pb, f"CALL_STATUS_{s.upper()}") for s in ns.status],
        since=ns.since,
        until=ns.until,
        after_seq=ns.after_seq,
        limit=ns.limit,
        tail=ns.tail,
        follow=ns.follow,
    )
    if ns.callgate or ns.tenant:
        fields["tenant"] = "" if ns.callgate else ns.tenant
    return fields


def run_query(ns: argparse.Namespace) -> int:
    with connected(ns) as client:
        stream = client.query_audit(timeout_s=None if ns.follow else 300, **query_fields(ns))
        try:
            shown, last = print_records(
                stream, as_json=ns.json, aligned=not ns.follow, wide=ns.wide
            )
        finally:
            stream.cancel()
    if ns.limit and shown == ns.limit and not ns.follow:
        print(f"more: --after-seq {last}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- offline commands


def offline_parser(action: str) -> Parser:
    p = Parser(prog=f"callgate audit {action}", description=OFFLINE_HELP[action])
    if action != "check-value":
        option(
            p,
            "--db",
            parse=nonempty,
            required=True,
            metavar="URL",
            help="the store: PATH, sqlite:///PATH or postgresql://...",
        )
    if action in KEY_HELP:
        option(
            p,
            "--audit-key-file",
            parse=Path,
            metavar="FILE",
            required=action == "check-value",
            help=KEY_HELP[action],
        )
    if action == "export":
        option(
            p,
            "--since",
            parse=count,
            default=0,
            metavar="SEQ",
            help="the records after seq SEQ (the last one exported before)",
        )
        option(p, "--output", parse=Path, metavar="FILE", help="write there, not to stdout")
    if action == "prune":
        option(
            p,
            "--before",
            parse=when,
            required=True,
            metavar="DATE",
            help="remove the records written before DATE (RFC 3339, or a date: midnight UTC)",
        )
    if action == "check-value":
        _check_value_options(p)
    p.set_defaults(handler=HANDLERS[action])
    return p


KEY_HELP = {
    "verify": "the audit key: check every record's seal (default: <sqlite file>-audit.key when "
    "it exists)",
    "prune": "the audit key the prune record is sealed with (default: <sqlite file>-audit.key)",
    "check-value": "the audit key the masks were made with",
}


def _check_value_options(p: Parser) -> None:
    p.add_argument("value", nargs="?", default=None, metavar="VALUE", help="the value as a string")
    option(
        p,
        "--json-value",
        default="",
        metavar="JSON",
        help="the value as JSON (a number, an object, ...) instead",
    )
    option(
        p,
        "--digest",
        default="",
        metavar="HEX",
        help="a plain SHA-256 (a call "
        "record's arguments_sha256) to key instead, to compare with an audit record's",
    )
    option(
        p,
        "--mask",
        default="",
        metavar="MASK",
        help="compare with this mask or keyed digest (exit 1 when it differs)",
    )


OFFLINE_HELP = {
    "verify": "Walk the store's audit chain; exit 1 at the first broken link, naming the record.",
    "export": "Write the audit records as JSON lines close to OPA's decision log.",
    "prune": "Remove the records written before DATE; a checkpoint and a prune record keep "
    "the rest verifiable.",
    "check-value": "Print the mask (or keyed digest) of a value under the audit key, or check "
    "it against one.",
}


def _key_file(ns: argparse.Namespace, *, needed: bool) -> Path | None:
    from gateway.errors import ConfigError
    from gateway.service.config import default_audit_key

    try:
        path = default_audit_key(ns.db, ns.audit_key_file)
    except ConfigError:
        path = None
    if path is not None and (ns.audit_key_file is not None or path.exists()):
        return path
    if needed:
        raise UsageError(
            "--audit-key-file is required: the record of what was pruned is "
            "sealed with the store's audit key"
        )
    return None


async def _with_store(ns: argparse.Namespace, key: Any, work: Callable[[Any], Any]) -> Any:
    from gateway.store import open_store

    store = await open_store(ns.db, audit_key=key)
    try:
        return await work(store)
    finally:
        await store.close()


def run_verify(ns: argparse.Namespace) -> int:
    from gateway.audit import offline
    from gateway.audit.keys import AuditKey

    path = _key_file(ns, needed=False)
    key = AuditKey.load(path) if path is not None else None
    report = asyncio.run(_with_store(ns, None, lambda s: offline.verify(s, key)))
    print(offline.report_text(report))
    return 1 if report.broken is not None else 0


def run_export(ns: argparse.Namespace) -> int:
    from gateway.audit import offline

    if ns.output is None:
        asyncio.run(
            _with_store(ns, None, lambda s: offline.export_lines(s, sys.stdout, after=ns.since))
        )
        return 0
    with ns.output.open("w", encoding="utf-8") as out:
        written = asyncio.run(
            _with_store(ns, None, lambda s: offline.export_lines(s, out, after=ns.since))
        )
    print(f"{written} record(s) written to {ns.output}", file=sys.stderr)
    return 0


def run_prune(ns: argparse.Namespace) -> int:
    from gateway.audit import offline
    from gateway.audit.keys import AuditKey

    path = _key_file(ns, needed=True)
    assert path is not None
    key = AuditKey.load(path)
    by = f"{getpass.getuser()}@{socket.gethostname()}"
    point = asyncio.run(_with_store(ns, key, lambda s: offline.prune(s, ns.before, by)))
    if point is None:
        print(f"nothing to prune: no record was written before {ns.before.isoformat()}")
    else:
        print(
            f"removed {point.removed} record(s) up to record {point.seq}; the chain "
            f"continues from hash {point.hash} (checkpoint recorded, verify passes)"
        )
    return 0


def run_check_value(ns: argparse.Namespace) -> int:
    from gateway.audit.keys import AuditKey

    given = [x for x in (ns.value is not None, bool(ns.json_value), bool(ns.digest)) if x]
    if len(given) != 1:
        raise UsageError("give exactly one of VALUE, --json-value or --digest")
    key = AuditKey.load(ns.audit_key_file)
    if ns.digest:
        computed = key.keyed(ns.digest.strip().lower())
    else:
        try:
            value = ns.value if ns.value is not None else json.loads(ns.json_value)
        except ValueError as exc:
            raise UsageError(f"--json-value is not JSON: {exc}") from None
        computed = key.mask(value)
    if not ns.mask:
        print(computed)
        return 0
    if ns.mask.strip() == computed:
        print("matches: the value is the one that was masked")
        return 0
    print(
        "does not match: another value, or another key "
        f"(this key is {key.key_id}; the mask names {_mask_key(ns.mask)})"
    )
    return 1


def _mask_key(mask: str) -> str:
    parts = mask.strip().split(":")
    return parts[-2] if len(parts) >= 3 else "no key"


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "verify": run_verify,
    "export": run_export,
    "prune": run_prune,
    "check-value": run_check_value,
}
