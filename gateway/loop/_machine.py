"""The reference agent loop: a finite state machine over callgate, never a `while True`.

    ASK ──response──▶ SUBMIT ──outcome──▶ DECIDE ──CONTINUE / RETRY_TURN──▶ ASK
     │                  │                   │──PAUSED_*──▶ WAIT ──settled──▶ DECIDE
     │ model failed     │ refused response  │                 └──still waiting──▶ STOP
     └──▶ RECORD ◀──────┘                   └──DONE / HANDOFF / BUDGET_EXHAUSTED──▶ STOP
          (a turn the loop saves itself) ──▶ DECIDE

The model proposes; callgate decides and executes. Every model response is saved with callgate
(SUBMIT) before anything of it runs, and the model is asked again (ASK) only with a turn's
outcome committed: callgate answers once every result of the turn is recorded. A failed model
request, a response callgate refuses to read (a fragment, a malformed body) and a spent turn
budget are saved as the turn's provider error (RECORD), so callgate retries or hands off by its
budget and nothing of them executes. A pause (an approval, an unknown outcome) is waited on with
WatchRun (WAIT), or handed back to the caller. Every state the loop needs is in callgate: a loop
that restarts resumes the run from GetRun and ResumeRun, and nothing executes again.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gateway import pb
from gateway.client import (
    AsyncGatewayClient,
    InvalidRequest,
    RunFinished,
    RunPaused,
    TurnConflict,
)
from gateway.errors import LoopError, ModelError
from gateway.loop._conversation import Conversation, extended, parse_array
from gateway.loop._model import Model, ModelRequest


class Step(StrEnum):
    ASK = "ask"  # request a model turn
    SUBMIT = "submit"  # save the raw response with callgate, which decides and executes
    RECORD = "record"  # save a turn the loop made itself (a failure, a refusal, the budget)
    DECIDE = "decide"  # read the settled outcome
    WAIT = "wait"  # the run waits for a person or an outcome: WatchRun
    STOP = "stop"


# the machine: the steps each step may lead to
TRANSITIONS: dict[Step, frozenset[Step]] = {
    Step.ASK: frozenset({Step.SUBMIT, Step.RECORD}),
    Step.SUBMIT: frozenset({Step.DECIDE, Step.RECORD, Step.WAIT}),
    Step.RECORD: frozenset({Step.DECIDE}),
    Step.DECIDE: frozenset({Step.ASK, Step.WAIT, Step.STOP}),
    Step.WAIT: frozenset({Step.DECIDE, Step.STOP}),
    Step.STOP: frozenset(),
}


class LoopStatus(StrEnum):
    """How the loop left the run: ended, or handed back while it waits."""

    COMPLETED = "completed"  # a final answer
    HANDED_OFF = "handed_off"  # a refusal, a failure past its retries: a person takes over
    BUDGET_EXHAUSTED = "budget_exhausted"
    CANCELLED = "cancelled"
    PAUSED_FOR_APPROVAL = "paused_for_approval"  # resume once a person has decided
    PAUSED_UNKNOWN_OUTCOME = "paused_unknown_outcome"  # resume once the outcome is known


_STATUS = {
    pb.RUN_STATE_COMPLETED: LoopStatus.COMPLETED,
    pb.RUN_STATE_HANDED_OFF: LoopStatus.HANDED_OFF,
    pb.RUN_STATE_BUDGET_EXHAUSTED: LoopStatus.BUDGET_EXHAUSTED,
    pb.RUN_STATE_CANCELLED: LoopStatus.CANCELLED,
    pb.RUN_STATE_PAUSED_FOR_APPROVAL: LoopStatus.PAUSED_FOR_APPROVAL,
    pb.RUN_STATE_PAUSED_UNKNOWN_OUTCOME: LoopStatus.PAUSED_UNKNOWN_OUTCOME,
}
_PAUSED = (pb.NEXT_ACTION_PAUSED_FOR_APPROVAL, pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME)
_ENDED = (pb.NEXT_ACTION_DONE, pb.NEXT_ACTION_HANDOFF, pb.NEXT_ACTION_BUDGET_EXHAUSTED)
# how soon, and at most how seldom, a waiting loop looks an unknown outcome up again
_LOOKUP_FIRST_S, _LOOKUP_MAX_S = 1.0, 30.0
_TERMINAL = (
    pb.RUN_STATE_COMPLETED,
    pb.RUN_STATE_HANDED_OFF,
    pb.RUN_STATE_BUDGET_EXHAUSTED,
    pb.RUN_STATE_CANCELLED,
)


@dataclass(frozen=True)
class LoopResult:
    """Where the run stands when the loop hands it back. `outcome` is callgate's last settled
    outcome (one result per call ID); `reason` says why it ended or waits; `conversation` is
    the provider-shaped conversation the model was last asked with (plus the results of a
    turn that continues); `response_json` the model's last response as this loop received it
    ("" for a loop that resumed and asked nothing: GetRun holds every recorded response)."""

    run_id: str
    status: LoopStatus
    reason: str
    outcome: pb.TurnOutcome
    conversation: Conversation
    response_json: str

    @property
    def paused(self) -> bool:
        return self.status in (LoopStatus.PAUSED_FOR_APPROVAL, LoopStatus.PAUSED_UNKNOWN_OUTCOME)


@dataclass
class _Run:
    """What the loop knows of one run while it drives it."""

    run_id: str
    provider: str
    tools: Conversation
    conversation: Conversation
    asks: int  # model turns the run has had (recorded by callgate), and asked by this loop
    turns: int  # turns callgate has recorded for the run
    outcome: pb.TurnOutcome = field(default_factory=pb.TurnOutcome)
    synced: str = ""  # the turn the conversation already holds the results of
    response_json: str = ""  # the model's last response
    response_turn: str = ""  # the turn that response became
    failure: pb.ProviderError | None = None  # what RECORD saves

    def next_turn_id(self) -> str:
        """The ID of the run's next turn (a response with its own ID keeps that one)."""
        return f"turn-{self.turns + 1}"


