"""Serve configuration: validated once at start-up, defaults in one place.

Every value comes from a flag or its environment variable (CALLGATE_<NAME>); problems name the
flag and the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.client import DEFAULT_TARGET
from gateway.errors import ConfigError
from gateway.limits import MAX_JSON_DEPTH_CAP, MIB, Limits
from gateway.model import DEFAULT_APPROVAL_TTL_S
from gateway.pins import PinModes
from gateway.policy.base import DEFAULT_PREFIX
from gateway.policy.opa.settings import OpaSettings
from gateway.policy.options import DEFAULT_OPTIONS, BuiltinErrors, RegoOptions, RegoVersion
from gateway.store import sqlite_path

_LIMITS = Limits()


class ServeConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    listen: str = DEFAULT_TARGET
    tools: Path
    policies: Path
    db: str = "callgate.db"
    auth: Path | None = None
    # the MCP servers that `mcp` executors call (gateway.executors.mcp_servers)
    mcp_servers: Path | None = None
    insecure_dev_identity: str = ""
    engine: Literal["embedded", "opa", "shadow"] = "embedded"
    policy_prefix: str = DEFAULT_PREFIX
    # how the policy files are read and how builtin errors count (gateway.policy.options)
    rego_version: RegoVersion = DEFAULT_OPTIONS.rego_version
    builtin_errors: BuiltinErrors = DEFAULT_OPTIONS.builtin_errors
    db_busy_timeout_s: float = 5.0
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    # Policy reloads: scan --policies every interval (0: only on SIGHUP); a candidate revision
    # must pass its own tests too when reload_requires_tests; log every decision's input.
    policy_poll_interval_s: float = 0.25
    reload_requires_tests: bool = False
    log_decision_inputs: bool = False
    # Tool reloads: scan --tools every interval (0: only on SIGHUP)
    tools_poll_interval_s: float = 0.25
    # what a changed tool definition does to its calls (gateway.pins.PinModes.parse): "" is
    # enforce for tools on MCP servers, warn for the others
    pin_tools: str = ""
    # how long an approval stays open when the policy's decision names no approval_ttl_s
    approval_ttl_s: int = DEFAULT_APPROVAL_TTL_S
    # The OPA server engine (--engine opa), or the second engine of --engine shadow.
    opa_url: str = ""
    opa_token: str = ""
    opa_policies: Literal["push", "external"] = "push"
    opa_timeout_s: float = 1.0
    opa_ca: Path | None = None
    opa_client_cert: Path | None = None
    opa_client_key: Path | None = None
    shadow_queue: int = 1000

    def rego_options(self) -> RegoOptions:
        return RegoOptions(rego_version=self.rego_version, builtin_errors=self.builtin_errors)

    def opa_settings(self) -> OpaSettings:
        return OpaSettings(
            url=self.opa_url,
            token=self.opa_token,
            timeout_s=self.opa_timeout_s,
            ca=self.opa_ca,
            client_cert=self.opa_client_cert,
            client_key=self.opa_client_key,
        )

    db_min_free_bytes: int = Field(default=32 * MIB, ge=0)
    # size limits (docs/operations.md, "Limits"); the defaults live in gateway.limits
    max_message_bytes: int = Field(default=_LIMITS.max_message_bytes, ge=1024)
    max_json_depth: int = Field(default=_LIMITS.max_json_depth, ge=1, le=MAX_JSON_DEPTH_CAP)
    max_arguments_bytes: int = Field(default=_LIMITS.max_arguments_bytes, ge=2)
    max_calls_per_turn: int = Field(default=_LIMITS.max_calls_per_turn, ge=1)
    max_stream_events: int = Field(default=_LIMITS.max_stream_events, ge=1)
    max_stream_bytes: int = Field(default=_LIMITS.max_stream_bytes, ge=2)
    max_labels: int = Field(default=_LIMITS.max_labels, ge=0)
    max_label_bytes: int = Field(default=_LIMITS.max_label_bytes, ge=1)
    max_conversation_bytes: int = Field(default=_LIMITS.max_conversation_bytes, ge=2)
    max_output_bytes: int = Field(default=_LIMITS.max_output_bytes, ge=4)
    max_policy_history_bytes: int = Field(default=_LIMITS.max_policy_history_bytes, ge=0)
    max_run_page_turns: int = Field(default=_LIMITS.max_run_page_turns, ge=1)
    max_run_page_bytes: int = Field(default=_LIMITS.max_run_page_bytes, ge=1)
    # the audit key (masks and seals); None: `<db>-audit.key` beside a SQLite store
    audit_key_file: Path | None = None
    # observability (docs/operations.md, "Observability"): /metrics, traces, log lines
    metrics_listen: str = ""
    otlp_endpoint: str = ""
    log_format: Literal["text", "json"] = "text"
    # gateway mode (docs/mcp.md): MCP over streamable HTTP at /mcp, and the URL clients reach
    # it at (its tokens' audience); "" → derived from --mcp-listen's bound address
    mcp_listen: str = ""
    mcp_resource_url: str = ""

    def check(self) -> None:
        if self.auth is None and not self.insecure_dev_identity:
            raise ConfigError(
                "--auth FILE is required (or --insecure-dev-identity SUBJECT for "
                "local development, where every caller is that subject)"
            )
        if not self.tools.is_dir():
            raise ConfigError(f"--tools {self.tools}: not a directory")
        if not self.policies.is_dir():
            raise ConfigError(f"--policies {self.policies}: not a directory")
        self.audit_key_path()  # a --db of no known kind stops start-up here
        self.check_tls()
        if self.approval_ttl_s < 1:
            raise ConfigError(
                f"--approval-ttl {self.approval_ttl_s}: expected a whole number "
                "of seconds, 1 or more"
            )
        if not 0 <= self.policy_poll_interval_s <= 3600:
            raise ConfigError(
                f"--policy-poll-interval {self.policy_poll_interval_s}: expected "
                "seconds between 0 (reload only on SIGHUP) and 3600"
            )
        if not 0 <= self.tools_poll_interval_s <= 3600:
            raise ConfigError(
                f"--tools-poll-interval {self.tools_poll_interval_s}: expected "
                "seconds between 0 (reload only on SIGHUP) and 3600"
            )
        self.check_pins()
        self.check_opa()
        if (
            self.metrics_listen
            and self.metrics_listen == self.listen
            and not self.listen.endswith(":0")
        ):
            raise ConfigError(
                f"--metrics-listen {self.metrics_listen}: the same address as "
                "--listen; give /metrics a port of its own"
            )
        self.check_mcp()

    def check_mcp(self) -> None:
        mcp = self.mcp_listen
        if not mcp:
            if self.mcp_resource_url:
                raise ConfigError("--mcp-resource-url is used only with --mcp-listen")
            return
        if not mcp.endswith(":0") and mcp in (self.listen, self.metrics_listen):
            raise ConfigError(
                f"--mcp-listen {mcp}: the same address as --listen or "
                "--metrics-listen; give MCP a port of its own"
            )
        host = mcp.rpartition(":")[0].strip("[]")
        if host in ("", "0.0.0.0", "::") and not self.mcp_resource_url:
            raise ConfigError(
                f"--mcp-listen {mcp} listens on every interface: give "
                "--mcp-resource-url, the URL clients reach /mcp at (the audience "
                "their tokens must name)"
            )

    def check_opa(self) -> None:
        if self.engine == "embedded":
            if self.opa_url:
                raise ConfigError("--opa-url is used only with --engine opa or --engine shadow")
            return
        if not self.opa_url:
            raise ConfigError(f"--engine {self.engine} needs --opa-url URL (the OPA server)")
        self.opa_settings().check()
        if self.engine == "opa" and self.reload_requires_tests:
            raise ConfigError(
                "--reload-requires-tests runs the tests on the embedded engine: "
                "it cannot vouch for what OPA serves with --engine opa (run "
                "`callgate policy test --engine opa` before pushing instead)"
            )
        if not 1 <= self.shadow_queue <= 1_000_000:
            raise ConfigError(f"--shadow-queue {self.shadow_queue}: expected 1 to 1000000")

    def audit_key_path(self) -> Path:
        """--audit-key-file, or the file beside a SQLite store; replicas sharing a PostgreSQL
        store must be given the same key, so there it is required."""
        return default_audit_key(self.db, self.audit_key_file)

    def pin_modes(self) -> PinModes:
        return PinModes.parse(self.pin_tools)

    def check_pins(self) -> None:
        try:
            self.pin_modes()
        except ValueError:
            raise ConfigError(
                f"--pin-tools {self.pin_tools!r}: expected off, warn or enforce (every tool), "
                "or mcp=MODE,manifest=MODE"
            ) from None

    def check_tls(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("--tls-cert and --tls-key go together: give both or neither")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ConfigError(
                "--tls-client-ca needs --tls-cert and --tls-key (client "
                "certificates are checked only on a TLS listener)"
            )

    def limits(self) -> Limits:
        return Limits(**{name: getattr(self, name) for name in Limits.__dataclass_fields__})


def default_audit_key(db: str, given: Path | None) -> Path:
    """The audit key file for --db: the one given, else `<sqlite file>-audit.key`."""
    path = sqlite_path(db)
    if given is not None:
        return given
    if path is None:
        raise ConfigError(
            "--audit-key-file is required with a PostgreSQL store: every replica "
            "sharing it must mask and seal with the same key (callgate creates "
            "the file if it does not exist)"
        )
    return Path(f"{path}-audit.key")
