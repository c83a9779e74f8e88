"""Loading tool manifests (docs/tools.md): models, rules, schemas, env expansion, redaction."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from gateway.audit.keys import AuditKey
from gateway.canonical import canonical
from gateway.errors import ConfigError
from gateway.model import Effect
from gateway.tools import Registry, Tool
from tests.gateway.executors.target import running_target
from tests.support.manifests import base, load_error, write

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "travel" / "tools"

PY = "tests.gateway.executors.sample_tools"


async def load(directory: Path, env: dict[str, str] | None = None) -> Registry:
    return Registry.load(directory, env=env or {})


def only_tool(registry: Registry) -> Tool:
    [tool] = registry.tools()
    return tool


async def test_loads_the_travel_example_manifests() -> None:
    registry = Registry.load(EXAMPLES, env={"CALLGATE_TRAVEL_URL": "http://127.0.0.1:9999"})
    try:
        assert [t.name for t in registry.tools()] == ["get_train_status", "get_weather"]
        train = registry.get("get_train_status")
        assert train is not None
        assert (train.version, train.effect, train.parallel_safe, train.repeatable) == (
            "1.0.0",
            Effect.READ,
            True,
            True,
        )
        assert train.labels["domain"] == "travel"
        assert train.source == EXAMPLES / "get_train_status.yaml"
        assert train.manifest.executor.timeout_s == 2
        assert train.manifest.executor.url == "http://127.0.0.1:9999/train_status"  # type: ignore[union-attr]
        weather = registry.get("get_weather")
        assert weather is not None and weather.manifest.executor.timeout_s == 1
        assert registry.get("nope") is None and "get_weather" in registry and len(registry) == 2
    finally:
        await registry.aclose()


async def test_example_urls_default_to_port_8765() -> None:
    registry = Registry.load(EXAMPLES, env={})
    tool = registry.get("get_weather")
    assert tool is not None
    assert tool.manifest.executor.url == "http://127.0.0.1:8765/weather"  # type: ignore[union-attr]
    await registry.aclose()


async def test_json_file_with_a_list_and_yaml_with_documents(tmp_path: Path) -> None:
    write(tmp_path, "many.json", [base(name="a", effect="read"), base(name="b")])
    write(
        tmp_path,
        "docs.yml",
        yaml.safe_dump(base(name="c")) + "---\n" + yaml.safe_dump(base(name="d")),
    )
    write(tmp_path, "notes.txt", "ignored")
    registry = await load(tmp_path)
    assert [t.name for t in registry.tools()] == ["a", "b", "c", "d"]
    await registry.aclose()


async def test_defaults_for_reads_and_writes(tmp_path: Path) -> None:
    write(tmp_path, "w.yaml", base())
    write(tmp_path, "r.yaml", base(name="look", effect="read", parallel_safe=False))
    registry = await load(tmp_path)
    reserve, look = registry.get("reserve"), registry.get("look")
    assert reserve is not None and look is not None
    assert (reserve.repeatable, reserve.parallel_safe) == (False, False)
    assert (look.repeatable, look.parallel_safe) == (True, False)
    m = reserve.manifest
    assert (m.retry.max_attempts, m.idempotency.enforced_by_target, m.reconcile) == (1, False, None)
    assert (m.executor.timeout_s, m.redact, m.labels) == (10, [], {})
    await registry.aclose()


async def test_write_may_say_repeatable_false(tmp_path: Path) -> None:
    write(tmp_path, "w.yaml", base(repeatable=False, parallel_safe=False))
    await (await load(tmp_path)).aclose()


BAD_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("missing_name", base(name=None), "name: Field required"),
    ("bad_name", base(name="no spaces"), "name: String should match pattern"),
    ("bad_effect", base(effect="delete"), "effect: Input should be 'read' or 'write'"),
    ("missing_schema", base(input_schema=None), "input_schema: Field required"),
    ("bad_schema", base(input_schema={"type": "nope"}), "input_schema.type: 'nope' is not valid"),
    (
        "bad_regex",
        base(input_schema={"properties": {"a": {"pattern": "("}}}),
        "input_schema.properties.a.pattern: '(' is not a 'regex'",
    ),
    (
        "bad_output_schema",
        base(output_schema={"required": "x"}),
        "output_schema.required: 'x' is not of type 'array'",
    ),
    (
        "old_draft",
        base(input_schema={"$schema": "http://json-schema.org/draft-07/schema#"}),
        "input_schema.$schema: ",
    ),
    (
        "broken_local_ref",
        base(input_schema={"$ref": "#/$defs/missing"}),
        "input_schema: $ref '#/$defs/missing' cannot be resolved",
    ),
    (
        "write_retry",
        base(retry={"max_attempts": 3}),
        "retry.max_attempts: a write may be retried only when idempotency.enforced_by_target",
    ),
    ("repeatable_write", base(repeatable=True), "repeatable: applies to reads only"),
    ("parallel_write", base(parallel_safe=True), "parallel_safe: applies to reads only"),
    (
        "reconcile_read",
        base(effect="read", reconcile={"type": "http", "url": "http://h/x"}),
        "reconcile: only writes are reconciled",
    ),
    (
        "unknown_field",
        base(executor={"type": "http", "url": "http://h/x", "urll": 1}),
        "executor.urll: Extra inputs are not permitted",
    ),
    ("missing_url", base(executor={"type": "http"}), "executor.url: Field required"),
    (
        "relative_url",
        base(executor={"type": "http", "url": "/reserve"}),
        "executor.url: '/reserve' is not an absolute http(s) URL",
    ),
    ("unknown_executor", base(executor={"type": "grpc"}), "executor: Input tag 'grpc'"),
    (
        "zero_timeout",
        base(executor={"type": "http", "url": "http://h/x", "timeout_s": 0}),
        "executor.timeout_s: Input should be greater than 0",
    ),
    (
        "reserved_header",
        base(executor={"type": "http", "url": "http://h/x", "headers": {"Idempotency-Key": "k"}}),
        "executor.headers: header 'Idempotency-Key' is set by callgate",
    ),
    (
        "reserved_accept",
        base(executor={"type": "http", "url": "http://h/x", "headers": {"accept": "text/html"}}),
        "executor.headers: header 'accept' is set by callgate",
    ),
    (
        "framing_header",
        base(executor={"type": "http", "url": "http://h/x", "headers": {"Content-Length": "5"}}),
        "executor.headers: header 'Content-Length' is set by callgate",
    ),
    (
        "lookup_placeholder",
        base(reconcile={"type": "http", "url": "http://h/{booking}"}),
        "reconcile.url: unknown placeholder {booking}",
    ),
    ("bad_pointer", base(redact=["email"]), "redact[0]: 'email' is not a JSON pointer"),
    ("label_type", base(labels={"tier": 1}), "labels.tier: Input should be a valid string"),
    (
        "unimportable",
        base(executor={"type": "python", "function": "no_such_mod.x:f"}),
        "executor.function: cannot import module 'no_such_mod.x': ModuleNotFoundError",
    ),
    (
        "missing_function",
        base(executor={"type": "python", "function": f"{PY}:nope"}),
        f"executor.function: module '{PY}' has no attribute 'nope'",
    ),
    (
        "not_callable",
        base(executor={"type": "python", "function": f"{PY}:NOT_CALLABLE"}),
        f"executor.function: '{PY}:NOT_CALLABLE' is not callable",
    ),
    (
        "bad_function_spec",
        base(executor={"type": "python", "function": "module.f"}),
        "executor.function: String should match pattern",
    ),
    (
        "unimportable_lookup",
        base(reconcile={"type": "python", "function": "nope_mod:f"}),
        "reconcile.function: cannot import module 'nope_mod'",
    ),
    (
        "unset_env",
        base(executor={"type": "http", "url": "${TRAVEL_NOT_SET}/x"}),
        "executor.url: environment variable TRAVEL_NOT_SET is not set",
    ),
]


@pytest.mark.parametrize(("case", "content", "expected"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_manifest_names_file_and_field(
    tmp_path: Path, case: str, content: dict[str, Any], expected: str
) -> None:
    path = write(tmp_path, f"{case}.yaml", content)
    message = load_error(tmp_path)
    assert f"{path}: {expected}" in message, message


def test_remote_ref_is_refused_and_never_fetched(tmp_path: Path) -> None:
    with running_target() as target:
        path = write(
            tmp_path,
            "remote.yaml",
            base(
                input_schema={
                    "type": "object",
                    "properties": {"p": {"$ref": f"{target.url}/person.json"}},
                }
            ),
        )
        message = load_error(tmp_path)
        assert target.seen == []
    assert f"{path}: input_schema: $ref '{target.url}/person.json' points outside" in message
    assert "never fetched" in message


def test_relative_ref_without_embedded_target_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "rel.yaml", base(input_schema={"$ref": "person.json"}))
    assert f"{path}: input_schema: $ref 'person.json' points outside" in load_error(tmp_path)


async def test_embedded_refs_resolve(tmp_path: Path) -> None:
    write(
        tmp_path,
        "refs.yaml",
        base(
            input_schema={
                "$id": "https://tools.example/reserve.json",
                "type": "object",
                "properties": {"who": {"$ref": "#/$defs/person"}, "seat": {"$ref": "seat.json"}},
                "$defs": {
                    "person": {"type": "string"},
                    "seat": {"$id": "seat.json", "type": "integer"},
                },
            }
        ),
    )
    registry = await load(tmp_path)
    tool = only_tool(registry)
    assert tool.validate_arguments({"who": "ann", "seat": 3}) is None
    assert tool.validate_arguments({"who": 1, "seat": "x"}) == (
        "/who: 1 is not of type 'string'; /seat: 'x' is not of type 'integer'"
    )
    await registry.aclose()


def test_duplicate_names_across_files(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", base())
    second = write(tmp_path, "b.yaml", base())
    message = load_error(tmp_path)
    assert f"{second}: name: duplicate tool name 'reserve' (already defined in " in message
    assert str(tmp_path / "a.yaml") in message


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.yaml", "name: x\neffect: [read\n")
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: invalid YAML: ")
    assert "line 3" in message


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.json", '{\n  "name": "x",\n}')
    assert f"{path}: invalid JSON: " in load_error(tmp_path)


def test_entry_in_a_list_is_named_by_index(tmp_path: Path) -> None:
    path = write(tmp_path, "many.yaml", [base(name="a"), base(name="b", effect="erase")])
    assert f"{path}: [1].effect: Input should be" in load_error(tmp_path)


@pytest.mark.parametrize("content", ["", "# only a comment\n", "[]", "just text"])
def test_file_without_a_tool(tmp_path: Path, content: str) -> None:
    path = write(tmp_path, "empty.yaml", content)
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: ")
    assert "no tool manifest" in message or "must be a mapping" in message


def test_rule_problem_in_a_list_is_named_by_index(tmp_path: Path) -> None:
    path = write(tmp_path, "many.yaml", [base(name="a"), base(name="b", repeatable=True)])
    assert f"{path}: [1].repeatable: applies to reads only" in load_error(tmp_path)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", base(name=None, effect="x"))
    write(tmp_path, "b.yaml", base(retry={"max_attempts": 2}))
    lines = load_error(tmp_path).splitlines()
    assert len(lines) == 3
    assert [line.split(": ")[1] for line in lines] == ["name", "effect", "retry.max_attempts"]


def test_missing_or_empty_directory(tmp_path: Path) -> None:
    assert "does not exist" in load_error(tmp_path / "nope")
    assert "no tool manifests" in load_error(tmp_path)


async def test_write_retry_allowed_with_enforced_idempotency(tmp_path: Path) -> None:
    write(
        tmp_path,
        "w.yaml",
        base(retry={"max_attempts": 3}, idempotency={"enforced_by_target": True}),
    )
    assert only_tool(await load(tmp_path)).manifest.retry.max_attempts == 3


async def test_python_tool_imports_at_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "p.yaml",
        base(executor={"type": "python", "function": f"{PY}:echo", "timeout_s": 1}),
    )
    assert only_tool(await load(tmp_path)).name == "reserve"


async def test_env_expansion_in_string_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "env.yaml",
        textwrap.dedent("""\
        name: reserve
        version: "${TOOL_VERSION:-0.0.1}"
        description: "costs $$5, literally $${NOT_EXPANDED}"
        effect: write
        input_schema: {type: object, pattern_note: "^a${1,2}$"}
        executor:
          type: http
          url: "${RESERVE_URL:-http://127.0.0.1:9}/reserve"
          timeout_s: "${RESERVE_TIMEOUT:-5}"
          headers: {Authorization: "Bearer ${RESERVE_TOKEN}"}
        labels: {owner: "${OWNER:-events}", empty: "${EMPTY_VAR}"}
        """),
    )
    registry = await load(
        tmp_path,
        env={
            "RESERVE_URL": "http://10.0.0.7:81",
            "RESERVE_TOKEN": "s3cret",
            "RESERVE_TIMEOUT": "2.5",
            "EMPTY_VAR": "",
            "OWNER": "",
        },
    )
    tool = only_tool(registry)
    cfg = tool.manifest.executor
    assert cfg.url == "http://10.0.0.7:81/reserve"  # type: ignore[union-attr]
    assert cfg.timeout_s == 2.5
    assert cfg.headers == {"Authorization": "Bearer s3cret"}  # type: ignore[union-attr]
    assert tool.version == "0.0.1"
    assert tool.description == "costs $$5, literally ${NOT_EXPANDED}"
    assert tool.manifest.input_schema["pattern_note"] == "^a${1,2}$"
    assert tool.labels == {"owner": "events", "empty": ""}
    await registry.aclose()


async def test_env_defaults_to_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALLGATE_TRAVEL_URL", "http://127.0.0.1:7777")
    registry = Registry.load(EXAMPLES)
    tool = registry.get("get_train_status")
    assert tool is not None
    assert tool.manifest.executor.url == "http://127.0.0.1:7777/train_status"  # type: ignore[union-attr]
    await registry.aclose()


async def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    write(
        tmp_path,
        "d.yaml",
        base(effect="read")
        | {"input_schema": {"type": "object", "properties": {"date": {"default": "X"}}}},
    )
    text = (tmp_path / "d.yaml").read_text().replace("default: X", "default: 2025-01-31")
    (tmp_path / "d.yaml").write_text(text)
    tool = only_tool(await load(tmp_path))
    assert tool.input_schema["properties"]["date"]["default"] == "2025-01-31"


@pytest.fixture
async def train() -> Tool:
    registry = Registry.load(EXAMPLES, env={})
    tool = registry.get("get_train_status")
    assert tool is not None
    return tool


async def test_valid_arguments(train: Tool) -> None:
    assert train.validate_arguments({"train_number": "ICE123", "date": "2025-03-01"}) is None


async def test_argument_message_names_path_and_problem(train: Tool) -> None:
    message = train.validate_arguments({"train_number": "x!", "date": "2025-03-01"})
    assert message == "/train_number: 'x!' does not match '^[A-Z]{1,4}[0-9]{1,5}$'"


async def test_argument_messages_are_joined(train: Tool) -> None:
    message = train.validate_arguments({"train_number": 7, "date": "2025-02-30", "x": 1})
    assert message is not None
    parts = message.split("; ")
    assert parts[0] == "(root): Additional properties are not allowed ('x' was unexpected)"
    assert "/date: '2025-02-30' is not a 'date'" in parts
    assert "/train_number: 7 is not of type 'string'" in parts
    assert (
        train.validate_arguments({}) == "(root): 'train_number' is a required property; "
        "(root): 'date' is a required property"
    )


async def test_argument_messages_are_capped_at_five(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(input_schema={"type": "object", "additionalProperties": {"type": "integer"}}),
    )
    tool = only_tool(await load(tmp_path))
    message = tool.validate_arguments({f"k{i}": "s" for i in range(8)})
    assert message is not None
    assert message.count(" is not of type 'integer'") == 5
    assert message.endswith("; and 3 more")


async def test_nested_paths_are_json_pointers(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(
            input_schema={
                "type": "object",
                "properties": {
                    "a/b": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"n": {"type": "integer"}}},
                    }
                },
            }
        ),
    )
    tool = only_tool(await load(tmp_path))
    assert tool.validate_arguments({"a/b": [{"n": 1}, {"n": "2"}]}) == (
        "/a~1b/1/n: '2' is not of type 'integer'"
    )


async def test_redaction_masks_pointers_and_leaves_the_input_alone(tmp_path: Path) -> None:
    write(
        tmp_path,
        "t.yaml",
        base(redact=["/participant/email", "/cards/*/number", "/a~1b", "/missing/x", "/list/1"]),
    )
    tool = only_tool(await load(tmp_path))
    args = {
        "participant": {"name": "Ann", "email": "ann@example.com"},
        "cards": [{"number": "4111", "exp": "12/30"}, {"number": "5500"}],
        "a/b": "secret",
        "list": ["keep", "hide"],
        "seat": 3,
    }
    original = json.loads(json.dumps(args))
    key = AuditKey(b"k" * 32)
    masked = tool.masked(args, key)
    m = key.mask
    assert masked.value == {
        "participant": {"name": "Ann", "email": m("ann@example.com")},
        "cards": [{"number": m("4111"), "exp": "12/30"}, {"number": m("5500")}],
        "a/b": m("secret"),
        "list": ["keep", m("hide")],
        "seat": 3,
    }
    assert masked.pointers == (
        "/participant/email",
        "/cards/0/number",
        "/cards/1/number",
        "/a~1b",
        "/list/1",
    )
    assert args == original
    assert not tool.redact_stored  # the default: only the audit trail is masked


async def test_from_manifests_uses_the_same_checks() -> None:
    registry = Registry.from_manifests([base(name="b"), base(name="a", effect="read")], env={})
    assert [t.name for t in registry.tools()] == ["a", "b"]
    await registry.aclose()
    with pytest.raises(ConfigError, match=r"<manifests>: \[1\]\.name: duplicate tool name"):
        Registry.from_manifests([base(), base()], env={})


def test_a_key_written_twice_in_a_manifest_is_refused_naming_the_line(tmp_path: Path) -> None:
    # a lax reader keeps the last value: `effect: read` then `effect: write` would be a write
    text = "name: x\nversion: '1'\neffect: read\neffect: write\n"
    path = write(tmp_path, "twice.yaml", text)
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: ")
    assert "line 4" in message and "duplicate key 'effect'" in message


async def test_manifests_share_their_given_fields_and_keep_them_right(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", base(name="a"))
    write(tmp_path, "b.yaml", base(name="b"))
    write(tmp_path, "c.yaml", base(name="c", labels={"team": "x"}))
    registry = await load(tmp_path)
    a, b, c = (registry.get(n) for n in "abc")
    assert a is not None and b is not None and c is not None
    assert a.manifest.model_fields_set is b.manifest.model_fields_set
    assert a.manifest.executor.model_fields_set is b.manifest.executor.model_fields_set
    assert c.manifest.model_fields_set == a.manifest.model_fields_set | {"labels"}
    assert set(c.manifest.model_dump(exclude_unset=True)) == set(base(name="c", labels={}))
    with pytest.raises(ValidationError, match="frozen"):  # so no set is added to
        a.manifest.description = "changed"
    with pytest.raises(ValidationError, match="frozen"):
        a.manifest.executor.timeout_s = 9
    assert b.manifest.model_fields_set == a.manifest.model_fields_set
    await registry.aclose()


async def test_a_definition_text_is_the_canonical_json_its_fingerprint_hashes(
    tmp_path: Path,
) -> None:
    write(tmp_path, "a.yaml", base(name="a", description="caf\u00e9 \u2028", labels={"k": "v"}))
    registry = await load(tmp_path)
    tool = only_tool(registry)
    made = await tool.definition()
    text = made.definition_json
    assert text == canonical(json.loads(text)).decode()
    assert made.fingerprint == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert json.loads(text)["description"] == "caf\u00e9 \u2028"
    assert made == await tool.definition() and hash(made) == hash(made.fingerprint)
    await registry.aclose()


@pytest.mark.parametrize(
    ("written", "line"),
    [
        ('description: "Books \\ud800 a seat."\n', 1),  # a lone one
        ('description: "Books \\ud83d\\ude00 a seat."\n', 1),  # a pair: not joined
        ('description: x\nlabels:\n  "\\udc00": x\n', 3),  # in a key
    ],
)
def test_a_yaml_escape_of_a_lone_surrogate_is_a_problem_not_a_crash(
    tmp_path: Path, written: str, line: int
) -> None:
    """YAML's `\\u` escape can write half of a UTF-16 pair, which no UTF-8 text, canonical
    JSON or hash can hold: it was a CanonicalizationError out of the load (start-up's
    traceback, a reload's "failed unexpectedly"); now the file's problem, with its line."""
    head = yaml.safe_dump({k: v for k, v in base().items() if k not in ("description", "labels")})
    path = write(tmp_path, "reserve.yaml", head + written)
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: ") and "surrogate" in message
    assert f"line {head.count(chr(10)) + line}" in message
    assert "\\U0001F600" in message  # says what to write instead


@pytest.mark.parametrize(
    "number", ["99999999999999999999", "-9007199254740992", "0x20000000000000"]
)
def test_a_yaml_integer_beyond_what_json_keeps_is_a_problem_not_a_crash(
    tmp_path: Path, number: str
) -> None:
    """As a JSON manifest's: an integer outside ±(2^53 − 1) has no canonical form (every JSON
    reader keeps it as a double), so the tool's definition could not be hashed; it was an
    IntegerDomainError out of the load. Now the file's problem, naming the line."""
    seats = {"type": "integer", "maximum": 1}
    fields = base(input_schema={"type": "object", "properties": {"seats": seats}})
    text = yaml.safe_dump(fields).replace("maximum: 1\n", f"maximum: {number}\n")
    path = write(tmp_path, "reserve.yaml", text)
    line = text[: text.index(number)].count("\n") + 1
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: line {line}, ") and "2^53" in message


