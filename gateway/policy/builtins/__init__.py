"""Builtins supplied to the embedded engine through regorus's `add_extension`.

The engine (regorus, as packaged) lacks `crypto.*`, `io.jwt.*`, some `net.cidr_*`,
`regex.globs_match` and `strings.render_template`, answers a few others differently from OPA
(`sprintf` is Go's `fmt.Sprintf` here, as in OPA), and predates `array.flatten` and
`strings.split_n`; the modules here supply them with OPA's documented results.
`gateway.policy.rego` makes every serving and testing engine, and it registers every
extension listed here, so serving engines, `policy test`, `policy eval` and coverage all
evaluate the same builtins.
"""

from __future__ import annotations

from gateway.policy.builtins import (
    casts,
    crypto,
    fixes,
    globs,
    gofmt,
    jwt,
    located,
    net,
    newer,
    objects,
    template,
)
from gateway.policy.builtins.base import BuiltinError, Extension

EXTENSIONS: tuple[Extension, ...] = (
    *crypto.EXTENSIONS,
    *jwt.EXTENSIONS,
    *net.EXTENSIONS,
    *globs.EXTENSIONS,
    *template.EXTENSIONS,
    *fixes.EXTENSIONS,
    *newer.EXTENSIONS,
    *located.EXTENSIONS,
    *gofmt.EXTENSIONS,
    *casts.EXTENSIONS,
    *objects.EXTENSIONS,
)
SUPPLIED: frozenset[str] = frozenset(e.name for e in EXTENSIONS)
ARITY: dict[str, int] = {e.name: e.nargs for e in EXTENSIONS}

__all__ = ["ARITY", "EXTENSIONS", "SUPPLIED", "BuiltinError", "Extension"]
