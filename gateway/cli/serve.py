"""`callgate serve`: the sidecar in the foreground, its flags and their validated settings."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli.common import (
    SubParsers,
    configure_logging,
    count,
    existing_dir,
    existing_file,
    host_port,
    http_url,
    listen_address,
    nonempty,
    one_of,
    option,
    positive_int,
    seconds,
    switch,
    whole_seconds,
)
from gateway.errors import ConfigError
from gateway.policy.options import SETTINGS

if TYPE_CHECKING:
    from gateway.service.config import ServeConfig


def _default(name: str) -> Any:
    """A setting's default, as `ServeConfig` (the one place defaults are written) has it."""
    from gateway.service.config import ServeConfig

    return ServeConfig.model_fields[name].default


def add_parser(sub: SubParsers) -> None:
    p = sub.add_parser(
        "serve",
        help="run the sidecar in the foreground",
        description="Run the sidecar in the foreground until SIGINT or SIGTERM.",
    )
    _core_options(p)
    _caller_options(p)
    _run_options(p)
    _policy_options(p)
    _reload_options(p)
    _opa_options(p)
    _limit_options(p)
    _tls_options(p)
    _observe_options(p)
    _mcp_options(p)
    p.set_defaults(handler=_serve)


def _core_options(p: argparse.ArgumentParser) -> None:
    option(
        p,
        "--listen",
        parse=listen_address,
        default=_default("listen"),
        metavar="HOST:PORT",
        help="address to listen on: HOST:PORT or unix:PATH",
    )
    option(
        p,
        "--tools",
        parse=existing_dir,
        required=True,
        metavar="DIR",
        help="directory of tool manifests",
    )
    option(
        p,
        "--policies",
        parse=existing_dir,
        required=True,
        metavar="DIR",
        help="directory of Rego policies and their data",
    )
    option(
        p,
        "--mcp-servers",
        parse=existing_file,
        metavar="FILE",
        help="YAML file of the MCP servers `executor: {type: mcp}` tools are called on "
        "(docs/tools.md)",
    )
    option(
        p,
        "--db",
        parse=nonempty,
        default=_default("db"),
        metavar="URL",
        help="the run store: PATH or sqlite:///PATH, or postgresql://... for a store "
        "several replicas share",
    )


def _caller_options(p: argparse.ArgumentParser) -> None:
    """Who callers are, and what decides for them."""
    option(
        p,
        "--auth",
        parse=existing_file,
        metavar="FILE",
        help="YAML file saying how callers are identified: tokens, jwt, mtls",
    )
    option(
        p,
        "--insecure-dev-identity",
        default="",
        metavar="SUBJECT",
        help="no authentication: every caller is SUBJECT (local development only)",
    )
    option(
        p,
        "--engine",
        parse=one_of("embedded", "opa", "shadow"),
        default=_default("engine"),
        metavar="{embedded,opa,shadow}",
        help="policy engine: embedded (regorus in the "
        "sidecar), opa (an OPA server decides), shadow (embedded decides, OPA is compared)",
    )
    option(
        p,
        "--policy-prefix",
        parse=nonempty,
        default=_default("policy_prefix"),
        metavar="PACKAGE",
        help="the Rego package callgate queries",
    )


def _run_options(p: argparse.ArgumentParser) -> None:
    """How runs are kept and served: the store's patience, approvals, processes, the key."""
    option(
        p,
        "--db-busy-timeout",
        parse=seconds,
        default=_default("db_busy_timeout_s"),
        metavar="SECONDS",
        help="how long to wait for a locked store before answering UNAVAILABLE",
    )
    option(
        p,
        "--approval-ttl",
        parse=whole_seconds,
        default=_default("approval_ttl_s"),
        metavar="SECONDS",
        help="how long an approval stays open when the policy's decision gives no approval_ttl_s",
    )
    option(
        p,
        "--workers",
        parse=positive_int,
        default=1,
        metavar="N",
        help="serving processes on the one port, sharing the store (Linux, SO_REUSEPORT; "
        "docs/workers.md); 1 serves in this process",
    )
    option(
        p,
        "--audit-key-file",
        parse=Path,
        metavar="FILE",
        help="the audit key (masks of redacted values, seals of the audit chain), created "
        "with mode 0600 when it does not exist; default <sqlite file>-audit.key, required "
        "with PostgreSQL",
    )


def _policy_options(p: argparse.ArgumentParser) -> None:
    """--rego-version and --builtin-errors, as the `policy` commands take them too."""
    for setting in SETTINGS:
        option(
            p,
            setting.flag,
            parse=one_of(*setting.choices),
            default=_default(setting.dest),
            metavar=setting.metavar,
            help=setting.help,
        )


