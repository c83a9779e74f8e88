"""`strings.render_template(template, vars)`: Go `text/template` rendering, as OPA does it.

Supported: `{{.a.b}}`, `{{.}}`, `{{$}}`, variables (`{{$x := .a}}`, `{{$x.b}}`), `if`/`else
if`/`else`, `range` (with `$i, $v :=`, over arrays and objects in key order), `with`,
pipelines (`{{.a | len}}`), comments, `{{-`/`-}}` trimming, literals and the functions
`and or not len index eq ne lt le gt ge print println printf`. A key missing from an object is
an error (OPA renders with `missingkey=error`); anything outside this subset is an error too,
never a silently different text. Values print as Go's `%v` does (`[1 2]`, `map[a:1]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension, object_operand, string_operand

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
    (?P<str>"(?:[^"\\]|\\.)*")|(?P<raw>`[^`]*`)|(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|
    (?P<decl>:=)|(?P<assign>=)|(?P<pipe>\|)|(?P<lp>\()|(?P<rp>\))|(?P<comma>,)|
    (?P<var>\$[A-Za-z0-9_]*)|(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)|(?P<dot>\.)|
    (?P<ident>[A-Za-z_][A-Za-z0-9_]*))""",
    re.VERBOSE,
)
_MISSING = object()


class TemplateError(BuiltinError):
    pass


# ---------------------------------------------------------------------------------------------
# parsing


@dataclass
class Node:
    kind: str  # text | action | if | range | with
    text: str = ""
    pipe: list[Any] = field(default_factory=list)  # tokens of the pipeline
    body: list[Node] = field(default_factory=list)
    orelse: list[Node] = field(default_factory=list)


def _split(template: str) -> Iterator[tuple[str, str]]:
    """("text", t) and ("action", a) pieces, with trim markers applied."""
    pos, trim_next = 0, False
    for match in _ACTION.finditer(template):
        text = template[pos : match.start()]
        if trim_next:
            text = text.lstrip()
        if match.group(1):
            text = text.rstrip()
        if text:
            yield "text", text
        action = match.group(2).strip()
        if not (action.startswith("/*") and action.endswith("*/")):
            yield "action", action
        trim_next, pos = bool(match.group(3)), match.end()
    rest = template[pos:]
    if "{{" in rest:
        raise TemplateError("template: unclosed action")
    if trim_next:
        rest = rest.lstrip()
    if rest:
        yield "text", rest


def parse(template: str) -> list[Node]:
    pieces = list(_split(template))
    nodes, index, end = _parse_list(pieces, 0)
    if end is not None:
        raise TemplateError(f"template: unexpected {{{{{end}}}}}")
    return nodes


def _parse_list(pieces: list[tuple[str, str]], index: int) -> tuple[list[Node], int, str | None]:
    """Nodes until an `end`/`else` action; answers (nodes, next index, the stopping action)."""
    nodes: list[Node] = []
    while index < len(pieces):
        kind, text = pieces[index]
        index += 1
        if kind == "text":
            nodes.append(Node("text", text=text))
            continue
        word = text.split(None, 1)[0] if text else ""
        if word in ("end", "else"):
            return nodes, index, text
        if word in ("if", "range", "with"):
            node, index = _parse_block(word, text[len(word) :], pieces, index)
            nodes.append(node)
        elif word in ("define", "template", "block", "break", "continue"):
            raise TemplateError(f"template: {{{{{word}}}}} is not supported")
        else:
            nodes.append(Node("action", pipe=_tokens(text)))
    return nodes, index, None


def _parse_block(
    word: str, rest: str, pieces: list[tuple[str, str]], index: int
) -> tuple[Node, int]:
    node = Node(word, pipe=_tokens(rest))
    node.body, index, stop = _parse_list(pieces, index)
    if stop is None:
        raise TemplateError(f"template: unexpected EOF in {word}")
    if stop.startswith("else"):
        tail = stop[len("else") :].strip()
        if tail.startswith(("if ", "with ")):
            inner_word = tail.split(None, 1)[0]
            inner, index = _parse_block(inner_word, tail[len(inner_word) :], pieces, index)
            node.orelse = [inner]
            return node, index
        node.orelse, index, stop = _parse_list(pieces, index)
        if stop != "end":
            raise TemplateError(f"template: expected end after else in {word}")
    return node, index


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise TemplateError(f"template: unexpected {text[pos : pos + 10]!r} in action")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    if not out:
        raise TemplateError("template: missing value for command")
    return out


