"""Provider-shaped turns: the bridge between provider adapters and the runner.

Everything that knows a provider's wire format goes through here: which `api_version` a run or
turn records, raw responses and stream events read into a `TurnInput` by the provider's
adapter, turn IDs taken from the response, the runner's outcome turned into the items the loop
appends for its next request (`provider_input_json`), the tool declarations `ListTools`
answers, and the whole conversation `GetRun` rebuilds. Nothing here branches on a provider: the
adapter does. The gRPC servicer only decodes requests and calls these methods.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from adapters import AdapterError, get_adapter, resolve_api_version
from adapters.base import ProviderAdapter
from adapters.events import (
    FinalEvent,
    IncompleteEvent,
    PausedEvent,
    ProviderErrorEvent,
    ProviderEvent,
    RefusalEvent,
    ToolRequestEvent,
    ToolResult,
    ToolSpec,
    fallback_call_id,
)
from gateway.errors import RequestCode, RequestError
from gateway.model import (
    CallRecord,
    CallResult,
    EventKind,
    Identity,
    NextAction,
    RunRecord,
    RunView,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
    Usage,
)
from gateway.policy_input import offer_input
from gateway.runner import Runner, StartRunParams

log = logging.getLogger("callgate.providers")


@dataclass(frozen=True)
class ProviderTurnRequest:
    """Where a raw response or stream belongs; empty provider/api_version mean the run's."""

    run_id: str
    provider: str = ""
    api_version: str = ""
    turn_id: str = ""
    model: str = ""


def request_error(err: AdapterError, prefix: str = "") -> RequestError:
    """An adapter's refusal as a request error (adapter codes are request codes)."""
    try:
        code = RequestCode(err.code)
    except ValueError:
        code = RequestCode.MALFORMED_RESPONSE
    return RequestError(code, f"{prefix}{err}")


def api_version_of(provider: str, api_version: str) -> str:
    """The api_version a run or turn records ("" → the provider's default); no provider: as
    given. An unknown provider or version is INVALID_ARGUMENT unknown_provider."""
    if not provider:
        return api_version
    try:
        return resolve_api_version(provider, api_version)
    except AdapterError as err:
        raise request_error(err) from err


def adapter_for(provider: str) -> ProviderAdapter:
    try:
        return get_adapter(provider)
    except AdapterError as err:
        raise request_error(err) from err


def parse_json(text: str, what: str, code: RequestCode = RequestCode.MALFORMED_RESPONSE) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise RequestError(code, f"{what} is not valid JSON: {err}") from err


