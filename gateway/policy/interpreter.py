"""The regorus interpreter: the one place a regorus `Engine` object is constructed (with
callgate's limits and quiet backtraces), and how its panics are recognized.

`gateway.policy.rego.new_engine` adds callgate's builtins on top; the builtins themselves
evaluate on a bare engine of this kind (`gateway.policy.builtins.located`), which is why this
module imports no builtin.
"""

from __future__ import annotations

import os
from typing import Any

# The regorus error text carries a ~2.5 KB Rust backtrace when RUST_BACKTRACE is set; this
# switches it off for errors (it must be set before the first engine is used). A contained
# engine panic would also print one to stderr: one policy input could flood the log with them.
os.environ["RUST_LIB_BACKTRACE"] = "0"
os.environ["RUST_BACKTRACE"] = "0"

import regorus  # noqa: E402  (the environment must be set first)

# regorus refuses a policy line longer than 1,024 columns by default; a JWT, a PEM key or a
# JWKS written into a policy is longer. Lines may be as long as a file may be large.
MAX_FILE_BYTES = 1 << 20
MAX_LINES = 20_000


def bare_engine(*, rego_v0: bool = False) -> Any:
    """A regorus Engine with callgate's limits and no extensions (the engine's own builtins)."""
    engine = regorus.Engine()
    engine.set_policy_length_config(
        max_col=MAX_FILE_BYTES, max_file_bytes=MAX_FILE_BYTES, max_lines=MAX_LINES
    )
    if rego_v0:
        engine.set_rego_v0(True)
    return engine


def is_panic(exc: BaseException) -> bool:
    """True for pyo3's PanicException (it derives from BaseException, not Exception)."""
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"
