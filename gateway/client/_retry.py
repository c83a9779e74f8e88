"""When the client repeats a request, and how long it waits in between.

Only a failure that means "nothing was done, try again" is repeated: no sidecar answered
(`unavailable`), it is shutting down (`shutting_down`), or its store could not be used
(`store_unavailable`: nothing ran after the failed commit). Only RPCs whose repetition is safe
are repeated; `RULES` says which and why (docs/client.md shows the same table). Every attempt
shares the call's one deadline: the waits never take a call past it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from gateway.errors import RequestCode, RequestError

RETRYABLE = frozenset(
    {RequestCode.UNAVAILABLE, RequestCode.SHUTTING_DOWN, RequestCode.STORE_UNAVAILABLE}
)

# RPC -> why repeating it is safe ("" where it is not repeated)
RULES: dict[str, str] = {
    "StartRun": "with a run_id only: the same ID and parameters answer the same run (without "
    "one, each attempt would create a run)",
    "GetRun": "a read",
    "SubmitTurn": "the same turn_id answers the stored outcome and executes nothing again",
    "SubmitProviderResponse": "the turn ID is the response's own ID (or the request's turn_id): "
    "the same turn again executes nothing",
    "SubmitProviderStream": "when the events are a sequence it can send again (a list; also "
    "after a write grpc.aio failed as the sidecar answered early): the "
    "same turn; a one-pass iterator is not repeated",
    "ListTools": "a read",
    "ListRuns": "a read",
    "Authorize": "decides without executing (each attempt is one more audit record)",
    "ListApprovals": "a read",
    "DecideApproval": "",  # a repeat after a lost answer says already_decided, hiding the result
    "ResolveCall": "",  # a repeat after a lost answer says not_unknown
    "ResumeRun": "safe at any time: it recovers and answers the latest outcome",
    "WatchRun": "reconnects: the first message after reconnecting is the current state",
    "CancelRun": "cancelling a cancelled run answers it unchanged",
    "GetStatus": "a read",
    "QueryAudit": "continues after the last record received (after_seq)",
    "ListQuotas": "a read",
    "ResetQuota": "",  # a repeat after a lost answer gives back what was reserved meanwhile
}


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in all (the first included; 1 never repeats). The wait before attempt n+1
    is between half and all of first_backoff_s * multiplier**(n-1), at most max_backoff_s (a
    random part, so that clients that failed together do not come back together). A request
    that is never repeated waits up to `connect_s` for a connection to the sidecar first:
    until it is sent, waiting is safe."""

    attempts: int = 4
    first_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    multiplier: float = 2.0
    connect_s: float = 3.0

    def waits(self) -> Iterator[float]:
        """The wait before each attempt after the first."""
        ceiling = self.first_backoff_s
        for _ in range(max(self.attempts, 1) - 1):
            top = min(ceiling, self.max_backoff_s)
            yield random.uniform(top / 2, top)
            ceiling *= self.multiplier


DEFAULT_RETRY = RetryPolicy()
NEVER = RetryPolicy(attempts=1)  # (its connect_s is not used: see _aio._unary)


def retryable(err: RequestError) -> bool:
    return err.code in RETRYABLE
