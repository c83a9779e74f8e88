"""The OPA server engine: every policy query is an OPA Data API query, fail-closed.

Each rule of the policy contract (`decision`, `may_approve`, `may_resolve`, `may_read_audit`,
`offer`, `batch_policy`) is `POST /v1/data/<prefix>/<rule>` with `strict-builtin-errors=true`,
so a builtin error fails the evaluation on OPA as it does on the embedded engine (deny,
`policy_error`) instead of leaving an expression undefined; `--builtin-errors undefined` asks
for OPA's default on both engines, and the parameter is left out. OPA unreachable, slower than
the timeout, answering 4xx/5xx, an undefined document (`{}` with no `result`) or a malformed
result deny `decision` with `policy_error` and a message naming the cause; grants are
refused.

Who owns the policy:
- `push`: callgate uploads the `--policies` directory (`gateway.policy.opa.push`) at start and
  on every reload; the revision is the directory's hash, as on the embedded engine. Decisions
  wait while a push is under way (a few requests), so each one is answered by one revision.
- `external`: OPA's own bundles; every query asks for `provenance` and the decision records
  OPA's bundle revision(s) as its `policy_revision`.

`reachable` follows what OPA last did: refused connections and timeouts make it False, any
answer True; `on_change` is called when it flips (the health component follows at once).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from gateway.model import Decision, now_utc
from gateway.policy.base import RejectedReload
from gateway.policy.bundle import Bundle, PolicyConfigError, load_bundle
from gateway.policy.decision import (
    UNDEFINED,
    PolicyEvalError,
    decision_from_value,
    error_decision,
    type_name,
)
from gateway.policy.embedded import input_json, input_sha256
from gateway.policy.opa.client import OpaConnection, OpaError
from gateway.policy.opa.push import Pushed, push_bundle
from gateway.policy.opa.settings import OpaUnavailable
from gateway.policy.options import DEFAULT_OPTIONS, RegoOptions
from gateway.policy.reload import require_decision
from gateway.policy.results import ResultVerdict, result_verdict, withheld_for_error

log = logging.getLogger("callgate.policy.opa")

OpaMode = Literal["push", "external"]
NO_BUNDLE: Final = "opa:no-bundle"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_RULE = re.compile(rf"{_NAME}(\.{_NAME})*")


class _Gate:
    """Queries share; a push is alone (it waits for queries in flight, new ones wait for it)."""

    def __init__(self) -> None:
        self._readers = 0
        self._writing = False
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def query(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._writing)
            self._readers += 1
        try:
            yield
        finally:
            async with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def push(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._writing)
            self._writing = True
            await self._changed.wait_for(lambda: self._readers == 0)
        try:
            yield
        finally:
            async with self._changed:
                self._writing = False
                self._changed.notify_all()


class OpaEngine:
    """PolicyEngine on an OPA server (see the module docstring)."""

    name = "opa"

    def __init__(
        self,
        connection: OpaConnection,
        prefix: str,
        *,
        mode: OpaMode,
        on_change: Callable[[], None] | None = None,
        options: RegoOptions = DEFAULT_OPTIONS,
    ) -> None:
        self.connection = connection
        self.prefix = prefix
        self.mode: OpaMode = mode
        self.on_change = on_change
        self.options = options
        self.reachable = True
        self._params = query_params(options)
        if mode == "external":
            self._params["provenance"] = "true"
        self._revision = "" if mode == "push" else NO_BUNDLE
        self._loaded_at = now_utc()
        self._rejected: RejectedReload | None = None
        self._pushed: Pushed | None = None
        self._wanted: Bundle | None = None  # the bundle to serve, pushed or not yet
        self._gate = _Gate()

    # -- PolicyEngine -------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        return self._revision

    @property
    def loaded_at(self) -> datetime:
        return self._loaded_at

    @property
    def last_rejected(self) -> RejectedReload | None:
        return self._rejected

    def reads(self, *path: str) -> bool:
        return True  # OPA is handed the whole input

    async def decide(self, input: dict[str, Any]) -> Decision:
        try:
            text = input_json(input)
        except (TypeError, ValueError) as exc:
            return error_decision(f"input is not JSON: {exc}", self._revision)
        return await self.decide_json(text)

    async def decide_json(self, text: str) -> Decision:
        """`decide` for an input already serialized with `input_json`."""
        digest = input_sha256(text)
        try:
            value, revision = await self.value("decision", text)
        except PolicyEvalError as exc:
            decision = error_decision(exc.message, self._revision)
        else:
            decision = decision_from_value(value, revision)
        return replace(decision, input_sha256=digest)

    async def allows(self, rule: str, input: dict[str, Any]) -> bool:
        try:
            value, _ = await self.value(rule, input_json(input))
        except (PolicyEvalError, TypeError, ValueError):
            return False
        return value is True

    async def offer(self, input: dict[str, Any]) -> set[str] | None:
        try:
            value, _ = await self.value("offer", input_json(input))
        except (PolicyEvalError, TypeError, ValueError):
            return set()
        if value is UNDEFINED:
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return set(value)
        log.warning(
            "policy offer is not a set of tool names (%s); offering nothing", type_name(value)
        )
        return set()

    @property
    def defines_result(self) -> bool:
        return True  # OPA is asked; an undefined answer delivers as is

    async def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        """`result`; OPA is asked each time (undefined → None; an error withholds)."""
        try:
            value, _ = await self.value("result", input_json(input))
        except PolicyEvalError as exc:
            return withheld_for_error(exc.message)
        except (TypeError, ValueError) as exc:
            return withheld_for_error(f"input is not JSON: {exc}")
        return result_verdict(value)

    async def partial_writes(self, input: dict[str, Any]) -> bool:
        try:
            value, _ = await self.value("batch_policy", input_json(input))
        except (PolicyEvalError, TypeError, ValueError):
            return False
        return isinstance(value, dict) and value.get("partial_writes") is True

    async def healthy(self) -> bool:
        """OPA answers /health (external: with every bundle active); in push mode a policy
        that is not (or no longer: OPA restarted) on OPA is pushed again first."""
        ok = await self.connection.healthy(bundles=self.mode == "external")
        if ok and self.mode == "push" and self._wanted is not None:
            ok = await self._ensure_pushed()
        self._set_reachable(ok)
        return ok

    # -- evaluation ---------------------------------------------------------------------------

    async def value(self, rule: str, text: str) -> tuple[Any, str]:
        """The rule's value (UNDEFINED when OPA answers `{}`) and the revision that answered;
        PolicyEvalError naming the cause when OPA gave no usable answer."""
        if not _RULE.fullmatch(rule):
            raise PolicyEvalError(rule, "not a valid rule name")
        path = "/".join([*self.prefix.split(".")[1:], *rule.split(".")])
        try:
            async with asyncio.timeout(self.connection.settings.timeout_s), self._gate.query():
                answer = await self.connection.query(path, text, self._params)
        except TimeoutError:
            self._set_reachable(False)
            raise OpaUnavailable(
                rule,
                f"OPA at {self.connection.url} did not answer within "
                f"{self.connection.settings.timeout_s} s",
            ) from None
        except OpaError as exc:
            self._set_reachable(not exc.transport)
            log.warning("OPA query %s failed: %s", path, exc.message)
            kind = OpaUnavailable if exc.transport else PolicyEvalError
            raise kind(rule, exc.message) from None
        self._set_reachable(True)
        revision = self._revision
        if self.mode == "external":
            revision = self._revision = bundle_revision(answer.provenance)
        return (answer.result if answer.defined else UNDEFINED), revision

    def _set_reachable(self, reachable: bool) -> None:
        if reachable == self.reachable:
            return
        self.reachable = reachable
        log.log(
            logging.INFO if reachable else logging.ERROR,
            "OPA at %s is %s",
            self.connection.url,
            "reachable again" if reachable else "unreachable",
        )
        if self.on_change is not None:
            self.on_change()

    # -- push mode: serving a policy directory on OPA -----------------------------------------

    async def install_bundle(self, bundle: Bundle) -> None:
        """Push bundle to OPA and serve it; PolicyConfigError (OPA's parse errors, per file and
        line) leaves the previous revision on OPA. When OPA cannot be reached the bundle is
        pushed by the next health check that finds OPA back."""
        self._wanted = bundle
        async with self._gate.push():
            try:
                self._pushed = await push_bundle(self.connection, bundle, self._pushed)
            except OpaError as exc:
                if not exc.transport:
                    raise PolicyConfigError(
                        f"{bundle.root.as_posix()}: {exc.message}", file=bundle.root.as_posix()
                    ) from None
                self._set_reachable(False)
                log.error(
                    "cannot push the policies to OPA now (%s); retrying when OPA is back",
                    exc.message,
                )
                return
            except PolicyConfigError:
                self._wanted = self._pushed.bundle if self._pushed else None
                raise
        self._installed(bundle)

    def _installed(self, bundle: Bundle) -> None:
        previous = self._revision
        self._revision = bundle.revision
        self._loaded_at = now_utc()
        self._rejected = None
        if previous and previous != bundle.revision:
            log.info("policy pushed to OPA: revision %s (was %s)", bundle.revision, previous)

    async def _ensure_pushed(self) -> bool:
        wanted = self._wanted
        assert wanted is not None
        try:
            present = await self.connection.policy_ids()
            if (
                self._pushed is not None
                and self._pushed.bundle is wanted
                and self._pushed.ids <= present
            ):
                return True
            if self._pushed is not None and not self._pushed.ids <= present:
                log.warning("OPA no longer has the pushed policies (restarted?): pushing again")
                self._pushed = None
            await self.install_bundle(wanted)
        except (OpaError, PolicyConfigError) as exc:
            log.error("pushing the policies to OPA failed: %s", exc)
            return False
        return self._pushed is not None and self._pushed.bundle is wanted

    # -- reload hooks (ReloadTarget) ----------------------------------------------------------

    def prepare(self, directory: Path, prefix: str, *, require_tests: bool) -> Bundle:
        """Read the directory and require `decision`; OPA itself parses and compiles it when
        it is pushed (its builtins, not the embedded engine's, are the ones that count)."""
        bundle = load_bundle(directory, self.options)
        require_decision(bundle, prefix)
        return bundle

    async def load(self, bundle: Bundle, prefix: str) -> None:
        await self.install_bundle(bundle)

    def reject(self, rejection: RejectedReload) -> None:
        self._rejected = rejection

    def accept_unchanged(self) -> None:
        self._rejected = None

    async def close(self) -> None:
        await self.connection.close()


def query_params(options: RegoOptions) -> dict[str, str]:
    """The Data API parameters of a query: `strict-builtin-errors=true` unless builtin errors
    are to leave expressions undefined."""
    return {"strict-builtin-errors": "true"} if options.strict else {}


def bundle_revision(provenance: dict[str, Any]) -> str:
    """The policy revision OPA's provenance names: one bundle's revision, or `name@revision`
    of each bundle (sorted) when there are several; NO_BUNDLE when OPA serves none."""
    bundles = provenance.get("bundles")
    if not isinstance(bundles, dict) or not bundles:
        return NO_BUNDLE
    revisions = {
        str(name): str(b.get("revision", "")) if isinstance(b, dict) else ""
        for name, b in bundles.items()
    }
    if len(revisions) == 1:
        name, revision = next(iter(revisions.items()))
        return revision or f"{name}@unrevisioned"
    return ",".join(f"{name}@{rev}" for name, rev in sorted(revisions.items()))
