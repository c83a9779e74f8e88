"""ListToolPins and ApproveToolPin: operators see tools' pins and approve a changed definition
(docs/tools.md, "Pinned definitions").

Tools belong to no run or tenant, so the policy's `may_pin_tools` decides who may: input
`{"action": "read_pins", "identity", "tools"}` for a listing (`tools`: the names asked for,
[] for every pinned tool), `{"action": "pin_tool", "identity", "tool", "fingerprint",
"previous", "fields"}` for an approval (`fields`: what the definition changes). An approval is
audited (kind `pin`) in the commit that moves the pin. `callgate tools pins|approve --db` does
the same on the store, offline (`pin_views`, `pin_request`, `approve_pin`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from gateway.audit import events
from gateway.errors import RequestCode, RequestError
from gateway.model import Identity
from gateway.pins import SeenDefinition, ToolPin, changed_fields, diff_text, read_definition
from gateway.policy.base import PolicyEngine
from gateway.policy.inputs import pins_input
from gateway.run.desks import check_reason, refused
from gateway.run.pins import PinBook
from gateway.store.base import RunStore

MAX_NAMES = 1000


@dataclass(frozen=True)
class Change:
    """A definition of a pinned tool that is not its pin: what changed, as a unified diff."""

    fingerprint: str
    first_seen_at: datetime
    fields: tuple[str, ...]
    diff: str


@dataclass(frozen=True)
class PinView:
    pin: ToolPin
    changed: tuple[Change, ...]


def pin_views(pins: dict[str, ToolPin], seen: Sequence[SeenDefinition]) -> list[PinView]:
    """Each pin, by name, with every other definition of its tool recorded since (pure)."""
    out = []
    for name, pin in sorted(pins.items()):
        pinned = read_definition(pin.definition_json)
        changed = tuple(
            Change(
                s.fingerprint,
                s.first_seen_at,
                tuple(changed_fields(pinned, read_definition(s.definition_json))),
                diff_text(pin.definition_json, s.definition_json),
            )
            for s in seen
            if s.name == name and s.fingerprint != pin.fingerprint
        )
        out.append(PinView(pin, changed))
    return out


@dataclass(frozen=True)
class PinRequest:
    """A tool's pin and the recorded definition an approval would pin it to."""

    pinned: ToolPin
    wanted: SeenDefinition

    @property
    def fields(self) -> list[str]:
        """What the wanted definition changes."""
        return changed_fields(
            read_definition(self.pinned.definition_json),
            read_definition(self.wanted.definition_json),
        )


async def pin_request(store: RunStore, name: str, fingerprint: str) -> PinRequest:
    """The tool's pin and its definition `fingerprint` (the newest recorded: ""); raises
    RequestError `tool_not_found` for a tool never pinned or a definition never recorded."""
    pins = await store.tool_pins([name])
    if name not in pins:
        raise RequestError(
            RequestCode.TOOL_NOT_FOUND,
            f"no tool named {name!r} is pinned (callgate tools pins lists the pinned tools)",
        )
    seen = await store.tool_definitions([name])
    found = [s for s in seen if s.fingerprint == fingerprint] if fingerprint else seen[-1:]
    if not found:
        raise RequestError(
            RequestCode.TOOL_NOT_FOUND,
            f"no definition {fingerprint!r} of tool {name!r} was ever served "
            "(callgate tools pins lists them)",
        )
    return PinRequest(pins[name], found[0])


async def approve_pin(
    store: RunStore, asked: PinRequest, *, by: Identity, reason: str, now: datetime
) -> ToolPin:
    """Pin the tool to the wanted definition and audit it, in one commit (the pinned one
    asked for: nothing written); answers the pin as stored."""
    previous = asked.pinned
    if asked.wanted.fingerprint == previous.fingerprint:
        return previous
    pin = ToolPin(previous.name, asked.wanted.fingerprint, "", now, by.subject, reason)
    stored = await store.approve_pin(
        pin, lambda p: [events.tool_pinned(p, by=by, previous=previous.fingerprint)]
    )
    if stored is None:  # recorded a moment ago, so never: the store lost it
        raise RequestError(
            RequestCode.TOOL_NOT_FOUND,
            f"definition {pin.fingerprint!r} of tool {pin.name!r} is no longer recorded",
        )
    return stored


class PinDesk:
    def __init__(
        self,
        store: RunStore,
        policy: PolicyEngine,
        clock: Callable[[], datetime],
        book: PinBook | None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        self.book = book

    async def list(self, who: Identity, names: Sequence[str]) -> list[PinView]:
        names = _checked_names(names)
        if not await self.policy.allows("may_pin_tools", pins_input(who, names=names)):
            raise refused("may_pin_tools", "a listing of tools' pins")
        wanted = list(names) or None
        return pin_views(
            await self.store.tool_pins(wanted), await self.store.tool_definitions(wanted)
        )

    async def approve(
        self, who: Identity, name: str, fingerprint: str, reason: str
    ) -> tuple[ToolPin, str]:
        """Pin the tool to its definition `fingerprint` (the newest recorded: ""); answers
        the pin as stored and the fingerprint it had before."""
        if not name:
            raise RequestError(RequestCode.INVALID_ARGUMENT, "name is required: the tool to pin")
        _checked_names([name])
        check_reason(reason)
        asked = await pin_request(self.store, name, fingerprint)
        grant = pins_input(
            who,
            tool=name,
            fingerprint=asked.wanted.fingerprint,
            previous=asked.pinned.fingerprint,
            fields=asked.fields,
        )
        if not await self.policy.allows("may_pin_tools", grant):
            raise refused("may_pin_tools", f"pinning tool {name!r} to {asked.wanted.fingerprint}")
        stored = await approve_pin(self.store, asked, by=who, reason=reason, now=self.clock())
        if self.book is not None:
            self.book.forget(name)  # this sidecar holds the new pin from its next call
        return stored, asked.pinned.fingerprint


def _checked_names(names: Sequence[str]) -> Sequence[str]:
    if len(names) > MAX_NAMES or any(len(n) > 64 or not n.isprintable() for n in names):
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"names: at most {MAX_NAMES} tool names of at most 64 printable characters",
        )
    return names
