"""`callgate quotas`: quota keys and their usage, from a running sidecar; resetting one.

    callgate quotas [--key PREFIX] [--json]
    callgate quotas reset KEY --reason TEXT

The listing is ListQuotas (every page, as the policy's may_read_quotas allows for the prefix):
each key with what is used in its window, its limit and window (those of its latest
reservation) and how many reservations count. `reset` is ResetQuota (as may_reset_quotas
allows): every reservation of the key is given back, and the audit trail records who did it
and why.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from gateway import pb
from gateway.cli.common import UsageError, connected, option, switch
from gateway.cli.runs import _dict, table
from gateway.quotas import amount


def add_parser(sub: Any, client_options: Any) -> None:
    p = sub.add_parser(
        "quotas",
        help="list quota usage, or reset a key",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("list", "reset"),
        default="list",
        help="list (the default) or reset KEY",
    )
    p.add_argument("quota_key", nargs="?", default="", metavar="KEY", help="reset: the key")
    client_options(p)
    option(
        p,
        "--key",
        default="",
        metavar="PREFIX",
        help="list: only keys starting with PREFIX",
    )
    option(p, "--reason", default="", metavar="TEXT", help="reset: why (audited; required)")
    switch(p, "--json", help="print the answer as JSON")
    p.set_defaults(handler=run)


def run(ns: argparse.Namespace) -> int:
    if ns.action == "reset":
        if not ns.quota_key:
            raise UsageError("reset needs the KEY (see 'callgate quotas')")
        if not ns.reason.strip():
            raise UsageError("reset needs --reason TEXT: the audit trail records why")
    elif ns.quota_key:
        raise UsageError("the listing takes no KEY (use --key PREFIX, or reset KEY)")
    with connected(ns, timeout_s=60) as client:
        if ns.action == "reset":
            done = client.reset_quota(ns.quota_key, reason=ns.reason)
            print(
                json.dumps(_dict(done), indent=2)
                if ns.json
                else f"quota {done.key!r}: {done.removed} reservation(s) given back"
            )
            return 0
        found: list[pb.QuotaUsage] = []
        token = ""
        while True:
            page = client.list_quotas(prefix=ns.key, page_size=1000, page_token=token)
            found.extend(page.quotas)
            token = page.next_page_token
            if not token:
                break
    print(
        json.dumps({"quotas": [_dict(q) for q in found]}, indent=2)
        if ns.json
        else listing_text(found)
    )
    return 0


def listing_text(found: list[pb.QuotaUsage]) -> str:
    if not found:
        return "no quota keys"
    return "\n".join(
        table(
            ("KEY", "USED", "LIMIT", "WINDOW_S", "RESERVATIONS", "LATEST"),
            (
                (
                    q.key,
                    amount(q.used),
                    amount(q.limit),
                    str(q.window_s),
                    str(q.reservations),
                    q.updated_at,
                )
                for q in found
            ),
        )
    )
