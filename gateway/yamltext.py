"""Values loaded from YAML files (manifests, policy data, the auth file) with aliases checked.

A YAML alias repeats the node it names without copying it, so a small file can stand for an
enormous value ("billion laughs"), or for one that contains itself. Everything after loading
walks values as if they were copied, so such a file is refused right after loading, naming
the problem, before any CPU is spent on it.
"""

from __future__ import annotations

from typing import Any

MAX_YAML_VALUES = 100_000


class YamlExpansionError(ValueError):
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
            raise YamlExpansionError(f"the YAML expands to more than {limit} values (an alias "
                                     "repeats everything it refers to)")
        sizes[key] = total
        return total

    try:
        size(value)
    except RecursionError as exc:
        raise YamlExpansionError("the YAML nests too deeply") from exc
