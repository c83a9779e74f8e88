"""The pin check of a call's tool (docs/tools.md, "Pinned definitions").

`PinBook.check(tool)` answers the tool's fingerprint now and whether it is the pinned one.
A tool on an MCP server whose definition cannot be read now (its server is down, or did not
list its tools) cannot be checked: under `enforce` its calls are held (`tool_error`), under
`warn` they go on unchecked.
The first definition recorded of a tool (by any sidecar sharing the store) is its pin; a
definition seen for the first time that is not the pin is recorded too, so operators see it
(`callgate tools pins`) and can approve it, and audited once (`tool_changed`).

Pins are read from the store and kept for `refresh_s` seconds; a fingerprint that differs
from the kept pin is checked against the store again at once, so a pin an operator approved
(on this replica or another) holds from the next call. The book never allows by accident: a
store that cannot be read raises (the turn fails closed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway.audit import events
from gateway.audit.records import AuditEvent
from gateway.errors import CallCode
from gateway.pins import (
    PinMode,
    PinModes,
    SeenDefinition,
    ToolPin,
    change_message,
    changed_fields,
    read_definition,
)
from gateway.store.base import RunStore
from gateway.tools import Tool
from gateway.tools.definitions import Defined, DefinitionUnavailable

log = logging.getLogger("callgate.pins")

REFRESH_S = 5.0
OBSERVE_BATCH = 500  # tools recorded per commit by observe (a few thousand SQL parameters)


@dataclass(frozen=True)
class PinCheck:
    """A tool's definition against its pin. `held`: why its calls may not run now ("" when
    they may); `pinned`: the definition is the pinned one."""

    mode: PinMode
    fingerprint: str = ""
    pinned: bool = False
    held: str = ""
    code: CallCode = CallCode.TOOL_CHANGED  # of a held call: changed, or not checkable now


OFF_CHECK = PinCheck(PinMode.OFF)


class PinBook:
    def __init__(
        self,
        store: RunStore,
        modes: PinModes,
        clock: Callable[[], datetime],
        *,
        refresh_s: float = REFRESH_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.modes = modes
        self.clock = clock
        self.refresh_s = refresh_s
        self._monotonic = monotonic
        self._kept: dict[str, tuple[ToolPin, float]] = {}  # name → (pin, read at)
        self._recorded: set[tuple[str, str]] = set()  # (name, fingerprint) in the store
        self._lock = asyncio.Lock()

    def mode(self, tool: Tool) -> PinMode:
        return self.modes.of(tool.on_mcp)

    async def check(self, tool: Tool) -> PinCheck:
        mode = self.mode(tool)
        if mode is PinMode.OFF:  # never reaches a server just to say what is not checked
            return PinCheck(mode, "" if tool.on_mcp else (await tool.definition()).fingerprint)
        try:
            now = await tool.definition()
        except DefinitionUnavailable as exc:
            if mode is PinMode.WARN:
                log.warning("%s; its call goes on unchecked (--pin-tools warn)", exc)
                return PinCheck(mode)
            return PinCheck(
                mode,
                held=f"{exc}; under --pin-tools enforce its calls run only once its "
                "definition can be checked: nothing was sent",
                code=CallCode.TOOL_ERROR,
            )
        kept = self._kept.get(tool.name)
        if kept is not None and kept[0].fingerprint == now.fingerprint:
            if self._monotonic() - kept[1] < self.refresh_s:
                return PinCheck(mode, now.fingerprint, pinned=True)
        pin = await self._pin(tool.name, now, mode)
        if pin.fingerprint == now.fingerprint:
            return PinCheck(mode, now.fingerprint, pinned=True)
        fields = changed_fields(
            read_definition(pin.definition_json), read_definition(now.definition_json)
        )
        held = mode is PinMode.ENFORCE
        return PinCheck(
            mode,
            now.fingerprint,
            pinned=False,
            held=change_message(tool.name, pin, now.fingerprint, fields) if held else "",
        )

    async def observe(self, tools: list[Tool]) -> None:
        """Record the manifest definitions of tools (at start-up and after a reload), so the
        first ones are pinned and changed ones listed before any call, `OBSERVE_BATCH` tools a
        commit. A tool on an MCP server is recorded at its first call instead, when its
        server's session lists it."""
        due = [t for t in tools if self.mode(t) is not PinMode.OFF and not t.on_mcp]
        for start in range(0, len(due), OBSERVE_BATCH):
            await self._observe(
                [(t, await t.definition()) for t in due[start : start + OBSERVE_BATCH]]
            )

    async def _observe(self, defined: list[tuple[Tool, Defined]]) -> None:
        async with self._lock:
            new = [
                (t.name, d, self.mode(t))
                for t, d in defined
                if (t.name, d.fingerprint) not in self._recorded
            ]
            if new:
                await self._record(new)

    def forget(self, name: str) -> None:
        """Read the tool's pin from the store at its next check (approved here)."""
        self._kept.pop(name, None)

    async def _pin(self, name: str, now: Defined, mode: PinMode) -> ToolPin:
        """The tool's pin as stored now, recording `now` first when it is new."""
        async with self._lock:
            if (name, now.fingerprint) in self._recorded:
                pins = await self.store.tool_pins([name])
                pin = pins.get(name)
                if pin is not None:
                    self._keep(pin)
                    return pin
            return (await self._record([(name, now, mode)]))[name]

    async def _record(self, new: list[tuple[str, Defined, PinMode]]) -> dict[str, ToolPin]:
        """Record definitions in one commit (the lock held); their pins as stored after it, a
        definition that is not its tool's pin logged and audited."""
        at = self.clock()
        seen = [SeenDefinition(name, d.fingerprint, d.definition_json, at) for name, d, _ in new]
        pins = await self.store.record_definitions(seen, self._audit_first)
        for name, now, mode in new:
            pin = pins[name]
            self._recorded.add((name, now.fingerprint))
            self._keep(pin)
            if pin.fingerprint != now.fingerprint:
                await self._changed(name, pin, now, held=mode is PinMode.ENFORCE)
        return pins

    def _keep(self, pin: ToolPin) -> None:
        self._kept[pin.name] = (pin, self._monotonic())

    @staticmethod
    def _audit_first(made: Sequence[ToolPin]) -> list[AuditEvent]:
        return [events.tool_pinned(p, by=None) for p in made]

    async def _changed(self, name: str, pin: ToolPin, now: Defined, *, held: bool) -> None:
        """A definition other than the pin, recorded for the first time by this sidecar:
        logged and audited once."""
        fields = changed_fields(
            read_definition(pin.definition_json), read_definition(now.definition_json)
        )
        log.warning(
            "tool %s changed since pinned (%s): %s",
            name,
            ", ".join(fields) or "its definition",
            "its calls are held until approved" if held else "its calls go on (--pin-tools warn)",
        )
        await self.store.append_audit(
            [
                events.tool_changed(
                    name=name,
                    pinned=pin.fingerprint,
                    fingerprint=now.fingerprint,
                    fields=fields,
                    held=held,
                    now=self.clock(),
                )
            ]
        )
