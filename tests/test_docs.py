"""The docs describe the code as it is: generated tables current, every named function, flag,
manifest field and policy input field present in the code, every link and anchor resolving, and
nothing in the repository referring to a document the repository does not have."""

from __future__ import annotations

import importlib
import inspect
import json
import posixpath
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from gateway.cli.main import build_parser
from gateway.client import GatewayClient
from gateway.executors import config as executor_config
from gateway.model import (
    ApprovalRecord,
    ApprovalStatus,
    CallStatus,
    Identity,
    RunRecord,
    RunState,
    ToolCall,
)
from gateway.policy.inputs import (
    RunContext,
    approval_input,
    approve_input,
    audit_input,
    batch_input,
    call_input,
    list_runs_input,
    offer_input,
    pins_input,
)
from gateway.run.judge import Judge
from gateway.tools import Registry, ToolManifest
from gateway.tools.environment import expand_env

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "CHANGELOG.md",
    ROOT / "bench" / "README.md",
    *sorted(DOCS.glob("*.md")),
]


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _generator() -> ModuleType:
    """scripts/gen_docs.py (the repository root is on the test path; scripts/ is no package)."""
    return importlib.import_module("scripts.gen_docs")


def test_generated_tables_are_current() -> None:
    current = _text("api.md")
    assert _generator().render(current) == current, (
        "docs/api.md is stale: run .venv/bin/python scripts/gen_docs.py"
    )


def test_a_code_without_a_meaning_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _generator()
    monkeypatch.delitem(gen.REQUEST_MEANINGS, "run_not_found")
    with pytest.raises(gen.MissingMeaning, match="run_not_found"):
        gen.render(_text("api.md"))


# ---------------------------------------------------------------------------------------------
# names of code

DOTTED = re.compile(r"`((?:gateway|adapters)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(target, attr):
                return False
            target = getattr(target, attr)
        return True
    return False


def test_every_named_module_and_function_exists() -> None:
    missing = sorted(
        {
            f"{page.name}: {name}"
            for page in PAGES
            for name in DOTTED.findall(page.read_text(encoding="utf-8"))
            if not _resolves(name)
        }
    )
    assert not missing, "the docs name code that does not exist:\n" + "\n".join(missing)


# ---------------------------------------------------------------------------------------------
# links

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


# ---------------------------------------------------------------------------------------------
# documents the repository has
#
# A user's clone holds only the repository, so code, tests and docs may cite a document only if
# the repository has it, or by a URL anyone can open. The rules, chosen to flag nothing else:
# - a name or path ending in .md or .txt (outside a URL) must be a file of the repository:
#   a path relative to the root or to the citing file, or a bare name some file carries. In
#   Python, a quoted bare name is a file the code itself makes or reads (a test writing
#   "notes.txt" into a temporary directory), not a citation;
# - a section sign (§) needs its document on the same line: a standard (RFC 9110 §5.1), a
#   document the repository has, or a URL;
# - phrases that point at an outside document without naming one, and the folder of reference
#   material beside the repository, are refused wherever they appear.

DATA_SUFFIXES = frozenset({".json", ".sse", ".sql", ".key", ".pem", ".gz", ".typed"})
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")
DOC_NAME = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w.-]*\w\.(?:md|txt))(?![\w-])")
SECTION = re.compile(r"§\s?\d")
STANDARD = re.compile(r"\b(?:RFC|FIPS|ECMA-)\s?\d+")
OUTSIDE_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bthe guide\b", re.IGNORECASE), "points at a guide it does not name"),
    (
        re.compile(r"\bwire-format reference\b", re.IGNORECASE),
        "points at a wire-format reference the repository lacks",
    ),
    (
        re.compile(r"(?<![\w./-])(?:\.\./|/[\w.-]+/)*shared/"),
        "points at the shared folder outside the repository",
    ),
    (re.compile(r"\bDESIGN\b"), "points at a design document the repository lacks"),
)


def _document_exists(ref: str, here: str, files: frozenset[str], names: frozenset[str]) -> bool:
    if ref.startswith("/"):
        return False  # an absolute path is outside the repository
    if "/" not in ref:
        return ref in names
    return any(posixpath.normpath(posixpath.join(base, ref)) in files for base in ("", here))


def _quoted(line: str, start: int, end: int) -> bool:
    return (
        0 < start and end < len(line) and line[start - 1] in "\"'" and line[end] == line[start - 1]
    )


