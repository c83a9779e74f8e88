"""Compiled tools and the registry: loading a `--tools` directory (or manifests in memory),
compiling each manifest's schemas and executor, refusing duplicate names. Any problem raises
`ConfigError` with one line per problem."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rfc8785
from jsonschema.protocols import Validator
from pydantic import ValidationError as ModelError

from gateway.arguments import parse_arguments
from gateway.audit.keys import AuditKey, is_mask
from gateway.errors import CallCode, ConfigError
from gateway.executors import (
    ExecutionContext,
    ExecutionResult,
    HttpClients,
    Listed,
    ManifestFieldError,
    McpExecutorConfig,
    Proxies,
    StartFailed,
    ToolExecutor,
    build_executor,
    mcp_listing,
)
from gateway.executors.output import kept_output
from gateway.executors.results import failed
from gateway.jsontext import JsonTextError, read_json
from gateway.limits import DEFAULT_LIMITS, MAX_JSON_DEPTH_CAP, Limits
from gateway.memo import Memo
from gateway.model import CallStatus, Effect
from gateway.pins import short
from gateway.tools.definitions import (
    Defined,
    DefinitionUnavailable,
    defined,
    listed_definition,
    manifest_definition,
)
from gateway.tools.environment import expand_env
from gateway.tools.files import manifest_entries, manifest_files
from gateway.tools.manifest import ToolManifest, sharing_fields_sets
from gateway.tools.problems import FieldPath, ManifestProblem, model_problems, problem_line
from gateway.tools.quick_check import Check, quick_check
from gateway.tools.redaction import Masked, masked, pointer_tokens
from gateway.tools.schema import check_schema, schema_problems, schema_validator

if TYPE_CHECKING:
    from gateway.executors.mcp_sessions import McpSessions


class _Schemas:
    """A tool's schemas, checked when its manifest is loaded; each validator is built at its
    first use (most of thousands of tools may never be called: a validator is about 2 KB)."""

    def __init__(
        self, input: dict[str, Any], output: dict[str, Any] | None, format_assertion: bool
    ) -> None:
        self._input = input
        self._output = output
        self._formats = format_assertion

    @functools.cached_property
    def input(self) -> Validator:
        return schema_validator(self._input, format_assertion=self._formats)

    @functools.cached_property
    def output(self) -> Validator | None:
        if self._output is None:
            return None
        return schema_validator(self._output, format_assertion=self._formats)

    @functools.cached_property
    def input_quick(self) -> Check | None:
        """The input schema's quick yes (`gateway.tools.quick_check`), None if not plain."""
        return quick_check(self._input, self.input.format_checker)

    @functools.cached_property
    def output_quick(self) -> Check | None:
        output = self.output
        return None if output is None else quick_check(self._output, output.format_checker)


def _problems(validator: Validator, quick: Check | None, instance: Any) -> str | None:
    """`schema_problems`, answered at once when the schema's quick check says valid."""
    if quick is not None and quick(instance):
        return None
    return schema_problems(validator, instance)


