"""Static checks OPA's compiler makes and the embedded engine does not, run before serving.

- a call to a builtin with the wrong number of arguments, or with an argument whose type is
  known and wrong (`concat(", ", 42)`): OPA's `rego_type_error`. Types come from literals,
  builtin results, comprehensions and local variables assigned with `:=`; anything else
  (input, data, rule values) is `any` and never reported;
- arithmetic on operands of a known wrong type (`"a" + 1`);
- a call to a function that is neither a builtin nor defined by the policies;
- a call to a builtin this engine cannot evaluate (OPA has it; regorus lacks it);
- a variable inside `not` that nothing outside the negation binds, `_` included: OPA's
  `rego_unsafe_var_error` (the engine evaluates such a negation as if it were bound).

The engine itself raises these only when the call is evaluated, which would deny every call
at run time; here they are reported with file and line when the policy is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.policy.bundle import PolicyConfigError, RuleInfo
from gateway.policy.fidelity import number_findings, with_findings
from gateway.policy.interpreter import is_panic
from gateway.policy.negation import unsafe_variables, without_generated
from gateway.policy.signatures import (
    ANY,
    OPERATORS,
    SIGNATURES,
    VARIADIC,
    Kind,
    Type,
    parse_type,
    type_text,
)
from gateway.policy.syntax import dotted, inner, position, span, walk

_UNKNOWN_FUNCTION = "could not find function"
_LITERALS: dict[str, Type] = {
    "String": (Kind("string"),),
    "RawString": (Kind("string"),),
    "Number": (Kind("number"),),
    "Bool": (Kind("boolean"),),
    "Null": (Kind("null"),),
    "Object": (Kind("object"),),
    "ObjectCompr": (Kind("object"),),
    "ArrayCompr": (Kind("array"),),
    "SetCompr": (Kind("set"),),
    "BoolExpr": (Kind("boolean"),),
    "Membership": (Kind("boolean"),),
    "UnaryExpr": (Kind("number"),),
}
_ARITH = {"Add": "plus", "Sub": "minus", "Mul": "mul", "Div": "div", "Mod": "rem"}
_SETOP = {"Or": "or", "And": "and", "Union": "or", "Intersection": "and"}


@dataclass
class _Module:
    file: str
    package: str
    aliases: set[str]
    rules: list[Any]
    source: bytes
    imports: dict[str, str] = field(default_factory=dict)


@dataclass
class Checker:
    """Checks the modules of one compiled engine; `problems` collects what it finds."""

    engine: Any
    rules: tuple[RuleInfo, ...]
    problems: list[PolicyConfigError] = field(default_factory=list)
    _missing: dict[str, bool] = field(default_factory=dict)
    _arities: dict[str, set[int]] = field(default_factory=dict)

    def run(self) -> list[PolicyConfigError]:
        local = {(r.package, r.name.split(".")[0]) for r in self.rules}
        modules = list(_modules(self.engine))
        self._arities = _function_arities(modules)
        for module in modules:
            known = frozenset(h for p, h in local if p == module.package) | module.aliases
            functions = _function_names(module, self._arities)
            for node, message in number_findings(module.source, module.rules):
                self._add(module, span(node), message)
            for rule in module.rules:
                self._check_negations(module, rule, known)
                for node, message in with_findings(rule, functions):
                    self._add(module, span(node), message)
                for body, env in _bodies(without_generated(rule)):
                    self._check_body(module, local, body, env)
        unique = {(p.file, p.line, p.column, p.detail): p for p in self.problems}
        return sorted(unique.values(), key=lambda p: (p.file, p.line or 0, p.column or 0))

    # -- one rule body ------------------------------------------------------------------------

    def _check_body(
        self, module: _Module, local: set[tuple[str, str]], body: Any, env: dict[str, Any]
    ) -> None:
        statements = _statement_exprs(body)
        for node in walk(body):
            kind, value = inner(node)
            if kind == "Call":
                self._check_call(module, local, value, env, id(value) in statements)
            elif kind in ("ArithExpr", "BinExpr"):
                self._check_operator(module, kind, value, env)
            if (
                kind in ("AssignExpr", "BoolExpr")
                and value.get("op") == "Eq"
                and id(value) in statements
            ):
                self._check_unification(module, value, env)

    def _check_call(
        self,
        module: _Module,
        local: set[tuple[str, str]],
        call: dict[str, Any],
        env: dict[str, Any],
        statement: bool,
    ) -> None:
        """A call's arity (OPA takes one argument more, an output, only from a call that is a
        statement of its own) and the types of its arguments."""
        name = dotted(call.get("fcn"))
        head = name.split(".")[0]
        where = span(call.get("fcn")) or call.get("span", {})
        params = call.get("params") or []
        function = _function_path(module, name, self._arities)
        if function is not None:
            self._check_function_arity(module, where, function, len(params), statement)
            return
        if not name or head in ("data", "input") or head in module.aliases:
            return
        if (module.package, head) in local:
            return
        if name not in VARIADIC:
            self._check_builtin_call(module, where, name, params, env, statement)

    def _check_builtin_call(
        self,
        module: _Module,
        where: dict[str, Any],
        name: str,
        params: list[Any],
        env: dict[str, Any],
        statement: bool,
    ) -> None:
        """A builtin's availability in the embedded engine, its arity and argument types."""
        signature = SIGNATURES.get(name)
        if signature is None:
            if self._engine_lacks(name):
                self._add(module, where, f"rego_type_error: undefined function {name}")
            return
        if self._engine_lacks(name):
            self._add(
                module,
                where,
                f"function {name} is not available in the embedded "
                "engine (regorus); use the OPA engine for this policy",
            )
            return
        want = len(signature.args)
        if len(params) not in ((want, want + 1) if statement else (want,)):
            self._add(
                module,
                where,
                f"rego_type_error: {name}: arity mismatch: have "
                f"{len(params)} argument{'s' * (len(params) != 1)}, want {want}",
            )
            return
        for index, (param, expected) in enumerate(
            zip(params, signature.args, strict=False), start=1
        ):
            self._check_operand(module, name, index, param, expected, env)
        if len(params) == want + 1:
            self._check_operand(module, name, want + 1, params[-1], signature.result, env)

    def _check_function_arity(
        self, module: _Module, where: dict[str, Any], function: str, have: int, statement: bool
    ) -> None:
        arities = self._arities[function]
        if any(have in ((n, n + 1) if statement else (n,)) for n in arities):
            return
        self._add(
            module,
            where,
            f"rego_type_error: function {function} has arity "
            f"{min(arities)}, got {have} argument{'s' * (have != 1)}",
        )

    def _check_unification(
        self, module: _Module, node: dict[str, Any], env: dict[str, Any]
    ) -> None:
        """A statement `a = b` or `a == b` that can never hold, by the types of its sides
        (OPA's `match error`; also the output argument of a supplied builtin, rewritten so)."""
        left, right = node.get("lhs"), node.get("rhs")
        if not unifiable(left, right, env):
            self._add(
                module,
                span(left),
                "rego_type_error: match error: left is "
                f"{type_text(infer(left, env))}, right {type_text(infer(right, env))}: "
                "the two sides can never be equal",
            )

    def _check_operator(
        self, module: _Module, kind: str, node: dict[str, Any], env: dict[str, Any]
    ) -> None:
        op = str(node.get("op"))
        name = (_ARITH if kind == "ArithExpr" else _SETOP).get(op)
        if name is None:
            return
        expected = parse_type(OPERATORS[name])
        for index, side in enumerate(("lhs", "rhs"), start=1):
            self._check_operand(module, name, index, node.get(side), expected, env)

    def _check_operand(
        self, module: _Module, name: str, index: int, node: Any, expected: Type, env: dict[str, Any]
    ) -> None:
        have = infer(node, env)
        if not compatible(have, expected):
            where = dict(span(node))
            if inner(node)[0] in ("String", "RawString") and isinstance(where.get("start"), int):
                where["start"] -= 1  # the span starts after the opening quote
            self._add(
                module,
                where,
                f"rego_type_error: {name}: invalid argument "
                f"{index}: have {type_text(have)}, want {type_text(expected)}",
            )

    def _check_negations(self, module: _Module, rule: Any, known: frozenset[str]) -> None:
        for var in unsafe_variables(module.source, without_generated(rule), known):
            name = inner(var)[1].get("value")
            self._add(
                module,
                span(var),
                f"rego_unsafe_var_error: var {name} is unsafe (a "
                "variable inside `not` must be bound outside it: bind it before the "
                "negation, or count with a comprehension)",
            )

    # -- helpers ------------------------------------------------------------------------------

    def _engine_lacks(self, name: str) -> bool:
        if name not in self._missing:
            self._missing[name] = _builtin_missing(self.engine, name)
        return self._missing[name]

    def _add(self, module: _Module, where: dict[str, Any], message: str) -> None:
        line, column = where.get("line"), where.get("col")
        if isinstance(where.get("start"), int):
            line, column = position(module.source, where["start"])
        loc = f"{module.file}:{line}:{column}" if line else module.file
        self.problems.append(
            PolicyConfigError(
                f"{loc}: {message}",
                file=module.file,
                line=line if isinstance(line, int) else None,
                column=column if isinstance(column, int) else None,
                detail=message,
            )
        )


