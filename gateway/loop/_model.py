"""The model, as the loop sees it: given the conversation and the tools in the provider's own
shape, it answers the provider's raw response JSON. Anything that can make that request fits:
an official SDK client, an HTTP call, a recording (`ScriptedModel`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gateway.errors import ModelError, ScriptExhausted


@dataclass(frozen=True)
class ModelRequest:
    """One request for a model turn. `conversation` and `tools` are the provider's own shapes
    (messages or input items; tool declarations as ListTools answers them): send them as they
    are, without changing them. `turn` counts the run's model requests, from 1."""

    run_id: str
    provider: str
    conversation: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]]
    turn: int


class Model(Protocol):
    async def respond(self, request: ModelRequest) -> str:
        """The provider's raw response JSON for this request. A request that failed (a
        timeout, a rate limit, a server error) raises `ModelError`, which the loop records."""
        ...


Scripted = str | Mapping[str, Any] | ModelError


class ScriptedModel:
    """A model that replays recorded responses, in order, in their exact wire format: each
    request answers the next response (a `ModelError` in the script is raised instead). Every
    request is kept in `requests` (the one it cannot answer too), so a test can read what the
    model was asked. Asked once more than the script holds, it raises `ScriptExhausted`."""

    def __init__(self, script: Iterable[Scripted]) -> None:
        self._script = [
            step if isinstance(step, str | ModelError) else json.dumps(step) for step in script
        ]
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_files(cls, *paths: Path) -> ScriptedModel:
        """The responses recorded in these files, one JSON response per file."""
        return cls(path.read_text(encoding="utf-8") for path in paths)

    @property
    def remaining(self) -> int:
        return max(len(self._script) - len(self.requests), 0)

    async def respond(self, request: ModelRequest) -> str:
        self.requests.append(request)
        if len(self.requests) > len(self._script):
            raise ScriptExhausted(
                f"the script holds {len(self._script)} responses; run "
                f"{request.run_id} asked for response {len(self.requests)}"
            )
        step = self._script[len(self.requests) - 1]
        if isinstance(step, ModelError):
            raise step
        return step