class Tool:
    """A compiled manifest: validators, redaction and the executor of one tool."""

    def __init__(
        self,
        manifest: ToolManifest,
        source: Path,
        executor: ToolExecutor,
        schemas: _Schemas,
        limits: Limits = DEFAULT_LIMITS,
        listed: Listed | None = None,
    ) -> None:
        self.manifest = manifest
        self.source = source
        self.name = manifest.name
        self.version = manifest.version
        self.effect = manifest.effect
        self.description = manifest.description
        self.labels = manifest.labels  # (read only: the policy input copies them)
        is_read = manifest.effect is Effect.READ
        self.repeatable = is_read and manifest.repeatable is not False
        self.parallel_safe = is_read and manifest.parallel_safe is not False
        self.redact_stored = manifest.redact_stored
        self._executor = executor
        self._schemas = schemas
        self._redact = [pointer_tokens(p) for p in manifest.redact]
        self._limits = limits
        cfg = manifest.executor
        self.on_mcp = isinstance(cfg, McpExecutorConfig)
        self._mcp_tool = (cfg.tool or manifest.name) if isinstance(cfg, McpExecutorConfig) else ""
        # made when first asked; set here, so every tool's attributes share one key table
        # (added later, each tool's dict was copied to one of its own: 6 MB for 10,000 tools)
        self._made: dict[str, Any] | None = None
        self._made_defined: Defined | None = None
        self._listed = listed  # the MCP server's entry of the tool (None: not on MCP)
        self._last_listed: tuple[Any, Defined] | None = None

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, version={self.version!r}, effect={self.effect.value})"

    @property
    def _definition(self) -> dict[str, Any]:
        """The manifest's part of the definition (made when first asked: with thousands of
        tools, making them all was a tenth of start-up, and recording them waits until the
        sidecar serves)."""
        if self._made is None:
            self._made = manifest_definition(self.manifest, self._mcp_tool)
        return self._made

    @property
    def _manifest_defined(self) -> Defined:
        if self._made_defined is None:
            self._made_defined = defined(self._definition)
        return self._made_defined

    @functools.cached_property
    def _validated(self) -> Memo[str]:
        """Arguments texts → "" (valid) or their problems (made at the tool's first call)."""
        return Memo()

    @functools.cached_property
    def _passed(self) -> Memo[bool]:
        """Output texts kept as they were."""
        return Memo()

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.manifest.input_schema

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.manifest.output_schema

    @property
    def enforced_by_target(self) -> bool:
        return self.manifest.idempotency.enforced_by_target

    def validate_arguments(self, args: dict[str, Any], text: str = "") -> str | None:
        """None when args satisfy input_schema; else e.g. "/train_number: 'x!' does not match
        '^[A-Z]{1,4}[0-9]{1,5}$'" (up to five problems, best first, joined by "; ").
        `text`, the JSON text args were read from, lets a text this tool has seen before be
        answered without validating again."""
        if not text:
            return self._input_problems(args)
        found = self._validated.get_or(text, lambda: self._input_problems(args) or "")
        return found or None

    def _input_problems(self, args: dict[str, Any]) -> str | None:
        return _problems(self._schemas.input, self._schemas.input_quick, args)

    def validate_output(self, output: Any) -> str | None:
        """None when output satisfies output_schema (or there is none); else the problems."""
        validator = self._schemas.output
        if validator is None:
            return None
        return _problems(validator, self._schemas.output_quick, output)

    def masked(self, args: dict[str, Any], key: AuditKey, *, own: bool = False) -> Masked:
        """args with every `redact` pointer's value and every credential-looking value
        replaced by its mask under key (docs/tools.md, "Redaction"); `own`: args may be
        masked in place (`redaction.masked`)."""
        return masked(args, self._redact, key.mask, skip=is_mask, own=own)

    async def definition(self) -> Defined:
        """The tool's definition (`gateway.pins`) now: its manifest's part and, for a tool on
        an MCP server, the server's entry of it in its latest tools/list (the session started
        first when needed). Raises DefinitionUnavailable when that entry cannot be had."""
        if self._listed is None:
            return self._manifest_defined
        try:
            entry = await self._listed()
        except StartFailed as exc:
            raise DefinitionUnavailable(
                f"the definition of tool {self.name!r} could not be read from its MCP server: {exc}"
            ) from None
        last = self._last_listed
        if last is not None and last[0] is entry:  # a listing keeps its entries until the next
            return last[1]
        try:
            made = defined(listed_definition(self._definition, entry))
        except rfc8785.CanonicalizationError as exc:  # (a lone surrogate in what it said)
            raise DefinitionUnavailable(
                f"the definition of tool {self.name!r} its MCP server lists has no canonical "
                f"form ({exc}: a lone UTF-16 surrogate), so it can be neither pinned nor checked"
            ) from None
        self._last_listed = (entry, made)
        return made

    async def run(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        """Execute; when `ctx.tool_fingerprint` is set, only if the tool's definition is still
        that one (else FAILED `tool_changed`, or `tool_error` when it cannot be read; nothing
        sent)."""
        if ctx.tool_fingerprint:
            try:
                now = await self.definition()
            except DefinitionUnavailable as exc:
                return failed(CallCode.TOOL_ERROR, f"{exc}; nothing was sent", attempts=0)
            if now.fingerprint != ctx.tool_fingerprint:
                return failed(
                    CallCode.TOOL_CHANGED,
                    f"tool {self.name!r} changed after the call was decided "
                    f"({short(ctx.tool_fingerprint)} → "
                    f"{short(now.fingerprint)}); "
                    "nothing was sent",
                    attempts=0,
                )
        return self._checked(await self._executor.execute(args, ctx))

    async def reconcile(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return self._checked(await self._executor.reconcile(args, ctx))

    def _checked(self, result: ExecutionResult) -> ExecutionResult:
        """Keep only an output within the size limit that is strict JSON (`kept_output`);
        then apply output_schema: a read that violates it FAILS, a write keeps a note. An
        output text this tool returned before and that passed is let through at once."""
        plain = result.status is CallStatus.SUCCEEDED and not result.error_code
        if plain and self._passed.get(result.output_json):
            return result
        checked = self._checked_anew(result)
        if plain and checked is result:
            self._passed.put(result.output_json, True)
        return checked

    def _checked_anew(self, result: ExecutionResult) -> ExecutionResult:
        result = kept_output(
            result,
            effect=self.effect,
            max_bytes=self._limits.max_output_bytes,
            max_depth=self._limits.max_json_depth,
        )
        if (
            self.output_schema is None
            or result.status is not CallStatus.SUCCEEDED
            or result.error_code
        ):
            return result
        try:
            output = read_json(result.output_json, max_depth=MAX_JSON_DEPTH_CAP, big_integers=True)
        except JsonTextError:  # kept_output already said why
            return result
        problems = self.validate_output(output)
        if problems is None:
            return result
        message = f"output violates output_schema: {problems}"
        if self.effect is Effect.READ:
            return failed(CallCode.OUTPUT_INVALID, message, attempts=result.attempts)
        return ExecutionResult(
            CallStatus.SUCCEEDED,
            output_json=result.output_json,
            error_code=CallCode.OUTPUT_INVALID.value,
            error_message=message,
            attempts=result.attempts,
        )


def compile_tool(
    raw: Any,
    source: Path,
    clients: HttpClients,
    env: Mapping[str, str],
    limits: Limits = DEFAULT_LIMITS,
    mcp: McpSessions | None = None,
) -> Tool:
    """One manifest → Tool; raises ManifestProblem or ModelError."""
    if not isinstance(raw, dict):
        raise ManifestProblem((), f"a tool manifest must be a mapping, not {type(raw).__name__}")
    manifest = sharing_fields_sets(ToolManifest.model_validate(expand_env(raw, env)))
    formats = manifest.format_assertion
    check_schema(manifest.input_schema, ("input_schema",), format_assertion=formats)
    if manifest.output_schema is not None:
        check_schema(manifest.output_schema, ("output_schema",), format_assertion=formats)
    schemas = _Schemas(manifest.input_schema, manifest.output_schema, formats)
    try:
        executor = build_executor(
            manifest.executor,
            effect=manifest.effect,
            retry=manifest.retry,
            idempotency=manifest.idempotency,
            reconcile=manifest.reconcile,
            clients=clients,
            base=_folder(source),
            mcp=mcp,
            name=manifest.name,
        )
        listed = mcp_listing(manifest.executor, mcp, manifest.name)
    except ManifestFieldError as exc:
        raise ManifestProblem(exc.field, exc.message) from exc
    return Tool(manifest, source, executor, schemas, limits, listed)


@functools.lru_cache(maxsize=16)
def _folder(source: Path) -> Path:
    """source.parent, one Path for the files of a folder (executors keep theirs)."""
    return source.parent


class _Collector:
    """Compiles manifests, gathering every problem as one line."""

    def __init__(
        self, env: Mapping[str, str], limits: Limits, mcp: McpSessions | None = None
    ) -> None:
        self.clients = HttpClients(
            max_body_bytes=limits.max_output_bytes, proxies=Proxies.from_env(env)
        )
        self.mcp = mcp
        self.env = env
        self.limits = limits
        self.tools: dict[str, Tool] = {}  # by name, in the order they were defined
        self.problems: list[str] = []

    def add(self, raw: Any, source: Path, prefix: FieldPath) -> None:
        try:
            tool = compile_tool(raw, source, self.clients, self.env, self.limits, self.mcp)
        except ManifestProblem as exc:
            self.problems.append(problem_line(str(source), (*prefix, *exc.field), exc.message))
        except ModelError as exc:
            self.problems.extend(
                problem_line(str(source), (*prefix, *loc), message)
                for loc, message in model_problems(exc)
            )
        else:
            self._keep(tool, prefix)

    def add_file(self, path: Path) -> None:
        try:
            entries = manifest_entries(path)
        except ManifestProblem as exc:
            self.problems.append(problem_line(str(path), exc.field, exc.message))
            return
        for prefix, raw in entries:
            self.add(raw, path, prefix)

    def _keep(self, tool: Tool, prefix: FieldPath) -> None:
        first = self.tools.get(tool.name)
        if first is not None:
            self.problems.append(
                problem_line(
                    str(tool.source),
                    (*prefix, "name"),
                    f"duplicate tool name {tool.name!r} (already defined in {first.source})",
                )
            )
            return
        self.tools[tool.name] = tool

    def registry(self, audit_key: AuditKey | None) -> Registry:
        if self.problems:
            raise ConfigError("\n".join(self.problems))
        return Registry(self.tools.values(), self.clients, audit_key=audit_key, mcp=self.mcp)


_SHOWN_CACHE_CHARS = 4096
REVISION_PREFIX = "sha256:"
REVISION_HEX_CHARS = 16


def tools_revision(tools: Iterable[Tool]) -> str:
    """sha256 over the tools' manifests as canonical JSON (sorted keys, by tool name; after
    environment expansion, so a changed variable is a changed tool set)."""
    digest = hashlib.sha256()
    for tool in sorted(tools, key=lambda t: t.name):
        body = json.dumps(
            tool.manifest.model_dump(mode="json"),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
        digest.update(len(body).to_bytes(8, "big") + body)
    return REVISION_PREFIX + digest.hexdigest()[:REVISION_HEX_CHARS]


class Registry:
    """The loaded tools, by name; owns the http client their executors share and the sessions
    with MCP servers, and the audit key their arguments are masked with (a key of this process
    only unless one is given)."""

    def __init__(
        self,
        tools: Iterable[Tool],
        clients: HttpClients | None = None,
        *,
        audit_key: AuditKey | None = None,
        mcp: McpSessions | None = None,
    ) -> None:
        self._tools = {t.name: t for t in tools}
        self._revision = tools_revision(self._tools.values())
        self._clients = clients or HttpClients()
        self._mcp = mcp
        self.audit_key = audit_key or AuditKey.ephemeral()
        # a call's arguments are shown in several audit records (decision, execution): masked
        # once; the result is shared, so never changed
        self._shown = lru_cache(maxsize=1024)(self._masked_text)

    def masked_text(self, tool_name: str, arguments_json: str) -> Masked | None:
        """`masked` for arguments as the call carried them (JSON text)."""
        if len(arguments_json) > _SHOWN_CACHE_CHARS:
            return self._masked_text(tool_name, arguments_json)
        return self._shown(tool_name, arguments_json)

    def _masked_text(self, tool_name: str, arguments_json: str) -> Masked | None:
        # (parsed here for the mask alone: masked in place, not copied)
        return self.masked(tool_name, parse_arguments(arguments_json), own=True)

    def masked(
        self, tool_name: str, args: dict[str, Any] | None, *, own: bool = False
    ) -> Masked | None:
        """The arguments of a call of tool_name, masked (credential-looking values only when
        no such tool is registered); None when the arguments are not an object. `own`: args
        may be masked in place (`redaction.masked`)."""
        if args is None:
            return None
        tool = self._tools.get(tool_name)
        if tool is None:
            return masked(args, (), self.audit_key.mask, skip=is_mask, own=own)
        return tool.masked(args, self.audit_key, own=own)

    @classmethod
    def load(
        cls,
        directory: Path,
        env: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        *,
        audit_key: AuditKey | None = None,
        mcp: McpSessions | None = None,
    ) -> Registry:
        """Load every manifest file in directory; raises ConfigError naming every problem.
        `mcp`: the MCP servers an `mcp` executor may name (the registry closes them)."""
        collector = _Collector(os.environ if env is None else env, limits, mcp)
        for path in manifest_files(Path(directory)):
            collector.add_file(path)
        return collector.registry(audit_key)

    @classmethod
    def from_manifests(
        cls,
        manifests: Iterable[Mapping[str, Any]],
        *,
        source: Path = Path("<manifests>"),
        env: Mapping[str, str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        audit_key: AuditKey | None = None,
        mcp: McpSessions | None = None,
    ) -> Registry:
        """Build from manifest mappings already in memory (same checks as `load`)."""
        collector = _Collector(os.environ if env is None else env, limits, mcp)
        for i, raw in enumerate(manifests):
            collector.add(dict(raw), source, (i,))
        return collector.registry(audit_key)

    @property
    def revision(self) -> str:
        """Hash of the tools' canonical manifests; recorded with every decision."""
        return self._revision

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def tools(self) -> list[Tool]:
        return sorted(self._tools.values(), key=lambda t: t.name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    async def aclose(self) -> None:
        await self._clients.aclose()
        if self._mcp is not None:
            await self._mcp.aclose()