class AgentLoop:
    """Runs a model against callgate for one provider (`openai.responses`,
    `openai.chat_completions`, `anthropic.messages`, `google.gemini`, `aws.bedrock_converse`).

    `max_turns` is the run's turn budget (every model turn callgate records counts, retries
    included); callgate enforces it, and the loop stops by itself at it too. `wait_s` is how
    long a run that pauses is watched for its settlement before the loop hands it back (0:
    hand it back at once; resume later). `max_retries` is the run's budget of retried turns in
    a row (0: callgate's default)."""

    def __init__(
        self,
        client: AsyncGatewayClient,
        model: Model,
        *,
        provider: str,
        api_version: str = "",
        max_turns: int = 10,
        max_retries: int = 0,
        wait_s: float = 0.0,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1: the loop runs within a budget")
        self.client = client
        self.model = model
        self.provider = provider
        self.api_version = api_version
        self.max_turns = max_turns
        self.max_retries = max_retries
        self.wait_s = wait_s
        self._steps: dict[Step, Callable[[_Run], Awaitable[Step]]] = {
            Step.ASK: self._ask,
            Step.SUBMIT: self._submit,
            Step.RECORD: self._record,
            Step.DECIDE: self._decide,
            Step.WAIT: self._wait,
        }

    # ------------------------------------------------------------------ entry points

    async def run(
        self,
        conversation: Sequence[Mapping[str, Any]],
        *,
        run_id: str = "",
        labels: Mapping[str, str] | None = None,
    ) -> LoopResult:
        """Start a run with this conversation (the user's request, in the provider's shape)
        and drive it until it ends or waits. A `run_id` that names a run this loop already
        started continues that run where it stands instead (see `resume`)."""
        run_id = run_id or f"loop-{uuid.uuid4().hex}"
        run = await self.client.start_run(
            run_id,
            provider=self.provider,
            api_version=self.api_version,
            budget=pb.Budget(max_turns=self.max_turns, max_retries=self.max_retries),
            labels=labels,
            conversation_json=json.dumps(list(conversation)),
        )
        if run.turns_used or run.state != pb.RUN_STATE_ACTIVE:
            return await self.resume(run_id)  # a run of ours that has begun: go on with it
        state = _Run(
            run_id,
            self.provider,
            await self._tools(self.provider),
            [dict(item) for item in conversation],
            asks=0,
            turns=0,
        )
        return await self._drive(state, Step.ASK)

    async def resume(self, run_id: str) -> LoopResult:
        """Drive a run from where callgate has it (after this process, or another, stopped):
        ResumeRun recovers and answers the latest outcome, GetRun the conversation through
        it. Nothing that was recorded is asked or executed again."""
        outcome = await self.client.resume_run(run_id)
        run = await self.client.get_run(run_id, page_size=1 << 30)
        if run.provider != self.provider:
            raise LoopError(
                f"run {run_id} is a {run.provider or 'provider-less'} run, not {self.provider}"
            )
        # the conversation holds the latest turn's results only once that turn continues; the
        # loop needs it at once unless the run waits or has ended
        synced = outcome.turn_id if outcome.next == pb.NEXT_ACTION_CONTINUE else "\0"
        asks_next = (
            outcome.next in (pb.NEXT_ACTION_CONTINUE, pb.NEXT_ACTION_RETRY_TURN)
            and outcome.run_state not in _TERMINAL
        )
        state = _Run(
            run_id,
            run.provider,
            await self._tools(run.provider),
            _conversation_of(run, needed=asks_next),
            asks=run.turns_used,
            turns=run.turn_count,
            outcome=outcome,
            synced=synced,
        )
        return await self._drive(state, Step.DECIDE)

    # ------------------------------------------------------------------ the machine

    async def _drive(self, state: _Run, step: Step) -> LoopResult:
        # every ASK uses a turn of the budget and leads to at most three more steps (SUBMIT,
        # RECORD, DECIDE) and one WAIT: past that many steps the machine is broken
        for _ in range(6 * (self.max_turns + 2)):
            following = await self._steps[step](state)
            if following not in TRANSITIONS[step]:
                raise LoopError(f"the loop went from {step} to {following}: a bug")
            if following is Step.STOP:
                return self._result(state)
            step = following
        raise LoopError(f"run {state.run_id}: the loop took more steps than its budget allows")

    async def _ask(self, state: _Run) -> Step:
        if state.asks >= self.max_turns:
            state.failure = pb.ProviderError(
                kind="other",
                retryable=False,
                message=f"the loop's turn budget of {self.max_turns} model turns is spent",
            )
            return Step.RECORD
        state.asks += 1
        request = ModelRequest(
            state.run_id, state.provider, list(state.conversation), state.tools, state.asks
        )
        try:
            state.response_json = await self.model.respond(request)
        except ModelError as err:
            state.failure = pb.ProviderError(
                kind=err.kind, message=err.message, retryable=err.retryable
            )
            return Step.RECORD
        return Step.SUBMIT

    async def _submit(self, state: _Run) -> Step:
        try:
            state.outcome = await self.client.submit_provider_response(
                state.run_id, state.response_json, turn_id=state.next_turn_id()
            )
        except (InvalidRequest, TurnConflict) as err:
            # a response callgate cannot read (malformed, a fragment, past a limit): nothing
            # of it runs; the run is handed off with the reason
            state.failure = pb.ProviderError(
                kind="other",
                retryable=False,
                message=f"callgate refused the model's response ({err.code.value}): {err.message}",
            )
            return Step.RECORD
        except RunPaused:  # another turn of the run waits: this response is not recorded
            state.outcome = await self.client.resume_run(state.run_id)
            return Step.WAIT
        state.turns += 1
        state.response_turn = state.outcome.turn_id
        return Step.DECIDE

    async def _record(self, state: _Run) -> Step:
        failure, state.failure = state.failure, None
        try:
            state.outcome = await self.client.submit_turn(
                state.run_id, state.next_turn_id(), provider_error=failure
            )
        except (RunPaused, RunFinished):  # the run moved on meanwhile: take where it is
            state.outcome = await self.client.resume_run(state.run_id)
            return Step.DECIDE
        state.turns += 1
        return Step.DECIDE

    async def _decide(self, state: _Run) -> Step:
        outcome = state.outcome
        if outcome.run_state in _TERMINAL or outcome.next in _ENDED:
            return Step.STOP  # ended (or cancelled while it waited)
        if outcome.next in _PAUSED:
            return Step.WAIT
        if outcome.next == pb.NEXT_ACTION_CONTINUE:
            await self._follow(state)
            return Step.ASK
        if outcome.next == pb.NEXT_ACTION_RETRY_TURN:
            return Step.ASK  # the same conversation: nothing of the cut turn is resent
        raise LoopError(
            f"run {state.run_id}: callgate answered no next action "
            f"({pb.NextAction.Name(outcome.next)})"
        )

    async def _wait(self, state: _Run) -> Step:
        """Watch the run until its turn settles. An outcome still unknown is looked up again
        now and then (ResumeRun asks the target system), never replayed; an approval only
        needs watching."""
        if self.wait_s <= 0:
            return Step.STOP
        look_again = _LOOKUP_FIRST_S
        try:
            async with asyncio.timeout(self.wait_s):
                while True:
                    if state.outcome.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME:
                        state.outcome = await self.client.resume_run(state.run_id)
                        if state.outcome.next not in _PAUSED:
                            return Step.DECIDE
                    if await self._watch(state, look_again):
                        return Step.DECIDE
                    look_again = min(look_again * 2, _LOOKUP_MAX_S)
        except TimeoutError:
            return Step.STOP  # still waiting: handed back

    async def _watch(self, state: _Run, look_again_s: float) -> bool:
        """True once the run's outcome is no longer a pause (or the run ended); False when an
        unknown outcome should be looked up again first."""
        unknown = state.outcome.next == pb.NEXT_ACTION_PAUSED_UNKNOWN_OUTCOME
        watch = self.client.watch_run(state.run_id)
        try:
            async with asyncio.timeout(look_again_s if unknown else None):
                async for outcome in watch:
                    state.outcome = outcome
                    if outcome.next not in _PAUSED:
                        return True
        except TimeoutError:
            return False
        finally:
            await watch.aclose()
        return True  # the stream ended: the run did (its last outcome says how)

    # ------------------------------------------------------------------ the conversation

    async def _follow(self, state: _Run) -> None:
        """The conversation through the outcome's turn, results included."""
        outcome = state.outcome
        if state.synced == outcome.turn_id:
            return
        if state.response_turn == outcome.turn_id and outcome.provider_input_json:
            state.conversation = extended(
                state.provider, state.conversation, state.response_json, outcome.provider_input_json
            )
        else:  # a turn this loop did not submit (or could not read back): callgate's own
            state.conversation = _conversation_of(
                await self.client.get_run(state.run_id, page_size=1 << 30)
            )
        state.synced = outcome.turn_id

    async def _tools(self, provider: str) -> Conversation:
        """The caller's permitted tools, declared in the provider's own shape."""
        answer = await self.client.list_tools(provider, api_version=self.api_version)
        return parse_array(answer.tools_json, "ListTools' tools_json")

    def _result(self, state: _Run) -> LoopResult:
        outcome = state.outcome
        status = _STATUS.get(outcome.run_state)
        if status is None:
            state_name = pb.RunState.Name(outcome.run_state)
            raise LoopError(f"run {state.run_id} stopped while {state_name}")
        return LoopResult(
            state.run_id,
            status,
            outcome.reason,
            outcome,
            list(state.conversation),
            state.response_json,
        )


def _conversation_of(run: pb.Run, *, needed: bool = True) -> Conversation:
    if not run.conversation_json and not needed:
        return []
    if not run.conversation_json:
        raise LoopError(
            f"run {run.run_id}: callgate has no conversation to rebuild (the run "
            "was started without conversation_json, or has more turns than one "
            "GetRun page holds)"
        )
    return parse_array(run.conversation_json, f"run {run.run_id}'s conversation_json")
