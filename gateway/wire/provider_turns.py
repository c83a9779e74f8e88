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
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

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
from gateway.jsontext import MAX_SAFE_INTEGER, JsonTextError, read_json, write_json
from gateway.limits import (
    DEFAULT_LIMITS,
    ENVELOPE_DEPTH,
    MAX_JSON_DEPTH_CAP,
    Limits,
    over_limit,
    utf8_len,
)
from gateway.model import (
    CallRecord,
    CallResult,
    EventKind,
    Identity,
    NextAction,
    RunPage,
    RunRecord,
    RunView,
    ToolCall,
    TurnEvent,
    TurnInput,
    TurnOutcome,
    Usage,
)
from gateway.policy.inputs import offer_input
from gateway.run.runner import Runner, StartRunParams
from gateway.tools import Tool

log = logging.getLogger("callgate.providers")
# the deepest provider JSON any sidecar accepts (its own limit plus the envelope)
PROVIDER_DEPTH_CAP = MAX_JSON_DEPTH_CAP + ENVELOPE_DEPTH
T = TypeVar("T")


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


def parse_json(
    text: str, what: str, limits: Limits, code: RequestCode = RequestCode.MALFORMED_RESPONSE
) -> Any:
    """A JSON text from a caller or a provider, read by the one strict reader."""
    try:
        return read_json(text, max_depth=limits.max_json_depth + ENVELOPE_DEPTH)
    except JsonTextError as err:
        raise RequestError(
            code, f"{what} breaks a rule of JSON ({err.rule}): {err.message}"
        ) from err


def read_by_adapter(fn: Callable[[], T], where: str = "") -> T:
    """Run one adapter step on untrusted input: every failure is `malformed_response` (or the
    adapter's own code). An adapter failing any other way is a bug in it, logged as such; the
    caller still learns only that its input could not be read."""
    try:
        return fn()
    except AdapterError as err:
        raise request_error(err, where) from err
    except (LookupError, TypeError, ValueError, AttributeError, RecursionError) as err:
        log.exception("adapter failed on its input (a bug in the adapter)")
        raise RequestError(
            RequestCode.MALFORMED_RESPONSE,
            f"{where}the provider JSON could not be read ({type(err).__name__})",
        ) from err


def check_meta_usage(event: ProviderEvent) -> Usage:
    meta = event.meta
    for name, value in (("input", meta.input_tokens), ("output", meta.output_tokens)):
        if not 0 <= value <= MAX_SAFE_INTEGER:
            raise RequestError(
                RequestCode.MALFORMED_RESPONSE,
                f"the response's {name} token "
                f"count {value} is out of range (0 to {MAX_SAFE_INTEGER})",
            )
    return Usage(meta.input_tokens, meta.output_tokens)


