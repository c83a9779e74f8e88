"""`callgate demo`: the travel and workshop scenarios of the examples, driven through a running
sidecar over gRPC.

Six runs, each call ID printed with its status; exits 1 when any outcome differs from the
expected one:
1. both reads in parallel, the weather answer arriving first, each result under its own ID;
2. the weather service times out: the train result is still returned, weather FAILED;
3. an invalid train number: REJECTED before anything runs;
4. a workshop booking: the events and the seats are read, then one seat is reserved for the
   caller, which the default policy allows a member without approval; the workshop service has
   exactly that reservation under the call's idempotency key;
5. a booking that needs a person: three seats pause the run for an owner's approval; the
   demo's approver (`--approver-token`, an owner of the caller's tenant) approves it, the write
   runs once, and the loop's ResumeRun sees the settled turn;
6. a lost answer: the workshop books the seat but drops its answer; callgate records the write
   as of unknown outcome, looks it up by its idempotency key, finds the booking and settles
   the call SUCCEEDED, sent once: one reservation, never two.
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
WORKSHOP = "ws-acme-1"  # the caller's tenant's workshop with room for the demo's bookings
WEATHER = {"city": "Berlin", "date": "2026-12-01"}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


class Demo:
    def __init__(
        self,
        client: GatewayClient,
        travel_url: str,
        workshop_url: str,
        approver: GatewayClient | None = None,
    ) -> None:
        self.client = client
        self.approver = approver
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
        self.client.start_run(
            run_id=run_id,
            provider="openai.responses",
            budget=pb.Budget(max_turns=4, max_tool_calls=6),
        )
        print(f"\nrun {run_id}")
        return run_id

    def show(self, outcome: pb.TurnOutcome) -> dict[str, pb.CallResult]:
        for r in outcome.results:
            err = f"  [{r.error.code}] {r.error.message}" if r.error.code else ""
            print(
                f"  {r.call_id:<14} {r.tool:<18} {STATUS(r.status):<24} "
                f"executions={r.execution_count}{err}"
            )
        print(f"  next: {NEXT(outcome.next)}")
        return {r.call_id: r for r in outcome.results}

    def parallel_reads(self) -> None:
        self.control({"train_status": {"delay_s": 0.4, "times": 1}})
        run_id = self.start("parallel")
        out = self.show(
            self.client.submit_calls(
                run_id,
                "resp_1",
                tool_call("call_train", "get_train_status", TRAIN),
                tool_call("call_weather", "get_weather", WEATHER),
            )
        )
        train, weather = out.get("call_train"), out.get("call_weather")
        self.expect(
            "both reads succeeded",
            bool(train and weather)
            and all(r.status == pb.CALL_STATUS_SUCCEEDED for r in out.values()),
        )
        self.expect(
            "train result under the train call ID",
            train is not None and '"ICE123"' in train.output_json,
        )
        self.expect(
            "weather result under the weather call ID",
            weather is not None and '"Berlin"' in weather.output_json,
        )
        calls = {c.call_id: c for c in self.client.get_run(run_id).calls}
        first = calls["call_weather"].finished_at < calls["call_train"].finished_at
        self.expect(
            "the weather answer arrived first",
            first,
            f"weather {calls['call_weather'].finished_at}, train {calls['call_train'].finished_at}",
        )
        done = self.client.submit_turn(
            run_id=run_id, turn_id="resp_2", final=pb.FinalAnswer(text="ICE123 is on time.")
        )
        self.expect("final answer completes the run", done.next == pb.NEXT_ACTION_DONE)

    def weather_timeout(self) -> None:
        self.control({"weather": {"delay_s": 3.0, "times": 1}})
        run_id = self.start("timeout")
        out = self.show(
            self.client.submit_calls(
                run_id,
                "resp_1",
                tool_call("call_train", "get_train_status", TRAIN),
                tool_call("call_weather", "get_weather", WEATHER),
            )
        )
        self.expect(
            "train result still returned", out["call_train"].status == pb.CALL_STATUS_SUCCEEDED
        )
        self.expect(
            "weather reported unavailable (tool_timeout)",
            out["call_weather"].status == pb.CALL_STATUS_FAILED
            and out["call_weather"].error.code == "tool_timeout",
        )

    def invalid_train(self) -> None:
        self.control({})
        run_id = self.start("invalid")
        out = self.show(
            self.client.submit_calls(
                run_id,
                "resp_1",
                tool_call(
                    "call_train",
                    "get_train_status",
                    {"train_number": "12-XYZ!", "date": "2026-12-01"},
                ),
            )
        )
        bad = out["call_train"]
        self.expect(
            "invalid train number rejected (invalid_arguments), never executed",
            bad.status == pb.CALL_STATUS_REJECTED
            and bad.error.code == "invalid_arguments"
            and bad.execution_count == 0,
        )

    def workshop_booking(self) -> None:
        self.workshop.post("/_reset").raise_for_status()
        run_id = self.start("workshop")
        run = self.client.get_run(run_id)  # who the token is: the member books for themself
        found = self.show(
            self.client.submit_calls(
                run_id, "resp_1", tool_call("call_events", "list_events", {"tenant": run.tenant})
            )
        )
        events = json.loads(found["call_events"].output_json)["events"]
        self.expect("the tenant's workshops listed", bool(events))
        event_id = events[0]["event_id"]
        seats = self.show(
            self.client.submit_calls(
                run_id,
                "resp_2",
                tool_call("call_seats", "check_availability", {"event_id": event_id}),
            )
        )
        self.expect(
            "seats are available", json.loads(seats["call_seats"].output_json)["available"] > 0
        )
        out = self.show(
            self.client.submit_calls(
                run_id,
                "resp_3",
                tool_call(
                    "call_book",
                    "reserve_seat",
                    {"event_id": event_id, "participant": run.subject, "seats": 1},
                ),
            )
        )
        book = out["call_book"]
        self.expect(
            "one seat booked, allowed without approval, sent once",
            book.status == pb.CALL_STATUS_SUCCEEDED
            and book.execution_count == 1
            and book.decision.verdict == pb.VERDICT_ALLOW,
            "; ".join(book.decision.reasons),
        )
        lookup = self.workshop.get(f"/reservations/by-key/{run_id}:call_book")
        self.expect(
            "the workshop holds that reservation under the call's idempotency key",
            lookup.status_code == 200 and lookup.json()["reservation_id"] in book.output_json,
            lookup.text,
        )

    def booking(self, run_id: str, call_id: str, seats: int) -> pb.CallResult:
        run = self.client.get_run(run_id)
        out = self.show(
            self.client.submit_calls(
                run_id,
                "resp_1",
                tool_call(
                    call_id,
                    "reserve_seat",
                    {"event_id": WORKSHOP, "participant": run.subject, "seats": seats},
                ),
            )
        )
        return out[call_id]

    def reservations(self, key: str) -> list[Any]:
        found = self.workshop.get(f"/reservations/by-key/{key}")
        return [found.json()] if found.status_code == 200 else []

    def approved_booking(self) -> None:
        run_id = self.start("approval")
        asked = self.booking(run_id, "call_book3", 3)
        self.expect(
            "three seats wait for an owner's approval (nothing sent yet)",
            asked.status == pb.CALL_STATUS_PENDING_APPROVAL and asked.execution_count == 0,
            asked.error.message,
        )
        if self.approver is None:
            self.expect("an approver decides it", False, "no --approver-token")
            return
        (pending,) = [
            a
            for a in self.approver.list_approvals(run_id=run_id).approvals
            if a.approval_id == asked.approval_id
        ]
        print(f"  approver sees {pending.approval_id}: {'; '.join(pending.policy_reasons)}")
        decided = self.approver.decide_approval(
            pending.approval_id, approve=True, reason="the demo's approver agrees"
        )
        print(f"  approved by {decided.approval.decided_by}")
        settled = self.show(self.client.resume_run(run_id))["call_book3"]
        self.expect(
            "approved, checked again and sent once",
            settled.status == pb.CALL_STATUS_SUCCEEDED and settled.execution_count == 1,
        )
        booked = self.reservations(f"{run_id}:call_book3")
        self.expect(
            "the workshop holds one reservation of three seats",
            len(booked) == 1 and booked[0]["seats"] == 3,
            str(booked),
        )

    def lost_answer(self) -> None:
        self.workshop.post(
            "/_control", json={"reserve_seat": {"apply_then_drop": True, "times": 1}}
        ).raise_for_status()
        run_id = self.start("lost")
        print("  the workshop will book the seat, then drop its answer")
        result = self.booking(run_id, "call_lost", 1)
        self.expect(
            "looked up by its idempotency key and found: SUCCEEDED, sent once",
            result.status == pb.CALL_STATUS_SUCCEEDED and result.execution_count == 1,
            result.error.message,
        )
        kinds = [r.kind for r in self.client.query_audit(run_id=run_id, timeout_s=30)]
        self.expect(
            "the audit trail shows the unknown outcome and its look-up",
            kinds.count("execution") == 1 and "reconcile" in kinds,
            ", ".join(kinds),
        )
        booked = self.reservations(f"{run_id}:call_lost")
        self.expect("one reservation, never two", len(booked) == 1, str(booked))

    def run(self) -> bool:
        steps: list[Callable[[], None]] = [
            self.parallel_reads,
            self.weather_timeout,
            self.invalid_train,
            self.workshop_booking,
            self.approved_booking,
            self.lost_answer,
        ]
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


def run_demo(
    target: str,
    token: str,
    travel_url: str,
    workshop_url: str,
    *,
    tls: ClientTLS | None = None,
    approver_token: str = "",
) -> int:
    print(f"callgate demo against {target} (tools at {travel_url} and {workshop_url})")
    with (
        GatewayClient(target, token, tls=tls) as client,
        GatewayClient(target, approver_token, tls=tls) as approver,
    ):
        demo = Demo(client, travel_url, workshop_url, approver if approver_token else None)
        return 0 if demo.run() else 1
