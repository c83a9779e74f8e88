"""Builtins the embedded engine has but answers differently from OPA, replaced here.

- `strings.count(search, substring)`: Go's `strings.Count` (non-overlapping matches; an empty
  substring counts the characters plus one). The engine's own panics on an empty substring and
  counts overlapping matches.
- `json.is_valid(x)`: false for anything that is not a string holding strict JSON (the engine
  raises a type error for a non-string).
- `regex.replace(s, pattern, value)`: an error for a pattern that is not a regular expression,
  as OPA's (the engine leaves the call undefined), else the engine's own replacement.
- `yaml.is_valid(x)`: false for a non-string (the engine raises); for a string, whether its
  first document parses, as OPA 1.9's YAML reader reads only that one (the engine refuses a
  stream of several documents). A `%YAML` directive other than 1.1 is not valid to it, nor is
  what OPA's reader refuses and PyYAML would make or raise on: a value its explicit tag cannot
  make (`!!float "x"`), an escape of a UTF-16 surrogate or beyond Unicode, a document of
  excessive aliasing or an alias inside what it names (go-yaml's rule), an infinity or NaN
  value (no JSON form); an integer too long for Python and an untagged number too large for a
  double are valid, as OPA reads them (as strings).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import yaml

from gateway.jsontext import has_lone_surrogate
from gateway.policy.builtins.base import BuiltinError, Extension, string_operand
from gateway.policy.builtins.located import native


def strings_count(search: Any, substring: Any) -> int:
    text, sub = string_operand(search, 1), string_operand(substring, 2)
    if not sub:
        return len(text) + 1
    return text.count(sub)


def json_is_valid(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value, parse_constant=_reject)
    except ValueError:
        return False
    return True


def _reject(token: str) -> Any:
    raise ValueError(token)


_native_replace = native("regex.replace", 3)
_native_is_valid = native("regex.is_valid", 1)


@functools.lru_cache(maxsize=256)
def _valid_pattern(pattern: str) -> bool:
    return _native_is_valid(pattern) is True


def regex_replace(value: Any, pattern: Any, replacement: Any) -> Any:
    string_operand(value, 1)
    if not _valid_pattern(string_operand(pattern, 2)):
        raise BuiltinError(f"error parsing regexp: invalid pattern `{pattern}`")
    string_operand(replacement, 3)
    return _native_replace(value, pattern, replacement)


_YAML_DIRECTIVE = re.compile(r"^%YAML\s+(\S+)", re.MULTILINE)


class _AsOpaReads(yaml.SafeLoader):
    """SafeLoader reading as OPA 1.9's YAML reader judges a text (answers checked with it)."""

    def construct_scalar(self, node: yaml.ScalarNode) -> Any:
        value = super().construct_scalar(node)
        if isinstance(value, str) and has_lone_surrogate(value):
            raise yaml.YAMLError("found invalid Unicode character escape code")
        return value

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            text = str(node.value)
            if text.lstrip("+-").replace("_", "").isdigit():  # beyond the digits Python reads:
                return text  # OPA's reader keeps the text
            raise  # not an integer at all (`!!int "x"`)

    def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:
        explicit = self.peek_event().tag not in (None, "!")
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)
        node.explicit = explicit  # (read by construct_yaml_float)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        for key_node, _ in node.value:
            key_node.is_key = True  # (go-yaml writes a key as text, whatever it holds)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> Any:
        """As go-yaml reads a text into JSON: an infinity or NaN has no JSON form (invalid);
        a number too large for a double, untagged, is a string to it (`1e400`)."""
        value: float = super().construct_yaml_float(node)
        if math.isfinite(value):
            return value
        text = str(node.value)
        if getattr(node, "is_key", False):
            return text
        if getattr(node, "explicit", True) or text.lstrip("+-").lower() in (".inf", ".nan"):
            raise yaml.YAMLError("an infinity or NaN has no JSON form")
        return text


_AsOpaReads.add_constructor("tag:yaml.org,2002:int", _AsOpaReads.construct_yaml_int)
_AsOpaReads.add_constructor("tag:yaml.org,2002:float", _AsOpaReads.construct_yaml_float)


def yaml_is_valid(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    directive = _YAML_DIRECTIVE.search(value)
    if directive and directive.group(1) != "1.1":
        return False
    try:
        first = next(iter(yaml.load_all(value, Loader=_AsOpaReads)), None)  # noqa: S506
    except yaml.YAMLError:
        return False
    # a value PyYAML cannot make of the text (`!!float "x"`, `!!bool maybe`, an escape beyond
    # Unicode, nesting past Python's recursion) is not valid YAML either: never an error
    except (ValueError, KeyError, OverflowError, TypeError, RecursionError):
        return False
    return _aliasing_allowed(first)


# OPA's YAML reader (go-yaml v2) refuses a document whose aliases expand too much: past 100
# values decoded under an alias and 1,000 in all, the share decoded under aliases may be 99%
# up to 400,000 values, falling to 10% at 4,000,000; and an alias inside what it names
_ALIAS_RANGE = (400_000, 4_000_000)


def _allowed_alias_ratio(decoded: int) -> float:
    low, high = _ALIAS_RANGE
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


def _aliasing_allowed(document: Any) -> bool:
    """go-yaml's check, on the value PyYAML made: a list or mapping met again is an alias
    (PyYAML shares it where go-yaml decodes it again), so its values count as decoded under
    one; one met inside itself is an alias of what contains it. Stops as soon as it fails."""
    decoded = aliased = 0
    seen: set[int] = set()
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool, bool]] = [(document, False, False)]  # (value, under, leaving)
    while stack:
        item, under, leaving = stack.pop()
        if leaving:
            open_ids.discard(id(item))
            continue
        decoded += 1
        aliased += under
        if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
            return False  # "document contains excessive aliasing"
        if not isinstance(item, dict | list):
            continue
        key = id(item)
        if key in open_ids:
            return False  # "anchor value contains itself"
        if key in seen:
            under = True  # decoded again: an alias (counted as its own node too, as go-yaml)
            decoded += 1
            aliased += 1
        seen.add(key)
        open_ids.add(key)
        stack.append((item, under, True))
        children = [v for pair in item.items() for v in pair] if isinstance(item, dict) else item
        stack.extend((child, under, False) for child in reversed(children))
    return True


EXTENSIONS = (
    Extension("strings.count", 2, strings_count),
    Extension("json.is_valid", 1, json_is_valid),
    Extension("yaml.is_valid", 1, yaml_is_valid),
    Extension("regex.replace", 3, regex_replace),
)
