"""`serve --workers 2`: two serving processes on one port, sharing one store.

Real processes, real gRPC over TCP, a real SQLite file or PostgreSQL schema. The kernel spreads
connections over the workers (SO_REUSEPORT), so each client here has a connection of its own;
which worker serves a connection is read from the log line its worker writes for a settled
turn (`[worker N pid P] ... run R turn T: ...`). Whether a seat was booked is read from the
workshop service's own database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError, tool_call
from gateway.service.config import ServeConfig
from gateway.service.supervisor import READY, Backoff, Supervisor, resolve_listen
from gateway.store.sqlite_peers import directory_of
from gateway.testing import SidecarProcess, run_serve_expecting_failure
from tests.support.approval_policies import short_ttl_policies
from tests.support.paths import AUTH, POLICIES, NewDb, sidecar_env
from tests.support.sidecars import Watcher, by_id, key_for

SERVING = re.compile(r"callgate\.supervisor: 2 workers serving on \S+: pids (\d+), (\d+)")


def until(condition: Callable[[], object], timeout_s: float = 30.0) -> object:
    """Poll condition until it answers something true (failing the test at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


class Workers:
    """A `serve --workers 2` and clients of its workers, each on a connection of its own."""

    def __init__(self, proc: SidecarProcess) -> None:
        self.proc = proc
        self.clients: list[GatewayClient] = []

    def pids(self) -> tuple[int, int]:
        found = until(lambda: SERVING.search(self.proc.output))
        assert isinstance(found, re.Match)
        return int(found[1]), int(found[2])

    def worker_of(self, client: GatewayClient) -> int:
        """The pid of the worker serving this client's connection: a probe run's settled turn
        is logged by that worker."""
        probe = f"probe-{uuid.uuid4().hex[:10]}"
        client.start_run(run_id=probe)
        client.submit_turn(run_id=probe, turn_id="t1", final=pb.FinalAnswer(text="hi"))
        line = re.compile(rf"\[worker \d+ pid (\d+)\] \S+: run {probe} turn t1:")
        found = until(lambda: line.search(self.proc.output))
        assert isinstance(found, re.Match)
        return int(found[1])

    def client_on(self, pid: int, token: str) -> GatewayClient:
        """A client whose connection the worker `pid` serves."""
        for _ in range(60):  # each new connection lands on either worker
            client = GatewayClient(self.proc.target, token, timeout_s=60, own_connection=True)
            if self.worker_of(client) == pid:
                self.clients.append(client)
                return client
            client.close()
        raise AssertionError(f"no connection reached worker {pid}")

    def close(self) -> None:
        for c in self.clients:
            c.close()


class AuditFollower:
    """Reads a QueryAudit stream that follows a run, on a thread."""

    def __init__(self, client: GatewayClient, run_id: str) -> None:
        self.call = client.query_audit(run_id=run_id, follow=True)
        self.kinds: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with contextlib.suppress(RequestError):  # cancelled at the end
            for record in self.call:
                with self._changed:
                    self.kinds.append(record.kind)
                    self._changed.notify_all()

    def wait_for(self, done: Callable[[list[str]], bool], timeout_s: float = 30) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: done(self.kinds), timeout_s), self.kinds

    def cancel(self) -> None:
        self.call.cancel()
        self._thread.join(30)


def start_workers(
    db: str,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
    policies: Path = POLICIES,
) -> SidecarProcess:
    return SidecarProcess(
        tools=tools_dir,
        policies=policies,
        db=db,
        auth=AUTH,
        audit_key=key_for(db),
        env=sidecar_env(travel, effects_db, workshop),
        workers=2,
    )


