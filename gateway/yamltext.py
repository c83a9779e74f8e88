"""Values loaded from YAML files (manifests, policy data, the auth file) with aliases checked,
and `read_yaml`, the strict reader for a YAML file that holds JSON data.

A YAML alias repeats the node it names without copying it, so a small file can stand for an
enormous value ("billion laughs"), or for one that contains itself. Everything after loading
walks values as if they were copied, so such a file is refused right after loading, naming
the problem, before any CPU is spent on it.

`read_yaml` holds YAML to what `gateway.jsontext` holds JSON to: a key given twice in one
mapping (which a lax reader answers with the last value, silently), a key that is not a
string, `.nan` and `.inf`, and values JSON has no type for (`!!binary`, `!!set`, explicit
timestamps) are refused, naming the line; dates stay strings. Every YAML reader here refuses
a lone UTF-16 surrogate (a `\\ud800` escape: no UTF-8 text, canonical JSON or hash can
hold one).
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from gateway.jsontext import MAX_INTEGER_DIGITS, MAX_SAFE_INTEGER, has_lone_surrogate

MAX_YAML_VALUES = 100_000
_TOO_LONG = 10**MAX_INTEGER_DIGITS


class YamlTextError(ValueError):
    """A YAML text that is not plain JSON data; the message says why, and where (`line`, when
    one is known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class YamlExpansionError(YamlTextError):
    pass


def check_expansion(value: Any, limit: int = MAX_YAML_VALUES) -> None:
    """Refuse a loaded value that expands to more than `limit` values, or contains itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        if not isinstance(node, dict | list):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise YamlExpansionError("a YAML alias refers to a node that contains it")
        open_nodes.add(key)
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1 + sum(size(child) for child in children)
        open_nodes.discard(key)
        if total > limit:
            raise YamlExpansionError(
                f"the YAML expands to more than {limit} values (an alias "
                "repeats everything it refers to)"
            )
        sizes[key] = total
        return total

    try:
        size(value)
    except RecursionError as exc:
        raise YamlExpansionError("the YAML nests too deeply") from exc


# ---------------------------------------------------------------------- the strict reader


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _at(node: yaml.Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}"


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses repeated and non-string keys and non-finite numbers."""

    def construct_mapping(
        self,
        node: yaml.MappingNode,
        deep: bool = False,
    ) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base`: the keys written beside it override the merged ones
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise YamlTextError(
                    f"{_at(key_node)}: key {key!r} is not a string "
                    "(JSON object keys are strings; quote it)",
                    _line(key_node),
                )
            if key in seen:
                raise YamlTextError(
                    f"{_at(key_node)}: duplicate key {key!r}: a reader could take either value",
                    _line(key_node),
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_scalar(self, node: yaml.ScalarNode) -> Any:
        value = super().construct_scalar(node)
        if isinstance(value, str) and has_lone_surrogate(value):
            raise YamlTextError(
                f"{_at(node)}: a string holds a lone UTF-16 surrogate ({ascii(value[:40])}), "
                "which is not Unicode text: YAML's \\u escape writes one UTF-16 unit, so a "
                "character beyond U+FFFF is written as itself or as \\U0001F600 (eight "
                "digits), not as a pair of \\u escapes",
                _line(node),
            )
        return value

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value Python cannot make of what the file says (`!!float "x"`, `!!bool maybe`) is
        the file's problem at that node's line, not PyYAML's ValueError or KeyError."""
        try:
            return super().construct_object(node, deep=deep)
        except YamlTextError:
            raise
        except (ValueError, KeyError, OverflowError, TypeError) as exc:
            tag = str(node.tag).rsplit(":", 1)[-1]
            raise YamlTextError(
                f"{_at(node)}: this value cannot be read as a {tag}: {exc}", _line(node)
            ) from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            value: int = super().construct_yaml_int(node)
        except ValueError:  # beyond the digits Python reads (sys.get_int_max_str_digits)
            value = _TOO_LONG
        if abs(value) >= _TOO_LONG:  # (nor could it be written in decimal, as JSON does)
            digits = sum(c.isdigit() for c in str(node.value))
            raise YamlTextError(
                f"{_at(node)}: an integer of {digits} digits is too long to read (at most "
                f"{MAX_INTEGER_DIGITS} decimal digits)",
                _line(node),
            )
        return value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value: float = super().construct_yaml_float(node)
        if not math.isfinite(value):
            name = "NaN" if math.isnan(value) else "an infinity"
            raise YamlTextError(f"{_at(node)}: {name} is not a JSON number", _line(node))
        return value


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class SafeIntegerLoader(StrictLoader):
    """StrictLoader that also refuses an integer outside ±(2^53 − 1), as the JSON reader does
    by default: every JSON reader keeps it as a double, and canonical JSON has no form for it
    (for values that are hashed, as a tool's definition is)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        value: int = super().construct_yaml_int(node)
        if abs(value) > MAX_SAFE_INTEGER:
            raise YamlTextError(
                f"{_at(node)}: the integer {str(node.value)[:40]} is outside ±(2^53 − 1), "
                "the range every JSON reader keeps exactly",
                _line(node),
            )
        return value


SafeIntegerLoader.add_constructor("tag:yaml.org,2002:int", SafeIntegerLoader.construct_yaml_int)


def read_yaml(text: str) -> Any:
    """The JSON value of one YAML document; YamlTextError naming the problem and its line."""
    (value,) = _documents(text, single=True)
    return value


def read_yaml_documents(text: str, *, safe_integers: bool = False) -> list[Any]:
    """The JSON value of every document of a YAML text, held to the rules of `read_yaml`;
    `safe_integers`: an integer outside ±(2^53 − 1) is refused too."""
    return _documents(
        text, single=False, loader=SafeIntegerLoader if safe_integers else StrictLoader
    )


def _documents(text: str, *, single: bool, loader: type[StrictLoader] = StrictLoader) -> list[Any]:
    try:
        if single:
            values = [yaml.load(text, Loader=loader)]  # noqa: S506  (a SafeLoader)
        else:
            values = list(yaml.load_all(text, Loader=loader))  # noqa: S506
    except RecursionError as exc:
        raise YamlTextError("the YAML nests too deeply") from exc
    except YamlTextError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        line = mark.line + 1 if mark else None
        raise YamlTextError(f"invalid YAML: {exc.problem or exc.context}{where}", line) from exc
    except yaml.YAMLError as exc:
        raise YamlTextError(f"invalid YAML: {exc}") from exc
    except (ValueError, KeyError, OverflowError, TypeError) as exc:  # (e.g. "\UFFFFFFFF")
        raise YamlTextError(f"invalid YAML: {exc}") from exc
    check_expansion(values)
    _check_types(values)
    return values


_SCALARS = (str, int, float, bool, type(None))


def _check_types(value: Any) -> None:
    """Every value is JSON's: explicit tags can still make bytes, sets, pairs or dates."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not isinstance(item, _SCALARS):
            raise YamlTextError(
                f"a value of YAML type {type(item).__name__} has no JSON type "
                "(drop its explicit tag)"
            )