def check(engine: Any, rules: tuple[RuleInfo, ...]) -> list[PolicyConfigError]:
    """Every static problem of the policies compiled into engine, sorted by place."""
    return Checker(engine, rules).run()


def refusals(engine: Any) -> list[PolicyConfigError]:
    """The constructs gateway.policy.fidelity refuses, in policies the engine has parsed but
    may have failed to compile (its own message for some of them is an unsafe variable)."""
    checker = Checker(engine, ())
    modules = list(_modules(engine))
    arities = _function_arities(modules)
    for module in modules:
        functions = _function_names(module, arities)
        for node, message in number_findings(module.source, module.rules):
            checker._add(module, span(node), message)
        for rule in module.rules:
            for node, message in with_findings(rule, functions):
                checker._add(module, span(node), message)
    return sorted(checker.problems, key=lambda p: (p.file, p.line or 0, p.column or 0))


def _function_names(module: _Module, arities: dict[str, set[int]]) -> frozenset[str]:
    """The names a `with` replacement may name a function of the policies by in module."""
    prefix = module.package + "."
    local = {path[len(prefix) :] for path in arities if path.startswith(prefix)}
    return frozenset(local | set(arities))


# ---------------------------------------------------------------------------------------------
# types


def infer(node: Any, env: dict[str, Any], depth: int = 0) -> Type:
    """The type of an expression when it is known; ANY otherwise."""
    kind, value = inner(node)
    if depth > 20:
        return ANY
    if kind in _LITERALS:
        return _LITERALS[kind]
    if kind in ("Array", "Set"):
        element = _element_kind([infer(i, env, depth + 1) for i in value.get("items") or []])
        return (Kind("array" if kind == "Array" else "set", element),)
    if kind == "Call":
        signature = SIGNATURES.get(dotted(value.get("fcn")))
        return signature.result if signature else ANY
    if kind == "ArithExpr":
        return parse_type("number|set" if value.get("op") == "Sub" else "number")
    if kind == "BinExpr":
        return (Kind("set"),)
    if kind == "Var":
        bound = env.get(str(value.get("value")))
        return infer(bound, env, depth + 1) if bound is not None else ANY
    return ANY


