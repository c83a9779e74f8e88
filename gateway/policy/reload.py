"""Serving a policy that can be replaced while the sidecar runs.

`ReloadingEngine` is the PolicyEngine the runner holds: each call is delegated to the current
revision (an EmbeddedEngine), read once at the start of the call, so a decision in flight
finishes on the revision it began with and records that revision. `install` swaps in a new
revision atomically (one reference assignment); `reject` records why a new set of files was
refused while the previous revision keeps serving.

`prepare` is everything a revision must pass before it may serve, run off the event loop: it
loads, compiles and checks the files, requires `decision` to be defined and, when asked, runs
the set's own tests. `ReloadTarget` is what the reloader (`watch`) needs of an engine: this
one, the OPA engine pushing a directory, or the shadow pair.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gateway.model import Decision
from gateway.policy.base import RejectedReload
from gateway.policy.bundle import Bundle, PolicyConfigError, load_bundle
from gateway.policy.decision import error_decision
from gateway.policy.embedded import EmbeddedEngine, analyze
from gateway.policy.options import DEFAULT_OPTIONS, RegoOptions
from gateway.policy.rego_tests import run_tests
from gateway.policy.results import ResultVerdict

log = logging.getLogger("callgate.policy")
inputs_log = logging.getLogger("callgate.decision_input")


def prepare(
    directory: Path,
    prefix: str,
    *,
    require_tests: bool = False,
    options: RegoOptions = DEFAULT_OPTIONS,
) -> Bundle:
    """Load and check a policy directory as a candidate revision; PolicyConfigError if it may
    not serve.

    Builds engines on the calling thread and drops them there: the error raised carries no
    traceback (whose frames could hold an engine and free it on the thread that catches it,
    which this engine does not allow).
    """
    error: PolicyConfigError | None = None
    try:
        return _prepare(directory, prefix, require_tests=require_tests, options=options)
    except PolicyConfigError as exc:
        error = exc.detached()
    raise error  # outside the handler: the original and its frames are gone by now


def _prepare(directory: Path, prefix: str, *, require_tests: bool, options: RegoOptions) -> Bundle:
    bundle = load_bundle(directory, options)
    analyze(bundle)
    require_decision(bundle, prefix)
    if require_tests:
        _require_tests(bundle)
    return bundle


def require_decision(bundle: Bundle, prefix: str) -> None:
    """PolicyConfigError unless the bundle defines `<prefix>.decision`."""
    if not any(r.path == f"{prefix}.decision" and not r.function for r in bundle.rules):
        where = bundle.root.as_posix()
        raise PolicyConfigError(
            f"{where}: {prefix}.decision is not defined: every call would be denied",
            file=where,
            detail=f"{prefix}.decision is not defined",
        )


def _require_tests(bundle: Bundle) -> None:
    report = run_tests(bundle, explain_failures=False)
    where = bundle.root.as_posix()
    if not report.results:
        raise PolicyConfigError(
            f"{where}: no tests (rules named test_*) and tests are required", file=where
        )
    failed = [r for r in report.results if not r.passed]
    if failed:
        first = failed[0]
        more = f" ({len(failed) - 1} more failed)" if len(failed) > 1 else ""
        detail = f"test {first.case.path} failed: {first.reason}{more}"
        raise PolicyConfigError(
            f"{first.case.file}:{first.case.line}: {detail}",
            file=first.case.file,
            line=first.case.line,
            detail=detail,
        )


class ReloadTarget(Protocol):
    """An engine the reloader keeps serving the newest good revision of a directory."""

    @property
    def revision(self) -> str: ...

    @property
    def last_rejected(self) -> RejectedReload | None: ...

    def prepare(self, directory: Path, prefix: str, *, require_tests: bool) -> Bundle:
        """Load and check a candidate (on a worker thread); PolicyConfigError if it may not
        serve."""
        ...

    async def load(self, bundle: Bundle, prefix: str) -> None:
        """Serve a prepared bundle from the next decision on; PolicyConfigError if it cannot."""
        ...

    def reject(self, rejection: RejectedReload) -> None: ...

    def accept_unchanged(self) -> None: ...


class ReloadingEngine:
    """PolicyEngine delegating every call to the revision current when the call starts."""

    name = "embedded"

    def __init__(self, first: EmbeddedEngine, *, log_inputs: bool = False) -> None:
        self._current = first
        self._rejected: RejectedReload | None = None
        self._log_inputs = log_inputs

    # -- reloads ------------------------------------------------------------------------------

    @property
    def current(self) -> EmbeddedEngine:
        return self._current

    @property
    def last_rejected(self) -> RejectedReload | None:
        return self._rejected

    def install(self, engine: EmbeddedEngine) -> None:
        """Serve engine from the next call on; clears a recorded rejection."""
        self._current = engine
        self._rejected = None

    def reject(self, rejection: RejectedReload) -> None:
        self._rejected = rejection

    def prepare(self, directory: Path, prefix: str, *, require_tests: bool) -> Bundle:
        """A candidate read as the serving revision was (its Rego version, its builtin
        errors)."""
        return prepare(
            directory, prefix, require_tests=require_tests, options=self._current.bundle.options
        )

    async def load(self, bundle: Bundle, prefix: str) -> None:
        self.install(EmbeddedEngine(bundle, prefix=prefix, checked=True))

    def accept_unchanged(self) -> None:
        """The files on disk are the serving revision again: nothing is rejected."""
        self._rejected = None

    # -- PolicyEngine -------------------------------------------------------------------------

    @property
    def revision(self) -> str:
        return self._current.revision

    @property
    def loaded_at(self) -> datetime:
        return self._current.loaded_at

    def reads(self, *path: str) -> bool:
        return self._current.reads(*path)

    async def decide(self, input: dict[str, Any]) -> Decision:
        engine = self._current
        try:
            text = engine.input_text(input)
        except (TypeError, ValueError) as exc:
            return error_decision(f"input is not JSON: {exc}", engine.revision)
        return self._decided(engine, text)

    def decide_json(self, text: str) -> Decision:
        """`decide` for an input already serialized with `input_json` (as it is)."""
        return self._decided(self._current, text)

    def _decided(self, engine: EmbeddedEngine, text: str) -> Decision:
        decision = engine.decide_json(text)
        if self._log_inputs:
            self._log_input(text, decision)
        return decision

    async def allows(self, rule: str, input: dict[str, Any]) -> bool:
        return self._current.allows(rule, input)

    async def offer(self, input: dict[str, Any]) -> set[str] | None:
        return self._current.offer(input)

    @property
    def defines_result(self) -> bool:
        return self._current.defines_result

    async def result(self, input: dict[str, Any]) -> ResultVerdict | None:
        return self._current.result(input)

    async def partial_writes(self, input: dict[str, Any]) -> bool:
        return self._current.partial_writes(input)

    async def healthy(self) -> bool:
        return self._current.healthy()

    @staticmethod
    def _log_input(text: str, decision: Decision) -> None:
        record: dict[str, Any] = {
            "input_sha256": decision.input_sha256,
            "policy_revision": decision.policy_revision,
            "verdict": decision.verdict.value,
            "reasons": list(decision.reasons),
        }
        if decision.approval_ttl_s is not None:
            record["approval_ttl_s"] = decision.approval_ttl_s
        head = json.dumps(record)
        inputs_log.info('%s, "input": %s}', head[:-1], text)