def _reload_options(p: argparse.ArgumentParser) -> None:
    reload = p.add_argument_group(
        "policy and tools reload",
        "The sidecar loads a changed "
        "--policies or --tools directory while it serves (and on "
        "SIGHUP).",
    )
    option(
        reload,
        "--policy-poll-interval",
        parse=seconds,
        default=_default("policy_poll_interval_s"),
        metavar="SECONDS",
        owner=p,
        help="seconds between scans of --policies for changes; 0 reloads only on SIGHUP",
    )
    option(
        reload,
        "--tools-poll-interval",
        parse=seconds,
        default=_default("tools_poll_interval_s"),
        metavar="SECONDS",
        owner=p,
        help="seconds between scans of --tools for changed manifests; 0 reloads only on SIGHUP",
    )
    option(
        reload,
        "--pin-tools",
        default=_default("pin_tools"),
        metavar="MODE",
        owner=p,
        help="what a tool whose definition changed since it was pinned does: off, warn (its "
        "calls go on; logged, audited, input.tool.pinned false) or enforce (its calls are "
        "REJECTED tool_changed until callgate tools approve), for every tool or as "
        "mcp=MODE,manifest=MODE (default: enforce for MCP tools, warn for the others)",
    )
    switch(
        reload,
        "--reload-requires-tests",
        owner=p,
        help="serve a policy revision (at start-up and on reload) only if its own Rego tests pass",
    )
    switch(
        reload,
        "--log-decision-inputs",
        owner=p,
        help="log the exact input of every decision (one JSON line, logger "
        "callgate.decision_input) to replay with `callgate policy eval`",
    )


def _tls_options(p: argparse.ArgumentParser) -> None:
    tls = p.add_argument_group(
        "TLS",
        "Without --tls-cert the listener is plaintext (for "
        "loopback and unix sockets).\nCertificate files are read again "
        "when they change.",
    )
    option(
        tls,
        "--tls-cert",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM certificate (chain) of the listener",
    )
    option(
        tls,
        "--tls-key",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM private key of --tls-cert",
    )
    option(
        tls,
        "--tls-client-ca",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM CA certificates: require client certificates they signed (mutual TLS)",
    )


def _observe_options(p: argparse.ArgumentParser) -> None:
    observe = p.add_argument_group(
        "observability", 'Metrics, traces and log lines (docs/operations.md, "Observability").'
    )
    option(
        observe,
        "--metrics-listen",
        parse=host_port,
        default=_default("metrics_listen"),
        metavar="HOST:PORT",
        owner=p,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (off unless given)",
    )
    option(
        observe,
        "--otlp-endpoint",
        parse=http_url,
        default=_default("otlp_endpoint"),
        metavar="URL",
        owner=p,
        help="export traces over OTLP/HTTP to this collector "
        "(http://HOST:4318); the OTEL_* variables apply",
    )
    option(
        observe,
        "--log-format",
        parse=one_of("text", "json"),
        default=_default("log_format"),
        metavar="{text,json}",
        owner=p,
        help="log lines on standard error: text, or one JSON object per line",
    )


def _mcp_options(p: argparse.ArgumentParser) -> None:
    mcp = p.add_argument_group("MCP gateway", "Serve MCP clients too (docs/mcp.md).")
    option(
        mcp,
        "--mcp-listen",
        parse=host_port,
        default=_default("mcp_listen"),
        metavar="HOST:PORT",
        owner=p,
        help="also serve MCP over streamable HTTP at "
        "http://HOST:PORT/mcp, callers identified by --auth (off unless given)",
    )
    option(
        mcp,
        "--mcp-resource-url",
        parse=http_url,
        default=_default("mcp_resource_url"),
        metavar="URL",
        owner=p,
        help="the URL MCP clients reach /mcp at, which their JWTs "
        "must name as audience (default: http(s)://HOST:PORT/mcp of --mcp-listen)",
    )


