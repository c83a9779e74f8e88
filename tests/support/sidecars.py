"""Sidecar processes of a test's own (one, or several replicas sharing a store) and a WatchRun
reader that runs beside the test."""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from examples.travel.service import TravelService
from examples.workshop.service import WorkshopService
from gateway import pb
from gateway.client import GatewayClient, RequestError
from gateway.testing import SidecarProcess
from tests.support.paths import AUTH, POLICIES, sidecar_env

_KEYS = tempfile.TemporaryDirectory(prefix="callgate-test-keys-")  # removed at exit


def key_for(db: Path | str) -> Path | None:
    """The audit key file of the sidecars of a PostgreSQL store (replicas share it); None for
    a SQLite store (its key is created beside it)."""
    if not str(db).startswith("postgresql://"):
        return None
    digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
    return Path(_KEYS.name) / f"audit-{digest}.key"


@contextmanager
def own_sidecar(
    tmp_path: Path,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    policies: Path = POLICIES,
    db: Path | str | None = None,
    extra: tuple[str, ...] = (),
    listen: str = "127.0.0.1:0",
    env: dict[str, str] | None = None,
    workshop: WorkshopService | None = None,
) -> Iterator[SidecarProcess]:
    """A sidecar of the test's own: its own store (a SQLite file in tmp_path unless db names
    one; a PostgreSQL URL works too) against the example services."""
    store = db or tmp_path / "cg.db"
    with SidecarProcess(
        tools=tools_dir,
        policies=policies,
        db=store,
        auth=AUTH,
        env={**sidecar_env(travel, effects_db, workshop), **(env or {})},
        extra_args=extra,
        listen=listen,
        audit_key=key_for(store),
    ) as proc:
        yield proc


@contextmanager
def replicas(
    count: int,
    db: str,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
    workshop: WorkshopService,
) -> Iterator[list[SidecarProcess]]:
    """count sidecar processes sharing one store (a PostgreSQL URL or a SQLite file)."""
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                SidecarProcess(
                    tools=tools_dir,
                    policies=POLICIES,
                    db=db,
                    auth=AUTH,
                    audit_key=key_for(db),
                    env=sidecar_env(travel, effects_db, workshop),
                )
            )
            for _ in range(count)
        ]


def by_id(outcome: pb.TurnOutcome) -> dict[str, pb.CallResult]:
    return {r.call_id: r for r in outcome.results}


class Watcher:
    """Reads a WatchRun stream on a thread; the test waits for the outcomes it expects."""

    def __init__(self, client: GatewayClient, run_id: str) -> None:
        self.call = client.watch_run(run_id)
        self.outcomes: list[pb.TurnOutcome] = []
        self.error: RequestError | None = None
        self.ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for outcome in self.call:
                with self._changed:
                    self.outcomes.append(outcome)
                    self._changed.notify_all()
        except RequestError as err:
            self.error = err
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def wait_for(self, count: int, timeout_s: float = 30) -> list[pb.TurnOutcome]:
        """The first count outcomes (fails when the stream ends or time runs out first)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.outcomes) >= count or self.ended, timeout_s)
            assert len(self.outcomes) >= count, (self.outcomes, self.error)
            return list(self.outcomes)

    def wait_ended(self, timeout_s: float = 30) -> bool:
        self._thread.join(timeout_s)
        return self.ended

    def cancel(self) -> None:
        self.call.cancel()
        self._thread.join(30)