class ProviderTurns:
    """The runner's operations that involve a provider's wire format."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.limits = runner.limits

    # ------------------------------------------------------------------ runs and turns

    async def start_run(self, identity: Identity, params: StartRunParams) -> RunRecord:
        version = api_version_of(params.provider, params.api_version)
        check_conversation(params.conversation_json, self.limits)
        return await self.runner.start_run(identity, replace(params, api_version=version))

    async def submit_turn(self, identity: Identity, turn: TurnInput) -> TurnOutcome:
        version = api_version_of(turn.provider, turn.api_version)
        if turn.raw_response_json and not isinstance(
            parse_json(turn.raw_response_json, "raw_response_json", self.limits), dict
        ):
            raise RequestError(
                RequestCode.MALFORMED_RESPONSE,
                "raw_response_json must be the provider's response, a JSON object",
            )
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
            raw = read_json(turn.raw_response_json, max_depth=PROVIDER_DEPTH_CAP + 1)
            items = next_input(adapter, adapter.read_complete_event(raw), outcome)
        except (AdapterError, KeyError, ValueError, TypeError):  # a raw response that fits no
            # longer (stored by another version, or a record that cannot be read)
            log.warning(
                "run %s turn %s: its raw response does not give the next request's items",
                outcome.run_id,
                outcome.turn_id,
            )
            return outcome
        return replace(outcome, provider_input_json=items)

    async def get_run(
        self, identity: Identity, run_id: str, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[RunPage, str]:
        """One page of the run, and its provider-shaped conversation when the page holds the
        whole run ("" otherwise, or when it cannot be rebuilt): rebuilding it reads every
        turn, which only a page holding them all has read."""
        page = await self.runner.get_run(
            identity, run_id, page_size=page_size, page_token=page_token
        )
        return page, conversation(page.view) if page.whole else ""

    async def submit_response(
        self, identity: Identity, req: ProviderTurnRequest, response_json: str
    ) -> TurnOutcome:
        req, adapter = await self._resolve(identity, req)
        response = parse_json(response_json, "response_json", self.limits)
        if not isinstance(response, dict):
            raise RequestError(
                RequestCode.MALFORMED_RESPONSE,
                "response_json must be a JSON object (the provider's response)",
            )
        event = read_by_adapter(lambda: adapter.read_complete_event(response))
        return await self._submit(identity, adapter, event, req, response_json)

    async def submit_stream(
        self, identity: Identity, req: ProviderTurnRequest, events: AsyncIterator[str]
    ) -> TurnOutcome:
        """Assemble a stream of raw events (JSON texts), then submit the turn it makes."""
        req, adapter = await self._resolve(identity, req)
        event, received = await assemble_stream(adapter, events, self.limits)
        return await self._submit(
            identity, adapter, event, req, stream_raw(event, received, self.limits)
        )

    async def _resolve(
        self, identity: Identity, req: ProviderTurnRequest
    ) -> tuple[ProviderTurnRequest, ProviderAdapter]:
        run = await self.runner.owned_run(identity, req.run_id)
        provider = req.provider or run.provider
        if not provider:
            raise RequestError(
                RequestCode.UNKNOWN_PROVIDER, "name the provider (or start the run with one)"
            )
        version = api_version_of(provider, req.api_version or run.api_version)
        return replace(req, provider=provider, api_version=version), adapter_for(provider)

    async def _submit(
        self,
        identity: Identity,
        adapter: ProviderAdapter,
        event: ProviderEvent,
        req: ProviderTurnRequest,
        raw: str,
    ) -> TurnOutcome:
        turn_id = event.meta.response_id or req.turn_id
        if not turn_id:
            raise RequestError(
                RequestCode.INVALID_ARGUMENT,
                "this response carries no ID: set turn_id on the request",
            )
        turn = TurnInput(
            run_id=req.run_id,
            turn_id=turn_id,
            event=to_turn_event(event, turn_id),
            provider=req.provider,
            api_version=req.api_version,
            model=req.model or event.meta.model,
            usage=check_meta_usage(event),
            raw_response_json=raw,
        )
        outcome = await self.runner.submit_turn(identity, turn)
        return replace(outcome, provider_input_json=next_input(adapter, event, outcome))

    # ------------------------------------------------------------------ tools

    async def list_tools(
        self, identity: Identity, provider: str, api_version: str
    ) -> tuple[str, list[Tool]]:
        """The caller's permitted tools: a JSON array of the provider's declarations, and the
        tools themselves."""
        api_version_of(provider, api_version)
        adapter = adapter_for(provider)
        offered = await self.runner.policy.offer(offer_input(identity))
        tools = [t for t in self.runner.registry.tools() if offered is None or t.name in offered]
        specs = [ToolSpec(t.name, t.description, t.manifest.input_schema) for t in tools]
        return json.dumps(adapter.tool_declarations(specs)), tools


# ---------------------------------------------------------------------- streams


async def assemble_stream(
    adapter: ProviderAdapter, events: AsyncIterator[str], limits: Limits = DEFAULT_LIMITS
) -> tuple[ProviderEvent, list[Any]]:
    """Feed every raw stream event to the adapter's assembler, within the stream limits;
    answers the final event and the raw events received."""
    assembler = adapter.new_stream_assembler()
    received: list[Any] = []
    size = 0
    async for text in events:
        where = f"stream event {len(received) + 1}"
        size += utf8_len(text)
        if len(received) >= limits.max_stream_events:
            raise over_limit(
                f"the stream has more than {limits.max_stream_events} events",
                "max_stream_events",
                limits.max_stream_events,
            )
        if size > limits.max_stream_bytes:
            raise over_limit(
                f"the stream is more than {size} bytes", "max_stream_bytes", limits.max_stream_bytes
            )
        event = parse_json(text, where, limits)
        if not isinstance(event, dict):
            raise RequestError(RequestCode.MALFORMED_RESPONSE, f"{where} must be a JSON object")
        received.append(event)
        read_by_adapter(partial(assembler.feed, event), f"{where}: ")
    return read_by_adapter(assembler.finish, "end of stream: "), received


def stream_raw(event: ProviderEvent, received: list[Any], limits: Limits) -> str:
    """What a streamed turn keeps as its raw response: the assembled response when it can be
    written as strict JSON, else the events as received."""
    if event.original:
        try:
            return write_json(event.original, max_depth=limits.max_json_depth + ENVELOPE_DEPTH)
        except JsonTextError:
            pass
    return write_json(received, max_depth=limits.max_json_depth + ENVELOPE_DEPTH + 1)


# ---------------------------------------------------------------------- provider events ⇄ turns


def call_ids(event: ToolRequestEvent, turn_id: str) -> list[str]:
    """Every call's ID; a call the provider gave none gets `<turn_id>#<index>`."""
    return [c.call_id or fallback_call_id(turn_id, i) for i, c in enumerate(event.calls)]


