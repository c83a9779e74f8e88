"""Hypothesis strategies for hostile input: JSON values, mutated provider responses and
streams (from the recorded fixtures), hostile JSON texts.

Used by the in-process adapter fuzz tests and by the fuzz tests against a real sidecar.
Profiles (registered here, `bounded` loaded by tests/conftest.py): `bounded` inside
`make test`, `fuzz` for `make fuzz` (many more examples); choose with `--hypothesis-profile`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent.parent / "adapters" / "fixtures"
FIXTURE_DIRS = {
    "openai.responses": "openai_responses",
    "openai.chat_completions": "openai_chat",
    "anthropic.messages": "anthropic",
    "google.gemini": "gemini",
    "aws.bedrock_converse": "bedrock",
}

settings.register_profile(
    "bounded",
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
settings.register_profile(
    "fuzz",
    max_examples=2000,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

# ---------------------------------------------------------------------- the recorded corpus


def _sse_payloads(text: str) -> list[dict[str, Any]]:
    out = []
    for frame in text.split("\n\n"):
        data = "\n".join(
            line[len("data:") :].strip() for line in frame.splitlines() if line.startswith("data:")
        )
        if data and data != "[DONE]":
            out.append(json.loads(data))
    return out


def complete_responses(provider: str) -> list[dict[str, Any]]:
    folder = FIXTURES / FIXTURE_DIRS[provider]
    out = []
    for path in sorted(folder.glob("*.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict):
            out.append(value)
    return out


def streams(provider: str) -> list[list[dict[str, Any]]]:
    folder = FIXTURES / FIXTURE_DIRS[provider]
    out = [_sse_payloads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.sse"))]
    for path in sorted(folder.glob("stream_*.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, list):
            out.append(value)
    return [s for s in out if s]


# ---------------------------------------------------------------------- values

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)

# texts no strict reader may accept, or that test its edges
HOSTILE_TEXTS = st.sampled_from(
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        "9" * 400,
        '"\\ud800"',
        '"\\udfff"',
        "[" * 200 + "]" * 200,
        '{"a": 1, "a": 2}',
        "",
        "{",
        "[1,]",
        "nul",
        '"\\x00"',
        "9007199254740993",
        "[" * 65 + "]" * 65,
        '{"a":' * 70 + "1" + "}" * 70,
    ]
)


def _strings_of(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            found.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, (*prefix, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


@st.composite
def mutated(draw: st.DrawFn, doc: Any, max_changes: int = 3) -> Any:
    """doc with 1..max_changes nodes replaced (by any JSON value, or a string taken from the
    doc itself, so a mutation is often well-typed but misplaced), deleted or duplicated."""
    doc = copy.deepcopy(doc)
    words = sorted(set(_strings_of(doc)))[:200] or ["x"]
    for _ in range(draw(st.integers(1, max_changes))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _parent(doc, path), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "word", "delete", "empty"]))
        if op == "delete":
            del parent[key]
        elif op == "word":
            parent[key] = draw(st.sampled_from(words))
        elif op == "empty":
            parent[key] = copy.deepcopy(draw(st.sampled_from([None, "", [], {}, 0, -1, True])))
        else:
            parent[key] = draw(JSON_VALUES)
    return doc


@st.composite
def mutated_stream(draw: st.DrawFn, events: list[dict[str, Any]]) -> list[Any]:
    """A recorded stream with events mutated, dropped, repeated or swapped."""
    events = copy.deepcopy(events)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["mutate", "mutate", "drop", "repeat", "swap", "cut"]))
        i = draw(st.integers(0, len(events) - 1)) if events else 0
        if not events:
            break
        if op == "mutate":
            events[i] = draw(mutated(events[i], 2))
        elif op == "drop":
            del events[i]
        elif op == "repeat":
            events.insert(i, copy.deepcopy(events[i]))
        elif op == "swap":
            j = draw(st.integers(0, len(events) - 1))
            events[i], events[j] = events[j], events[i]
        else:
            del events[i:]
    return events
