"""How a policy directory's Rego is read and how its builtin errors count.

- `rego_version`: `v1` (the default, as OPA 1.x) or `v0`, the syntax before Rego 1.0 (`deny[msg]
  { ... }` without `if` and `contains`), as `opa ... --v0-compatible` reads it;
- `builtin_errors`: `strict` (the default), a builtin error fails the whole evaluation (OPA's
  `strict-builtin-errors`: a decision is then a deny with `policy_error`); `undefined`, OPA's
  own default: the expression whose builtin failed is undefined and evaluation goes on.

Both are settings of a process (`serve`, each `policy` command: `--rego-version`,
`--builtin-errors`), carried by every bundle it loads so that every engine built from the
bundle (serving, tests, `--explain`, coverage) reads and evaluates it the same way. Each is
declared once here, `SETTINGS`: its flag, variable, values and help, for both command lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

RegoVersion = Literal["v1", "v0"]
BuiltinErrors = Literal["strict", "undefined"]


@dataclass(frozen=True)
class RegoOptions:
    rego_version: RegoVersion = "v1"
    builtin_errors: BuiltinErrors = "strict"

    @property
    def rego_v0(self) -> bool:
        return self.rego_version == "v0"

    @property
    def strict(self) -> bool:
        return self.builtin_errors == "strict"


DEFAULT_OPTIONS: Final = RegoOptions()


@dataclass(frozen=True)
class Setting:
    """A command-line setting of `serve` and the `policy` commands."""

    flag: str
    choices: tuple[str, ...]
    default: str
    help: str

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def env(self) -> str:
        return "CALLGATE_" + self.dest.upper()

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.choices) + "}"


REGO_VERSION: Final = Setting(
    "--rego-version",
    get_args(RegoVersion),
    DEFAULT_OPTIONS.rego_version,
    "Rego syntax of the policy files: v1 (OPA 1.x) or v0 (before Rego 1.0, as "
    "opa --v0-compatible reads it)",
)
BUILTIN_ERRORS: Final = Setting(
    "--builtin-errors",
    get_args(BuiltinErrors),
    DEFAULT_OPTIONS.builtin_errors,
    "strict: a builtin error fails the evaluation (a decision is denied policy_error); "
    "undefined: the expression is undefined and evaluation goes on, as OPA does without "
    "strict-builtin-errors",
)
SETTINGS: Final = (REGO_VERSION, BUILTIN_ERRORS)
