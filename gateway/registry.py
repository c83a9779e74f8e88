"""Tool manifests (DESIGN §5): pydantic models, loading a `--tools` directory, compiled tools.

Loading a directory reads every `*.yaml`, `*.yml` and `*.json` file (one tool, a list of tools,
or several YAML documents), expands `${VAR}` / `${VAR:-default}` in string values from the
environment (`$${` keeps a literal `${`), validates each manifest, checks its JSON Schemas
(2020-12; a remote `$ref` is never fetched), imports python executors and refuses duplicate
names. Any problem raises `ConfigError`; its message has one line per problem, each naming the
file, the field path and what is wrong, e.g. `tools/reserve.yaml: executor.url: ...`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as ModelError
from pydantic_core import PydanticCustomError
from referencing import Registry as RefRegistry
from referencing import Resource
from referencing.exceptions import Unresolvable, Unretrievable
from referencing.jsonschema import DRAFT202012

from gateway.errors import CallCode, ConfigError
from gateway.executors import (
    ExecutionContext,
    ExecutionResult,
    ExecutorConfig,
    HttpClients,
    IdempotencyConfig,
    ManifestFieldError,
    ReconcileConfig,
    RetryConfig,
    ToolExecutor,
    build_executor,
)
from gateway.executors.outcome import excerpt, failed
from gateway.model import CallStatus, Effect

NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
MASK = "***"
MAX_REPORTED_ERRORS = 5
_SCHEMA_URIS = ("https://json-schema.org/draft/2020-12/schema",
                "https://json-schema.org/draft/2020-12/schema#")
_TAGGED_SECTIONS = ("executor", "reconcile")
_WEAK_KEYWORDS = frozenset({"anyOf", "oneOf"})

FieldPath = tuple[str | int, ...]


# --------------------------------------------------------------------------- manifest models


def _check_pointer(pointer: str) -> str:
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer to a member (it must start with /)")
    if re.search(r"~(?![01])", pointer):
        raise ValueError(f"{pointer!r} has a ~ not followed by 0 or 1")
    return pointer


Pointer = Annotated[str, AfterValidator(_check_pointer)]


def _rule(field: str, message: str) -> PydanticCustomError:
    """A rule across fields; `field` (dotted) becomes the problem's field path."""
    return PydanticCustomError("manifest_rule", message, {"field": field})


