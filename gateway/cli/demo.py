"""`callgate demo`: the travel and workshop scenarios of the examples, driven through a running
sidecar over gRPC.

Four runs, each call ID printed with its status; exits 1 when any outcome differs from the
expected one:
1. both reads in parallel, the weather answer arriving first, each result under its own ID;
2. the weather service times out: the train result is still returned, weather FAILED;
3. an invalid train number: REJECTED before anything runs;
4. a workshop booking: the events and the seats are read, then one seat is reserved for the
   caller, which the default policy allows a member without approval; the workshop service has
   exactly that reservation under the call's idempotency key.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from gateway import pb
from gateway.cli.common import described
from gateway.client import GatewayClient, RequestError, tool_call
from gateway.tls import ClientTLS

STATUS = pb.CallStatus.Name
NEXT = pb.NextAction.Name
TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}
WEATHER = {"city": "Berlin", "date": "2026-12-01"}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


class Demo:
    def __init__(self, client: GatewayClient, travel_url: str, workshop_url: str) -> None:
        self.client = client
        self.travel = httpx.Client(base_url=travel_url, timeout=5)
        self.workshop = httpx.Client(base_url=workshop_url, timeout=5)
        self.checks: list[Check] = []

    def expect(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(name, ok, detail))
        print(f"  {'ok ' if ok else 'BAD'} {name}{': ' + detail if detail else ''}")

    def control(self, body: dict[str, Any]) -> None:
        self.travel.post("/_reset").raise_for_status()
        self.travel.post("/_control", json=body).raise_for_status()

    def start(self, label: str) -> str:
        run_id = f"demo-{label}-{uuid.uuid4().hex[:8]}"
        self.client.start_run(run_id=run_id, provider="openai.responses",
                              budget=pb.Budget(max_turns=4, max_tool_calls=6))
        print(f"\nrun {run_id}")
        return run_id

    def show(self, outcome: pb.TurnOutcome) -> dict[str, pb.CallResult]:
        for r in outcome.results:
            err = f"  [{r.error.code}] {r.error.message}" if r.error.code else ""
            print(f"  {r.call_id:<14} {r.tool:<18} {STATUS(r.status):<24} "
                  f"executions={r.execution_count}{err}")
        print(f"  next: {NEXT(outcome.next)}")
        return {r.call_id: r for r in outcome.results}

    def parallel_reads(self) -> None:
        self.control({"train_status": {"delay_s": 0.4, "times": 1}})
        run_id = self.start("parallel")
        out = self.show(self.client.submit_calls(
            run_id, "resp_1", tool_call("call_train", "get_train_status", TRAIN),
            tool_call("call_weather", "get_weather", WEATHER)))
        train, weather = out.get("call_train"), out.get("call_weather")
        self.expect("both reads succeeded", bool(train and weather) and all(
            r.status == pb.CALL_STATUS_SUCCEEDED for r in out.values()))
        self.expect("train result under the train call ID",
                    train is not None and '"ICE123"' in train.output_json)
        self.expect("weather result under the weather call ID",
                    weather is not None and '"Berlin"' in weather.output_json)
        calls = {c.call_id: c for c in self.client.get_run(run_id).calls}
        first = calls["call_weather"].finished_at < calls["call_train"].finished_at
        self.expect("the weather answer arrived first", first,
                    f"weather {calls['call_weather'].finished_at}, "
                    f"train {calls['call_train'].finished_at}")
        done = self.client.submit_turn(run_id=run_id, turn_id="resp_2",
                                       final=pb.FinalAnswer(text="ICE123 is on time."))
        self.expect("final answer completes the run", done.next == pb.NEXT_ACTION_DONE)

    def weather_timeout(self) -> None:
        self.control({"weather": {"delay_s": 3.0, "times": 1}})
        run_id = self.start("timeout")
        out = self.show(self.client.submit_calls(
            run_id, "resp_1", tool_call("call_train", "get_train_status", TRAIN),
            tool_call("call_weather", "get_weather", WEATHER)))
        self.expect("train result still returned",
                    out["call_train"].status == pb.CALL_STATUS_SUCCEEDED)
        self.expect("weather reported unavailable (tool_timeout)",
                    out["call_weather"].status == pb.CALL_STATUS_FAILED
                    and out["call_weather"].error.code == "tool_timeout")

    def invalid_train(self) -> None:
        self.control({})
        run_id = self.start("invalid")
        out = self.show(self.client.submit_calls(
            run_id, "resp_1", tool_call("call_train", "get_train_status",
                                        {"train_number": "12-XYZ!", "date": "2026-12-01"})))
        bad = out["call_train"]
        self.expect("invalid train number rejected (invalid_arguments), never executed",
                    bad.status == pb.CALL_STATUS_REJECTED
                    and bad.error.code == "invalid_arguments" and bad.execution_count == 0)

    def workshop_booking(self) -> None:
        self.workshop.post("/_reset").raise_for_status()
        run_id = self.start("workshop")
        run = self.client.get_run(run_id)  # who the token is: the member books for themself
        found = self.show(self.client.submit_calls(
            run_id, "resp_1", tool_call("call_events", "list_events", {"tenant": run.tenant})))
        events = json.loads(found["call_events"].output_json)["events"]
        self.expect("the tenant's workshops listed", bool(events))
        event_id = events[0]["event_id"]
        seats = self.show(self.client.submit_calls(
            run_id, "resp_2", tool_call("call_seats", "check_availability",
                                        {"event_id": event_id})))
        self.expect("seats are available",
                    json.loads(seats["call_seats"].output_json)["available"] > 0)
        out = self.show(self.client.submit_calls(
            run_id, "resp_3", tool_call("call_book", "reserve_seat", {
                "event_id": event_id, "participant": run.subject, "seats": 1})))
        book = out["call_book"]
        self.expect("one seat booked, allowed without approval, sent once",
                    book.status == pb.CALL_STATUS_SUCCEEDED and book.execution_count == 1
                    and book.decision.verdict == pb.VERDICT_ALLOW,
                    "; ".join(book.decision.reasons))
        lookup = self.workshop.get(f"/reservations/by-key/{run_id}:call_book")
        self.expect("the workshop holds that reservation under the call's idempotency key",
                    lookup.status_code == 200
                    and lookup.json()["reservation_id"] in book.output_json,
                    lookup.text)

    def run(self) -> bool:
        steps: list[Callable[[], None]] = [self.parallel_reads, self.weather_timeout,
                                           self.invalid_train, self.workshop_booking]
        for step in steps:
            try:
                step()
            except RequestError as err:
                self.expect(step.__name__, False, described(err))
            except (httpx.HTTPError, KeyError, IndexError, ValueError) as err:
                self.expect(step.__name__, False, f"{type(err).__name__}: {err}")
        self.travel.close()
        self.workshop.close()
        bad = [c for c in self.checks if not c.ok]
        print(f"\n{len(self.checks) - len(bad)} passed, {len(bad)} failed")
        return not bad


def run_demo(target: str, token: str, travel_url: str, workshop_url: str, *,
             tls: ClientTLS | None = None) -> int:
    print(f"callgate demo against {target} (tools at {travel_url} and {workshop_url})")
    with GatewayClient(target, token, tls=tls) as client:
        return 0 if Demo(client, travel_url, workshop_url).run() else 1
