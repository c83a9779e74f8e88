"""A policy bundle read from a directory: Rego sources, merged data and a revision hash.

Layout rules follow OPA bundles:

- every `*.rego` file below the directory is a policy (Rego v1, or v0 when the bundle's options
  say so: `gateway.policy.options`); `*_test.rego` files are Rego unit tests: they are kept
  apart (`Bundle.test_sources`), never served, and do not count in the revision;
- every `data.json`, `data.yaml` or `data.yml` file is data; a data file in the sub-directory
  `a/b/` lands at `data.a.b`. Objects from several files merge; the same key with two
  non-object values is a conflict;
- a rule and a data value may not share a path (`data.callgate.decision` cannot be both),
  as OPA refuses it too: otherwise data could silently shadow a rule;
- hidden files and directories (a name starting with ".") are skipped.

Every problem raises `PolicyConfigError` (a `ConfigError`) whose message names the file, the
line when there is one, and what is wrong.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.jsontext import JsonTextError, read_json
from gateway.limits import MAX_JSON_DEPTH_CAP
from gateway.policy.config_errors import PolicyConfigError, config_error_from_regorus
from gateway.policy.options import DEFAULT_OPTIONS, RegoOptions
from gateway.policy.rego import add_policy, new_engine
from gateway.yamltext import YamlTextError, read_yaml

DATA_FILE_NAMES = frozenset({"data.json", "data.yaml", "data.yml"})
TEST_SUFFIX = "_test.rego"
REVISION_PREFIX = "sha256:"
REVISION_HEX_CHARS = 16


@dataclass(frozen=True)
class RuleInfo:
    """One rule head found in a policy: `package` is `data.<pkg>`, `name` its static ref."""

    package: str
    name: str
    file: str
    line: int
    function: bool = False

    @property
    def path(self) -> str:
        return f"{self.package}.{self.name}"


@dataclass(frozen=True)
class Bundle:
    """A loaded policy directory.

    `sources` and `test_sources` map a path relative to `root` (POSIX form) to its text;
    `source_name(rel)` is the name given to the engine and shown in errors. `options` say how
    every engine built from it reads the Rego and counts builtin errors (not part of the
    revision: they are settings of the process serving it).
    """

    root: Path
    sources: Mapping[str, str]
    test_sources: Mapping[str, str]
    data: dict[str, Any]
    data_files: tuple[str, ...]
    revision: str
    rules: tuple[RuleInfo, ...] = field(default=())
    options: RegoOptions = DEFAULT_OPTIONS

    def source_name(self, rel: str) -> str:
        return (self.root / rel).as_posix()

    def named_sources(self, *, include_tests: bool = False) -> list[tuple[str, str]]:
        """(engine name, text) of every policy, sorted; test files only when asked."""
        items = dict(self.sources)
        if include_tests:
            items.update(self.test_sources)
        return [(self.source_name(rel), items[rel]) for rel in sorted(items)]

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(sorted({r.package for r in self.rules}))


# ---------------------------------------------------------------------------------------------
# loading


def load_bundle(directory: Path, options: RegoOptions = DEFAULT_OPTIONS) -> Bundle:
    """Read, parse and merge a policy directory; PolicyConfigError listing every problem."""
    root = Path(directory)
    if not root.is_dir():
        what = "is a file, not a directory" if root.exists() else "policy directory does not exist"
        raise PolicyConfigError(f"{root}: {what}", file=str(root))
    return _load(root, [_Entry(rel, rel) for rel in _scan(root)], options)


def load_paths(paths: Sequence[Path], options: RegoOptions = DEFAULT_OPTIONS) -> Bundle:
    """A bundle from directories and single files (as `policy check DIR|FILE...` takes them).

    One directory loads as `load_bundle` does. Otherwise each file is named as given; a data
    file's value lands at the path of its directory below the directory it was found in (a data
    file named on its own lands at the root).
    """
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return load_bundle(paths[0], options)
    entries: list[_Entry] = []
    problems: list[PolicyConfigError] = []
    for path in map(Path, paths):
        if path.is_dir():
            entries.extend(_Entry((path / rel).as_posix(), rel) for rel in _scan(path))
        elif path.is_file() and _Entry(path.name, path.name).kind != "other":
            entries.append(_Entry(path.as_posix(), path.name))
        elif path.is_file():
            problems.append(
                PolicyConfigError(
                    f"{path}: not a policy (.rego) or data file (data.json, data.yaml)",
                    file=str(path),
                )
            )
        else:
            problems.append(PolicyConfigError(f"{path}: no such file or directory", file=str(path)))
    if problems:
        raise PolicyConfigError.of(problems)
    return _load(Path("."), entries, options)


@dataclass(frozen=True)
class _Entry:
    rel: str  # the name under the bundle root (and in the revision)
    mount: str  # the path that decides where a data file's value lands

    @property
    def kind(self) -> str:
        name = self.rel.rsplit("/", 1)[-1]
        if name in DATA_FILE_NAMES:
            return "data"
        if name.endswith(TEST_SUFFIX):
            return "test"
        return "policy" if name.endswith(".rego") else "other"


class _Problems:
    """Collects PolicyConfigErrors so a load reports all of them, not just the first."""

    def __init__(self) -> None:
        self.found: list[PolicyConfigError] = []

    def attempt(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except PolicyConfigError as exc:
            self.found.extend(exc.detached().problems)
            return None

    def raise_any(self) -> None:
        if self.found:
            raise PolicyConfigError.of(self.found)


def _load(root: Path, entries: list[_Entry], options: RegoOptions) -> Bundle:
    by_kind: dict[str, list[_Entry]] = {"policy": [], "test": [], "data": []}
    for entry in entries:
        by_kind.setdefault(entry.kind, []).append(entry)
    if not by_kind["policy"]:
        raise PolicyConfigError(
            f"{root}: no .rego policy files found (test files alone do not make a bundle)",
            file=str(root),
        )
    problems = _Problems()
    raw = {
        e.rel: problems.attempt(_read, root, e.rel)
        for e in by_kind["policy"] + by_kind["test"] + by_kind["data"]
    }
    problems.raise_any()
    sources = {e.rel: problems.attempt(_decode, root, e.rel, raw[e.rel]) for e in by_kind["policy"]}
    tests = {e.rel: problems.attempt(_decode, root, e.rel, raw[e.rel]) for e in by_kind["test"]}
    values = [
        (e.rel, problems.attempt(_parse_data, root, e.rel, raw[e.rel], e.mount))
        for e in by_kind["data"]
    ]
    rules = problems.attempt(
        parse_rules, root, {k: v for k, v in sources.items() if v}, options.rego_v0
    )
    problems.raise_any()
    rooted = [
        (rel, _mount(mount.mount, value))
        for (rel, value), mount in zip(values, by_kind["data"], strict=True)
    ]
    data = _merge_all(root, rooted)
    _check_rule_data_conflicts(root, rules, rooted)
    revision_files = {e.rel: raw[e.rel] for e in by_kind["policy"] + by_kind["data"]}
    return Bundle(
        root=root,
        sources=sources,
        test_sources=tests,
        data=data,
        data_files=tuple(e.rel for e in by_kind["data"]),
        revision=compute_revision(revision_files),
        rules=rules,
        options=options,
    )


def compute_revision(files: Mapping[str, bytes]) -> str:
    """sha256 over the sorted relative paths and bytes of the given files."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        body = files[rel]
        name = rel.encode()
        digest.update(len(name).to_bytes(8, "big") + name)
        digest.update(len(body).to_bytes(8, "big") + body)
    return REVISION_PREFIX + digest.hexdigest()[:REVISION_HEX_CHARS]


