"""The travel example's arguments (a train and the weather at its destination), and results by
call ID."""

from __future__ import annotations

from gateway import pb

TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}

WEATHER = {"city": "Berlin", "date": "2026-12-01"}


def by_id(outcome: pb.TurnOutcome) -> dict[str, pb.CallResult]:
    return {r.call_id: r for r in outcome.results}