# ---------------------------------------------------------------------------------------------
# evaluation


@dataclass
class _Scope:
    dot: Any
    variables: dict[str, Any]

    def child(self, dot: Any) -> _Scope:
        return _Scope(dot, dict(self.variables))


def render(template: str, variables: dict[str, Any]) -> str:
    out: list[str] = []
    _run(parse(template), _Scope(variables, {"$": variables}), out)
    return "".join(out)


def _run(nodes: list[Node], scope: _Scope, out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(node.text)
        elif node.kind == "action":
            value, declared = _pipeline(node.pipe, scope)
            if not declared:
                out.append(go_format(value))
        elif node.kind == "if":
            value, _ = _pipeline(node.pipe, scope)
            _run(node.body if truthy(value) else node.orelse, scope, out)
        elif node.kind == "with":
            value, _ = _pipeline(node.pipe, scope)
            if truthy(value):
                _run(node.body, scope.child(value), out)
            else:
                _run(node.orelse, scope, out)
        else:
            _range(node, scope, out)


def _range(node: Node, scope: _Scope, out: list[str]) -> None:
    names, pipe = _declared_names(node.pipe)
    value, _ = _pipeline(pipe, scope)
    items = _items(value)
    if not items:
        _run(node.orelse, scope, out)
        return
    for key, item in items:
        inner = scope.child(item)
        if len(names) == 1:
            inner.variables[names[0]] = item
        elif len(names) == 2:
            inner.variables[names[0]], inner.variables[names[1]] = key, item
        _run(node.body, inner, out)


def _items(value: Any) -> list[tuple[Any, Any]]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(enumerate(value))
    if isinstance(value, dict):
        return [(k, value[k]) for k in sorted(value, key=str)]
    if isinstance(value, int) and not isinstance(value, bool):
        return [(i, i) for i in range(value)]
    raise TemplateError(f"template: range can't iterate over {go_format(value)}")


def _declared_names(pipe: list[tuple[str, str]]) -> tuple[list[str], list[tuple[str, str]]]:
    for index, (kind, _) in enumerate(pipe):
        if kind in ("decl", "assign"):
            names = [text for k, text in pipe[:index] if k == "var"]
            return names, pipe[index + 1 :]
    return [], pipe


def _pipeline(pipe: list[tuple[str, str]], scope: _Scope) -> tuple[Any, bool]:
    """The pipeline's value, and whether it declared or assigned a variable (prints nothing)."""
    names, rest = _declared_names(pipe)
    value: Any = _MISSING
    for command in _commands(rest):
        value = _command(command, scope, value)
    for name in names:
        scope.variables[name] = value
    return value, bool(names)


def _commands(pipe: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    commands: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for kind, text in pipe:
        depth += kind == "lp"
        depth -= kind == "rp"
        if kind == "pipe" and depth == 0:
            commands.append([])
        else:
            commands[-1].append((kind, text))
    if any(not c for c in commands):
        raise TemplateError("template: missing command in pipeline")
    return commands


def _command(command: list[tuple[str, str]], scope: _Scope, piped: Any) -> Any:
    args = _operands(command, scope)
    head_kind, head = command[0]
    if head_kind == "ident" and head not in ("true", "false", "nil"):
        values = args[1:] + ([] if piped is _MISSING else [piped])
        return _call(head, values)
    if piped is not _MISSING or len(args) > 1:
        raise TemplateError(f"template: can't give argument to non-function {head}")
    return args[0]


def _operands(command: list[tuple[str, str]], scope: _Scope) -> list[Any]:
    values: list[Any] = []
    index = 0
    while index < len(command):
        kind, text = command[index]
        if kind == "lp":
            depth, end = 1, index + 1
            while depth:
                if end >= len(command):
                    raise TemplateError("template: unclosed left paren")
                depth += {"lp": 1, "rp": -1}.get(command[end][0], 0)
                end += 1
            values.append(_pipeline(command[index + 1 : end - 1], scope)[0])
            index = end
            continue
        values.append(_operand(kind, text, scope))
        index += 1
    return values


def _operand(kind: str, text: str, scope: _Scope) -> Any:
    if kind == "str":
        return json.loads(text)
    if kind == "raw":
        return text[1:-1]
    if kind == "num":
        return float(text) if any(c in text for c in ".eE") else int(text)
    if kind == "dot":
        return scope.dot
    if kind == "field":
        return _fields(scope.dot, text)
    if kind == "var":
        name, _, path = text.partition(".")
        if name not in scope.variables:
            raise TemplateError(f"template: undefined variable: {name}")
        value = scope.variables[name]
        return _fields(value, "." + path) if path else value
    if kind == "ident":
        return {"true": True, "false": False, "nil": None}.get(text, text)
    raise TemplateError(f"template: unexpected {text!r} in operand")


def _fields(value: Any, path: str) -> Any:
    for name in path.strip(".").split("."):
        if not isinstance(value, dict):
            raise TemplateError(f"template: can't evaluate field {name} in type {_go_type(value)}")
        if name not in value:
            raise TemplateError(f'template: map has no entry for key "{name}"')
        value = value[name]
    return value


# ---------------------------------------------------------------------------------------------
# functions and printing


def truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, str | list | tuple | dict | set | frozenset):
        return len(value) > 0
    return True


def _index(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list | tuple | str) and isinstance(key, int):
            if not 0 <= key < len(value):
                raise TemplateError(f"template: index out of range: {key}")
            value = value[key]
        else:
            raise TemplateError(f"template: can't index item of type {_go_type(value)}")
    return value


def _compare(op: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def compare(a: Any, b: Any) -> bool:
        try:
            return op(a, b)
        except TypeError:
            raise TemplateError("template: incompatible types for comparison") from None

    return compare


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "and": lambda *a: next((x for x in a if not truthy(x)), a[-1]),
    "or": lambda *a: next((x for x in a if truthy(x)), a[-1]),
    "not": lambda a: not truthy(a),
    "len": lambda a: len(a),
    "index": _index,
    "eq": lambda a, *bs: any(a == b for b in bs),
    "ne": _compare(lambda a, b: a != b),
    "lt": _compare(lambda a, b: a < b),
    "le": _compare(lambda a, b: a <= b),
    "gt": _compare(lambda a, b: a > b),
    "ge": _compare(lambda a, b: a >= b),
    "print": lambda *a: _print(a),
    "println": lambda *a: " ".join(go_format(x) for x in a) + "\n",
    "printf": lambda fmt, *a: _printf(fmt, a),
}


def _call(name: str, args: list[Any]) -> Any:
    fn = _FUNCTIONS.get(name)
    if fn is None:
        raise TemplateError(f'template: function "{name}" not defined')
    try:
        return fn(*args)
    except TypeError as exc:
        raise TemplateError(f"template: wrong arguments for {name}: {exc}") from None


def _print(args: tuple[Any, ...]) -> str:
    """Go's fmt.Sprint: a space between operands when neither is a string."""
    out = ""
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out += " "
        out += go_format(arg)
    return out


def _printf(fmt: Any, args: tuple[Any, ...]) -> str:
    values = iter(args)

    def verb(match: re.Match[str]) -> str:
        spec = match.group(0)
        if spec == "%%":
            return "%"
        value = next(values, _MISSING)
        if value is _MISSING:
            return f"%!{spec[-1]}(MISSING)"
        if spec[-1] == "q":
            return json.dumps(value) if isinstance(value, str) else go_format(value)
        if spec[-1] in "dfeg" and isinstance(value, int | float):
            return spec % value
        return go_format(value)

    return re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[vsdqtfeg%]", verb, str(fmt))


def go_format(value: Any) -> str:
    """Go's %v of a value as OPA hands it to the template (JSON-shaped)."""
    if value is None or value is _MISSING:
        return "<no value>"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        items = " ".join(f"{go_format(k)}:{go_format(value[k])}" for k in sorted(value, key=str))
        return f"map[{items}]"
    if isinstance(value, set | frozenset):
        value = sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return "[" + " ".join(go_format(v) for v in value) + "]"


def _go_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "json.Number"
    if isinstance(value, list | tuple | set | frozenset):
        return "[]interface {}"
    return "interface {}"


def render_template(template: Any, variables: Any) -> str:
    return render(string_operand(template, 1), object_operand(variables, 2))


EXTENSIONS = (Extension("strings.render_template", 2, render_template),)
