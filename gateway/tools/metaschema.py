"""The JSON Schema 2020-12 metaschema as one schema, for checking manifests' schemas quickly.

The published metaschema is an `allOf` of seven vocabulary metaschemas, each of which refers
back to "any valid schema" with `{"$dynamicRef": "#meta"}`. Validating against it resolves
that dynamic reference, through the seven vocabularies, at every level of the schema being
checked: about 2 ms a schema, most of a start-up with thousands of manifests. `flattened()`
builds, from the same published documents, one schema with the same meaning: the vocabularies'
keywords side by side (no keyword belongs to two of them), `#meta` as a plain `{"$ref": "#"}`
(the dynamic scope of a schema checked on its own has only the metaschema's anchor), their
`$defs` together (a name shared by two vocabularies has one definition), and the document-
relative references pointed at those. A schema passes it exactly when it passes the published
metaschema (tests/gateway/tools/test_metaschema.py checks both agree), five times faster.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from jsonschema_specifications import REGISTRY

BASE = "https://json-schema.org/draft/2020-12/"
META = BASE + "schema"
_DROPPED = ("$schema", "$id", "$vocabulary", "$dynamicAnchor", "$comment", "title")


@cache
def flattened() -> dict[str, Any]:
    """A new copy each process, never changed after (jsonschema only reads it)."""
    top: dict[str, Any] = REGISTRY.contents(META)
    flat: dict[str, Any] = {"type": top["type"], "properties": {}, "$defs": {}}
    parts = [REGISTRY.contents(BASE + ref["$ref"]) for ref in top["allOf"]]
    for part in [*parts, {k: v for k, v in top.items() if k != "allOf"}]:
        unknown = set(part) - {*_DROPPED, "type", "properties", "$defs"}
        if unknown or part.get("type", top["type"]) != top["type"]:
            raise ValueError(f"the 2020-12 metaschema has changed: {sorted(unknown)}")
        for section in ("properties", "$defs"):
            for name, schema in part.get(section, {}).items():
                plain = _plain(schema)
                if flat[section].get(name, plain) != plain:
                    raise ValueError(f"the 2020-12 metaschema defines {section}/{name} twice")
                flat[section][name] = plain
    return flat


def _plain(node: Any) -> Any:
    """node with `#meta` a reference to the root, and references into a vocabulary's own
    `$defs` (`#/$defs/x` or `meta/validation#/$defs/x`) into the flattened ones."""
    if isinstance(node, list):
        return [_plain(item) for item in node]
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$dynamicRef":
            if value != "#meta":
                raise ValueError(f"the 2020-12 metaschema has changed: $dynamicRef {value}")
            out["$ref"] = "#"
        elif key == "$ref":
            _, _, fragment = value.partition("#")
            if not fragment.startswith("/$defs/"):
                raise ValueError(f"the 2020-12 metaschema has changed: $ref {value}")
            out["$ref"] = "#" + fragment
        else:
            out[key] = _plain(value)
    return out