class ProviderTurns:
    """The runner's operations that involve a provider's wire format."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    # ------------------------------------------------------------------ runs and turns

    async def start_run(self, identity: Identity, params: StartRunParams) -> RunRecord:
        version = api_version_of(params.provider, params.api_version)
        check_conversation(params.conversation_json)
        return await self.runner.start_run(identity, replace(params, api_version=version))

    async def submit_turn(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        version = api_version_of(turn.provider, turn.api_version)
        return await self.runner.submit_turn(identity, replace(turn, api_version=version))

    async def resume_run(self, identity: Identity, run_id: str) -> TurnOutcome:
        """ResumeRun; a settled provider-shaped turn carries `provider_input_json`."""
        return await self.with_input(await self.runner.resume_run(identity, run_id))

    async def watch_run(self, identity: Identity, run_id: str) -> AsyncIterator[TurnOutcome]:
        """WatchRun; each settled provider-shaped turn carries `provider_input_json`."""
        async for outcome in self.runner.watch_run(identity, run_id):
            yield await self.with_input(outcome)

    async def with_input(self, outcome: TurnOutcome) -> TurnOutcome:
        """The outcome with the items to append for the next request, rebuilt from the turn's
        stored raw response, when the turn carried one and the loop should continue."""
        if outcome.next != NextAction.CONTINUE or not outcome.turn_id:
            return outcome
        turn = await self.runner.store.get_turn(outcome.run_id, outcome.turn_id)
        if turn is None or not turn.provider or not turn.raw_response_json:
            return outcome
        try:
            adapter = get_adapter(turn.provider)
            event = _stored_event(adapter, turn.raw_response_json)
            items = next_input(adapter, event, outcome) if event is not None else ""
        except (AdapterError, KeyError, ValueError):  # a raw response that fits no longer
            log.warning("run %s turn %s: its raw response does not give the next request's "
                        "items", outcome.run_id, outcome.turn_id)
            return outcome
        return replace(outcome, provider_input_json=items)

    async def get_run(self, identity: Identity, run_id: str) -> tuple[RunView, str]:
        """The run and its provider-shaped conversation ("" when it cannot be rebuilt)."""
        view = await self.runner.get_run(identity, run_id)
        return view, conversation(view)

    async def submit_response(self, identity: Identity, req: ProviderTurnRequest,
                              response_json: str) -> TurnOutcome:
        req, adapter = await self._resolve(identity, req)
        response = parse_json(response_json, "response_json")
        if not isinstance(response, dict):
            raise RequestError(RequestCode.MALFORMED_RESPONSE,
                               "response_json must be a JSON object (the provider's response)")
        try:
            event = adapter.read_complete_event(response)
        except AdapterError as err:
            raise request_error(err) from err
        return await self._submit(identity, adapter, event, req, response_json)

    async def submit_stream(self, identity: Identity, req: ProviderTurnRequest,
                            events: AsyncIterator[str]) -> TurnOutcome:
        """Assemble a stream of raw events (JSON texts), then submit the turn it makes."""
        req, adapter = await self._resolve(identity, req)
        event, received = await assemble_stream(adapter, events)
        raw = json.dumps(event.original) if event.original else json.dumps(received)
        return await self._submit(identity, adapter, event, req, raw)

    async def _resolve(self, identity: Identity, req: ProviderTurnRequest
                       ) -> tuple[ProviderTurnRequest, ProviderAdapter]:
        run = await self.runner.owned_run(identity, req.run_id)
        provider = req.provider or run.provider
        if not provider:
            raise RequestError(RequestCode.UNKNOWN_PROVIDER,
                               "name the provider (or start the run with one)")
        version = api_version_of(provider, req.api_version or run.api_version)
        return replace(req, provider=provider, api_version=version), adapter_for(provider)

    async def _submit(self, identity: Identity, adapter: ProviderAdapter, event: ProviderEvent,
                      req: ProviderTurnRequest, raw: str) -> TurnOutcome:
        turn_id = event.meta.response_id or req.turn_id
        if not turn_id:
            raise RequestError(RequestCode.INVALID_ARGUMENT,
                               "this response carries no ID: set turn_id on the request")
        meta = event.meta
        turn = TurnInput(run_id=req.run_id, turn_id=turn_id, event=to_turn_event(event, turn_id),
                         provider=req.provider, api_version=req.api_version,
                         model=req.model or meta.model,
                         usage=Usage(meta.input_tokens, meta.output_tokens),
                         raw_response_json=raw)
        outcome = await self.runner.submit_turn(identity, turn)
        return replace(outcome, provider_input_json=next_input(adapter, event, outcome))

    # ------------------------------------------------------------------ tools

    async def list_tools(self, identity: Identity, provider: str, api_version: str) -> str:
        """The caller's permitted tools as a JSON array of the provider's declarations."""
        api_version_of(provider, api_version)
        adapter = adapter_for(provider)
        offered = await self.runner.policy.offer(offer_input(identity))
        specs = [ToolSpec(t.name, t.description, t.manifest.input_schema)
                 for t in self.runner.registry.tools() if offered is None or t.name in offered]
        return json.dumps(adapter.tool_declarations(specs))


# ---------------------------------------------------------------------- streams


async def assemble_stream(adapter: ProviderAdapter, events: AsyncIterator[str]
                          ) -> tuple[ProviderEvent, list[Any]]:
    """Feed every raw stream event to the adapter's assembler; answers the final event and
    the raw events received."""
    assembler = adapter.new_stream_assembler()
    received: list[Any] = []
    async for text in events:
        where = f"stream event {len(received) + 1}"
        event = parse_json(text, where)
        if not isinstance(event, dict):
            raise RequestError(RequestCode.MALFORMED_RESPONSE, f"{where} must be a JSON object")
        received.append(event)
        try:
            assembler.feed(event)
        except AdapterError as err:
            raise request_error(err, f"{where}: ") from err
    return assembler.finish(), received


# ---------------------------------------------------------------------- provider events ⇄ turns


def call_ids(event: ToolRequestEvent, turn_id: str) -> list[str]:
    """Every call's ID; a call the provider gave none gets `<turn_id>#<index>`."""
    return [c.call_id or fallback_call_id(turn_id, i) for i, c in enumerate(event.calls)]


