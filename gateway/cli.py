"""The `callgate` command: serve, demo, policy, approvals, audit.

Every option also reads an environment variable, CALLGATE_<OPTION> (`--listen` reads
CALLGATE_LISTEN); `callgate COMMAND --help` lists each with its variable and default.

Exit status: 0 done, 1 the command failed (a refused request, a failing check), 2 a usage or
configuration error (one line naming the flag, variable or file), 130 interrupted. A closed
output pipe (`callgate ... | head`) ends the command quietly. CALLGATE_DEBUG=1 shows the Python
traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from gateway.audit.commands import OFFLINE, offline_parser
from gateway.errors import CallgateError, ConfigError
from gateway.flags import (
    Parser,
    UsageError,
    count,
    existing_dir,
    existing_file,
    listen_address,
    nonempty,
    one_of,
    option,
    positive_int,
    resolve,
    seconds,
    switch,
    target_address,
    whole_seconds,
)
from gateway.model import DEFAULT_APPROVAL_TTL_S
from gateway.tls import ClientTLS
from gateway.version import callgate_version

if TYPE_CHECKING:
    from gateway.config import ServeConfig

Handler = Callable[[argparse.Namespace], int]
SubParsers = argparse._SubParsersAction  # type: ignore[type-arg]

# ------------------------------------------------------------------------------------- serve


def _serve_parser(sub: SubParsers) -> None:
    p = sub.add_parser("serve", help="run the sidecar in the foreground",
                       description="Run the sidecar in the foreground until SIGINT or SIGTERM.")
    option(p, "--listen", parse=listen_address, default="127.0.0.1:50051",
           metavar="HOST:PORT", help="address to listen on: HOST:PORT or unix:PATH")
    option(p, "--tools", parse=existing_dir, required=True, metavar="DIR",
           help="directory of tool manifests")
    option(p, "--policies", parse=existing_dir, required=True, metavar="DIR",
           help="directory of Rego policies and their data")
    option(p, "--db", parse=nonempty, default="callgate.db", metavar="URL",
           help="the run store: PATH or sqlite:///PATH, or postgresql://... for a store "
           "several replicas share")
    option(p, "--auth", parse=existing_file, metavar="FILE",
           help="YAML file saying how callers are identified: tokens, jwt, mtls")
    option(p, "--insecure-dev-identity", default="", metavar="SUBJECT",
           help="no authentication: every caller is SUBJECT (local development only)")
    option(p, "--engine", parse=one_of("embedded", "opa", "shadow"), default="embedded",
           metavar="{embedded,opa,shadow}", help="policy engine: embedded (regorus in the "
           "sidecar), opa (an OPA server decides), shadow (embedded decides, OPA is compared)")
    option(p, "--policy-prefix", parse=nonempty, default="data.callgate", metavar="PACKAGE",
           help="the Rego package callgate queries")
    option(p, "--db-busy-timeout", parse=seconds, default=5.0, metavar="SECONDS",
           help="how long to wait for a locked store before answering UNAVAILABLE")
    option(p, "--approval-ttl", parse=whole_seconds, default=DEFAULT_APPROVAL_TTL_S,
           metavar="SECONDS", help="how long an approval stays open when the policy's "
           "decision gives no approval_ttl_s")
    option(p, "--workers", parse=positive_int, default=1, metavar="N",
           help="serving processes on the one port, sharing the store (Linux, SO_REUSEPORT; "
           "docs/workers.md); 1 serves in this process")
    option(p, "--audit-key-file", parse=Path, metavar="FILE",
           help="the audit key (masks of redacted values, seals of the audit chain), created "
           "with mode 0600 when it does not exist; default <sqlite file>-audit.key, required "
           "with PostgreSQL")
    reload = p.add_argument_group("policy reload", "The sidecar loads a changed --policies "
                                  "directory while it serves (and on SIGHUP).")
    option(reload, "--policy-poll-interval", parse=seconds, default=0.25, metavar="SECONDS",
           owner=p, help="seconds between scans of --policies for changes; 0 reloads only on "
           "SIGHUP")
    switch(reload, "--reload-requires-tests", owner=p,
           help="serve a policy revision (at start-up and on reload) only if its own Rego "
           "tests pass")
    switch(reload, "--log-decision-inputs", owner=p,
           help="log the exact input of every decision (one JSON line, logger "
           "callgate.decision_input) to replay with `callgate policy eval`")
    _opa_options(p)
    _limit_options(p)
    tls = p.add_argument_group("TLS", "Without --tls-cert the listener is plaintext (for "
                               "loopback and unix sockets).\nCertificate files are read again "
                               "when they change.")
    option(tls, "--tls-cert", parse=existing_file, metavar="FILE", owner=p,
           help="PEM certificate (chain) of the listener")
    option(tls, "--tls-key", parse=existing_file, metavar="FILE", owner=p,
           help="PEM private key of --tls-cert")
    option(tls, "--tls-client-ca", parse=existing_file, metavar="FILE", owner=p,
           help="PEM CA certificates: require client certificates they signed (mutual TLS)")
    p.set_defaults(handler=_serve)


def _opa_options(p: argparse.ArgumentParser) -> None:
    opa = p.add_argument_group("OPA server", "With --engine opa or shadow (docs/policies.md, "
                               "\"Using your own OPA\").")
    option(opa, "--opa-url", default="", metavar="URL", owner=p,
           help="the OPA server: http(s)://HOST:PORT, with an optional path prefix")
    option(opa, "--opa-token", default="", secret=True, owner=p,
           help="bearer token sent to OPA (its --authentication=token)")
    option(opa, "--opa-policies", parse=one_of("push", "external"), default="push",
           metavar="{push,external}", owner=p,
           help="push: upload --policies to OPA at start and on every reload; external: OPA "
           "serves its own bundles and decisions record their revision")
    option(opa, "--opa-timeout", parse=seconds, default=1.0, metavar="SECONDS", owner=p,
           help="longest wait for one OPA decision; slower is a deny (policy_error)")
    option(opa, "--opa-ca", parse=existing_file, metavar="FILE", owner=p,
           help="PEM CA certificates to trust for an https OPA (default: the system's)")
    option(opa, "--opa-client-cert", parse=existing_file, metavar="FILE", owner=p,
           help="PEM client certificate to present to OPA (mutual TLS)")
    option(opa, "--opa-client-key", parse=existing_file, metavar="FILE", owner=p,
           help="PEM private key of --opa-client-cert")
    option(opa, "--shadow-queue", parse=positive_int, default=1000, metavar="N", owner=p,
           help="shadow mode: comparisons waiting for OPA at most; more are dropped (counted)")


# `serve` size limits (docs/operations.md, "Limits"): setting → what it bounds.
LIMIT_HELP = {
    "db_min_free_bytes": "free bytes the store's filesystem must keep; below it the store is "
                         "NOT_SERVING and refuses turns",
    "max_message_bytes": "largest request message (gRPC max receive)",
    "max_json_depth": "deepest nesting of any JSON text (at most 100)",
    "max_arguments_bytes": "arguments of one tool call",
    "max_calls_per_turn": "tool calls in one turn or one Authorize",
    "max_stream_events": "events in one provider stream",
    "max_stream_bytes": "bytes of one provider stream",
    "max_labels": "labels of one run",
    "max_label_bytes": "bytes of one label (key and value)",
    "max_conversation_bytes": "a run's starting conversation_json",
    "max_output_bytes": "a tool output kept (larger: a read FAILS output_too_large)",
    "max_policy_history_bytes": "earlier calls' arguments in one policy input",
    "max_run_page_turns": "turns in one GetRun page (a larger page_size gets this many)",
    "max_run_page_bytes": "records of one GetRun page, about (fewer turns, at least one)",
}


def _limit_options(p: argparse.ArgumentParser) -> None:
    from gateway.config import ServeConfig

    limits = p.add_argument_group("limits", "Checked before work is done; a caller past one "
                                  "gets a clear code (docs/operations.md, \"Limits\").")
    for name, what in LIMIT_HELP.items():
        option(limits, "--" + name.replace("_", "-"), parse=count,
               default=ServeConfig.model_fields[name].default, metavar="N", owner=p, help=what)


def _serve(ns: argparse.Namespace) -> int:
    from gateway.app import serve

    config = _serve_config(ns)
    if ns.workers > 1:
        from gateway.supervisor import supervise
        return supervise(config, ns.workers)
    asyncio.run(serve(config))
    return 0


def _serve_config(ns: argparse.Namespace) -> ServeConfig:
    """The validated settings; a value out of its range names its flag (exit 2)."""
    from pydantic import ValidationError

    from gateway.config import ServeConfig

    try:
        return ServeConfig(
            listen=ns.listen, tools=ns.tools, policies=ns.policies, db=ns.db, auth=ns.auth,
            insecure_dev_identity=ns.insecure_dev_identity, engine=ns.engine,
            policy_prefix=ns.policy_prefix, db_busy_timeout_s=ns.db_busy_timeout,
            tls_cert=ns.tls_cert, tls_key=ns.tls_key, tls_client_ca=ns.tls_client_ca,
            policy_poll_interval_s=ns.policy_poll_interval,
            reload_requires_tests=ns.reload_requires_tests,
            log_decision_inputs=ns.log_decision_inputs, approval_ttl_s=ns.approval_ttl,
            opa_url=ns.opa_url, opa_token=ns.opa_token, opa_policies=ns.opa_policies,
            opa_timeout_s=ns.opa_timeout, opa_ca=ns.opa_ca, opa_client_cert=ns.opa_client_cert,
            opa_client_key=ns.opa_client_key, shadow_queue=ns.shadow_queue,
            audit_key_file=ns.audit_key_file,
            **{name: getattr(ns, name) for name in LIMIT_HELP})
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]).removesuffix("_s") if first["loc"] else "a setting"
        raise ConfigError(f"--{name.replace('_', '-')} {getattr(ns, name, '')}: "
                          f"{first['msg']}") from None


# ------------------------------------------------------------------- client-side commands


def _client_options(p: argparse.ArgumentParser) -> None:
    conn = p.add_argument_group("connection", "Plaintext unless a --tls option is given.")
    option(conn, "--target", parse=target_address, default="127.0.0.1:50051", owner=p,
           metavar="HOST:PORT", help="the sidecar: HOST:PORT or unix:PATH")
    option(conn, "--token", default="", secret=True, owner=p,
           help="bearer token (sent as 'authorization: Bearer TOKEN')")
    switch(conn, "--tls", owner=p, help="connect with TLS, trusting the system's CAs")
    option(conn, "--tls-ca", parse=existing_file, metavar="FILE", owner=p,
           help="PEM CA certificates to trust for the sidecar's certificate (implies --tls)")
    option(conn, "--tls-client-cert", parse=existing_file, metavar="FILE", owner=p,
           help="PEM client certificate to present (mutual TLS; implies --tls)")
    option(conn, "--tls-client-key", parse=existing_file, metavar="FILE", owner=p,
           help="PEM private key of --tls-client-cert")
    option(conn, "--tls-server-name", default="", metavar="NAME", owner=p,
           help="name to check the sidecar's certificate against, if not the target's host")


def client_tls(ns: argparse.Namespace) -> ClientTLS | None:
    if not (ns.tls or ns.tls_ca or ns.tls_client_cert or ns.tls_client_key):
        return None
    return ClientTLS(ca=ns.tls_ca, cert=ns.tls_client_cert, key=ns.tls_client_key,
                     server_name=ns.tls_server_name)


def _demo_parser(sub: SubParsers) -> None:
    p = sub.add_parser("demo", help="drive the example scenarios through a running sidecar",
                       description="Drive the travel and workshop scenarios through a running "
                       "sidecar; exits 1 when an outcome differs from the expected one.")
    _client_options(p)
    option(p, "--travel-url", parse=nonempty, default="http://127.0.0.1:8765", metavar="URL",
           help="the example travel service (the demo sets its latency)")
    option(p, "--workshop-url", parse=nonempty, default="http://127.0.0.1:8766", metavar="URL",
           help="the example workshop service (reset before the demo's booking)")
    p.set_defaults(handler=_demo)


def _demo(ns: argparse.Namespace) -> int:
    from gateway.demo import run_demo
    return run_demo(ns.target, ns.token, ns.travel_url, ns.workshop_url, tls=client_tls(ns))


def _policy_parser(sub: SubParsers) -> None:
    # listed in `callgate --help`; `callgate policy ...` is dispatched before parsing (main)
    sub.add_parser("policy", help="check, test, eval, coverage DIR (offline); status",
                   add_help=False)


def _policy_status_parser() -> Parser:
    p = Parser(prog="callgate policy status",
               description="The running sidecar's policy engine, revision, store and tools.")
    _client_options(p)
    p.set_defaults(handler=_policy_status)
    return p


def _policy_status(ns: argparse.Namespace) -> int:
    from gateway.client import GatewayClient

    with GatewayClient(ns.target, ns.token, tls=client_tls(ns), timeout_s=30) as client:
        status = client.get_status()
    print(f"engine:           {status.engine}\npolicy revision:  {status.policy_revision}\n"
          f"loaded at:        {status.policy_loaded_at}\nstore:            {status.store}\n"
          f"version:          {status.version}\ntools:            {', '.join(status.tools)}")
    if status.HasField("last_rejected_reload"):
        rejected = status.last_rejected_reload
        where = f"{rejected.file}:{rejected.line}" if rejected.line else rejected.file
        print(f"rejected reload:  at {rejected.at}, still serving the revision above\n"
              f"  {where}\n  {rejected.message}")
    if status.HasField("shadow"):
        _print_shadow(status.shadow)
    return 0


def _print_shadow(shadow: Any) -> None:
    reach = "reachable" if shadow.opa_reachable else "UNREACHABLE"
    print(f"shadow (OPA):     {shadow.compared} compared, {shadow.disagreed} disagreed, "
          f"{shadow.dropped} dropped (queue full), {shadow.failed} failed (OPA down or slow)\n"
          f"  OPA revision:   {shadow.opa_revision or '(none yet)'}, {reach}")
    if shadow.disagreed:
        print("  every disagreement is in the audit trail as kind 'shadow'")


POLICY_STATUS_HELP = ("\nand, against a running sidecar:\n  callgate policy status [--target] "
                      "[--token] ...   its engine and policy revision (see its --help)")


def _policy(argv: list[str]) -> int:
    from gateway.policy.commands import run_policy_command

    code = run_policy_command(argv)
    if argv in (["-h"], ["--help"]):
        print(POLICY_STATUS_HELP)
    return code


# ------------------------------------------------------------ approvals and audit


def _approvals_parser(sub: SubParsers) -> None:
    from gateway.approval_commands import add_parser
    add_parser(sub, _client_options)


def _audit_parser(sub: SubParsers) -> None:
    from gateway.audit.commands import add_parser
    add_parser(sub, _client_options)


# -------------------------------------------------------------------------------- main


def build_parser() -> Parser:
    parser = Parser(prog="callgate", description=__doc__)
    parser.add_argument("--version", action="version",
                        version=f"callgate {callgate_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_serve_parser, _demo_parser, _policy_parser, _approvals_parser, _audit_parser):
        add(sub)
    return parser


def quiet_engine_backtraces() -> None:
    """regorus error texts carry a ~2.5 KB Rust backtrace when RUST_BACKTRACE is set, and a
    contained engine panic prints one to stderr: one policy input could flood the log. Set
    for this process only, before the first engine is used."""
    os.environ["RUST_LIB_BACKTRACE"] = "0"
    os.environ["RUST_BACKTRACE"] = "0"


def configure_logging(tag: str = "") -> None:
    """One line per event on stderr: time, level, [tag,] logger, message (a worker of
    `serve --workers` tags its lines with its number and pid)."""
    where = f"[{tag}] " if tag else ""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s {where}"
                        "%(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no log line per tool request


def main(argv: list[str] | None = None) -> int:
    quiet_engine_backtraces()
    args = sys.argv[1:] if argv is None else list(argv)
    configure_logging()
    # parsing is guarded too: --help and --version write to a pipe that may be closed
    return run_guarded("callgate", lambda: _dispatch(args))


def _dispatch(args: list[str]) -> int:
    if args[:1] == ["policy"] and args[1:2] != ["status"]:
        return run_guarded("callgate policy", lambda: _policy(args[1:]))
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
    return run_guarded(ns._prog, lambda: handler(resolve(ns)))


def run_guarded(prog: str, command: Callable[[], int]) -> int:
    """Run a command; user errors end in one line on stderr, never a traceback."""
    try:
        code = command()
        sys.stdout.flush()
        return code
    except (UsageError, ConfigError) as err:
        return _fail(prog, err.message if isinstance(err, ConfigError) else str(err), 2)
    except CallgateError as err:
        return _fail(prog, err.message, 1)
    except grpc.RpcError as err:
        return _fail(prog, _rpc_error(err), 1)
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        return _fail(prog, str(err), 1)
    except BaseException as err:
        if isinstance(err, SystemExit) or os.environ.get("CALLGATE_DEBUG"):
            raise
        return _fail(prog, f"unexpected error ({type(err).__name__}: {err}); this is a bug: "
                     "CALLGATE_DEBUG=1 shows where", 1)


def _rpc_error(err: grpc.RpcError) -> str:
    from gateway.client import error_code

    code = err.code()  # type: ignore[attr-defined]
    details = err.details()  # type: ignore[attr-defined]
    if code == grpc.StatusCode.UNAVAILABLE:
        return (f"the sidecar is unavailable: {details} (check --target, and the TLS options "
                "if it listens with TLS)")
    return f"{code.name} {error_code(err)}: {details}"


def _fail(prog: str, message: str, code: int) -> int:
    try:
        print(f"{prog}: {message}", file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass
    return code


def _silence_stdout() -> None:
    """The reader went away: send whatever Python still flushes at exit to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())

