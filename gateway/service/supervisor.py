"""`callgate serve --workers N`: N serving processes on one port, sharing the store.

The supervisor serves nothing itself. It:

1. checks the address: a HOST:PORT nobody listens on (port 0: one free port, chosen once, that
   every worker is given);
2. starts worker 1 (`gateway.cli.worker`, a new interpreter: nothing is forked after gRPC is
   imported) and waits until it is ready, so a problem of the configuration (a bad policy, a
   store that does not open) is reported once, by that worker, and ends the supervisor with
   its exit status; then starts the others together and waits for all of them;
3. prints the ready line `callgate serve` prints (`callgate listening on HOST:PORT`);
4. restarts a worker that exits on its own after a pause that doubles (`Backoff`) while it
   keeps failing soon after starting, and gives up, stopping the others and exiting 1, after
   `Backoff.attempts` such failures in a row;
5. forwards SIGHUP (reload the policies) to every worker, and on SIGTERM or SIGINT sends
   SIGTERM to every worker, waits for them (they finish the turns they drive) and exits 0.

With `--metrics-listen` every worker writes its samples to files in one directory of the
supervisor's (Prometheus' multiprocess mode, `PROMETHEUS_MULTIPROC_DIR`), and worker 1 serves
`/metrics` on that address with every worker's samples summed (a restarted worker's files stay:
counters never go back); the directory is removed when the supervisor ends. With
`--mcp-listen`, worker 1 alone serves MCP (its sessions live in that process's memory), on a
port chosen now, so that a restart keeps it.

Each worker binds the port with SO_REUSEPORT, and the kernel spreads connections among them
(per connection, not per request). Workers are started in a session of their own, so a
terminal's Ctrl-C reaches them through the supervisor; and each stops when its standard input
(a pipe from the supervisor) closes, so none outlives a supervisor that was killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.errors import ConfigError
from gateway.observe.hooks import MULTIPROCESS_ENV
from gateway.service.config import ServeConfig

log = logging.getLogger("callgate.supervisor")

READY = "callgate listening on "
WORKER_COMMAND = (sys.executable, "-m", "gateway.cli.worker")
SLOT_ENV = "CALLGATE_WORKER_SLOT"  # the worker's number, 1..N (read for its log lines)
STOP_TIMEOUT_S = 45.0  # a worker's drain takes up to 32 s; then it is killed


@dataclass(frozen=True)
class Backoff:
    """Restarts: the first pause, the longest, how long a worker must have run for its exit not
    to count as a failure at start, and how many such failures in a row end the supervisor."""

    first_s: float = 0.5
    longest_s: float = 30.0
    stable_s: float = 10.0
    attempts: int = 5

    def pause(self, failures: int) -> float:
        return min(self.first_s * 2 ** max(failures - 1, 0), self.longest_s)


def resolve_listen(
    listen: str, flag: str = "--listen", held: contextlib.ExitStack | None = None
) -> str:
    """HOST:PORT with a concrete port that nothing listens on yet (ConfigError otherwise).

    The probe that found the port is closed on return, unless `held` is given: then it stays
    bound until that stack closes, so that ports chosen meanwhile for other listeners (port 0
    each) cannot be the same one."""
    if listen.startswith("unix:"):
        raise ConfigError(
            f"--listen {listen}: --workers needs a HOST:PORT address (workers "
            "share a TCP port; a unix socket has one owner)"
        )
    if sys.platform != "linux" or not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("--workers needs Linux (workers share the port with SO_REUSEPORT)")
    host, port = listen.rsplit(":", 1)
    name = host.removeprefix("[").removesuffix("]")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            name, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with contextlib.ExitStack() as own:
            probe = (held or own).enter_context(socket.socket(family, kind, proto))
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not SO_REUSEPORT: alone
            probe.bind(address)
            probe.listen()
            chosen = probe.getsockname()[1]
    except OSError as exc:
        raise ConfigError(
            f"{flag} {listen}: cannot listen there (is another callgate or "
            f"another program using it?): {exc}"
        ) from exc
    return f"{host}:{chosen}"


@dataclass
class Worker:
    slot: int
    proc: asyncio.subprocess.Process
    started: float


class Supervisor:
    def __init__(
        self,
        config: ServeConfig,
        count: int,
        *,
        command: Sequence[str] = WORKER_COMMAND,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.config = config
        self.count = count
        self.command = tuple(command)
        self.backoff = backoff
        self.workers: dict[int, Worker] = {}
        self._lines: dict[bool, bytes] = {}  # the settings line: worker 1's, the others'
        self._samples = ""  # the directory of the workers' metrics samples
        self._stop = asyncio.Event()
        self._failure = ""
        self._keepers: list[asyncio.Task[None]] = []
        self._relays: list[asyncio.Task[None]] = []

    async def run(self) -> int:
        """Serve until SIGTERM/SIGINT (0) or until the workers cannot be kept running."""
        with contextlib.ExitStack() as probes:  # closed before any worker binds
            listen = resolve_listen(self.config.listen, held=probes)
            self._settings(listen, probes)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        loop.add_signal_handler(signal.SIGHUP, self._signal_all, signal.SIGHUP)
        try:
            code = await self._start_all()
            if code is not None:
                return code
            print(f"{READY}{listen}", flush=True)
            log.info(
                "%d workers serving on %s: pids %s",
                self.count,
                listen,
                ", ".join(str(w.proc.pid) for w in self.workers.values()),
            )
            self._keepers = [asyncio.create_task(self._keep(w)) for w in self.workers.values()]
            await self._stop.wait()
        finally:
            await self._stop_all()
            if self._samples:
                shutil.rmtree(self._samples, ignore_errors=True)
        if self._failure:
            print(f"callgate serve: {self._failure}", file=sys.stderr, flush=True)
            return 1
        return 0

    # ------------------------------------------------------------------ starting

    def _settings(self, listen: str, probes: contextlib.ExitStack) -> None:
        """The workers' settings lines; with metrics, their shared samples directory (only
        worker 1 serves /metrics, on a port chosen now so that a restart keeps it)."""
        update: dict[str, str] = {"listen": listen}
        metrics = self.config.metrics_listen
        if metrics:
            update["metrics_listen"] = resolve_listen(metrics, "--metrics-listen", probes)
            self._samples = tempfile.mkdtemp(prefix="callgate-metrics-")
        if self.config.mcp_listen:  # MCP sessions live in one process: worker 1's
            update["mcp_listen"] = resolve_listen(self.config.mcp_listen, "--mcp-listen", probes)
        first = self.config.model_copy(update=update)
        others = first.model_copy(
            update={"metrics_listen": "", "mcp_listen": "", "mcp_resource_url": ""}
        )
        self._lines = {
            True: first.model_dump_json().encode(),
            False: others.model_dump_json().encode(),
        }

    async def _start_all(self) -> int | None:
        """None when every worker is ready; else the exit status to end with."""
        first = await self._start(1)
        if first is None:  # stopped while starting
            return 0
        if isinstance(first, int):  # the worker said why (once)
            return first or 1
        started = await asyncio.gather(*(self._start(slot) for slot in range(2, self.count + 1)))
        for slot, got in enumerate(started, start=2):
            if got is None:
                return 0
            if isinstance(got, int):
                self._failure = (
                    f"worker {slot} of {self.count} exited with status {got} "
                    "before it was ready; stopping the others"
                )
                return 1
        return None

    async def _start(self, slot: int) -> Worker | int | None:
        """A worker started and ready; its exit status when it ended first; None when the
        supervisor was told to stop meanwhile."""
        samples = {MULTIPROCESS_ENV: self._samples} if self._samples else {}
        proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, SLOT_ENV: str(slot), **samples},
            start_new_session=True,
        )
        worker = Worker(slot, proc, asyncio.get_running_loop().time())
        self.workers[slot] = worker
        assert proc.stdin is not None
        proc.stdin.write(self._lines[slot == 1] + b"\n")
        with contextlib.suppress(ConnectionError):
            await proc.stdin.drain()
        ready = asyncio.create_task(self._ready(proc))
        stopped = asyncio.create_task(self._stop.wait())
        await asyncio.wait((ready, stopped), return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if not ready.done():
            ready.cancel()
            return None
        if not ready.result():
            return await proc.wait()
        self._relays.append(asyncio.create_task(self._relay(proc)))
        return worker

    @staticmethod
    async def _ready(proc: asyncio.subprocess.Process) -> bool:
        """Read the worker's output up to its ready line (False: it ended first)."""
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode(errors="replace")
            if line.startswith(READY):
                return True
            print(line, end="", flush=True)
        return False

    @staticmethod
    async def _relay(proc: asyncio.subprocess.Process) -> None:
        """Whatever else a worker prints (its log goes to stderr directly)."""
        assert proc.stdout is not None
        async for raw in proc.stdout:
            print(raw.decode(errors="replace"), end="", flush=True)

    # ------------------------------------------------------------------ keeping them running

    async def _keep(self, worker: Worker) -> None:
        failures = 0
        loop = asyncio.get_running_loop()
        while True:
            code = await worker.proc.wait()
            if self._stop.is_set():
                return
            lived = loop.time() - worker.started
            failures = failures + 1 if lived < self.backoff.stable_s else 0
            if failures >= self.backoff.attempts:
                self._failure = (
                    f"worker {worker.slot} failed {failures} times in a row soon "
                    f"after starting (the last time with status {code}); stopping"
                )
                self._stop.set()
                return
            pause = self.backoff.pause(failures)
            log.warning(
                "worker %d (pid %d) exited with status %s; starting it again in %.1f s",
                worker.slot,
                worker.proc.pid,
                code,
                pause,
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), pause)
                return
            started = await self._start(worker.slot)
            if started is None:
                return
            worker = self.workers[worker.slot]
            if isinstance(started, Worker):
                log.info("worker %d started again (pid %d)", worker.slot, worker.proc.pid)

    # ------------------------------------------------------------------ stopping

    def _signal_all(self, sig: signal.Signals) -> None:
        for worker in self.workers.values():
            if worker.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.proc.send_signal(sig)

    async def _stop_all(self) -> None:
        self._stop.set()
        for task in self._keepers:  # no worker is started from now on
            task.cancel()
        await asyncio.gather(*self._keepers, return_exceptions=True)
        self._signal_all(signal.SIGTERM)
        procs = [w.proc for w in self.workers.values()]
        try:
            await asyncio.wait_for(asyncio.gather(*(p.wait() for p in procs)), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("workers still running %.0f s after SIGTERM: killing them", STOP_TIMEOUT_S)
            self._signal_all(signal.SIGKILL)
            await asyncio.gather(*(p.wait() for p in procs))
        for task in self._relays:
            task.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)


def supervise(config: ServeConfig, count: int) -> int:
    """Run `count` workers until SIGTERM/SIGINT; the exit status."""
    return asyncio.run(Supervisor(config, count).run())
