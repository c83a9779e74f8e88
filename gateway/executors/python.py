"""`python` executors: a `module:function` called in the sidecar's own process (docs/tools.md).

The callable gets `(args, ctx)`; sync callables run in a worker thread, async ones are awaited.
Its return value (JSON-serializable) is the output; raising means FAILED `tool_error`. After
`timeout_s` a read is FAILED `tool_timeout` and a write UNKNOWN: a sync function cannot be
stopped, so its effect may still happen. There is no isolation: use `http` for untrusted tools.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from gateway.errors import CallCode
from gateway.executors.base import ExecutionContext, ExecutionResult
from gateway.executors.output import KEPT_TEXT_CHARS, dump_json
from gateway.executors.reconcile import Absent, Found, Inconclusive, LookupResult
from gateway.executors.results import error_text, failed, noted, succeeded, unknown
from gateway.executors.retries import Attempt, with_retries
from gateway.model import Effect

ToolFunction = Callable[[dict[str, Any], ExecutionContext], Any]


class CallTimedOut(Exception):
    pass


def load_function(spec: str) -> ToolFunction:
    """Import `module:attr[.attr...]`; raises ValueError saying what failed."""
    module_name, _, attr_path = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # an import runs arbitrary module code
        raise ValueError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    for attr in attr_path.split("."):
        if not hasattr(target, attr):
            raise ValueError(f"module {module_name!r} has no attribute {attr_path!r}")
        target = getattr(target, attr)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    func: ToolFunction = target
    return func


def _is_async(func: Callable[..., Any]) -> bool:
    call = getattr(func, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(call)


async def invoke(
    func: ToolFunction, args: dict[str, Any], ctx: ExecutionContext, timeout_s: float
) -> Any:
    """Call func with a private copy of args; raises CallTimedOut after timeout_s."""
    own_args = copy.deepcopy(args)
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            if _is_async(func):
                value = await func(own_args, ctx)
            else:
                value = await asyncio.to_thread(func, own_args, ctx)
            if inspect.isawaitable(value):
                value = await value
    except TimeoutError:
        if deadline.expired():
            raise CallTimedOut(f"no answer within {timeout_s:g} s") from None
        raise
    return value


class PythonExecutor:
    def __init__(
        self,
        func: ToolFunction,
        *,
        timeout_s: float,
        effect: Effect,
        max_attempts: int = 1,
        backoff_s: float = 0.0,
    ) -> None:
        self._func = func
        self._timeout_s = timeout_s
        self._effect = effect
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s

    async def execute(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return await with_retries(
            lambda: self._attempt(args, ctx),
            max_attempts=self._max_attempts,
            backoff_s=self._backoff_s,
        )

    async def send_once(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return (await self._attempt(args, ctx)).result

    async def aclose(self) -> None:
        return None

    async def _attempt(self, args: dict[str, Any], ctx: ExecutionContext) -> Attempt:
        try:
            value = await invoke(self._func, args, ctx, self._timeout_s)
        except CallTimedOut as exc:
            if self._effect is Effect.READ:
                return Attempt(failed(CallCode.TOOL_TIMEOUT, str(exc)), retryable=True)
            return Attempt(unknown(f"outcome unknown: {exc}"), retryable=True)
        except Exception as exc:
            retry = self._effect is Effect.READ
            return Attempt(failed(CallCode.TOOL_ERROR, error_text(exc)), retryable=retry)
        return Attempt(self._output(value))

    def _output(self, value: Any) -> ExecutionResult:
        try:
            return succeeded(dump_json(value))
        except (TypeError, ValueError) as exc:
            message = f"return value is not JSON-serializable: {exc}"
        if self._effect is Effect.READ:
            return failed(CallCode.OUTPUT_INVALID, message)
        return noted(dump_json(repr(value)[:KEPT_TEXT_CHARS]), message)


class PythonLookup:
    """Reconcile look-up by a function: a JSON value = found, None = not applied."""

    def __init__(self, func: ToolFunction, *, timeout_s: float) -> None:
        self._func = func
        self._timeout_s = timeout_s

    async def lookup(self, args: dict[str, Any], ctx: ExecutionContext) -> LookupResult:
        try:
            value = await invoke(self._func, args, ctx, self._timeout_s)
        except Exception as exc:
            return Inconclusive(f"look-up failed: {error_text(exc)}")
        if value is None:
            return Absent()
        try:
            return Found(dump_json(value))
        except (TypeError, ValueError) as exc:
            return Found(
                dump_json(repr(value)[:KEPT_TEXT_CHARS]),
                note=f"look-up value is not JSON-serializable: {exc}",
            )
