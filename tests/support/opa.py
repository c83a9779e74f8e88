"""OPA servers for tests: a live one when this machine has it, stand-ins on loopback otherwise.

- `live_opa_url()`: `CALLGATE_TEST_OPA_URL`, or an `opa` binary on PATH started on a free port;
  None when neither exists (tests that need a real OPA are then SKIPPED, never passed).
  `live_opa_url(v0_compatible=True)`: one that reads Rego v0 (`opa run --v0-compatible`;
  `CALLGATE_TEST_OPA_V0_URL`).
- `ReplayOpa`: answers the recorded OPA 1.9 transcript (`tests/gateway/policy/opa_rest/`),
  request by request; anything not in it is a 418 the test sees.
- `FakeOpa`: a stand-in speaking OPA's REST API (Policy API, Data API, /health, provenance,
  strict-builtin-errors) and evaluating with regorus. It exists for machines without an OPA
  binary (CI among them); `test_opa_client.py` checks it answers the transcript's requests as
  OPA did. It can be stopped and started again on the same port (OPA unreachable, then back),
  made to stall (slower than any timeout) or to fail the next requests with a status.

Each server runs its own event loop in a thread, so sync tests, async tests and sidecar
processes can all use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from gateway.policy.bundle import config_error_from_regorus
from gateway.policy.opa.push import until_no_progress
from gateway.policy.rego import add_policy, new_engine

TRANSCRIPT = (
    Path(__file__).parents[1] / "gateway" / "policy" / "opa_rest" / "opa-1.9-rest-transcript.json"
)


def transcript() -> list[dict[str, Any]]:
    exchanges: list[dict[str, Any]] = json.loads(TRANSCRIPT.read_text(encoding="utf-8"))
    return exchanges


def exchange(title: str) -> dict[str, Any]:
    for item in transcript():
        if item["title"] == title:
            return item
    raise KeyError(title)


# ---------------------------------------------------------------------------------------------
# a live OPA


def live_opa_url(*, v0_compatible: bool = False) -> str | None:
    """The URL of a real OPA for this test session, or None (see `LiveOpa`)."""
    return (_LIVE_V0 if v0_compatible else _LIVE).url()


class _LiveOpa:
    def __init__(self, variable: str, *flags: str) -> None:
        self._variable = variable
        self._flags = flags
        self._url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tried = False

    def url(self) -> str | None:
        if os.environ.get(self._variable):
            return os.environ[self._variable].rstrip("/")
        if not self._tried:
            self._tried = True
            binary = shutil.which("opa")
            if binary:
                self._url = self._start(binary)
        return self._url

    def _start(self, binary: str) -> str:
        port = _free_port()
        self._proc = subprocess.Popen(
            [binary, "run", "--server", *self._flags, "--addr", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                return url
            if self._proc.poll() is not None:
                raise RuntimeError(f"opa run exited with {self._proc.returncode}")
            time.sleep(0.05)  # polling a child's port with a deadline, not timing a result
        raise RuntimeError("opa run did not listen within 30 s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)


_LIVE = _LiveOpa("CALLGATE_TEST_OPA_URL")
_LIVE_V0 = _LiveOpa("CALLGATE_TEST_OPA_V0_URL", "--v0-compatible")


def stop_live_opa() -> None:
    _LIVE.stop()
    _LIVE_V0.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ---------------------------------------------------------------------------------------------
# stand-ins


class _Server:
    """An aiohttp application on 127.0.0.1 in a thread of its own."""

    def __init__(self) -> None:
        self.port = 0
        self.requests: list[tuple[str, str, str]] = []  # method, path with query, body
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._stalled = False
        self._released: asyncio.Event | None = None
        self._failures: list[tuple[int, dict[str, Any] | str, bool]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        # Engines an earlier test left in reference cycles (an exception kept with the frames
        # that made them) must be freed here, on their own thread: a collection started by
        # the server's thread would free them there, which the engine does not allow.
        gc.collect()
        self._thread.start()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._call(self._dispose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    def start(self) -> None:
        """Listen (again: on the same port as before)."""
        self._call(self._start())

    def stop(self) -> None:
        """Stop listening: connections are refused until `start`."""
        self.release()
        self._call(self._stop())

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None
        )  # (a thread may outlive pytest's capture)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._released = asyncio.Event()

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _dispose(self) -> None:
        """Drop what must be dropped on the server's own thread."""

    def stall(self) -> None:
        """Hold every answer until `release` (an OPA slower than any timeout)."""
        self._stalled = True

    def release(self) -> None:
        self._stalled = False
        if self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    def fail_next(
        self, status: int, body: dict[str, Any] | str, count: int = 1, *, queries_only: bool = False
    ) -> None:
        """Answer the next count requests (only Data API queries, if asked) with status and
        body (JSON, or a text sent as it is)."""
        self._failures.extend([(status, body, queries_only)] * count)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        self.requests.append((request.method, request.path_qs, body))
        if self._stalled and self._released is not None:
            await self._released.wait()
        query = request.method == "POST" and request.path.startswith("/v1/data")
        if self._failures and (query or not self._failures[0][2]):
            status, answer, _ = self._failures.pop(0)
            if isinstance(answer, str):
                return web.Response(status=status, text=answer, content_type="text/plain")
            return web.json_response(answer, status=status)
        status, answer = self.answer(request.method, request.path, dict(request.query), body)
        if answer is None:
            return web.Response(status=status)
        return web.Response(
            status=status, text=json.dumps(answer, default=_sorted), content_type="application/json"
        )

    def answer(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        raise NotImplementedError


def _sorted(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    raise TypeError(type(value).__name__)


class ReplayOpa(_Server):
    """Answers requests found in the transcript (method, path with query and JSON body equal),
    each exchange once, in the order given; anything else is 418 with what was not found."""

    def __init__(
        self, exchanges: list[dict[str, Any]], lenient: frozenset[str] = frozenset()
    ) -> None:
        super().__init__()
        self._exchanges = list(exchanges)
        self._lenient = lenient
        self.unmatched: list[str] = []

    def answer(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        full = path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
        for i, item in enumerate(self._exchanges):
            req = item["request"]
            ignored = self._lenient if item.get("lenient") else frozenset()
            if (
                req["method"] == method
                and _same_path(req["path"], full, ignored)
                and _same_body(req["body"], body)
            ):
                del self._exchanges[i]
                return item["response"]["status"], item["response"]["body"]
        self.unmatched.append(f"{method} {full} {body[:200]}")
        return 418, {"code": "not_in_transcript", "message": f"{method} {full}"}


def _same_path(recorded: str, seen: str, ignored: frozenset[str]) -> bool:
    """Same path and query parameters, except the parameters named in ignored."""

    def split(p: str) -> tuple[str, frozenset[str]]:
        base, _, q = p.partition("?")
        return base, frozenset(x for x in q.split("&") if x and x.split("=")[0] not in ignored)

    return split(recorded) == split(seen)


def _same_body(recorded: Any, seen: str) -> bool:
    if recorded is None:
        return not seen
    if isinstance(recorded, str):
        try:
            return bool(json.loads(recorded) == json.loads(seen))
        except ValueError:
            return recorded == seen
    try:
        return bool(recorded == json.loads(seen))
    except ValueError:
        return False


class FakeOpa(_Server):
    """A stand-in OPA on regorus (see the module docstring); `bundles` (name → revision) is
    what provenance reports, as OPA does for its activated bundles."""

    def __init__(self) -> None:
        super().__init__()
        self.policies: dict[str, str] = {}
        self.data: dict[str, Any] = {}
        self.bundles: dict[str, str] = {}
        self._engine: Any = None
        self._pristine: Any = None

    def answer(self, method: str, path: str, query: dict[str, str], body: str) -> tuple[int, Any]:
        if path == "/health":
            return 200, {}
        if path.startswith("/v1/policies"):
            return self._policies(method, path.removeprefix("/v1/policies").strip("/"), body)
        if path.startswith("/v1/data"):
            parts = [p for p in path.removeprefix("/v1/data").split("/") if p]
            if method == "POST":
                return self._query(parts, query, body)
            return self._data(method, parts, body)
        return 404, {"code": "resource_not_found", "message": path}

    # -- the Policy API -----------------------------------------------------------------------

    def _policies(self, method: str, pid: str, body: str) -> tuple[int, Any]:
        if method == "GET" and not pid:
            return 200, {"result": [{"id": i, "raw": t} for i, t in sorted(self.policies.items())]}
        if method == "PUT":
            error = self._rebuild({**self.policies, pid: body}, self.data)
            if error is not None:
                return 400, error
            self.policies[pid] = body
            return 200, {}
        if method == "DELETE":
            if pid not in self.policies:
                return 404, {
                    "code": "resource_not_found",
                    "message": f"storage_not_found_error: policy id {pid!r}",
                }
            rest = {k: v for k, v in self.policies.items() if k != pid}
            error = self._rebuild(rest, self.data)
            if error is not None:
                return 400, error
            self.policies = rest
            return 200, {}
        return 405, {"code": "invalid_parameter", "message": method}

    def _rebuild(self, policies: dict[str, str], data: dict[str, Any]) -> dict[str, Any] | None:
        engine = new_engine()
        try:
            for pid, text in sorted(policies.items()):
                add_policy(engine, pid, text)
            engine.add_data_json(json.dumps(data))
            engine.eval_query("true")
        except RuntimeError as exc:
            problem = config_error_from_regorus(exc)
            return {
                "code": "invalid_parameter",
                "message": "error(s) occurred while compiling module(s)",
                "errors": [
                    {
                        "code": "rego_parse_error",
                        "message": problem.detail,
                        "location": {
                            "file": problem.file,
                            "row": problem.line or 0,
                            "col": problem.column or 0,
                        },
                    }
                ],
            }
        self._engine = engine
        self._pristine = engine.clone()  # no input ever set: for queries without one
        return None

    # -- the Data API -------------------------------------------------------------------------

    def _data(self, method: str, parts: list[str], body: str) -> tuple[int, Any]:
        data = json.loads(json.dumps(self.data))
        if method == "PUT":
            _set(data, parts, json.loads(body))
        elif method == "DELETE":
            if not _delete(data, parts):
                return 404, {"code": "resource_not_found", "message": "/".join(parts)}
        else:
            return 405, {"code": "invalid_parameter", "message": method}
        error = self._rebuild(self.policies, data)
        if error is not None:
            return 400, error
        self.data = data
        return 204, None

    def _query(self, parts: list[str], query: dict[str, str], body: str) -> tuple[int, Any]:
        try:
            doc = json.loads(body) if body else {}
        except ValueError as exc:
            return 400, {
                "code": "invalid_parameter",
                "message": f"body contains malformed input document: {exc}",
            }
        answer: dict[str, Any] = {}
        if query.get("provenance") == "true":
            answer["provenance"] = self._provenance()
        engine = self._engine or self._empty()
        if "input" not in doc:
            engine = self._pristine.clone()
        try:
            if "input" in doc:
                engine.set_input_json(json.dumps(doc["input"]))
            out = engine.eval_query(".".join(["data", *parts]))
        except RuntimeError as exc:
            if query.get("strict-builtin-errors") != "true":
                return 200, answer
            return 500, {
                "code": "internal_error",
                "message": "error(s) occurred while evaluating query",
                "errors": [{"code": "eval_builtin_error", "message": str(exc).splitlines()[-1]}],
            }
        results = out.get("result") or []
        if results:
            answer["result"] = results[0]["expressions"][0]["value"]
        return 200, answer

    async def _dispose(self) -> None:
        # a regorus engine may only be dropped on the thread that made it
        self._engine = self._pristine = None

    def forget_everything(self) -> None:
        """Hold no policy and no data (as a restarted OPA does)."""

        async def forget() -> None:
            self.policies, self.data = {}, {}
            await self._dispose()

        self._call(forget())

    def _empty(self) -> Any:
        self._rebuild(self.policies, self.data)
        return self._engine

    def _provenance(self) -> dict[str, Any]:
        prov: dict[str, Any] = {
            "version": "1.9.0",
            "build_commit": "",
            "build_timestamp": "",
            "build_hostname": "",
        }
        if self.bundles:
            prov["bundles"] = {n: {"revision": r} for n, r in self.bundles.items()}
        return prov


def _set(doc: dict[str, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        doc = doc.setdefault(part, {})
    if parts:
        doc[parts[-1]] = value
    else:
        doc.clear()
        doc.update(value)


def _delete(doc: dict[str, Any], parts: list[str]) -> bool:
    for part in parts[:-1]:
        nested = doc.get(part)
        if not isinstance(nested, dict):
            return False
        doc = nested
    if not parts or parts[-1] not in doc:
        return False
    del doc[parts[-1]]
    return True


# ---------------------------------------------------------------------------------------------
# an OPA engine for synchronous tests


def _deleting(conn: Any, policy_id: str) -> Callable[[], Awaitable[None]]:
    return lambda: conn.delete_policy(policy_id)


async def _kept() -> None:
    return None


class SyncOpaEngine:
    """An OpaEngine pushed a policy directory, with the embedded engine's synchronous methods
    (`decide`, `allows`, `offer`, `partial_writes`), so one test suite runs on both engines.
    Its session lives on a loop thread of its own."""

    def __init__(self, url: str, directory: Path, prefix: str = "data.callgate") -> None:
        from gateway.policy.opa.client import OpaConnection, OpaSettings
        from gateway.policy.opa.engine import OpaEngine

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.engine = OpaEngine(OpaConnection(OpaSettings(url, timeout_s=10)), prefix, mode="push")
        self._run(
            self.engine.install_bundle(self.engine.prepare(directory, prefix, require_tests=False))
        )
        self.name = "opa"

    @property
    def revision(self) -> str:
        return self.engine.revision

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(60)

    async def _remove_pushed(self) -> None:
        pushed = self.engine._pushed
        if pushed is None:
            return
        conn = self.engine.connection
        # OPA compiles what is left after each delete: a file another one uses goes after it
        steps = {pid: (_deleting(conn, pid), _kept) for pid in pushed.policies}
        await until_no_progress(steps, [])
        for key in sorted(pushed.data):
            await self.engine.connection.delete_data(key)

    def decide(self, input: dict[str, Any]) -> Any:
        return self._run(self.engine.decide(input))

    def allows(self, rule: str, input: dict[str, Any]) -> bool:
        granted: bool = self._run(self.engine.allows(rule, input))
        return granted

    def offer(self, input: dict[str, Any]) -> set[str] | None:
        offered: set[str] | None = self._run(self.engine.offer(input))
        return offered

    def result(self, input: dict[str, Any]) -> Any:
        return self._run(self.engine.result(input))

    def partial_writes(self, input: dict[str, Any]) -> bool:
        partial: bool = self._run(self.engine.partial_writes(input))
        return partial

    def close(self) -> None:
        """Remove what was pushed (a live OPA is shared by the whole test session: a policy
        left behind would take part in the next test's evaluations), then disconnect."""
        self._run(self._remove_pushed())
        self._run(self.engine.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
