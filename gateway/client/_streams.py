"""A provider's stream of events as `SubmitProviderStream`'s messages: from a list, an async
iterable, or a one-pass iterator that may block (read off the event loop)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from collections.abc import Sequence as SequenceABC

from gateway import pb

StreamEvents = Iterable[str] | AsyncIterable[str]


async def stream_messages(
    head: pb.ProviderStreamEvent, events: StreamEvents
) -> AsyncIterator[pb.ProviderStreamEvent]:
    """The stream's messages: the first names the run, every one carries one event."""
    first = True

    def message(text: str) -> pb.ProviderStreamEvent:
        nonlocal first
        out = pb.ProviderStreamEvent(event_json=text)
        if first:
            out.MergeFrom(head)
            first = False
        return out

    if isinstance(events, AsyncIterable):
        async for text in events:
            yield message(text)
    elif isinstance(events, SequenceABC):
        for text in events:
            yield message(text)
    else:  # a one-pass iterator may block (a live stream): read it off the event loop
        items = iter(events)
        while (pulled := await _pulled(items)) is not None:
            yield message(pulled)


async def _pulled(items: Iterator[str]) -> str | None:
    pulled: str | None = await asyncio.to_thread(_pull, items)
    return pulled


def _pull(items: Iterator[str]) -> str | None:
    return next(items, None)  # the texts of a stream's events: never None
