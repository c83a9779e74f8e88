"""Provider protocol adapters: every provider quirk lives in this package.

`get_adapter(provider)` answers the adapter for a provider identifier (docs/api.md).
This package never imports `gateway`.
"""

from __future__ import annotations

from importlib import import_module

from adapters.base import ProviderAdapter, StreamAssembler
from adapters.events import AdapterError

_MODULES = {
    "openai.responses": "adapters.openai_responses",
    "openai.chat_completions": "adapters.openai_chat",
    "anthropic.messages": "adapters.anthropic_messages",
    "google.gemini": "adapters.gemini",
    "aws.bedrock_converse": "adapters.bedrock_converse",
}

PROVIDERS: dict[str, tuple[str, ...]] = {
    "openai.responses": ("v1",),
    "openai.chat_completions": ("v1",),
    "anthropic.messages": ("2023-06-01", "2026-10-21"),
    "google.gemini": ("v1beta", "v1"),
    "aws.bedrock_converse": ("2023-09-30",),
}


def resolve_api_version(provider: str, api_version: str) -> str:
    """The api_version to record ("" → the default); AdapterError(unknown_provider) if unknown."""
    versions = PROVIDERS.get(provider)
    if versions is None:
        raise AdapterError(
            f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}", code="unknown_provider"
        )
    if not api_version:
        return versions[0]
    if api_version not in versions:
        raise AdapterError(
            f"provider {provider} does not accept api_version {api_version!r}; "
            f"accepted: {', '.join(versions)}",
            code="unknown_provider",
        )
    return api_version


def get_adapter(provider: str) -> ProviderAdapter:
    resolve_api_version(provider, "")
    module = import_module(_MODULES[provider])
    adapter: ProviderAdapter = module.ADAPTER
    return adapter


__all__ = [
    "PROVIDERS",
    "AdapterError",
    "ProviderAdapter",
    "StreamAssembler",
    "get_adapter",
    "resolve_api_version",
]
