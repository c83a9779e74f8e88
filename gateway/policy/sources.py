"""The texts an engine is given for a bundle: its sources as OPA would read them.

Each source is first prepared on its own (`gateway.policy.rego.rewrite_source`); what needs the
whole bundle is done here, on the syntax trees of all its modules at once:

- a call with `()` to a rule that takes no arguments (the rule may be defined in another file
  of the package) is made a reference to the rule (`gateway.policy.compat`);
- with `--builtin-errors undefined`, builtin calls and operators go through guards that leave
  a failing one undefined (`gateway.policy.undefined`); `guard=False` leaves them as written
  (the static checks read the calls the author wrote).

Every change keeps each line where it was. A bundle is prepared once for each set of sources
(the engines of every thread, a test run and its probes reuse it).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.policy import crossing
from gateway.policy.builtins import SUPPLIED
from gateway.policy.bundle import Bundle
from gateway.policy.compat import Module, blank, empty_call_edits, rule_arities
from gateway.policy.guards import SUPPORT_FILE, support_module
from gateway.policy.interpreter import bare_engine
from gateway.policy.options import RegoOptions
from gateway.policy.rego import rewrite_source
from gateway.policy.signatures import SIGNATURES, VARIADIC
from gateway.policy.syntax import dotted, walk
from gateway.policy.undefined import Rewrite

Named = tuple[tuple[str, str], ...]  # (engine name, text) of each source, sorted

BUILTINS: frozenset[str] = frozenset(SIGNATURES) | VARIADIC | SUPPLIED
_EMPTY_CALL = re.compile(r"[A-Za-z0-9_]\s*\(\s*\)")
_ERROR_LINE = re.compile(r"^error:.*$", re.MULTILINE)


@dataclass(frozen=True)
class EngineSources:
    texts: Named
    guards: frozenset[str] = frozenset()  # the builtins whose guards the texts call

    @property
    def support(self) -> str:
        """The guards' support module ("" when the texts need none)."""
        return support_module(self.guards)

    @property
    def support_files(self) -> tuple[tuple[str, str], ...]:
        """(file, text) of each support module the texts call."""
        files = [(SUPPORT_FILE, self.support)] if self.support else []
        if crossing.needs_support(self.texts):
            files.append((crossing.SUPPORT_FILE, crossing.SUPPORT_TEXT))
        return tuple(files)


def engine_sources(
    bundle: Bundle, *, include_tests: bool = False, guard: bool = True
) -> EngineSources:
    """Every source of the bundle (tests when asked), prepared; RuntimeError with the engine's
    located message for a source that does not parse."""
    named = tuple(bundle.named_sources(include_tests=include_tests))
    return _prepared(named, bundle.options, guard and not bundle.options.strict)


@functools.lru_cache(maxsize=64)
def _prepared(named: Named, options: RegoOptions, guard: bool) -> EngineSources:
    v0 = options.rego_v0
    texts = _wrapped_sprintf(
        tuple((name, rewrite_source(name, text, rego_v0=v0)) for name, text in named), v0
    )
    if not guard and not any(_EMPTY_CALL.search(text) for _, text in texts):
        return EngineSources(texts)
    modules = parsed(texts, rego_v0=v0)
    arities = rule_arities(modules.values())
    called = tuple((name, _called_rules(modules.get(name), text, arities)) for name, text in texts)
    if not guard:
        return EngineSources(called)
    if called != texts:
        modules = parsed(called, rego_v0=v0)
    return _guarded(modules, called, set(arities), rego_v0=v0)


def _wrapped_sprintf(texts: Named, rego_v0: bool) -> Named:
    """The texts with the arguments of each `sprintf` made to cross (gateway.policy.crossing)."""
    if not any("sprintf" in text for _, text in texts):
        return texts
    modules = parsed(texts, rego_v0=rego_v0)
    out = []
    for name, text in texts:
        module = modules.get(name)
        wrapped = crossing.wrap_sprintf_arguments(module) if module else None
        out.append((name, wrapped if wrapped is not None else text))
    return tuple(out)


def _called_rules(module: Module | None, text: str, arities: dict[tuple[str, str], bool]) -> str:
    edits = empty_call_edits(module, arities, BUILTINS) if module else []
    return blank(text.encode(), edits).decode() if edits else text


def _guarded(
    modules: dict[str, Module], texts: Named, locals_: set[tuple[str, str]], *, rego_v0: bool
) -> EngineSources:
    mocked = {
        dotted(w.get("refr"))
        for m in modules.values()
        for node in walk(m.ast)
        for w in node.get("with_mods") or []
        if isinstance(w, dict)
    }
    out, names = [], set()
    for name, text in texts:
        module = modules.get(name)
        rewrite = Rewrite(module, locals_, mocked) if module else None
        if rewrite is not None:
            names |= rewrite.names
        out.append((name, rewrite.text() if rewrite and rewrite.changed else text))
    guarded = EngineSources(tuple(out), frozenset(names))
    try:
        parsed([*out, *guarded.support_files], rego_v0=rego_v0)
    except RuntimeError as exc:
        raise _unguardable(exc) from None
    return guarded


def _unguardable(exc: RuntimeError) -> RuntimeError:
    """A guarded text the engine refuses: the engine's located message, saying so."""
    text = str(exc)
    note = (
        "(its builtin calls could not be guarded for --builtin-errors undefined; load it "
        "with --builtin-errors strict)"
    )
    found = list(_ERROR_LINE.finditer(text))
    if not found:
        return RuntimeError(f"{text}\nerror: {note}")
    last = found[-1]
    return RuntimeError(f"{text[: last.end()]} {note}{text[last.end() :]}")


def parsed(texts: Sequence[tuple[str, str]], *, rego_v0: bool) -> dict[str, Module]:
    """The syntax tree of each source (parsed together, not compiled), by engine name;
    RuntimeError with the engine's message (and no traceback holding the engine: an engine
    freed on another thread than its own is an error) if one does not parse."""
    error: RuntimeError | None = None
    try:
        modules = _syntax_trees(texts, rego_v0=rego_v0)
    except RuntimeError as exc:
        error = RuntimeError(str(exc))
    if error is not None:
        raise error  # outside the handler: the engine's frames are gone by now
    return {m.file: m for m in map(Module.of, modules)}


def _syntax_trees(texts: Sequence[tuple[str, str]], *, rego_v0: bool) -> list[dict[str, Any]]:
    scratch = bare_engine(rego_v0=rego_v0)
    for name, text in texts:
        scratch.add_policy(name, text)
    modules: list[dict[str, Any]] = json.loads(scratch.get_ast_as_json())
    return modules
