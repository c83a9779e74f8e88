"""Policy: the PolicyEngine protocol, bundle loading, the embedded (regorus) engine.

base        the PolicyEngine protocol the runner holds, RejectedReload
bundle      reading a policy directory (sources, data, revision hash)
engine      the one place a regorus Engine is made (with callgate's builtins: builtins/)
checker     static checks at load: builtin signatures (signatures), unknown builtins
embedded    EmbeddedEngine: per-thread engines, fail-closed evaluation
decision    mapping a `decision` value to a verdict
reload      ReloadingEngine (the serving indirection) and what a revision must pass
watch       scanning --policies and reloading it
testing, explain, probe, failures, commands: `callgate policy check|test|eval|coverage`
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


def load_engine(
    directory: Path, prefix: str = DEFAULT_PREFIX, *, checked: bool = False
) -> EmbeddedEngine:
    """Load a policy directory, check it and compile it into an embedded engine (ConfigError
    listing every problem if bad). `checked=True` skips the static checks."""
    return EmbeddedEngine(load_bundle(directory), prefix=prefix, checked=checked)