def to_turn_event(event: ProviderEvent, turn_id: str) -> TurnEvent:
    if isinstance(event, ToolRequestEvent):
        ids = call_ids(event, turn_id)
        return TurnEvent(EventKind.TOOL_REQUEST, calls=tuple(
            ToolCall(cid, c.name, c.arguments_json, c.complete)
            for cid, c in zip(ids, event.calls, strict=True)))
    if isinstance(event, FinalEvent):
        return TurnEvent(EventKind.FINAL, text=event.text)
    if isinstance(event, RefusalEvent):
        return TurnEvent(EventKind.REFUSAL, text=event.text)
    if isinstance(event, IncompleteEvent):
        return TurnEvent(EventKind.INCOMPLETE, text=event.reason)
    if isinstance(event, PausedEvent):
        return TurnEvent(EventKind.PAUSED, text=event.reason)
    assert isinstance(event, ProviderErrorEvent)
    return TurnEvent(EventKind.PROVIDER_ERROR, text=event.message,
                     error_kind=event.kind.value, retryable=event.retryable)


def tool_results(event: ToolRequestEvent, turn_id: str,
                 results: Sequence[CallResult | CallRecord]) -> list[ToolResult]:
    by_id = {r.call_id: r for r in results}
    out = []
    for cid, call in zip(call_ids(event, turn_id), event.calls, strict=True):
        r = by_id[cid]
        out.append(ToolResult(call_id=cid, name=call.name, status=r.status.value,
                              output_json=r.output_json, error_code=r.error_code,
                              error_message=r.error_message))
    return out


def next_input(adapter: ProviderAdapter, event: ProviderEvent, outcome: TurnOutcome) -> str:
    """provider_input_json: set only when the loop should continue."""
    if outcome.next != NextAction.CONTINUE:
        return ""
    if isinstance(event, ToolRequestEvent):
        items = adapter.append_results(event, tool_results(event, outcome.turn_id,
                                                           outcome.results))
    else:
        items = adapter.extend_conversation([], event, [])
    return json.dumps(items)


# ---------------------------------------------------------------------- conversations


def check_conversation(text: str) -> None:
    """A run's starting conversation, when given, is a JSON array of provider messages."""
    if text and not isinstance(parse_json(text, "conversation_json",
                                          RequestCode.INVALID_ARGUMENT), list):
        raise RequestError(RequestCode.INVALID_ARGUMENT,
                           "conversation_json must be a JSON array of the provider's messages")


def conversation(view: RunView) -> str:
    """The whole provider-shaped conversation, when the run started with one and every
    settled turn carried its raw response; "" otherwise."""
    run = view.run
    if not run.conversation_json or not run.provider:
        return ""
    try:
        return _conversation(view, get_adapter(run.provider))
    except AdapterError:
        return ""


def _conversation(view: RunView, adapter: ProviderAdapter) -> str:
    try:
        conv = json.loads(view.run.conversation_json)
    except ValueError:
        return ""
    if not isinstance(conv, list):
        return ""
    for turn in view.turns:
        if turn.next is None or not turn.raw_response_json:
            return ""
        event = _stored_event(adapter, turn.raw_response_json)
        if event is None:
            return ""
        calls = [c for c in view.calls if c.turn_id == turn.turn_id]
        results = (tool_results(event, turn.turn_id, calls)
                   if isinstance(event, ToolRequestEvent) else [])
        conv = adapter.extend_conversation(conv, event, results)
    return json.dumps(conv)


def _stored_event(adapter: ProviderAdapter, raw: str) -> ProviderEvent | None:
    try:
        return adapter.read_complete_event(json.loads(raw))
    except (AdapterError, ValueError, KeyError):
        return None