def _scan(root: Path) -> list[str]:
    """Policy, test and data files below root, as sorted relative POSIX paths."""
    found = []
    for path in sorted(_files(root)):
        rel = path.relative_to(root).as_posix()
        if path.name in DATA_FILE_NAMES or path.suffix == ".rego":
            found.append(rel)
    return found


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.startswith("."):
                yield Path(dirpath) / name


def _read(root: Path, rel: str) -> bytes:
    try:
        return (root / rel).read_bytes()
    except OSError as exc:
        name = (root / rel).as_posix()
        raise PolicyConfigError(f"{name}: cannot read: {exc.strerror or exc}", file=name) from exc


def _decode(root: Path, rel: str, body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        name = (root / rel).as_posix()
        raise PolicyConfigError(
            f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})", file=name
        ) from exc


# ---------------------------------------------------------------------------------------------
# data


def _parse_data(root: Path, rel: str, body: bytes, mount: str) -> Any:
    name = (root / rel).as_posix()
    text = _decode(root, rel, body)
    value = _parse_json(name, text) if rel.endswith(".json") else _parse_yaml(name, text)
    _check_json_value(name, value, "")
    if "/" not in mount and not isinstance(value, dict):
        raise PolicyConfigError(f"{name}: top-level data must be an object", file=name)
    return value