def _opa_options(p: argparse.ArgumentParser) -> None:
    opa = p.add_argument_group(
        "OPA server", 'With --engine opa or shadow (docs/policies.md, "Using your own OPA").'
    )
    option(
        opa,
        "--opa-url",
        default="",
        metavar="URL",
        owner=p,
        help="the OPA server: http(s)://HOST:PORT, with an optional path prefix",
    )
    option(
        opa,
        "--opa-token",
        default="",
        secret=True,
        owner=p,
        help="bearer token sent to OPA (its --authentication=token)",
    )
    option(
        opa,
        "--opa-policies",
        parse=one_of("push", "external"),
        default=_default("opa_policies"),
        metavar="{push,external}",
        owner=p,
        help="push: upload --policies to OPA at start and on every reload; external: OPA "
        "serves its own bundles and decisions record their revision",
    )
    option(
        opa,
        "--opa-timeout",
        parse=seconds,
        default=_default("opa_timeout_s"),
        metavar="SECONDS",
        owner=p,
        help="longest wait for one OPA decision; slower is a deny (policy_error)",
    )
    _opa_tls_options(p, opa)
    option(
        opa,
        "--shadow-queue",
        parse=positive_int,
        default=_default("shadow_queue"),
        metavar="N",
        owner=p,
        help="shadow mode: comparisons waiting for OPA at most; more are dropped (counted)",
    )


def _opa_tls_options(p: argparse.ArgumentParser, opa: Any) -> None:
    option(
        opa,
        "--opa-ca",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM CA certificates to trust for an https OPA (default: the system's)",
    )
    option(
        opa,
        "--opa-client-cert",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM client certificate to present to OPA (mutual TLS)",
    )
    option(
        opa,
        "--opa-client-key",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM private key of --opa-client-cert",
    )


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
    limits = p.add_argument_group(
        "limits",
        "Checked before work is done; a caller past one "
        'gets a clear code (docs/operations.md, "Limits").',
    )
    for name, what in LIMIT_HELP.items():
        option(
            limits,
            "--" + name.replace("_", "-"),
            parse=count,
            default=_default(name),
            metavar="N",
            owner=p,
            help=what,
        )


def _serve(ns: argparse.Namespace) -> int:
    from gateway.observe.tracing import Propagation

    # before anything imports OpenTelemetry's propagators (the MCP SDK does), which fail on a
    # name they do not know with an error of their own
    Propagation.of()
    from gateway.service.app import serve

    config = _serve_config(ns)
    configure_logging(log_format=config.log_format)
    if ns.workers > 1:
        from gateway.service.supervisor import supervise

        return supervise(config, ns.workers)
    asyncio.run(serve(config))
    return 0


def _serve_config(ns: argparse.Namespace) -> ServeConfig:
    """The validated settings; a value out of its range names its flag (exit 2)."""
    from pydantic import ValidationError

    from gateway.service.config import ServeConfig

    try:
        return ServeConfig(
            listen=ns.listen,
            tools=ns.tools,
            policies=ns.policies,
            db=ns.db,
            auth=ns.auth,
            mcp_servers=ns.mcp_servers,
            insecure_dev_identity=ns.insecure_dev_identity,
            engine=ns.engine,
            policy_prefix=ns.policy_prefix,
            rego_version=ns.rego_version,
            builtin_errors=ns.builtin_errors,
            db_busy_timeout_s=ns.db_busy_timeout,
            tls_cert=ns.tls_cert,
            tls_key=ns.tls_key,
            tls_client_ca=ns.tls_client_ca,
            policy_poll_interval_s=ns.policy_poll_interval,
            tools_poll_interval_s=ns.tools_poll_interval,
            pin_tools=ns.pin_tools,
            reload_requires_tests=ns.reload_requires_tests,
            log_decision_inputs=ns.log_decision_inputs,
            approval_ttl_s=ns.approval_ttl,
            opa_url=ns.opa_url,
            opa_token=ns.opa_token,
            opa_policies=ns.opa_policies,
            opa_timeout_s=ns.opa_timeout,
            opa_ca=ns.opa_ca,
            opa_client_cert=ns.opa_client_cert,
            opa_client_key=ns.opa_client_key,
            shadow_queue=ns.shadow_queue,
            audit_key_file=ns.audit_key_file,
            metrics_listen=ns.metrics_listen,
            otlp_endpoint=ns.otlp_endpoint,
            log_format=ns.log_format,
            mcp_listen=ns.mcp_listen,
            mcp_resource_url=ns.mcp_resource_url,
            **{name: getattr(ns, name) for name in LIMIT_HELP},
        )
    except ValidationError as exc:
        raise _flag_error(exc, ns) from None


def _flag_error(exc: Any, ns: argparse.Namespace) -> ConfigError:
    """A setting out of its range, named by its flag."""
    first = exc.errors()[0]
    name = str(first["loc"][0]).removesuffix("_s") if first["loc"] else "a setting"
    return ConfigError(f"--{name.replace('_', '-')} {getattr(ns, name, '')}: {first['msg']}")
