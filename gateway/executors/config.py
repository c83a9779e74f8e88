"""Manifest sections that describe how a tool runs (docs/tools.md): executor (python, http,
mcp), reconcile, retry, idempotency, and the `tls` of an http executor or look-up.
`gateway.tools.ToolManifest` embeds them; executors are built from them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

FUNCTION_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"
RECONCILE_PLACEHOLDERS = ("idempotency_key", "run_id", "call_id")
# Headers callgate sets itself on every request; a manifest may not override them.
RESERVED_HEADERS = (
    "accept",
    "idempotency-key",
    "x-callgate-run-id",
    "x-callgate-call-id",
    "x-callgate-subject",
    "content-length",
    "transfer-encoding",
)

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
SERVER_NAME_PATTERN = r"^[A-Za-z0-9._:-]{1,253}$"


class ManifestFieldError(ValueError):
    """A problem found while building a tool from a valid-looking manifest, at a field path."""

    def __init__(self, field: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def rule(field: str, message: str) -> PydanticCustomError:
    """A rule across a section's fields; `field` (dotted, within the section) becomes the
    problem's field path."""
    return PydanticCustomError("manifest_rule", message, {"field": field})


def check_http_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an absolute http(s) URL")
    return url


def check_headers(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(f"header {name!r} is set by callgate and may not be configured")
        if any(c in value for c in "\r\n\0") or any(c in name for c in "\r\n\0: "):
            raise ValueError(f"header {name!r} has a name or value that is not allowed")
    return headers


def check_lookup_url(url: str) -> str:
    unknown = [p for p in _PLACEHOLDER.findall(url) if p not in RECONCILE_PLACEHOLDERS]
    if unknown:
        allowed = ", ".join("{" + p + "}" for p in RECONCILE_PLACEHOLDERS)
        raise ValueError(f"unknown placeholder {{{unknown[0]}}} (allowed: {allowed})")
    if _PLACEHOLDER.search(urlsplit(url).netloc):
        raise ValueError(
            "placeholders may appear in the path and query only, not in the host or port"
        )
    check_http_url(_PLACEHOLDER.sub("x", url))
    return url


class TlsConfig(_Section):
    """How an https target is trusted and what callgate shows it: `ca_file` (PEM CAs trusted
    instead of the system's), `cert_file` and `key_file` (a client certificate, for mutual
    TLS), `server_name` (the name the target's certificate must carry, when it is not the
    URL's host). A relative path is taken from the manifest file's folder."""

    ca_file: str | None = Field(default=None, min_length=1)
    cert_file: str | None = Field(default=None, min_length=1)
    key_file: str | None = Field(default=None, min_length=1)
    server_name: str | None = Field(default=None, pattern=SERVER_NAME_PATTERN)

    @model_validator(mode="after")
    def cert_with_key(self) -> TlsConfig:
        if self.cert_file is not None and self.key_file is None:
            raise rule("key_file", "cert_file needs its key_file")
        if self.key_file is not None and self.cert_file is None:
            raise rule("cert_file", "key_file needs its cert_file")
        return self


def _tls_needs_https(url: str, tls: TlsConfig | None) -> None:
    if tls is not None and urlsplit(url).scheme != "https":
        raise rule("tls", "applies to https:// URLs only")


class PythonExecutorConfig(_Section):
    type: Literal["python"]
    function: str = Field(pattern=FUNCTION_PATTERN, description="module:function")
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class HttpExecutorConfig(_Section):
    type: Literal["http"]
    url: str
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    headers: dict[str, str] = Field(default_factory=dict)
    tls: TlsConfig | None = None

    @field_validator("url")
    @classmethod
    def valid_url(cls, url: str) -> str:
        return check_http_url(url)

    @field_validator("headers")
    @classmethod
    def valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return check_headers(headers)

    @model_validator(mode="after")
    def tls_for_https(self) -> HttpExecutorConfig:
        _tls_needs_https(self.url, self.tls)
        return self


MCP_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


class McpExecutorConfig(_Section):
    """Call `tool` (default: the manifest's name) on the MCP server `server` of the servers
    file (`serve --mcp-servers`)."""

    type: Literal["mcp"]
    server: str = Field(pattern=MCP_NAME_PATTERN)
    tool: str | None = Field(default=None, min_length=1, max_length=128)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


ExecutorConfig = Annotated[
    PythonExecutorConfig | HttpExecutorConfig | McpExecutorConfig, Field(discriminator="type")
]


class HttpReconcileConfig(_Section):
    """GET `url` (placeholders filled): 200 found, 404 not applied, anything else unknown.
    Without `tls`, a look-up at the executor's origin uses the executor's."""

    type: Literal["http"]
    url: str
    after_s: float = Field(default=0.5, ge=0, le=3600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    headers: dict[str, str] = Field(default_factory=dict)
    tls: TlsConfig | None = None

    @field_validator("url")
    @classmethod
    def valid_url(cls, url: str) -> str:
        return check_lookup_url(url)

    @field_validator("headers")
    @classmethod
    def valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return check_headers(headers)

    @model_validator(mode="after")
    def tls_for_https(self) -> HttpReconcileConfig:
        _tls_needs_https(self.url, self.tls)
        return self


class PythonReconcileConfig(_Section):
    """`function(args, ctx)`: a JSON value = found (the output), None = not applied,
    raising or timing out = still unknown."""

    type: Literal["python"]
    function: str = Field(pattern=FUNCTION_PATTERN, description="module:function")
    after_s: float = Field(default=0.5, ge=0, le=3600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


def check_lookup_arguments(arguments: dict[str, str]) -> dict[str, str]:
    for value in arguments.values():
        unknown = [p for p in _PLACEHOLDER.findall(value) if p not in RECONCILE_PLACEHOLDERS]
        if unknown:
            allowed = ", ".join("{" + p + "}" for p in RECONCILE_PLACEHOLDERS)
            raise ValueError(f"unknown placeholder {{{unknown[0]}}} (allowed: {allowed})")
    return arguments


class McpReconcileConfig(_Section):
    """Call the look-up `tool` on the executor's MCP server with `arguments` (placeholders
    filled): a value = found, `null` (or nothing) = not applied, a tool error = unknown."""

    type: Literal["mcp"]
    tool: str = Field(min_length=1, max_length=128)
    arguments: dict[str, str] = Field(
        default_factory=lambda: {"idempotency_key": "{idempotency_key}"}
    )
    after_s: float = Field(default=0.5, ge=0, le=3600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)

    @field_validator("arguments")
    @classmethod
    def valid_arguments(cls, arguments: dict[str, str]) -> dict[str, str]:
        return check_lookup_arguments(arguments)


ReconcileConfig = Annotated[
    PythonReconcileConfig | HttpReconcileConfig | McpReconcileConfig, Field(discriminator="type")
]


class RetryConfig(_Section):
    model_config = ConfigDict(extra="forbid", frozen=True)  # a manifest without one shares one

    max_attempts: int = Field(default=1, ge=1, le=10)
    backoff_s: float = Field(
        default=0.2, ge=0, le=60, description="wait before attempt n + 1: backoff_s * n"
    )


class IdempotencyConfig(_Section):
    model_config = ConfigDict(extra="forbid", frozen=True)  # a manifest without one shares one

    enforced_by_target: bool = False