def _element_kind(items: list[Type]) -> str:
    names = {t[0].name for t in items if len(t) == 1}
    if len(names) == 1 and all(len(t) == 1 for t in items):
        name = names.pop()
        return "" if name == "any" else name
    return ""


_CONSTANTS = ("String", "RawString", "Number", "Bool", "Null")


def unifiable(left: Any, right: Any, env: dict[str, Any], depth: int = 0) -> bool:
    """False when the two terms can never be equal: types that exclude each other, arrays of
    different lengths, objects with different constant keys (OPA types these literals)."""
    left, right = _resolve(left, env), _resolve(right, env)
    (lk, lv), (rk, rv) = inner(left), inner(right)
    if depth < 20 and lk == rk == "Array":
        items, others = lv.get("items") or [], rv.get("items") or []
        return len(items) == len(others) and all(
            unifiable(a, b, env, depth + 1) for a, b in zip(items, others, strict=True)
        )
    if depth < 20 and lk == rk == "Object":
        mine, theirs = _constant_fields(lv), _constant_fields(rv)
        if mine is not None and theirs is not None:
            return mine.keys() == theirs.keys() and all(
                unifiable(mine[k], theirs[k], env, depth + 1) for k in mine
            )
    return compatible(infer(left, env), infer(right, env))


def _resolve(node: Any, env: dict[str, Any]) -> Any:
    for _ in range(20):
        kind, value = inner(node)
        bound = env.get(str(value.get("value"))) if kind == "Var" else None
        if bound is None:
            return node
        node = bound
    return node


def _constant_fields(node: dict[str, Any]) -> dict[tuple[str, Any], Any] | None:
    fields: dict[tuple[str, Any], Any] = {}
    for entry in node.get("fields") or []:
        if not (isinstance(entry, list) and len(entry) == 3):
            return None
        kind, key = inner(entry[1])
        if kind not in _CONSTANTS:
            return None
        fields[("s" if kind == "RawString" else kind[0], key.get("value"))] = entry[2]
    return fields


def compatible(have: Type, want: Type) -> bool:
    """True unless every alternative of `have` is ruled out by every alternative of `want`."""
    return any(_kind_fits(h, w) for h in have for w in want)


