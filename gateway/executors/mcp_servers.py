"""The MCP servers file (`serve --mcp-servers FILE`, docs/tools.md "Tools on MCP servers").

    servers:
      notes:   {command: [python, -m, notes_server], env: {ROOT: /srv}, cwd: /srv}   # stdio
      tickets: {url: "http://127.0.0.1:9000/mcp",
                headers_from_env: {Authorization: TICKETS_AUTH}}                      # HTTP

A server is either a `command` (a process callgate starts and talks to over stdio) or a `url`
(streamable HTTP). A stdio server's environment is the few variables the SDK passes on (PATH,
HOME, ...) plus its `env`; an HTTP server's headers are read from the environment variables
`headers_from_env` names, when the file is loaded (a variable that is not set stops start-up).
Nothing of a caller's credentials is ever passed on. The file is strict YAML; any problem is a
`ConfigError` naming the file and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gateway.errors import ConfigError
from gateway.executors.config import MCP_NAME_PATTERN, check_http_url, rule
from gateway.yamltext import YamlTextError, read_yaml

_HEADER_NAME = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
# headers the MCP transport sets itself
_RESERVED = frozenset(
    {
        "content-type",
        "accept",
        "content-length",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
        "host",
        "transfer-encoding",
    }
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Strict):
    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] | None = None
    cwd: str | None = Field(default=None, min_length=1)
    url: str | None = None
    headers_from_env: dict[str, str] | None = None
    start_timeout_s: float = Field(default=10.0, gt=0, le=600)

    @field_validator("url")
    @classmethod
    def valid_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)

    @field_validator("headers_from_env")
    @classmethod
    def valid_headers(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        for name, variable in (headers or {}).items():
            if not re.match(_HEADER_NAME, name) or name.lower() in _RESERVED:
                raise ValueError(f"header {name!r} may not be configured")
            if not re.match(_ENV_NAME, variable):
                raise ValueError(f"{variable!r} is not an environment variable name")
        return headers

    @model_validator(mode="after")
    def one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            if self.command is None:
                raise rule("command", "give command (stdio) or url (streamable HTTP)")
            raise rule("url", "give command (stdio) or url (streamable HTTP), not both")
        if self.command is not None and self.headers_from_env is not None:
            raise rule("headers_from_env", "applies to url servers only")
        if self.url is not None:
            for field in ("env", "cwd"):
                if getattr(self, field) is not None:
                    raise rule(field, "applies to command (stdio) servers only")
        if self.command is not None and any(not part or "\0" in part for part in self.command):
            raise rule("command", "every part must be a non-empty string without NUL")
        return self


class ServersFile(_Strict):
    servers: dict[str, ServerConfig]

    @field_validator("servers")
    @classmethod
    def valid_names(cls, servers: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        for name in servers:
            if not re.match(MCP_NAME_PATTERN, name):
                raise ValueError(f"server name {name!r} must match {MCP_NAME_PATTERN}")
        return servers


@dataclass(frozen=True)
class StdioServer:
    name: str
    command: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    start_timeout_s: float


@dataclass(frozen=True)
class HttpServer:
    name: str
    url: str
    headers: Mapping[str, str]  # resolved from the environment at load
    start_timeout_s: float


ServerSpec = StdioServer | HttpServer


def _spec(name: str, cfg: ServerConfig, env: Mapping[str, str], source: str) -> ServerSpec:
    if cfg.command is not None:
        return StdioServer(
            name, tuple(cfg.command), dict(cfg.env or {}), cfg.cwd, cfg.start_timeout_s
        )
    headers = {}
    for header, variable in (cfg.headers_from_env or {}).items():
        value = env.get(variable)
        if value is None:
            raise ConfigError(
                f"{source}: servers.{name}.headers_from_env.{header}: the "
                f"environment variable {variable} is not set"
            )
        if any(c in value for c in "\r\n\0"):
            raise ConfigError(
                f"{source}: servers.{name}.headers_from_env.{header}: the "
                f"value of {variable} has a line break or NUL"
            )
        headers[header] = value
    assert cfg.url is not None
    return HttpServer(name, cfg.url, headers, cfg.start_timeout_s)


def _problems(source: str, exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        ctx = error.get("ctx") or {}
        parts = [str(p) for p in error["loc"]]
        message = str(error["msg"])
        if error["type"] == "value_error":
            message = str(ctx.get("error", message))
        elif error["type"] == "manifest_rule":
            parts.append(str(ctx["field"]))
        elif error["type"] == "extra_forbidden":
            message = "unknown field"
        lines.append(f"{source}: {'.'.join(parts)}: {message}")
    return "\n".join(lines)


def parse_servers(text: str, source: str, env: Mapping[str, str]) -> dict[str, ServerSpec]:
    """The servers of a servers file's text; raises ConfigError naming every problem."""
    try:
        raw = read_yaml(text)
    except YamlTextError as exc:
        line = f" (line {exc.line})" if exc.line else ""
        raise ConfigError(f"{source}{line}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with `servers:`")
    try:
        parsed = ServersFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_problems(source, exc)) from exc
    return {name: _spec(name, cfg, env, source) for name, cfg in parsed.servers.items()}


def load_servers(path: Path, env: Mapping[str, str]) -> dict[str, ServerSpec]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--mcp-servers {path}: cannot read it: {exc}") from exc
    return parse_servers(text, str(path), env)


class StartFailed(Exception):
    """An MCP server's session could not be started: nothing was sent."""