class ToolManifest(BaseModel):
    """One tool, as written in a manifest file (DESIGN §5)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    version: str = Field(min_length=1)
    description: str = ""
    effect: Effect
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    executor: ExecutorConfig
    idempotency: IdempotencyConfig = Field(default_factory=IdempotencyConfig)
    reconcile: ReconcileConfig | None = None
    retry: RetryConfig = Field(default_factory=RetryConfig)
    repeatable: bool | None = None  # reads only; None = the default (reads true, writes false)
    parallel_safe: bool | None = None  # reads only; None = the default (reads true)
    redact: list[Pointer] = Field(default_factory=list)  # a `*` token matches every member
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def write_rules(self) -> ToolManifest:
        if self.effect is Effect.READ:
            if self.reconcile is not None:
                raise _rule("reconcile", "only writes are reconciled; remove it from a read")
            return self
        if self.retry.max_attempts > 1 and not self.idempotency.enforced_by_target:
            raise _rule("retry.max_attempts", "a write may be retried only when "
                        "idempotency.enforced_by_target is true")
        for flag in ("repeatable", "parallel_safe"):
            if getattr(self, flag) is True:
                raise _rule(flag, f"applies to reads only; a write is never {flag}")
        return self


# --------------------------------------------------------------------------- problems


class _Problem(Exception):
    def __init__(self, field: FieldPath, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _field_text(field: FieldPath) -> str:
    text = ""
    for part in field:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _line(source: str, field: FieldPath, message: str) -> str:
    where = _field_text(field)
    return f"{source}: {where}: {message}" if where else f"{source}: {message}"


def _model_problems(exc: ModelError) -> list[tuple[FieldPath, str]]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if len(loc) > 1 and loc[0] in _TAGGED_SECTIONS:
            loc = loc[:1] + loc[2:]  # drop the discriminator tag pydantic puts in the path
        message = str(error["msg"])
        ctx = error.get("ctx", {})
        if error["type"] == "value_error":
            message = str(ctx.get("error", message))
        elif error["type"] == "manifest_rule":
            loc = (*loc, *str(ctx["field"]).split("."))
        problems.append((loc, message))
    return problems


# --------------------------------------------------------------------------- environment

_ENV_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand_text(text: str, field: FieldPath, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = env.get(name, "")
        if value:
            return value
        if default is not None:
            return default
        if name in env:
            return ""
        raise _Problem(field, f"environment variable {name} is not set "
                              f"(write ${{{name}:-default}} to give a default)")

    return _ENV_REF.sub(replace, text)


def expand_env(value: Any, env: Mapping[str, str], field: FieldPath = ()) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string value (not in keys)."""
    if isinstance(value, str):
        return _expand_text(value, field, env)
    if isinstance(value, list):
        return [expand_env(item, env, (*field, i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {k: expand_env(v, env, (*field, str(k))) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- files


class _Loader(yaml.SafeLoader):
    """Safe YAML that keeps dates and times as strings (JSON has no date type)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml_documents(text: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise _Problem((), f"invalid YAML: {exc.problem or exc.context}{where}") from exc
    except yaml.YAMLError as exc:
        raise _Problem((), f"invalid YAML: {exc}") from exc


def _json_documents(text: str) -> list[Any]:
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        raise _Problem((), f"invalid JSON: {exc.msg} (line {exc.lineno}, "
                           f"column {exc.colno})") from exc


def _manifest_entries(path: Path) -> list[tuple[FieldPath, Any]]:
    """(field prefix, raw manifest) for every tool in one file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Problem((), f"cannot read: {exc}") from exc
    docs = _json_documents(text) if path.suffix.lower() == ".json" else _yaml_documents(text)
    items = [item for doc in docs if doc is not None
             for item in (doc if isinstance(doc, list) else [doc])]
    if not items:
        raise _Problem((), "no tool manifest in this file")
    single = len(docs) == 1 and not isinstance(docs[0], list)
    return [((() if single else (i,)), item) for i, item in enumerate(items)]


def _manifest_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise ConfigError(f"{directory}: tool directory does not exist or is not a directory")
    files = sorted(p for p in directory.iterdir()
                   if p.suffix.lower() in MANIFEST_SUFFIXES and p.is_file()
                   and not p.name.startswith("."))
    if not files:
        raise ConfigError(f"{directory}: no tool manifests (*.yaml, *.yml, *.json)")
    return files


# --------------------------------------------------------------------------- JSON Schema


class RemoteReferenceRefused(Exception):
    """A schema referred to something outside itself; callgate never fetches it."""


def _refuse_remote(uri: str) -> Resource[Any]:
    raise RemoteReferenceRefused(uri)


# Every validator resolves references only within its own schema (and the bundled
# metaschemas); retrieving anything else raises instead of fetching.
_NO_REMOTE: RefRegistry[Any] = RefRegistry(retrieve=_refuse_remote)  # type: ignore[call-arg]


def _is_remote(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, RemoteReferenceRefused | Unretrievable):
            return True
        exc = exc.__cause__
    return False


def _unresolvable(keyword: str, ref: str, exc: Unresolvable) -> str:
    if _is_remote(exc):
        return (f"{keyword} {ref!r} points outside this schema; remote references are never "
                "fetched (copy the definition under $defs)")
    return f"{keyword} {ref!r} cannot be resolved: {excerpt(str(exc))}"


def _check_refs(resource: Resource[Any], resolver: Any, field: FieldPath) -> None:
    resolver = resolver.in_subresource(resource)
    contents = resource.contents
    if isinstance(contents, dict):
        for keyword in ("$ref", "$dynamicRef"):
            ref = contents.get(keyword)
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable as exc:
                    raise _Problem(field, _unresolvable(keyword, ref, exc)) from exc
    for sub in resource.subresources():
        _check_refs(sub, resolver, field)


def compile_schema(schema: dict[str, Any], field: FieldPath) -> Validator:
    """Check a 2020-12 schema (and every $ref in it) and build its validator."""
    declared = schema.get("$schema")
    if declared is not None and declared not in _SCHEMA_URIS:
        raise _Problem((*field, "$schema"), f"{declared!r}: only JSON Schema 2020-12 "
                                            f"({_SCHEMA_URIS[0]}) is supported")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise _Problem((*field, *exc.absolute_path), exc.message) from exc
    resource = DRAFT202012.create_resource(schema)
    root = SPECIFICATIONS.combine(_NO_REMOTE).resolver_with_root(resource)
    _check_refs(resource, root, field)
    validator: Validator = Draft202012Validator(
        schema, registry=_NO_REMOTE, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return validator


def _pointer(path: Iterable[Any]) -> str:
    tokens = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(tokens) if tokens else "(root)"


def _relevance(error: ValidationError) -> tuple[int, bool]:
    """Sort key, best first: shallower errors (more is wrong), then strong keywords; the sort
    is stable, so siblings keep the schema's order."""
    return (len(error.path), error.validator in _WEAK_KEYWORDS)


def schema_problems(validator: Validator, instance: Any) -> str | None:
    """None when instance is valid; else its problems, best first, each with its JSON path."""
    try:
        if validator.is_valid(instance):  # the common case: no error objects to build
            return None
        errors = sorted(validator.iter_errors(instance), key=_relevance)
    except Unresolvable as exc:
        what = "refers outside the schema (never fetched)" if _is_remote(exc) else "is broken"
        return f"(schema): a $ref {what}: {excerpt(str(exc))}"
    except RecursionError:
        return "(schema): the schema refers to itself without end"
    if not errors:
        return None
    lines: list[str] = []
    for error in errors:
        best = best_match([error]) or error
        line = f"{_pointer(best.absolute_path)}: {excerpt(best.message)}"
        if line not in lines:
            lines.append(line)
    more = len(lines) - MAX_REPORTED_ERRORS
    text = "; ".join(lines[:MAX_REPORTED_ERRORS])
    return f"{text}; and {more} more" if more > 0 else text


# --------------------------------------------------------------------------- redaction


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _members(node: Any, token: str) -> list[Any]:
    if isinstance(node, dict):
        return list(node) if token == "*" else [token] if token in node else []
    if isinstance(node, list):
        if token == "*":
            return list(range(len(node)))
        if token.isdigit() and int(token) < len(node):
            return [int(token)]
    return []


def _mask(node: Any, tokens: list[str]) -> None:
    for key in _members(node, tokens[0]):
        if len(tokens) == 1:
            node[key] = MASK
        else:
            _mask(node[key], tokens[1:])


# --------------------------------------------------------------------------- tools


@dataclass(frozen=True)
class _Schemas:
    input: Validator
    output: Validator | None


class Tool:
    """A compiled manifest: validators, redaction and the executor of one tool."""

    def __init__(self, manifest: ToolManifest, source: Path, executor: ToolExecutor,
                 schemas: _Schemas) -> None:
        self.manifest = manifest
        self.source = source
        self.name = manifest.name
        self.version = manifest.version
        self.effect = manifest.effect
        self.description = manifest.description
        self.labels = dict(manifest.labels)
        is_read = manifest.effect is Effect.READ
        self.repeatable = is_read and manifest.repeatable is not False
        self.parallel_safe = is_read and manifest.parallel_safe is not False
        self._executor = executor
        self._schemas = schemas
        self._redact = [_tokens(p) for p in manifest.redact]

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, version={self.version!r}, effect={self.effect.value})"

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.manifest.input_schema

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.manifest.output_schema

    @property
    def enforced_by_target(self) -> bool:
        return self.manifest.idempotency.enforced_by_target

    @property
    def reconcilable(self) -> bool:
        return self.manifest.reconcile is not None

    def validate_arguments(self, args: dict[str, Any]) -> str | None:
        """None when args satisfy input_schema; else e.g. "/train_number: 'x!' does not match
        '^[A-Z]{1,4}[0-9]{1,5}$'" (up to five problems, best first, joined by "; ")."""
        return schema_problems(self._schemas.input, args)

    def redacted(self, args: dict[str, Any]) -> dict[str, Any]:
        """A copy of args with every `redact` pointer's value replaced by "***"."""
        copy: dict[str, Any] = json.loads(json.dumps(args))
        for tokens in self._redact:
            _mask(copy, tokens)
        return copy

    async def run(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return self._checked(await self._executor.execute(args, ctx))

    async def reconcile(self, args: dict[str, Any], ctx: ExecutionContext) -> ExecutionResult:
        return self._checked(await self._executor.reconcile(args, ctx))

    def _checked(self, result: ExecutionResult) -> ExecutionResult:
        """Apply output_schema: a read that violates it FAILS, a write keeps a note."""
        validator = self._schemas.output
        if validator is None or result.status is not CallStatus.SUCCEEDED or result.error_code:
            return result
        problems = schema_problems(validator, json.loads(result.output_json))
        if problems is None:
            return result
        message = f"output violates output_schema: {problems}"
        if self.effect is Effect.READ:
            return failed(CallCode.OUTPUT_INVALID, message, attempts=result.attempts)
        return ExecutionResult(CallStatus.SUCCEEDED, output_json=result.output_json,
                               error_code=CallCode.OUTPUT_INVALID.value, error_message=message,
                               attempts=result.attempts)


def compile_tool(raw: Any, source: Path, clients: HttpClients,
                 env: Mapping[str, str]) -> Tool:
    """One manifest → Tool; raises _Problem or ModelError."""
    if not isinstance(raw, dict):
        raise _Problem((), f"a tool manifest must be a mapping, not {type(raw).__name__}")
    manifest = ToolManifest.model_validate(expand_env(raw, env))
    schemas = _Schemas(
        compile_schema(manifest.input_schema, ("input_schema",)),
        None if manifest.output_schema is None
        else compile_schema(manifest.output_schema, ("output_schema",)))
    try:
        executor = build_executor(manifest.executor, effect=manifest.effect,
                                  retry=manifest.retry, idempotency=manifest.idempotency,
                                  reconcile=manifest.reconcile, clients=clients)
    except ManifestFieldError as exc:
        raise _Problem(exc.field, exc.message) from exc
    return Tool(manifest, source, executor, schemas)


class _Collector:
    """Compiles manifests, gathering every problem as one line."""

    def __init__(self, clients: HttpClients, env: Mapping[str, str]) -> None:
        self.clients = clients
        self.env = env
        self.tools: list[Tool] = []
        self.problems: list[str] = []

    def add(self, raw: Any, source: Path, prefix: FieldPath) -> None:
        try:
            tool = compile_tool(raw, source, self.clients, self.env)
        except _Problem as exc:
            self.problems.append(_line(str(source), (*prefix, *exc.field), exc.message))
        except ModelError as exc:
            self.problems.extend(_line(str(source), (*prefix, *loc), message)
                                 for loc, message in _model_problems(exc))
        else:
            self._keep(tool, prefix)

    def add_file(self, path: Path) -> None:
        try:
            entries = _manifest_entries(path)
        except _Problem as exc:
            self.problems.append(_line(str(path), exc.field, exc.message))
            return
        for prefix, raw in entries:
            self.add(raw, path, prefix)

    def _keep(self, tool: Tool, prefix: FieldPath) -> None:
        first = next((t for t in self.tools if t.name == tool.name), None)
        if first is not None:
            self.problems.append(_line(str(tool.source), (*prefix, "name"),
                                       f"duplicate tool name {tool.name!r} "
                                       f"(already defined in {first.source})"))
            return
        self.tools.append(tool)

    def registry(self) -> Registry:
        if self.problems:
            raise ConfigError("\n".join(self.problems))
        return Registry(self.tools, self.clients)


class Registry:
    """The loaded tools, by name; owns the http client their executors share."""

    def __init__(self, tools: Iterable[Tool], clients: HttpClients | None = None) -> None:
        self._tools = {t.name: t for t in tools}
        self._clients = clients or HttpClients()

    @classmethod
    def load(cls, directory: Path, env: Mapping[str, str] | None = None) -> Registry:
        """Load every manifest file in directory; raises ConfigError naming every problem."""
        collector = _Collector(HttpClients(), os.environ if env is None else env)
        for path in _manifest_files(Path(directory)):
            collector.add_file(path)
        return collector.registry()

    @classmethod
    def from_manifests(cls, manifests: Iterable[Mapping[str, Any]], *,
                       source: Path = Path("<manifests>"),
                       env: Mapping[str, str] | None = None) -> Registry:
        """Build from manifest mappings already in memory (same checks as `load`)."""
        collector = _Collector(HttpClients(), os.environ if env is None else env)
        for i, raw in enumerate(manifests):
            collector.add(dict(raw), source, (i,))
        return collector.registry()

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


__all__ = ["ConfigError", "Registry", "Tool", "ToolManifest", "compile_schema", "expand_env",
           "schema_problems"]
