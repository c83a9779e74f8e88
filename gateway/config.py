"""Serve configuration: validated once at start-up, defaults in one place.

Every value comes from a flag or its environment variable (CALLGATE_<NAME>); problems name the
flag and the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.errors import ConfigError
from gateway.limits import MAX_JSON_DEPTH_CAP, MIB, Limits

_LIMITS = Limits()

DEFAULT_LISTEN = "127.0.0.1:50051"


class ServeConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    listen: str = DEFAULT_LISTEN
    tools: Path
    policies: Path
    db: str = "callgate.db"
    auth: Path | None = None
    insecure_dev_identity: str = ""
    engine: Literal["embedded"] = "embedded"
    policy_prefix: str = "data.callgate"
    db_busy_timeout_s: float = 5.0
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

    def check(self) -> None:
        if self.auth is None and not self.insecure_dev_identity:
            raise ConfigError("--auth FILE is required (or --insecure-dev-identity SUBJECT for "
                              "local development, where every caller is that subject)")
        if not self.tools.is_dir():
            raise ConfigError(f"--tools {self.tools}: not a directory")
        if not self.policies.is_dir():
            raise ConfigError(f"--policies {self.policies}: not a directory")

    def limits(self) -> Limits:
        return Limits(**{name: getattr(self, name) for name in Limits.__dataclass_fields__})

    def sqlite_path(self) -> Path:
        db = self.db
        if db.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"--db {db}: the PostgreSQL store is not available in this build; "
                              "use a SQLite path")
        if db.startswith("sqlite:///"):
            db = db.removeprefix("sqlite:///")
        elif "://" in db:
            raise ConfigError(f"--db {db}: expected PATH, sqlite:///PATH or postgresql://...")
        return Path(db)
