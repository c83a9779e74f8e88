"""The `callgate` command: serve, demo, policy, approvals, audit.

Every flag also reads an environment variable CALLGATE_<FLAG> (e.g. CALLGATE_LISTEN).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from gateway.errors import CallgateError, ConfigError


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"CALLGATE_{name.upper().replace('-', '_')}", default)


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the sidecar in the foreground")
    p.add_argument("--listen", default=_env("listen", "127.0.0.1:50051"),
                   help="HOST:PORT or unix:PATH (default 127.0.0.1:50051)")
    p.add_argument("--tools", default=_env("tools"), help="directory of tool manifests")
    p.add_argument("--policies", default=_env("policies"), help="directory of Rego policies")
    p.add_argument("--db", default=_env("db", "callgate.db"),
                   help="PATH or sqlite:///PATH (default ./callgate.db)")
    p.add_argument("--auth", default=_env("auth"), help="YAML file of bearer tokens")
    p.add_argument("--insecure-dev-identity", default=_env("insecure_dev_identity", ""),
                   help="no authentication: every caller is this subject (development only)")
    p.add_argument("--engine", default=_env("engine", "embedded"), choices=["embedded"])
    p.add_argument("--policy-prefix", default=_env("policy_prefix", "data.callgate"))
    p.add_argument("--db-busy-timeout", type=float,
                   default=float(_env("db_busy_timeout", "5") or 5),
                   help="seconds to wait for a locked store before answering UNAVAILABLE")
    _limit_flags(p)


# `serve` size limits (docs/operations.md, "Limits"): flag → what it bounds.
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
}


def _limit_flags(p: argparse.ArgumentParser) -> None:
    from gateway.config import ServeConfig

    for name, what in LIMIT_HELP.items():
        default = ServeConfig.model_fields[name].default
        flag = "--" + name.replace("_", "-")
        p.add_argument(flag, type=int, default=_env(name, str(default)),
                       help=f"{what} (default {default}; env CALLGATE_{name.upper()})")


def _client_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=_env("target", "127.0.0.1:50051"))
    p.add_argument("--token", default=_env("token", ""))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="callgate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    demo = sub.add_parser("demo", help="drive the travel scenario through a running sidecar")
    _client_flags(demo)
    demo.add_argument("--travel-url", default=_env("travel_url", "http://127.0.0.1:8765"),
                      help="the example travel service (to set its latency for the scenario)")
    policy = sub.add_parser("policy", help="check, test, eval, coverage DIR; status")
    policy.add_argument("args", nargs=argparse.REMAINDER)
    for name in ("approvals", "audit"):
        extra = sub.add_parser(name, help=f"{name} (not available in this build)")
        extra.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def _serve(ns: argparse.Namespace) -> int:
    from gateway.app import serve
    from gateway.config import ServeConfig

    if not ns.tools or not ns.policies:
        raise ConfigError("--tools DIR and --policies DIR are required")
    config = ServeConfig(
        listen=ns.listen, tools=Path(ns.tools), policies=Path(ns.policies), db=ns.db,
        auth=Path(ns.auth) if ns.auth else None,
        insecure_dev_identity=ns.insecure_dev_identity, engine=ns.engine,
        policy_prefix=ns.policy_prefix, db_busy_timeout_s=ns.db_busy_timeout,
        **{name: getattr(ns, name) for name in LIMIT_HELP})
    asyncio.run(serve(config))
    return 0


def _policy(args: list[str]) -> int:
    if args and args[0] == "status":
        from gateway.client import policy_status
        return policy_status(args[1:])
    from gateway.policy.commands import run_policy_command
    return run_policy_command(args)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no log line per tool request
    ns = build_parser().parse_args(argv)
    try:
        if ns.command == "serve":
            return _serve(ns)
        if ns.command == "demo":
            from gateway.demo import run_demo
            return run_demo(ns.target, ns.token, ns.travel_url)
        if ns.command == "policy":
            return _policy(list(ns.args))
        print(f"callgate {ns.command}: not available in this build", file=sys.stderr)
        return 2
    except CallgateError as err:
        print(f"callgate: error: {err.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
