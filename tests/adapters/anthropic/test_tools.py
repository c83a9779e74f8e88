"""tool_declarations: ToolParam shape and when `strict: true` is declared."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolParam

from adapters.anthropic_messages import ADAPTER
from adapters.events import ToolSpec
from tests.adapters.anthropic.support import MODEL, as_tools, load_json, sdk_client, validate
from tests.adapters.loopback import LoopbackServer, Reply


def _object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
        **extra,
    }


STRICT_SCHEMAS = {
    "flat": _object({"city": {"type": "string", "description": "City name"}}),
    "no properties": _object({}),
    "nested": _object(
        {
            "trip": _object(
                {"from": {"type": "string"}, "date": {"type": "string", "format": "date"}}
            ),
            "seats": {"type": "array", "minItems": 1, "items": _object({"id": {"type": "string"}})},
            "class": {"enum": ["first", "second"]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        }
    ),
    "defs": _object(
        {"leg": {"$ref": "#/$defs/leg"}}, **{"$defs": {"leg": _object({"to": {"type": "string"}})}}
    ),
}

NON_STRICT_SCHEMAS = {
    "additionalProperties missing": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
    },
    "optional property": {
        **_object({"a": {"type": "string"}, "b": {"type": "string"}}),
        "required": ["a"],
    },
    "nested object open": _object(
        {"inner": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
    ),
    "additionalProperties schema": {**_object({}), "additionalProperties": {"type": "string"}},
    "numeric bound": _object({"n": {"type": "integer", "minimum": 1}}),
    "string pattern": _object({"s": {"type": "string", "pattern": "^[A-Z]+$"}}),
    "type list": _object({"s": {"type": ["string", "null"]}}),
    "unsupported format": _object({"s": {"type": "string", "format": "color"}}),
    "minItems 2": _object({"l": {"type": "array", "items": {"type": "string"}, "minItems": 2}}),
    "recursive ref": _object(
        {"node": {"$ref": "#/$defs/node"}},
        **{
            "$defs": {
                "node": _object({"next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}})
            }
        },
    ),
    "dangling ref": _object({"a": {"$ref": "#/$defs/missing"}}),
    "root not an object": {"type": "array", "items": {"type": "string"}},
}


@pytest.mark.parametrize("schema", STRICT_SCHEMAS.values(), ids=STRICT_SCHEMAS.keys())
def test_qualifying_schemas_are_strict(schema: dict[str, Any]) -> None:
    (declaration,) = ADAPTER.tool_declarations([ToolSpec("t", "A tool.", schema)])
    assert declaration == {
        "name": "t",
        "description": "A tool.",
        "input_schema": schema,
        "strict": True,
    }
    validate(ToolParam, declaration)


@pytest.mark.parametrize("schema", NON_STRICT_SCHEMAS.values(), ids=NON_STRICT_SCHEMAS.keys())
def test_other_schemas_are_not_strict(schema: dict[str, Any]) -> None:
    (declaration,) = ADAPTER.tool_declarations([ToolSpec("t", "A tool.", schema)])
    assert declaration == {"name": "t", "description": "A tool.", "input_schema": schema}
    validate(ToolParam, declaration)


def test_declarations_do_not_share_the_manifest_schema() -> None:
    spec = ToolSpec("t", "A tool.", STRICT_SCHEMAS["nested"])
    (declaration,) = ADAPTER.tool_declarations([spec])
    declaration["input_schema"]["properties"].clear()
    assert spec.input_schema["properties"]


def test_declarations_through_the_sdk(server: LoopbackServer) -> None:
    specs = [
        ToolSpec(name, f"Tool {name}.", schema)
        for name, schema in [
            ("strict_tool", STRICT_SCHEMAS["nested"]),
            ("loose_tool", NON_STRICT_SCHEMAS["optional property"]),
        ]
    ]
    tools = ADAPTER.tool_declarations(specs)
    server.queue(Reply.json(load_json("message_tool_use.json")))
    with sdk_client(server) as client:
        reply = client.messages.create(
            model=MODEL,
            max_tokens=256,
            tools=as_tools(tools),
            messages=[{"role": "user", "content": "weather?"}],
        )
    assert reply.stop_reason == "tool_use"
    body = server.received[0].json()
    assert body["tools"] == tools
    assert [tool.get("strict") for tool in body["tools"]] == [True, None]