def _parse_json(name: str, text: str) -> Any:
    try:
        return read_json(text, max_depth=MAX_JSON_DEPTH_CAP, big_integers=True)
    except JsonTextError as exc:
        cause = exc.__cause__
        if isinstance(cause, json.JSONDecodeError):
            detail = f"invalid JSON: {cause.msg}"
            raise PolicyConfigError(
                f"{name}:{cause.lineno}:{cause.colno}: {detail}",
                file=name,
                line=cause.lineno,
                column=cause.colno,
                detail=detail,
            ) from exc
        raise PolicyConfigError(
            f"{name}: invalid JSON: {exc.message}", file=name, detail=f"invalid JSON: {exc.message}"
        ) from exc


def _parse_yaml(name: str, text: str) -> Any:
    try:
        value = read_yaml(text)
    except YamlTextError as exc:
        where = f"{name}:{exc.line}" if exc.line else name
        raise PolicyConfigError(
            f"{where}: {exc}", file=name, line=exc.line, detail=str(exc)
        ) from exc
    return {} if value is None else value


def _check_json_value(name: str, value: Any, path: str) -> None:
    """Data must be plain JSON: string keys; str, number, bool, null, list, object values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PolicyConfigError(
                    f"{name}: key {key!r} at {path or '/'} is not a string", file=name
                )
            _check_json_value(name, item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json_value(name, item, f"{path}/{index}")
    elif isinstance(value, float) and not math.isfinite(value):
        raise PolicyConfigError(f"{name}: value at {path or '/'} is not a finite number", file=name)
    elif not (value is None or isinstance(value, str | int | float | bool)):
        raise PolicyConfigError(
            f"{name}: value at {path or '/'} is not JSON ({type(value).__name__})", file=name
        )


def _mount(rel: str, value: Any) -> dict[str, Any]:
    """Place a data file's value at the path of its directory (`a/b/data.json` → a.b)."""
    parts = rel.split("/")[:-1]
    tree: Any = value
    for part in reversed(parts):
        tree = {part: tree}
    return tree if isinstance(tree, dict) else {}


