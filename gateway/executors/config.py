"""Manifest sections that describe how a tool runs (docs/tools.md): executor, reconcile, retry,
idempotency. `gateway.tools.ToolManifest` embeds them; executors are built from them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

FUNCTION_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"
RECONCILE_PLACEHOLDERS = ("idempotency_key", "run_id", "call_id")
# Headers callgate sets itself on every request; a manifest may not override them.
RESERVED_HEADERS = ("accept", "idempotency-key", "x-callgate-run-id", "x-callgate-call-id",
                    "x-callgate-subject", "content-length", "transfer-encoding")

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class ManifestFieldError(ValueError):
    """A problem found while building a tool from a valid-looking manifest, at a field path."""

    def __init__(self, field: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


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
    check_http_url(_PLACEHOLDER.sub("x", url))
    return url


class PythonExecutorConfig(_Section):
    type: Literal["python"]
    function: str = Field(pattern=FUNCTION_PATTERN, description="module:function")
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


class HttpExecutorConfig(_Section):
    type: Literal["http"]
    url: str
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def valid_url(cls, url: str) -> str:
        return check_http_url(url)

    @field_validator("headers")
    @classmethod
    def valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return check_headers(headers)


ExecutorConfig = Annotated[PythonExecutorConfig | HttpExecutorConfig, Field(discriminator="type")]


class HttpReconcileConfig(_Section):
    """GET `url` (placeholders filled): 200 found, 404 not applied, anything else unknown."""

    type: Literal["http"]
    url: str
    after_s: float = Field(default=0.5, ge=0, le=3600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def valid_url(cls, url: str) -> str:
        return check_lookup_url(url)

    @field_validator("headers")
    @classmethod
    def valid_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return check_headers(headers)


class PythonReconcileConfig(_Section):
    """`function(args, ctx)`: a JSON value = found (the output), None = not applied,
    raising or timing out = still unknown."""

    type: Literal["python"]
    function: str = Field(pattern=FUNCTION_PATTERN, description="module:function")
    after_s: float = Field(default=0.5, ge=0, le=3600)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)


ReconcileConfig = Annotated[PythonReconcileConfig | HttpReconcileConfig,
                            Field(discriminator="type")]


class RetryConfig(_Section):
    max_attempts: int = Field(default=1, ge=1, le=10)
    backoff_s: float = Field(default=0.2, ge=0, le=60,
                             description="wait before attempt n + 1: backoff_s * n")


class IdempotencyConfig(_Section):
    enforced_by_target: bool = False