@pytest.fixture
def workers(
    new_db: NewDb,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> Iterator[Workers]:
    with start_workers(new_db(), travel, tools_dir, effects_db, fresh_workshop) as proc:
        pool = Workers(proc)
        try:
            yield pool
        finally:
            pool.close()


def book(client: GatewayClient, run_id: str, turn_id: str, seats: int = 1) -> pb.TurnOutcome:
    return client.submit_calls(
        run_id,
        turn_id,
        tool_call(
            "w1", "reserve_seat", {"event_id": "ws-acme-1", "participant": "mia", "seats": seats}
        ),
    )


def test_both_workers_serve_and_a_run_continues_on_either(
    db_kind: str, workers: Workers, fresh_workshop: WorkshopService
) -> None:
    first, second = workers.pids()
    assert first != second
    assert workers.proc.output.count(READY) == 1  # once, when both were ready
    a = workers.client_on(first, "mia-demo-token")
    b = workers.client_on(second, "mia-demo-token")
    run_id = f"both-{uuid.uuid4().hex[:8]}"
    a.start_run(run_id=run_id)
    booked = book(b, run_id, "t1")  # started through one worker, continued through the other
    assert (booked.next, by_id(booked)["w1"].status) == (
        pb.NEXT_ACTION_CONTINUE,
        pb.CALL_STATUS_SUCCEEDED,
    )
    assert book(a, run_id, "t1") == booked  # the same turn again: answered, never re-run
    assert by_id(booked)["w1"].execution_count == 1
    (reservation,) = fresh_workshop.reservations(f"{run_id}:w1")
    assert reservation["reservation_id"] in by_id(booked)["w1"].output_json
    done = a.submit_turn(run_id=run_id, turn_id="t2", final=pb.FinalAnswer(text="booked"))
    assert done.next == pb.NEXT_ACTION_DONE
    run = b.get_run(run_id)
    assert (run.turns_used, run.tool_calls_used, run.state) == (2, 1, pb.RUN_STATE_COMPLETED)


def test_watch_on_one_worker_sees_an_approval_decided_on_the_other(
    db_kind: str, workers: Workers, fresh_workshop: WorkshopService
) -> None:
    first, second = workers.pids()
    loop = workers.client_on(first, "mia-demo-token")
    owner = workers.client_on(second, "olga-demo-token")
    run_id = f"watch-{uuid.uuid4().hex[:8]}"
    loop.start_run(run_id=run_id)
    paused = book(loop, run_id, "t1", seats=3)  # more than two seats: an owner decides
    assert paused.next == pb.NEXT_ACTION_PAUSED_FOR_APPROVAL
    watcher = Watcher(loop, run_id)
    follower = AuditFollower(workers.client_on(first, "audrey-demo-token"), run_id)
    try:
        assert watcher.wait_for(1) == [paused]
        follower.wait_for(lambda kinds: "approval" in kinds)  # the request, already there
        answer = owner.decide_approval(
            by_id(paused)["w1"].approval_id, approve=True, reason="checked"
        )
        assert answer.result.status == pb.CALL_STATUS_SUCCEEDED
        settled = watcher.wait_for(2)[1]  # committed by the other worker, seen by this one
        # and the audit records the other worker appended reach a follower on this one
        follower.wait_for(lambda kinds: kinds.count("approval") == 2 and "execution" in kinds)
        assert (settled.next, by_id(settled)["w1"].status) == (
            pb.NEXT_ACTION_CONTINUE,
            pb.CALL_STATUS_SUCCEEDED,
        )
        assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1
        # the loop's own client on the other worker ends the run: the watch ends too
        workers.client_on(second, "mia-demo-token").cancel_run(run_id)
        assert watcher.wait_ended() and watcher.error is None
    finally:
        watcher.cancel()
        follower.cancel()


def test_a_killed_worker_is_started_again_and_sigterm_stops_them_all(
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    db = tmp_path / "cg.db"
    with start_workers(str(db), travel, tools_dir, effects_db, fresh_workshop) as proc:
        pool = Workers(proc)
        try:
            first, second = pool.pids()
            os.kill(first, signal.SIGKILL)
            again = re.compile(r"worker 1 started again \(pid (\d+)\)")
            found = until(lambda: again.search(proc.output))
            assert isinstance(found, re.Match)
            third = int(found[1])
            assert third not in (first, second)
            # the dead worker's socket is gone, the living ones are there
            sockets = directory_of(db)
            assert until(
                lambda: sorted(os.listdir(sockets)) == sorted([f"{second}.sock", f"{third}.sock"])
            )
            # both workers serve: a run goes on through the new worker and the old one
            a = pool.client_on(third, "mia-demo-token")
            b = pool.client_on(second, "mia-demo-token")
            run_id = f"again-{uuid.uuid4().hex[:8]}"
            a.start_run(run_id=run_id)
            assert book(b, run_id, "t1").next == pb.NEXT_ACTION_CONTINUE
            assert len(fresh_workshop.reservations(f"{run_id}:w1")) == 1
        finally:
            pool.close()
        assert proc.stop() == 0  # SIGTERM to the supervisor
    for pid in (second, third):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert os.listdir(directory_of(db)) == []
    assert "exited with status -9; starting it again" in proc.output


def test_an_approval_expires_once_though_its_worker_was_killed(
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    fresh_workshop: WorkshopService,
) -> None:
    """The worker that created the approval dies; the worker watching the run (it armed the
    expiry when it looked at the paused run) and the one started in its place (it arms every
    pending approval at start) may both try: exactly one expires it, and the watch hears."""
    policies = short_ttl_policies(tmp_path / "policies", 3)
    db = str(tmp_path / "cg.db")
    with start_workers(db, travel, tools_dir, effects_db, fresh_workshop, policies) as proc:
        pool = Workers(proc)
        try:
            first, second = pool.pids()
            run_id = f"exp-{uuid.uuid4().hex[:8]}"
            asker = pool.client_on(first, "mia-demo-token")
            asker.start_run(run_id=run_id)
            paused = book(asker, run_id, "t1", seats=3)
            watcher = Watcher(pool.client_on(second, "mia-demo-token"), run_id)
            try:
                assert watcher.wait_for(1) == [paused]
                os.kill(first, signal.SIGKILL)
                expired = watcher.wait_for(2, timeout_s=60)[1]
            finally:
                watcher.cancel()
            w1 = by_id(expired)["w1"]
            assert (w1.status, w1.error.code) == (pb.CALL_STATUS_REJECTED, "approval_expired")
            auditor = pool.client_on(second, "audrey-demo-token")
            ends = [
                r.error_code
                for r in auditor.query_audit(run_id=run_id, timeout_s=30)
                if r.kind == "approval"
            ]
            assert ends == ["approval_required", "approval_expired"]
        finally:
            pool.close()
    assert fresh_workshop.reservations() == []


def broken_policies(into: Path) -> Path:
    shutil.copytree(POLICIES, into)
    (into / "extra.rego").write_text("package callgate\n\nbroken if {\n  input.x ==\n}\n")
    return into


def test_a_bad_configuration_is_reported_once(tmp_path: Path, tools_dir: Path) -> None:
    code, out = run_serve_expecting_failure(
        [
            "--workers",
            "3",
            "--listen",
            "127.0.0.1:0",
            "--tools",
            str(tools_dir),
            "--policies",
            str(broken_policies(tmp_path / "policies")),
            "--db",
            str(tmp_path / "x.db"),
            "--auth",
            str(AUTH),
        ]
    )
    assert code == 2
    assert out.count("extra.rego:5") == 1 and out.count("callgate serve:") == 1
    assert "[worker 2" not in out and READY not in out


def test_workers_need_a_port_of_their_own(
    tmp_path: Path, tools_dir: Path, sidecar: SidecarProcess
) -> None:
    common = [
        "--workers",
        "2",
        "--tools",
        str(tools_dir),
        "--policies",
        str(POLICIES),
        "--db",
        str(tmp_path / "x.db"),
        "--auth",
        str(AUTH),
    ]
    code, out = run_serve_expecting_failure([*common, "--listen", sidecar.target])
    assert code == 2 and f"--listen {sidecar.target}: cannot listen there" in out
    code, out = run_serve_expecting_failure([*common, "--listen", f"unix:{tmp_path}/s"])
    assert code == 2 and "--workers needs a HOST:PORT address" in out


FAKE_WORKER = """
import os, sys
sys.stdin.readline()
print("callgate listening on here", flush=True)
if os.environ["CALLGATE_WORKER_SLOT"] == "2":
    sys.exit(3)
sys.stdin.read()
"""


def test_a_worker_that_keeps_failing_ends_the_supervisor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ServeConfig(listen="127.0.0.1:0", tools=tmp_path, policies=tmp_path)
    supervisor = Supervisor(
        config,
        2,
        command=(sys.executable, "-c", FAKE_WORKER),
        backoff=Backoff(first_s=0.01, stable_s=30, attempts=3),
    )
    assert asyncio.run(supervisor.run()) == 1
    out, err = capsys.readouterr()
    assert out.startswith(READY)
    assert (
        "callgate serve: worker 2 failed 3 times in a row soon after starting (the last "
        "time with status 3); stopping"
    ) in err
    assert all(w.proc.returncode is not None for w in supervisor.workers.values())


def test_ports_chosen_together_stay_bound_until_all_are_chosen() -> None:
    """--listen, --metrics-listen and --mcp-listen with port 0 each: a probe closed before
    the next port is chosen lets the kernel hand out the same port twice."""
    with contextlib.ExitStack() as held:
        chosen = [resolve_listen("127.0.0.1:0", held=held) for _ in range(3)]
        ports = [int(address.rsplit(":", 1)[1]) for address in chosen]
        assert len(set(ports)) == 3
        for port in ports:
            with socket.socket() as again, pytest.raises(OSError):
                again.bind(("127.0.0.1", port))