def _merge_all(root: Path, rooted: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for index, (rel, tree) in enumerate(rooted):
        conflict = _merge_into(merged, tree, ())
        if conflict is not None:
            name = (root / rel).as_posix()
            others = [
                (root / r).as_posix() for r, t in rooted[:index] if _occupies(t, list(conflict))
            ]
            where = ".".join(conflict)
            raise PolicyConfigError(
                f"{name}: data.{where} conflicts with a value from "
                f"{others[0] if others else 'another data file'}",
                file=name,
            )
    return merged


def _merge_into(
    target: dict[str, Any], tree: dict[str, Any], path: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Deep-merge tree into target; return the conflicting path, if any."""
    for key, value in tree.items():
        here = (*path, key)
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(target[key], dict) and isinstance(value, dict):
            conflict = _merge_into(target[key], value, here)
            if conflict is not None:
                return conflict
        else:
            return here
    return None


# ---------------------------------------------------------------------------------------------
# rules (from regorus's AST)


def parse_rules(
    root: Path, sources: Mapping[str, str], rego_v0: bool = False
) -> tuple[RuleInfo, ...]:
    """Parse each source on its own; the rule heads found, or every syntax error."""
    problems = _Problems()
    rules: list[RuleInfo] = []
    for rel in sorted(sources):
        found = problems.attempt(_parse_one, (root / rel).as_posix(), sources[rel], rego_v0)
        rules.extend(found or ())
    problems.raise_any()
    return tuple(rules)


def _parse_one(name: str, text: str, rego_v0: bool) -> tuple[RuleInfo, ...]:
    engine = new_engine(rego_v0=rego_v0)
    try:
        add_policy(engine, name, text, rego_v0=rego_v0)
    except RuntimeError as exc:
        raise config_error_from_regorus(exc, fallback_file=name, source=text) from exc
    return rules_of_engine(engine)


def rules_of_engine(engine: Any) -> tuple[RuleInfo, ...]:
    """Every rule head of the policies added to an engine (parsed, not compiled)."""
    modules = json.loads(engine.get_ast_as_json())
    rules: list[RuleInfo] = []
    for module in modules:
        file = module.get("source", {}).get("file", "")
        ast = module.get("ast", {})
        package = _static_path(ast.get("package", {}).get("refr"))
        if not package:
            continue
        rules.extend(_rule_info(f"data.{package}", file, rule) for rule in ast.get("rules", []))
    return tuple(r for r in rules if r.name)


def _rule_info(package: str, file: str, rule: dict[str, Any]) -> RuleInfo:
    kind, body = next(iter(rule.items()))
    if kind == "Default":
        head, function = body, bool(body.get("args"))
    else:
        head_kind, head = next(iter(body.get("head", {"": {}}).items()))
        function = head_kind == "Func"
    line = int(head.get("span", body.get("span", {})).get("line", 0))
    return RuleInfo(
        package=package,
        name=_static_path(head.get("refr")),
        file=file,
        line=line,
        function=function,
    )


def _static_path(ref: Any) -> str:
    """`a.b["c"][x].d` → "a.b.c" (the part before the first non-constant key)."""
    parts = _ref_parts(ref)
    static: list[str] = []
    for part in parts:
        if part is None:
            break
        static.append(part)
    return ".".join(static)


def _ref_parts(ref: Any) -> list[str | None]:
    if not isinstance(ref, dict) or len(ref) != 1:
        return [None]
    kind, node = next(iter(ref.items()))
    if kind == "Var":
        return [node.get("value")]
    if kind == "RefDot":
        field_ = node.get("field")
        key = field_[1] if isinstance(field_, list) and len(field_) == 2 else None
        return [*_ref_parts(node.get("refr")), key if isinstance(key, str) else None]
    if kind == "RefBrack":
        index = node.get("index", {})
        key = index.get("String", {}).get("value") if isinstance(index, dict) else None
        return [*_ref_parts(node.get("refr")), key if isinstance(key, str) else None]
    return [None]


def _check_rule_data_conflicts(
    root: Path, rules: tuple[RuleInfo, ...], rooted: list[tuple[str, dict[str, Any]]]
) -> None:
    for rule in rules:
        path = rule.path.split(".")[1:]
        for rel, tree in rooted:
            if _occupies(tree, path):
                name = (root / rel).as_posix()
                raise PolicyConfigError(
                    f"{name}: data.{'.'.join(path)} conflicts with rule {rule.path} "
                    f"defined at {rule.file}:{rule.line}",
                    file=name,
                )


def _occupies(tree: Any, path: list[str]) -> bool:
    """True when data has a value at path, or a non-object value on the way to it."""
    node = tree
    for key in path:
        if not isinstance(node, dict):
            return True
        if key not in node:
            return False
        node = node[key]
    return True
