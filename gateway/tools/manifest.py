"""The tool manifest model (docs/tools.md): what a manifest file may say, validated by pydantic."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from gateway.executors import (
    ExecutorConfig,
    IdempotencyConfig,
    ReconcileConfig,
    RetryConfig,
)
from gateway.model import Effect

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


def _check_pointer(pointer: str) -> str:
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer to a member (it must start with /)")
    if re.search(r"~(?![01])", pointer):
        raise ValueError(f"{pointer!r} has a ~ not followed by 0 or 1")
    return pointer


Pointer = Annotated[str, AfterValidator(_check_pointer)]


def _rule(field: str, message: str) -> PydanticCustomError:
    """A rule across fields; `field` (dotted) becomes the problem's field path."""
    return PydanticCustomError("manifest_rule", message, {"field": field})


class ToolManifest(BaseModel):
    """One tool, as written in a manifest file (docs/tools.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # tools share parts of it

    name: str = Field(pattern=NAME_PATTERN)
    version: str = Field(min_length=1)
    description: str = ""
    effect: Effect
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    # false: `format` in the schemas is an annotation only (JSON Schema's default), not checked
    format_assertion: bool = True
    executor: ExecutorConfig
    idempotency: IdempotencyConfig = IdempotencyConfig()  # (frozen: one shared by all)
    reconcile: ReconcileConfig | None = None
    retry: RetryConfig = RetryConfig()
    repeatable: bool | None = None  # reads only; None = the default (reads true, writes false)
    parallel_safe: bool | None = None  # reads only; None = the default (reads true)
    redact: list[Pointer] = Field(default_factory=list)  # a `*` token matches every member
    # mask the arguments in the call record too, once the call is terminal
    redact_stored: bool = False
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def write_rules(self) -> ToolManifest:
        if self.effect is Effect.READ:
            if self.reconcile is not None:
                raise _rule("reconcile", "only writes are reconciled; remove it from a read")
            return self
        if self.retry.max_attempts > 1 and not self.idempotency.enforced_by_target:
            raise _rule(
                "retry.max_attempts",
                "a write may be retried only when idempotency.enforced_by_target is true",
            )
        for flag in ("repeatable", "parallel_safe"):
            if getattr(self, flag) is True:
                raise _rule(flag, f"applies to reads only; a write is never {flag}")
        return self


_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def sharing_fields_sets(manifest: ToolManifest) -> ToolManifest:
    """manifest, its executor's model sharing one copy of each distinct set of given fields.
    pydantic keeps that set per model (728 bytes for a manifest's 16 fields, 7 MB of a sidecar
    with 10,000 tools); the manifests of a folder give a few distinct sets, and only
    `model_dump(exclude_unset=True)` reads them. A model adds to its set when a field is
    assigned: both models are frozen, so none is."""
    for model in (manifest, manifest.executor):
        given = frozenset(model.model_fields_set)
        shared = _FIELDS_SETS.setdefault(given, set(given))
        object.__setattr__(model, "__pydantic_fields_set__", shared)
    return manifest
