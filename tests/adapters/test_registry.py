"""The adapter registry: every provider of the contract has an adapter that says so."""

from __future__ import annotations

import pytest

from adapters import PROVIDERS, AdapterError, get_adapter, resolve_api_version


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_provider_has_a_matching_adapter(provider: str) -> None:
    adapter = get_adapter(provider)
    assert adapter.provider == provider
    assert adapter.api_versions == PROVIDERS[provider]


def test_api_versions_default_and_refuse_unknown_ones() -> None:
    assert resolve_api_version("google.gemini", "") == "v1beta"
    assert resolve_api_version("google.gemini", "v1") == "v1"
    assert resolve_api_version("anthropic.messages", "2026-10-21") == "2026-10-21"
    with pytest.raises(AdapterError) as err:
        resolve_api_version("openai.responses", "v2")
    assert err.value.code == "unknown_provider"
    with pytest.raises(AdapterError):
        get_adapter("acme.llm")