def _kind_fits(have: Kind, want: Kind) -> bool:
    if have.name == "any" or want.name == "any":
        return True
    if have.name != want.name:
        return False
    return not (
        have.element
        and want.element
        and have.element != want.element
        and "any" not in (have.element, want.element)
    )


# ---------------------------------------------------------------------------------------------
# reading the modules


def _modules(engine: Any) -> Iterable[_Module]:
    for module in json.loads(engine.get_ast_as_json()):
        source = module.get("source", {})
        ast = module.get("ast", {})
        package = "data." + dotted(ast.get("package", {}).get("refr"))
        contents = source.get("contents", "")
        imports = _import_paths(ast.get("imports", []), contents)
        yield _Module(
            file=source.get("file", ""),
            package=package,
            aliases=_import_aliases(ast.get("imports", []), contents),
            rules=list(ast.get("rules", [])),
            source=contents.encode(),
            imports=imports,
        )


def _import_paths(imports: list[Any], contents: str) -> dict[str, str]:
    """Name bound by each `import data.…` → the path it stands for."""
    paths: dict[str, str] = {}
    for imp in imports:
        path = dotted(imp.get("refr")) if isinstance(imp, dict) else ""
        if not path.startswith("data."):
            continue
        alias = imp.get("as")
        name = path.rsplit(".", 1)[-1]
        if isinstance(alias, dict) and isinstance(alias.get("start"), int):
            name = contents.encode()[alias["start"] : alias.get("end", alias["start"])].decode()
        paths[name] = path
    return paths


def _statement_exprs(body: Any) -> set[int]:
    """The expressions that are statements of their own (a call there may take an output
    argument; an equality there is a unification OPA type-checks)."""
    found: set[int] = set()
    for item in walk(body):
        literal = item.get("literal")
        if isinstance(literal, dict):
            expr = (literal.get("Expr") or literal.get("NotExpr") or {}).get("expr")
            kind, node = inner(expr)
            if kind:
                found.add(id(node))
    return found


def _function_arities(modules: list[_Module]) -> dict[str, set[int]]:
    """Full path of every function the policies define → its numbers of arguments."""
    arities: dict[str, set[int]] = {}
    for module in modules:
        for rule in module.rules:
            head_kind, head = inner(inner(rule)[1].get("head"))
            name = dotted(head.get("refr"))
            if head_kind == "Func" and name:
                path = f"{module.package}.{name}"
                arities.setdefault(path, set()).add(len(head.get("args") or []))
    return arities


def _function_path(module: _Module, name: str, arities: dict[str, set[int]]) -> str | None:
    """The function of the policies a call names (by its package-local name, `data.…`, or an
    import), or None for anything else."""
    if not name:
        return None
    head, _, rest = name.partition(".")
    candidates = [f"{module.package}.{name}", name]
    if head in module.imports:
        candidates.append(module.imports[head] + (f".{rest}" if rest else ""))
    return next((c for c in candidates if c in arities), None)


def _import_aliases(imports: list[Any], contents: str) -> set[str]:
    """Names an import binds: the `as` alias (a source span in the AST) or the last key."""
    aliases: set[str] = set()
    for imp in imports:
        if not isinstance(imp, dict):
            continue
        alias = imp.get("as")
        if isinstance(alias, dict) and isinstance(alias.get("start"), int):
            start, end = alias["start"], alias.get("end", alias["start"])
            aliases.add(contents.encode()[start:end].decode(errors="replace"))
        path = dotted(imp.get("refr"))
        if path:
            aliases.add(path.split(".")[-1])
    return aliases


def _bodies(rule: Any) -> Iterable[tuple[Any, dict[str, Any]]]:
    """Each body of a rule (with its head, which may call builtins too) and the expressions
    its local variables are assigned with `:=`."""
    kind, value = inner(rule)
    parts: list[Any] = [value.get("head"), value.get("value")] if kind else []
    bodies = value.get("bodies") or [] if kind == "Spec" else []
    if not bodies:
        yield parts, {}
        return
    for body in bodies:
        env: dict[str, Any] = {}
        for node in walk(body):
            assign = node.get("AssignExpr")
            if isinstance(assign, dict) and assign.get("op") == "ColEq":
                name_kind, lhs = inner(assign.get("lhs"))
                if name_kind == "Var":
                    env[str(lhs.get("value"))] = assign.get("rhs")
        yield [*parts, body], env


def _builtin_missing(engine: Any, name: str) -> bool:
    try:
        engine.eval_query(f"{name}()")
    except RuntimeError as exc:
        return _UNKNOWN_FUNCTION in str(exc)
    except BaseException as exc:
        if not is_panic(exc):
            raise
    return False
