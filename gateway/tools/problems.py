"""Manifest problems: each is reported as one line naming the file, the field path and what is
wrong, e.g. `tools/reserve.yaml: executor.url: ...`."""

from __future__ import annotations

from pydantic import ValidationError as ModelError

FieldPath = tuple[str | int, ...]

_TAGGED_SECTIONS = ("executor", "reconcile")


class ManifestProblem(Exception):
    """One problem of one manifest, at a field path within it."""

    def __init__(self, field: FieldPath, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def field_text(field: FieldPath) -> str:
    text = ""
    for part in field:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def problem_line(source: str, field: FieldPath, message: str) -> str:
    where = field_text(field)
    return f"{source}: {where}: {message}" if where else f"{source}: {message}"


def model_problems(exc: ModelError) -> list[tuple[FieldPath, str]]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if len(loc) > 1 and loc[0] in _TAGGED_SECTIONS:
            loc = loc[:1] + loc[2:]  # drop the discriminator tag pydantic puts in the path
        message = str(error["msg"])
        ctx = error.get("ctx", {})
        if error["type"] == "value_error":
            message = str(ctx.get("error", message))
        elif error["type"] == "manifest_rule":
            loc = (*loc, *str(ctx["field"]).split("."))
        problems.append((loc, message))
    return problems
