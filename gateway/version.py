"""callgate's version, as installed (`callgate --version`, GetStatus)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def callgate_version() -> str:
    try:
        return version("callgate")
    except PackageNotFoundError:
        return "dev"
