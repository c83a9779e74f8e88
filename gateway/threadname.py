"""Names callgate's own threads for the operating system too, so that `top -H`, `ps -L` and
`/proc/<pid>/task/*/comm` tell the store's thread from the event loop's (Python names a
thread for itself only; every thread of the process is "python" to the system otherwise)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable
from typing import Any

_PR_SET_NAME = 15  # prctl(2); the kernel keeps the first 15 bytes


def _prctl() -> Callable[..., Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., Any] = ctypes.CDLL(ctypes.util.find_library("c") or None).prctl
        return prctl
    except (OSError, AttributeError):
        return None


_SET = _prctl()


def name_os_thread(name: str | None = None) -> None:
    """Give the calling thread its Python name (or `name`) at the OS level; nothing where
    the platform has no such name. For a pool's `initializer`."""
    if _SET is None:
        return
    text = (name or threading.current_thread().name).encode()[:15]
    _SET(_PR_SET_NAME, ctypes.c_char_p(text), 0, 0, 0)
