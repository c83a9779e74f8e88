"""What is wrong with a policy bundle, located: `PolicyConfigError`, and the translation of
the embedded engine's (regorus's) error text into one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.errors import ConfigError
from gateway.policy import brackets

_LOCATION = re.compile(r"-->\s*(?P<file>.+):(?P<line>\d+):(?P<col>\d+)\s*$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^error:\s*(?P<msg>.*)$", re.MULTILINE)


class PolicyConfigError(ConfigError):
    """A bundle that cannot be served; `file`/`line`/`column` locate it when known.

    `problems` lists every problem found (this one first); the message is the first one's.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int | None = None,
        column: int | None = None,
        detail: str = "",
        problems: Sequence[PolicyConfigError] = (),
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.detail = detail or message
        self._problems = tuple(problems)

    def report(self) -> str:
        """Every problem, one per line (the message names only the first and a count)."""
        return "\n".join(p.message for p in self.problems)

    @property
    def problems(self) -> tuple[PolicyConfigError, ...]:
        # Not stored when it is only this one: an error referring to itself is a reference
        # cycle, and its frames (which may hold an engine) would be freed by the garbage
        # collector on whichever thread runs it.
        return self._problems or (self,)

    def detached(self) -> PolicyConfigError:
        """A copy (of each problem too) without traceback, cause or context: keeping an error
        must not keep the frames it was raised through, which may hold an engine (an engine
        freed on another thread than its own is an error)."""
        problems = [
            PolicyConfigError(p.message, file=p.file, line=p.line, column=p.column, detail=p.detail)
            for p in self.problems
        ]
        return PolicyConfigError(
            self.message,
            file=self.file,
            line=self.line,
            column=self.column,
            detail=self.detail,
            problems=problems,
        )

    @classmethod
    def of(cls, problems: Sequence[PolicyConfigError]) -> PolicyConfigError:
        """One error standing for several: the first's place and message, all of them listed."""
        first, more = problems[0], len(problems) - 1
        suffix = f" (and {more} more problem{'s' * (more != 1)})" if more else ""
        return cls(
            first.message + suffix,
            file=first.file,
            line=first.line,
            column=first.column,
            detail=first.detail,
            problems=problems,
        )


# Engine messages that say less than what they mean to a policy's author.
_ENGINE_MEANING = {
    "invalid number. serde_json cannot parse number: out of range": (
        "a number beyond the range of a 64-bit float: the embedded engine's numbers are "
        "64-bit floats, OPA's are not; use the OPA engine for it"
    ),
}


def config_error_from_regorus(
    exc: BaseException, *, fallback_file: str = "", source: str | None = None
) -> PolicyConfigError:
    """Turn regorus's `--> file:line:col ... error: msg` text into a located ConfigError.
    With the `source` it was parsing, an unclosed bracket is located where it opens."""
    text = str(exc).split("Stack backtrace:", 1)[0].strip()
    loc = _LOCATION.search(text)
    err = _ERROR_LINE.search(text)
    detail = err.group("msg").strip() if err else (text.splitlines()[-1] if text else repr(exc))
    detail = _ENGINE_MEANING.get(detail, detail)
    if loc is None:
        where = fallback_file
        return PolicyConfigError(
            f"{where}: {detail}" if where else detail, file=where, detail=detail
        )
    file, line, col = loc.group("file"), int(loc.group("line")), int(loc.group("col"))
    expected = _EXPECTING.match(detail)
    if source is not None and expected is not None:
        opened = brackets.opener_of(source, line, col, expected.group("closing"))
        if opened is not None:
            return _unclosed(
                file,
                opened,
                line,
                col,
                expected.group("closing"),
                brackets.at_end(source, line, col),
            )
    return PolicyConfigError(
        f"{file}:{line}:{col}: {detail}", file=file, line=line, column=col, detail=detail
    )


_EXPECTING = re.compile(r"expecting `(?P<closing>[}\])])`")


def _unclosed(
    file: str, opened: brackets.Opened, line: int, col: int, closing: str, at_end: bool
) -> PolicyConfigError:
    """The error of a bracket never closed, located where it opens (the parser's own place,
    often the end of the file, is said in words)."""
    bracket, at_line, at_col = opened
    detail = (
        f"this {bracket} is never closed: the file ends (line {line}) before its {closing}"
        if at_end
        else f"this {bracket} is not closed: the parser expected "
        f"{closing} at line {line}, column {col}"
    )
    return PolicyConfigError(
        f"{file}:{at_line}:{at_col}: {detail}",
        file=file,
        line=at_line,
        column=at_col,
        detail=detail,
    )


def short_regorus_message(exc: BaseException) -> str:
    """A one-line form of a regorus error: `file:line:col: message`."""
    return config_error_from_regorus(exc).message
