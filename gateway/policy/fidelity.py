"""Constructs the embedded engine would evaluate otherwise than OPA 1.9, found when a policy
loads so that it is refused with a message naming the construct and the way around it.

- `with` replacing a function by a *builtin* (`with f as count`): the engine takes the
  builtin's name for an unsafe variable. A function of the policy that calls the builtin
  works as the replacement.
- `with` replacing a builtin callgate supplies by a function (`with io.jwt.decode_verify as
  mock`): the engine cannot call the function in its place (a value as the replacement
  works).
- A number literal the engine would hold as another number: a decimal with more digits than a
  64-bit float holds (`0.1000000000000000000001`), or one so small it would become 0
  (`1e-400`). OPA keeps both exact. (Integers of any size are exact in both; one beyond a
  float's range, `1e400`, is refused by the engine's parser, see gateway.policy.bundle.)

Each finding is `(node, message)`; the checker places it in its file.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from gateway.policy.builtins import SUPPLIED
from gateway.policy.signatures import SIGNATURES
from gateway.policy.syntax import dotted, inner, text_of, walk

Finding = tuple[Any, str]


def with_findings(rule: Any, functions: frozenset[str]) -> Iterator[Finding]:
    """`with` modifiers of a rule the engine cannot honour. `functions` are the names a bare
    or dotted reference may mean a function of the policies by (never a builtin then)."""
    assigned = _assigned(rule)
    for item in walk(rule):
        for modifier in item.get("with_mods") or [] if isinstance(item, dict) else []:
            target, value = dotted(modifier.get("refr")), modifier.get("as")
            replacement = dotted(value)
            if target in SUPPLIED and replacement in functions:
                yield (
                    modifier.get("refr"),
                    (
                        f"`with {target} as {replacement}`: {target} is a builtin callgate "
                        "supplies to the embedded engine, which can replace it with a value "
                        "but not with a function; run this test on the OPA engine "
                        "(`policy test --engine opa`)"
                    ),
                )
            elif (
                (replacement in SIGNATURES or replacement in SUPPLIED)
                and replacement not in functions
                and replacement not in assigned
            ):
                leaf = replacement.rsplit(".", 1)[-1]
                yield (
                    value,
                    (
                        f"`with {target} as {replacement}`: the embedded engine cannot take a "
                        f"builtin as the replacement; write a function that calls it (`mock_{leaf}"
                        f"(x) := {replacement}(x)`, with the builtin's arguments) and use "
                        f"`with {target} as mock_{leaf}`"
                    ),
                )


def _assigned(rule: Any) -> set[str]:
    """Local names a rule assigns with `:=`, so that a local called `count` is not the
    builtin."""
    names: set[str] = set()
    for item in walk(rule):
        kind, node = inner(item)
        if kind == "AssignExpr" and node.get("op") == "ColEq":
            names.update(
                str(inner(v)[1].get("value")) for v in walk(node.get("lhs")) if inner(v)[0] == "Var"
            )
    return names


def number_findings(source: bytes, tree: Any) -> Iterator[Finding]:
    """Number literals the engine would hold as another number than the one written."""
    for item in walk(tree):
        kind, node = inner(item)
        if kind != "Number":
            continue
        text = text_of(source, item).strip()
        problem = literal_problem(text)
        if problem:
            yield item, f"number {text}: {problem}"


def literal_problem(text: str) -> str:
    """Why the engine would not hold the number written as text ("" when it would)."""
    try:
        exact = Decimal(text.replace("_", ""))
    except InvalidOperation:
        return ""
    if not exact.is_finite() or exact == exact.to_integral_value():
        return ""
    try:
        nearest = float(exact)
    except OverflowError:
        return ""
    if nearest == 0:
        return (
            "too small for a 64-bit float: the embedded engine would make it 0, where OPA "
            "keeps it; use the OPA engine"
        )
    if Decimal(nearest) == exact or Decimal(repr(nearest)) == exact:
        return ""
    return (
        "more digits than a 64-bit float holds: the embedded engine would round it, where "
        "OPA keeps it exact; use the OPA engine, or fewer digits"
    )