def to_turn_event(event: ProviderEvent, turn_id: str) -> TurnEvent:
    if isinstance(event, ToolRequestEvent):
        ids = call_ids(event, turn_id)
        return TurnEvent(
            EventKind.TOOL_REQUEST,
            calls=tuple(
                ToolCall(cid, c.name, c.arguments_json, c.complete)
                for cid, c in zip(ids, event.calls, strict=True)
            ),
        )
    if isinstance(event, FinalEvent):
        return TurnEvent(EventKind.FINAL, text=event.text)
    if isinstance(event, RefusalEvent):
        return TurnEvent(EventKind.REFUSAL, text=event.text)
    if isinstance(event, IncompleteEvent):
        return TurnEvent(EventKind.INCOMPLETE, text=event.reason)
    if isinstance(event, PausedEvent):
        return TurnEvent(EventKind.PAUSED, text=event.reason)
    assert isinstance(event, ProviderErrorEvent)
    return TurnEvent(
        EventKind.PROVIDER_ERROR,
        text=event.message,
        error_kind=event.kind.value,
        retryable=event.retryable,
    )


def tool_results(
    event: ToolRequestEvent, turn_id: str, results: Sequence[CallResult | CallRecord]
) -> list[ToolResult]:
    by_id = {r.call_id: r for r in results}
    out = []
    for cid, call in zip(call_ids(event, turn_id), event.calls, strict=True):
        r = by_id[cid]
        out.append(
            ToolResult(
                call_id=cid,
                name=call.name,
                status=r.status.value,
                output_json=r.output_json,
                error_code=r.error_code,
                error_message=r.error_message,
            )
        )
    return out


def next_input(adapter: ProviderAdapter, event: ProviderEvent, outcome: TurnOutcome) -> str:
    """provider_input_json: set only when the loop should continue ("" if it cannot be built:
    the turn is recorded either way, and GetRun shows it)."""
    if outcome.next != NextAction.CONTINUE:
        return ""
    try:
        if isinstance(event, ToolRequestEvent):
            items = adapter.append_results(
                event, tool_results(event, outcome.turn_id, outcome.results)
            )
        else:
            items = adapter.extend_conversation([], event, [])
        return write_json(items, max_depth=PROVIDER_DEPTH_CAP)
    except (AdapterError, JsonTextError, LookupError, TypeError, ValueError) as err:
        log.warning("turn %s: provider_input_json cannot be built: %s", outcome.turn_id, err)
        return ""


# ---------------------------------------------------------------------- conversations


def check_conversation(text: str, limits: Limits) -> None:
    """A run's starting conversation, when given, is a JSON array of provider messages,
    within the size limit."""
    if not text:
        return
    size = utf8_len(text)
    if size > limits.max_conversation_bytes:
        raise over_limit(
            f"conversation_json is {size} bytes",
            "max_conversation_bytes",
            limits.max_conversation_bytes,
        )
    if not isinstance(
        parse_json(text, "conversation_json", limits, RequestCode.INVALID_ARGUMENT), list
    ):
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            "conversation_json must be a JSON array of the provider's messages",
        )


def conversation(view: RunView) -> str:
    """The whole provider-shaped conversation, when the run started with one and every
    settled turn carried a raw response that still reads; "" otherwise. A stored record
    that cannot be read is skipped with a logged warning, never an error of GetRun."""
    run = view.run
    if not run.conversation_json or not run.provider:
        return ""
    try:
        return _conversation(view, get_adapter(run.provider)) or ""
    except Exception as err:  # stored input of any age: never let it break GetRun
        log.warning(
            "run %s: its conversation cannot be rebuilt: %s: %s",
            run.run_id,
            type(err).__name__,
            err,
        )
        return ""


# turns that add nothing to a provider's conversation: one recorded without its raw response
# (a loop's own record of a failed model request, say) leaves it as it was
_ADDS_NOTHING = frozenset({EventKind.PROVIDER_ERROR, EventKind.INCOMPLETE})


def _conversation(view: RunView, adapter: ProviderAdapter) -> str | None:
    conv = read_json(view.run.conversation_json, max_depth=PROVIDER_DEPTH_CAP)
    if not isinstance(conv, list):
        return None
    for turn in view.turns:
        if turn.next is not None and not turn.raw_response_json and turn.event in _ADDS_NOTHING:
            continue
        if turn.next is None or not turn.raw_response_json:
            return None
        raw = read_json(turn.raw_response_json, max_depth=PROVIDER_DEPTH_CAP + 1)
        event = adapter.read_complete_event(raw)
        calls = [c for c in view.calls if c.turn_id == turn.turn_id]
        results = (
            tool_results(event, turn.turn_id, calls) if isinstance(event, ToolRequestEvent) else []
        )
        conv = adapter.extend_conversation(conv, event, results)
    return write_json(conv, max_depth=PROVIDER_DEPTH_CAP + 1)
