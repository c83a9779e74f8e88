"""Policy: the PolicyEngine protocol, bundle loading, the embedded (regorus) engine.

`callgate policy check|test|eval|coverage` lives in `gateway.policy.commands`.
"""

from __future__ import annotations

from pathlib import Path

from gateway.policy.base import PolicyEngine
from gateway.policy.bundle import Bundle, PolicyConfigError, RuleInfo, load_bundle
from gateway.policy.embedded import (
    DEFAULT_PREFIX,
    EmbeddedEngine,
    PolicyEvalError,
    PolicyUndefined,
)

__all__ = [
    "DEFAULT_PREFIX",
    "Bundle",
    "EmbeddedEngine",
    "PolicyConfigError",
    "PolicyEngine",
    "PolicyEvalError",
    "PolicyUndefined",
    "RuleInfo",
    "load_bundle",
    "load_engine",
]


def load_engine(directory: Path, prefix: str = DEFAULT_PREFIX) -> EmbeddedEngine:
    """Load a policy directory and compile it into an embedded engine (ConfigError if bad)."""
    return EmbeddedEngine(load_bundle(directory), prefix=prefix)
