"""The `callgate` command: serve, demo, policy, runs, tools, approvals, audit, quotas.

Every option also reads an environment variable, CALLGATE_<OPTION> (`--listen` reads
CALLGATE_LISTEN); `callgate COMMAND --help` lists each with its variable and default.

Exit status: 0 done, 1 the command failed (a refused request, a failing check), 2 a usage or
configuration error (one line naming the flag, variable or file), 130 interrupted. A closed
output pipe (`callgate ... | head`) ends the command quietly. CALLGATE_DEBUG=1 shows the Python
traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gateway.cli import serve
from gateway.cli.audit import OFFLINE, offline_parser
from gateway.cli.common import (
    Handler,
    Parser,
    SubParsers,
    client_options,
    client_tls,
    configure_logging,
    connected,
    nonempty,
    option,
    quiet_engine_backtraces,
    resolve,
    run_command,
)
from gateway.errors import CallgateError
from gateway.version import callgate_version

DEMO_APPROVER = "olga-demo-token"  # examples/auth.yaml: an owner of acme


def _demo_parser(sub: SubParsers) -> None:
    p = sub.add_parser(
        "demo",
        help="drive the example scenarios through a running sidecar",
        description="Drive the travel and workshop scenarios through a running "
        "sidecar; exits 1 when an outcome differs from the expected one.",
    )
    client_options(p)
    option(
        p,
        "--travel-url",
        parse=nonempty,
        default="http://127.0.0.1:8765",
        metavar="URL",
        help="the example travel service (the demo sets its latency)",
    )
    option(
        p,
        "--workshop-url",
        parse=nonempty,
        default="http://127.0.0.1:8766",
        metavar="URL",
        help="the example workshop service (reset before the demo's booking)",
    )
    option(
        p,
        "--approver-token",
        default=DEMO_APPROVER,
        secret=True,
        metavar="TOKEN",
        help="the token of the person who approves the demo's booking (an owner of the "
        "--token's tenant)",
    )
    p.set_defaults(handler=_demo)


def _demo(ns: argparse.Namespace) -> int:
    from gateway.cli.demo import run_demo

    return run_demo(
        ns.target,
        ns.token,
        ns.travel_url,
        ns.workshop_url,
        tls=client_tls(ns),
        approver_token=ns.approver_token,
    )


def _policy_parser(sub: SubParsers) -> None:
    # listed in `callgate --help`; `callgate policy ...` is dispatched before parsing (main)
    sub.add_parser(
        "policy", help="check, test, eval, coverage, replay DIR (offline); status", add_help=False
    )


def _policy_status_parser() -> Parser:
    p = Parser(
        prog="callgate policy status",
        description="The running sidecar's policy engine, revision, store and tools. "
        "Exits 1 while the newest --policies files are rejected (each problem is "
        "listed), so a deploy script can wait for a reload to take.",
    )
    client_options(p)
    p.set_defaults(handler=_policy_status)
    return p


def _policy_status(ns: argparse.Namespace) -> int:
    with connected(ns, timeout_s=30) as client:
        status = client.get_status()
    print(
        f"engine:           {status.engine}\npolicy revision:  {status.policy_revision}\n"
        f"loaded at:        {status.policy_loaded_at}\nstore:            {status.store}\n"
        f"version:          {status.version}\ntools:            {', '.join(status.tools)}"
    )
    if status.HasField("shadow"):
        _print_shadow(status.shadow)
    if status.HasField("last_rejected_reload"):
        rejected = status.last_rejected_reload
        problems = [p.message for p in rejected.problems] or [rejected.message]
        print(
            f"rejected reload:  at {rejected.at}, still serving the revision above",
            *(f"  {p}" for p in problems),
            sep="\n",
        )
        raise CallgateError(
            f"the newest policy files were rejected ({len(problems)} "
            f"problem{'s' * (len(problems) != 1)}, listed above): fix them and "
            "the sidecar reloads them itself (or on SIGHUP)"
        )
    return 0


def _print_shadow(shadow: Any) -> None:
    reach = "reachable" if shadow.opa_reachable else "UNREACHABLE"
    print(
        f"shadow (OPA):     {shadow.compared} compared, {shadow.disagreed} disagreed, "
        f"{shadow.dropped} dropped (queue full), {shadow.failed} failed (OPA down or slow)\n"
        f"  OPA revision:   {shadow.opa_revision or '(none yet)'}, {reach}"
    )
    if shadow.disagreed:
        print("  every disagreement is in the audit trail as kind 'shadow'")


POLICY_STATUS_HELP = (
    "\nand, against a running sidecar:\n  callgate policy status [--target] "
    "[--token] ...   its engine and policy revision (see its --help)"
)


def _policy(argv: list[str]) -> int:
    from gateway.cli.policy import run_policy_command

    code = run_policy_command(argv)
    if argv in (["-h"], ["--help"]):
        print(POLICY_STATUS_HELP)
    return code


def _approvals_parser(sub: SubParsers) -> None:
    from gateway.cli.approvals import add_parser

    add_parser(sub, client_options)


def _audit_parser(sub: SubParsers) -> None:
    from gateway.cli.audit import add_parser

    add_parser(sub, client_options)


def _runs_parser(sub: SubParsers) -> None:
    from gateway.cli.runs import add_parser

    add_parser(sub, client_options)


def _quotas_parser(sub: SubParsers) -> None:
    from gateway.cli.quotas import add_parser

    add_parser(sub, client_options)


def _tools_parser(sub: SubParsers) -> None:
    from gateway.cli.tools import add_parser

    add_parser(sub, client_options)


def build_parser() -> Parser:
    parser = Parser(prog="callgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"callgate {callgate_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (
        serve.add_parser,
        _demo_parser,
        _policy_parser,
        _runs_parser,
        _tools_parser,
        _approvals_parser,
        _audit_parser,
        _quotas_parser,
    ):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    quiet_engine_backtraces()
    args = sys.argv[1:] if argv is None else list(argv)
    configure_logging()
    # parsing is guarded too: --help and --version write to a pipe that may be closed
    return run_command("callgate", lambda: _dispatch(args))


def _dispatch(args: list[str]) -> int:
    if args[:1] == ["policy"] and args[1:2] != ["status"]:
        return run_command("callgate policy", lambda: _policy(args[1:]))
    if args[:2] == ["policy", "status"]:
        ns = _policy_status_parser().parse_args(args[2:])
    elif args[:1] == ["audit"] and args[1:2] and args[1] in OFFLINE:
        ns = offline_parser(args[1]).parse_args(args[2:])
    else:
        parser = build_parser()
        ns, extra = parser.parse_known_args(args)
        if extra and not getattr(ns, "_takes_any", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    handler: Handler = ns.handler
    return run_command(ns._prog, lambda: handler(resolve(ns)))


if __name__ == "__main__":
    sys.exit(main())