def document_references(rel: str, text: str, files: frozenset[str]) -> list[str]:
    """Each reference of the file `rel` (its text) to a document that is not among `files`
    (the repository's paths), as `rel:line: what: why`."""
    names = frozenset(posixpath.basename(f) for f in files)
    here = posixpath.dirname(rel)
    found = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = URL.sub(" ", raw)
        named = False
        for match in DOC_NAME.finditer(line):
            ref = match.group(1)
            if rel.endswith(".py") and "/" not in ref and _quoted(line, *match.span(1)):
                continue
            if _document_exists(ref, here, files, names):
                named = True
            else:
                found.append(f"{rel}:{number}: {ref}: no such document in the repository")
        for pattern, why in OUTSIDE_PHRASES:
            found.extend(f"{rel}:{number}: {m.group(0)!r} {why}" for m in pattern.finditer(line))
        if SECTION.search(line) and not (named or STANDARD.search(line) or URL.search(raw)):
            found.append(f"{rel}:{number}: § of a document the line does not name")
    return found


def _repository_files() -> list[str]:
    """Tracked files and new ones not ignored, as paths relative to the root."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(set(out.splitlines()))


def test_nothing_refers_to_a_document_the_repository_lacks() -> None:
    files = _repository_files()
    known = frozenset(files)
    this = Path(__file__).relative_to(ROOT).as_posix()  # states the rules, so it names them
    problems = []
    for rel in files:
        if (
            rel == this
            or rel.startswith("gateway/_proto/")
            or posixpath.splitext(rel)[1] in DATA_SUFFIXES
        ):
            continue
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # deleted but still tracked, or binary
            continue
        problems.extend(document_references(rel, text, known))
    assert not problems, (
        "references to documents the repository does not have (cite the repository's own "
        "file, or a public URL):\n" + "\n".join(problems)
    )


FILES = frozenset({"README.md", "docs/api.md", "docs/tools.md", "bench/README.md"})
UP = "." * 2 + "/"  # in pieces: tests/test_self_contained.py refuses the path written whole


@pytest.mark.parametrize(
    ("rel", "line"),
    [
        ("tests/adapters/fixtures/x/_sources.md", "written from provider-wire-formats.md"),
        ("gateway/x.py", '"""The cases of reference/tool-calling-loop-guide.txt."""'),
        ("gateway/x.py", "# see DESIGN.md for the layout"),
        ("docs/x.md", f"[style]({UP}STYLE.md)"),
        ("docs/x.md", "notes in /srv/notes.md"),
        ("docs/x.md", 'a test writes "notes.txt"'),  # quoted, but not in code
        ("tests/x.py", "# copied from /srv/shared/reference/recordings/"),
        ("tests/x.py", f"ROOT / '{UP}shared/reference'"),
        ("docs/x.md", "beside the checkout, in shared/reference/"),
        ("docs/x.md", "in the event order of the guide's streaming section"),
        ("docs/x.md", "as the wire-format reference says"),
        ("README.md", "the layout (DESIGN §1)"),
        ("docs/x.md", "the order of events (§1.6)"),
    ],
)
def test_the_scanner_flags_a_planted_reference(rel: str, line: str) -> None:
    found = document_references(rel, f"first line\n{line}\n", FILES)
    assert found and all(f.startswith(f"{rel}:2: ") for f in found), found


@pytest.mark.parametrize(
    ("rel", "line"),
    [
        ("docs/api.md", "manifests: [tools.md](tools.md#retry)"),
        ("docs/api.md", f"[the README]({UP}README.md)"),
        ("gateway/x.py", '(docs/tools.md, "Redaction")'),
        ("bench/x.py", "results in bench/README.md and README.md"),
        ("docs/x.md", "https://example.com/spec/guide.md §4, https://example.com/notes.txt"),
        ("tests/x.py", 'write(tmp_path, "notes.txt", "ignored")'),
        ("gateway/x.py", "a header name (RFC 9110 §5.1)"),
        ("docs/x.md", "`anthropic.types.shared.ErrorResponse`; a `*.md` glob"),
        ("docs/x.md", "a package gateway/shared/ of the repository"),
        ("docs/api.md", "the shared store; a guide to ports is in tools.md §3"),
    ],
)
def test_the_scanner_passes_what_the_repository_has(rel: str, line: str) -> None:
    assert document_references(rel, line, FILES) == []


# ---------------------------------------------------------------------------------------------
# flags and manifest fields


def _serve_flags() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    serve = sub.choices["serve"]  # type: ignore[index]
    return [
        o for a in serve._actions for o in a.option_strings if o.startswith("--") and o != "--help"
    ]


def test_every_serve_flag_and_its_variable_is_documented() -> None:
    page = _text("operations.md")
    missing = [
        flag
        for flag in _serve_flags()
        if f"`{flag}`" not in page or f"`CALLGATE_{flag[2:].upper().replace('-', '_')}`" not in page
    ]
    assert not missing, f"docs/operations.md does not describe serve flags {missing}"


def test_every_manifest_field_is_documented() -> None:
    page = _text("tools.md")
    sections: list[type[BaseModel]] = [
        executor_config.PythonExecutorConfig,
        executor_config.HttpExecutorConfig,
        executor_config.HttpReconcileConfig,
        executor_config.PythonReconcileConfig,
        executor_config.McpExecutorConfig,
        executor_config.McpReconcileConfig,
    ]
    nested = {"retry", "idempotency"}  # documented field by field below
    fields = {
        *(set(ToolManifest.model_fields) - nested),
        *(f for s in sections for f in s.model_fields),
        *(f"retry.{f}" for f in executor_config.RetryConfig.model_fields),
        *(f"idempotency.{f}" for f in executor_config.IdempotencyConfig.model_fields),
    }
    missing = sorted(f for f in fields if f"`{f}`" not in page)
    assert not missing, f"docs/tools.md does not describe manifest fields {missing}"


# ---------------------------------------------------------------------------------------------
# policy inputs

FREE_FORM = frozenset({"args", "labels", "claims"})


def _shape(value: Any, key: str = "") -> Any:
    """The keys of value, recursively (a list by its first item); free-form maps as one mark."""
    if key in FREE_FORM:
        return "free-form"
    if isinstance(value, dict):
        return {k: _shape(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return "value"


def _documented_inputs() -> dict[str, Any]:
    page = _text("policies.md")
    found = re.findall(r"<!-- input: (\w+) -->\n```json\n(.*?)```", page, re.S)
    return {name: json.loads(body) for name, body in found}


def _built_inputs() -> dict[str, Any]:
    registry = Registry.from_manifests(
        [
            {
                "name": "get_train_status",
                "version": "1.0.0",
                "effect": "read",
                "input_schema": {"type": "object"},
                "executor": {"type": "http", "url": "http://127.0.0.1:9/train_status"},
            }
        ]
    )
    tool = registry.get("get_train_status")
    assert tool is not None
    now = datetime(2026, 11, 29, 21, tzinfo=UTC)
    judge = Judge(registry, policy=None)  # type: ignore[arg-type]  # propose asks no policy
    rec = judge.propose(
        "trip-42",
        "resp_abc",
        0,
        ToolCall("call_1", "get_train_status", '{"train_number": "ICE123"}'),
        now,
    )
    earlier = judge.propose(
        "trip-42", "resp_0", 0, ToolCall("call_0", "get_train_status", "{}"), now
    )
    run = RunRecord("trip-42", RunState.ACTIVE, "alice", "acme")
    ctx = RunContext(
        run=run, turn_seq=2, turn_id="resp_abc", recent=[earlier.moved(CallStatus.EXECUTING)]
    )
    who = Identity("alice", "acme", ("traveler",))
    approval = ApprovalRecord(
        approval_id="apr_1",
        run_id="trip-42",
        turn_id="resp_abc",
        call_id="call_1",
        tool="get_train_status",
        tool_version="1.0.0",
        arguments_json=rec.arguments_json,
        arguments_sha256=rec.arguments_sha256,
        status=ApprovalStatus.APPROVED,
        requested_by="alice",
        tenant="acme",
        requester_roles=("traveler",),
        created_at=now,
        expires_at=now,
        decided_by="olga",
        decided_at=now,
        decided_by_tenant="acme",
        decided_by_roles=("owner",),
    )
    return {
        "call": call_input(
            rec=rec,
            tool=tool,
            args={"train_number": "ICE123"},
            identity=who,
            run=ctx,
            batch=[(rec, "read")],
            now=now,
        ),
        "batch": batch_input(who, [rec]),
        "offer": offer_input(who),
        "approve": approve_input(Identity("olga", "acme", ("owner",)), approval, tool),
        "approval": approval_input(approval),
        "audit": audit_input(Identity("audrey", "acme", ("auditor",)), "acme", ""),
        "list_runs": list_runs_input(Identity("oscar", "acme", ("operator",)), "acme", ""),
        "read_pins": pins_input(Identity("oscar", "acme", ("operator",))),
        "pin_tool": pins_input(
            Identity("tara", "acme", ("tools_admin",)),
            tool="book_ticket",
            fingerprint="sha256:b",
            previous="sha256:a",
            fields=["description"],
        ),
    }


def test_policy_input_examples_have_the_fields_callgate_sends() -> None:
    documented = _documented_inputs()
    built = _built_inputs()
    assert set(documented) == set(built)
    for name, value in built.items():
        assert _shape(documented[name]) == _shape(value), (
            f"docs/policies.md: the {name} input example differs from what callgate sends"
        )


def test_every_call_input_field_has_a_row() -> None:
    page = _text("policies.md")

    def leaves(value: dict[str, Any], prefix: str = "") -> list[str]:
        out = []
        for key, item in value.items():
            path = f"{prefix}{key}"
            if isinstance(item, dict) and key not in FREE_FORM:
                out.extend(leaves(item, f"{path}."))
            else:
                out.append(path)
        return out

    missing = [p for p in leaves(_built_inputs()["call"]) if f"`{p}`" not in page]
    assert not missing, f"docs/policies.md has no row for call input fields {missing}"


# ---------------------------------------------------------------------------------------------
# examples that must be what runs


def _marked_blocks(page: str, marker: str) -> list[tuple[str, str]]:
    """(what the marker names, the fenced block after it) for each `<!-- MARKER[: NAME] -->`."""
    pattern = rf"<!-- {marker}(?:: ([^>]*?))? -->\n```\w*\n(.*?)```"
    return [((m.group(1) or "").strip(), m.group(2)) for m in re.finditer(pattern, page, re.S)]


def test_a_manifest_shown_as_a_file_is_that_file() -> None:
    files = _marked_blocks(_text("tools.md"), "manifest file")
    assert files, "docs/tools.md shows no example manifest file"
    for name, body in files:
        assert body == (ROOT / name).read_text(encoding="utf-8"), (
            f"docs/tools.md: the manifest shown as {name} differs from the file"
        )


def test_every_example_manifest_is_one_callgate_accepts() -> None:
    examples = [body for name, body in _marked_blocks(_text("tools.md"), "manifest example")]
    assert len(examples) >= 2
    for body in examples:  # as the registry reads a file: variables expanded, then checked
        ToolManifest.model_validate(expand_env(yaml.safe_load(body), {}))


def test_the_example_tools_table_lists_what_make_run_serves() -> None:
    page = _text("tools.md")
    table = page[page.index("## The example tools") :]
    rows = dict(re.findall(r"^\| `(\w+)` \| (read|write) \|", table, re.M))
    manifests = {
        m["name"]: m["effect"]
        for folder in ("travel", "workshop")
        for m in (
            yaml.safe_load(p.read_text())
            for p in sorted((ROOT / "examples" / folder / "tools").glob("*.yaml"))
        )
    }
    assert rows == manifests


def test_the_client_page_names_every_method_of_the_client() -> None:
    page = _text("client.md")
    methods = [
        name
        for name, _ in inspect.getmembers(GatewayClient, inspect.isfunction)
        if not name.startswith("_")
    ]
    missing = [m for m in methods if f"`{m}(" not in page]
    assert not missing, f"docs/client.md does not describe {missing}"


def test_an_enum_value_without_a_meaning_stops_the_generator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gen = _generator()
    monkeypatch.delitem(gen.ENUM_MEANINGS, "CALL_STATUS_HELD")
    with pytest.raises(gen.MissingMeaning, match="CALL_STATUS_HELD"):
        gen.render(_text("api.md"))


def test_the_docs_use_the_demo_identities() -> None:
    """One cast: every `<name>-demo-token` a page names is in examples/auth.yaml, with the
    subject it is named for."""
    tokens = yaml.safe_load((ROOT / "examples" / "auth.yaml").read_text())["tokens"]
    named = {
        t
        for page in PAGES
        for t in re.findall(r"\b([a-z]+-demo-token)\b", page.read_text(encoding="utf-8"))
    }
    assert named and named <= set(tokens), sorted(named - set(tokens))
    assert all(tokens[t]["subject"] == t.removesuffix("-demo-token") for t in tokens)
