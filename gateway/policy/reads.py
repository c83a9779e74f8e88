"""What a compiled bundle can observe of its input, read off regorus's syntax tree.

Two questions, answered once per revision:

- Which parts of `input` can any rule reach? Every reference rooted at `input` is followed
  outwards through `.field` and `["literal"]` steps; what lies below the last such step (a
  computed index, the end of the reference) may be observed whole. The input is handed to the
  engine with the rest left out: the run's recent calls (`input.run.calls`) are most of a
  decision's input, and `set_input_json` on them cost more than evaluating the default policy;
  the decision time and call IDs, which the default policy never reads, would make every input
  unique.
- Is a decision a function of that input and the bundle alone? Not when a rule calls a builtin
  whose answer depends on the moment or the world (`time.now_ns`, `http.send`, ...).

Both answers err towards observing: `input` used whole (passed to a function, iterated,
imported), a syntax tree this module does not recognise or an engine that answers no tree all
mean the whole input is observed and nothing is assumed pure.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gateway.policy.guards import builtin_name
from gateway.policy.rego import add_policy, new_engine
from gateway.policy.syntax import dotted, walk

_STEPS = ("RefDot", "RefBrack")
_LITERAL_INDEX = ("String", "RawString")

# Builtins whose answer is not a function of their arguments (or that have effects).
IMPURE = frozenset(
    {
        "time.now_ns",
        "rand.intn",
        "uuid.rfc4122",
        "http.send",
        "opa.runtime",
        "net.lookup_ip_addr",
        "io.jwt.decode_verify",
        "crypto.x509.parse_and_verify_certificates",
        "crypto.x509.parse_and_verify_certificates_with_options",
        "print",
        "trace",
    }
)

# A path tree: key → subtree, or True where everything below is kept.
Tree = dict[str, "Tree | bool"]


@dataclass(frozen=True)
class InputView:
    """The parts of `input` a revision's rules can observe (`paths`, None for all of it) and
    whether its decisions depend on nothing else (`pure`)."""

    paths: frozenset[tuple[str, ...]] | None
    pure: bool

    @classmethod
    def whole(cls) -> InputView:
        return cls(None, False)

    @classmethod
    def of(cls, engine: Any) -> InputView:
        """The view of a compiled regorus engine's policies."""
        if not _understood():
            return cls.whole()
        try:
            modules = json.loads(engine.get_ast_as_json())
        except (RuntimeError, ValueError):
            return cls.whole()
        return cls.of_modules(modules)

    @classmethod
    def of_modules(cls, modules: Any) -> InputView:
        """The view of modules as `get_ast_as_json` lists them."""
        if not isinstance(modules, list) or not modules:
            return cls.whole()
        paths: set[tuple[str, ...]] = set()
        pure = True
        for module in modules:
            ast = module.get("ast") if isinstance(module, dict) else None
            if not isinstance(ast, dict):
                return cls.whole()
            paths.update(tuple(p) for p in _input_refs(ast))
            pure = pure and not _calls_impure(ast)
        if () in paths:
            return cls(None, pure)
        return cls(frozenset(paths), pure)

    def reads(self, *path: str) -> bool:
        """Whether `input.<path>` can be observed (asked of every turn: remembered)."""
        return _reads(self.paths, path)

    def project(self, input: dict[str, Any]) -> dict[str, Any]:
        """The input with what no rule can observe left out (the input itself is not
        changed; what is kept is shared, not copied)."""
        if self.paths is None:
            return input
        return self._projector(input)

    @functools.cached_property
    def _projector(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return _projector(_tree(self.paths or frozenset()))


@functools.lru_cache(maxsize=256)
def _reads(paths: frozenset[tuple[str, ...]] | None, path: tuple[str, ...]) -> bool:
    if paths is None:
        return True
    return any(all(a == b for a, b in zip(p, path, strict=False)) for p in paths)


def _tree(paths: frozenset[tuple[str, ...]]) -> Tree:
    tree: Tree = {}
    for path in sorted(paths, key=len):
        node: Tree | bool = tree
        for i, key in enumerate(path):
            assert isinstance(node, dict)
            below = node.get(key)
            if below is True:
                break
            if i == len(path) - 1:
                node[key] = True
                break
            if below is None:
                below = node[key] = {}
            node = below
    return tree


def _projector(tree: Tree) -> Callable[[Any], Any]:
    """The function keeping of a value what tree keeps (every call of `project`, so built
    once per revision): a value that is not an object is kept whole, an object keeps the keys
    tree names (in the tree's order), each projected by its subtree; a key whose subtree is
    True is kept as it is, without a call."""
    steps = tuple(
        (key, None if below is True else _projector(below))
        for key, below in tree.items()
        if below is True or isinstance(below, dict)
    )

    def project(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        kept = {}
        for key, below in steps:
            if key in value:
                kept[key] = value[key] if below is None else below(value[key])
        return kept

    return project


def _calls_impure(ast: dict[str, Any]) -> bool:
    for node in walk(ast):
        call = node.get("Call")
        if isinstance(call, dict) and builtin_name(dotted(call.get("fcn"))) in IMPURE:
            return True
    return False


def _input_refs(node: Any) -> Iterator[list[str]]:
    """The static path of each reference rooted at `input` ([] for `input` itself)."""
    if isinstance(node, list):
        for item in node:
            yield from _input_refs(item)
        return
    if not isinstance(node, dict):
        return
    for kind, body in node.items():
        if kind in _STEPS and isinstance(body, dict):
            yield from _chain(body)
        elif kind == "Call" and isinstance(body, dict) and (at := _keyed_get(body)) is not None:
            yield at
            yield from _input_refs(body["params"][2])
        elif kind == "Var" and isinstance(body, dict):
            if body.get("value") == "input":
                yield []
        else:
            yield from _input_refs(body)


def _chain(step: dict[str, Any]) -> Iterator[list[str]]:
    """One chain of `.field` / `[index]` steps: its path if it is rooted at `input`, then
    whatever the indexes themselves refer to."""
    fields: list[str | None] = []
    indexes: list[Any] = []
    node: dict[str, Any] = step
    kind = "RefDot"
    while True:
        if kind == "RefDot":
            field = node.get("field")
            fields.append(
                field[1]
                if isinstance(field, list) and len(field) == 2 and isinstance(field[1], str)
                else None
            )
        else:
            index = node.get("index")
            indexes.append(index)
            fields.append(_literal(index))
        inner = node.get("refr")
        if isinstance(inner, dict) and len(inner) == 1:
            ((kind, body),) = inner.items()
            if kind in _STEPS and isinstance(body, dict):
                node = body
                continue
        break
    fields.reverse()
    if isinstance(inner, dict) and isinstance(inner.get("Var"), dict):
        if inner["Var"].get("value") == "input":
            yield _static(fields)
    else:
        yield from _input_refs(inner)
    for index in indexes:
        yield from _input_refs(index)


def _keyed_get(call: dict[str, Any]) -> list[str] | None:
    """`object.get(input.a.b, "k", default)` looks into `input.a.b` at "k" alone: the path
    `a.b.k`. None for any other call (its arguments are then followed as usual)."""
    params = call.get("params")
    if builtin_name(dotted(call.get("fcn"))) != "object.get":
        return None
    if not isinstance(params, list) or len(params) != 3:
        return None
    base, key = _static_ref(params[0]), _literal(params[1])
    return None if base is None or key is None else [*base, key]


def _static_ref(node: Any) -> list[str] | None:
    """The path of a reference made of `input` and literal steps only; None otherwise."""
    fields: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((kind, body),) = node.items()
        if kind == "Var" and isinstance(body, dict):
            return fields[::-1] if body.get("value") == "input" else None
        if kind not in _STEPS or not isinstance(body, dict):
            return None
        if kind == "RefDot":
            field = body.get("field")
            step = field[1] if isinstance(field, list) and len(field) == 2 else None
        else:
            step = _literal(body.get("index"))
        if not isinstance(step, str):
            return None
        fields.append(step)
        node = body.get("refr")
    return None


def _literal(node: Any) -> str | None:
    """The string of a string literal node; None for anything else."""
    for kind in _LITERAL_INDEX:
        inner = node.get(kind) if isinstance(node, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("value"), str):
            return str(inner["value"])
    return None


def _static(fields: list[str | None]) -> list[str]:
    """The path up to the first computed index (which may lead anywhere below it)."""
    static: list[str] = []
    for field in fields:
        if field is None:
            break
        static.append(field)
    return static


@functools.cache
def _understood() -> bool:
    """The syntax tree reads as this module expects (checked once, on known policies);
    otherwise every bundle observes its whole input and none is pure."""
    probes: dict[str, tuple[frozenset[tuple[str, ...]] | None, bool]] = {
        'x if input.run.calls[_].tool == "a"': (frozenset({("run", "calls")}), True),
        'x if input["run"].turn': (frozenset({("run", "turn")}), True),
        'x if { k := "calls"; input.run[k] }': (frozenset({("run",)}), True),
        "x if walk(input, _)": (None, True),
        "x if input.call.args.n > 1\ny := time.now_ns()": (
            frozenset({("call", "args", "n")}),
            False,
        ),
    }
    for rule, expected in probes.items():
        engine = new_engine()
        try:
            add_policy(engine, "probe.rego", f"package probe\n{rule}\n")
            view = InputView.of_modules(json.loads(engine.get_ast_as_json()))
        except (RuntimeError, ValueError):
            return False
        if (view.paths, view.pure) != expected:
            return False
    return True
