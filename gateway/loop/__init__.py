"""callgate's reference agent loop: the tool-calling loop as a finite state machine.

    AgentLoop       drives a model against callgate: ask, save, decide, wait, resume
    LoopResult      where a run stands when the loop hands it back (`LoopStatus`)
    Model           what the loop asks: conversation and tools in, raw response JSON out
    ModelRequest    one request for a model turn
    ModelError      a model request that failed (raised by a Model; recorded, never run)
    ScriptedModel   a Model replaying recorded responses (tests, offline examples)
    run_loop, resume_loop   the same from synchronous code

It uses only the client (`gateway.client`) and the provider adapters' one rule for resending a
response (`adapters`): install it with the client. Guide: docs/loop.md.
"""

from gateway.errors import LoopError, ModelError, ScriptExhausted
from gateway.loop._machine import TRANSITIONS, AgentLoop, LoopResult, LoopStatus, Step
from gateway.loop._model import Model, ModelRequest, ScriptedModel
from gateway.loop._sync import resume_loop, run_loop

__all__ = [
    "TRANSITIONS",
    "AgentLoop",
    "LoopError",
    "LoopResult",
    "LoopStatus",
    "Model",
    "ModelError",
    "ModelRequest",
    "ScriptExhausted",
    "ScriptedModel",
    "Step",
    "resume_loop",
    "run_loop",
]