def test_a_yaml_integer_within_what_json_keeps_loads(tmp_path: Path) -> None:
    seats = {"type": "integer", "maximum": 2**53 - 1}
    fields = base(input_schema={"type": "object", "properties": {"seats": seats}})
    write(tmp_path, "reserve.yaml", fields)
    tool = Registry.load(tmp_path, env={}).get("reserve")
    assert tool is not None
    assert tool.input_schema["properties"]["seats"]["maximum"] == 2**53 - 1


async def test_a_tool_makes_its_definition_when_first_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading makes no definitions (with thousands of tools they were a tenth of start-up);
    the first `definition()` makes the tool's, once."""
    import gateway.tools.registry as registry_module

    made: list[str] = []
    make = registry_module.manifest_definition

    def counted(manifest: Any, mcp_tool: str) -> dict[str, Any]:
        made.append(manifest.name)
        return make(manifest, mcp_tool)

    monkeypatch.setattr(registry_module, "manifest_definition", counted)
    write(tmp_path, "a.yaml", base(name="a"))
    write(tmp_path, "b.yaml", base(name="b"))
    registry = Registry.load(tmp_path, env={})
    assert made == []
    tool = registry.get("a")
    assert tool is not None
    first = await tool.definition()
    assert await tool.definition() is first and made == ["a"]
    await registry.aclose()


async def test_making_the_definition_adds_no_attribute(tmp_path: Path) -> None:
    """A tool's attributes share one key table with the other tools' only while each tool
    gets them in `__init__`: CPython copies the attributes of an object given a new one later
    to a table of its own (216 -> 832 bytes; the sidecar with 10,000 tools held 6.7 MB more
    once their definitions were made)."""
    write(tmp_path, "a.yaml", base(name="a"))
    registry = Registry.load(tmp_path, env={})
    tool = registry.get("a")
    assert tool is not None
    names = list(vars(tool))
    await tool.definition()
    assert list(vars(tool)) == names
    await registry.aclose()


def test_a_yaml_integer_too_long_to_read_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = write(tmp_path, "reserve.yaml", yaml.safe_dump(base()) + "x-n: " + "7" * 5000 + "\n")
    message = load_error(tmp_path)
    assert message.startswith(f"{path}: line ") and "5000 digits" in message
