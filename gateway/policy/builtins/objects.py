"""`object.subset` as OPA 1.9 has it (topdown/subset.go).

The engine answers false (or true) for operands of different kinds, where OPA fails with a
type error, and panics on two empty arrays. Here: two objects, every key of the second is in
the first with an equal value, or, for two objects, sets or arrays there, a subset of it; two
sets, inclusion; two arrays, the second a contiguous run of the first; an array and a set,
every element of the set in the array (OPA counts matches, so an empty array never holds an
empty set). Anything else is OPA's error.
"""

from __future__ import annotations

from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension

_KINDS = "both arguments object.subset must be of the same type or array and set"


def key(value: Any) -> Any:
    """A hashable form equal exactly when two Rego values are equal (true is not 1)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(key(v) for v in value))
    if isinstance(value, dict):
        return ("o", frozenset((key(k), key(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return ("s", frozenset(key(v) for v in value))
    return ("v", value)


def object_subset(sup: Any, sub: Any) -> bool:
    if isinstance(sup, dict) and isinstance(sub, dict):
        return _objects(sup, sub)
    if isinstance(sup, set | frozenset) and isinstance(sub, set | frozenset):
        return _sets(sup, sub)
    if isinstance(sup, list) and isinstance(sub, list):
        return _arrays(sup, sub)
    if isinstance(sup, list) and isinstance(sub, set | frozenset):
        return _array_set(sup, sub)
    raise BuiltinError(_KINDS)


def _objects(sup: dict[Any, Any], sub: dict[Any, Any]) -> bool:
    keyed = {key(k): v for k, v in sup.items()}
    for k, value in sub.items():
        if key(k) not in keyed:
            return False
        have = keyed[key(k)]
        if key(have) == key(value):
            continue
        if isinstance(have, dict) and isinstance(value, dict):
            nested = _objects(have, value)
        elif isinstance(have, set | frozenset) and isinstance(value, set | frozenset):
            nested = _sets(have, value)
        elif isinstance(have, list) and isinstance(value, list):
            nested = _arrays(have, value)
        else:
            nested = False
        if not nested:
            return False
    return True


def _sets(sup: set[Any] | frozenset[Any], sub: set[Any] | frozenset[Any]) -> bool:
    return {key(v) for v in sub} <= {key(v) for v in sup}


def _arrays(sup: list[Any], sub: list[Any]) -> bool:
    whole, part = [key(v) for v in sup], [key(v) for v in sub]
    if len(part) > len(whole):
        return False
    if part == whole:
        return True
    start = at = 0
    while at < len(part):
        if start + at == len(whole):
            return False
        if whole[start + at] == part[at]:
            at += 1
        else:
            start, at = start + 1, 0
    return True


def _array_set(sup: list[Any], sub: set[Any] | frozenset[Any]) -> bool:
    wanted = {key(v) for v in sub}
    unmatched = len(wanted)
    for item in sup:  # as OPA: a match counts each time, and the check follows the element
        if key(item) in wanted:
            unmatched -= 1
        if unmatched == 0:
            return True
    return False


EXTENSIONS = (Extension("object.subset", 2, object_subset),)
