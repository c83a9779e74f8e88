"""The layers, as package rules: what each part of `gateway` may import, and no import circle.

Every import counts, those inside functions too. `gateway`'s own top-level modules (errors,
model, jsontext, ...) are the foundation every layer may use; they import no subpackage. From
the bottom up:

    observe                  what the layers report: metrics, spans, log context (hooks
                             that do nothing unless switched on; Prometheus, OpenTelemetry)
    client                   the typed client of the sidecar (for users)
    loop                     the reference agent loop over the client (for users)
    frameworks               callgate under agent frameworks (OpenAI Agents SDK, LangGraph),
                             over the client (for users; no layer of the sidecar imports it)
    executors, identity      how a tool runs; who a caller is
    tools                    manifests, schemas (may name an executor)
    policy                   engines and the policy input (built from tool manifests)
    approvals                approval records, listing, expiry (run engine behind a protocol)
    audit                    the trail's records, hashes, events; reading it back
    store                    RunStore protocol (`base`, `notify`); SQLite; PostgreSQL
    run                      the turn state machine and its phases
    wire                     gRPC servicer, protobuf <-> domain conversion
    mcp_gateway              gateway mode: MCP clients served through the runner (MCP SDK)
    service                  the process: wiring, config, workers, TLS
    cli                      the `callgate` command

A layer may import those below it, with two narrow exceptions named in RULES: the store's
protocol modules (`store.base`, `store.notify`) are what approvals and audit read through,
and the store writes audit records with the audit trail's own key and hash definitions.

The client, the loop and the framework integrations are installed by users without the
sidecar: of the foundation they use only the wire contract, TLS settings and the error tree
(FOUNDATION_OF), and no module of the sidecar's layers. The frameworks layer sits above the
loop but below nothing: the sidecar's layers (service and cli included) never import it, so
the sidecar never needs the frameworks' packages (the `agents` and `langgraph` extras).
`gateway.testing` (a real sidecar for users' tests) is the one foundation
module that uses a layer: the client, to talk to the sidecar it starts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GATEWAY = ROOT / "gateway"

STORE_PROTOCOL = {"gateway.store.base", "gateway.store.notify"}
USER_ONLY = {"frameworks"}  # layers for users' programs that no layer of the sidecar imports
ORDER = [
    "observe",
    "client",
    "loop",
    "frameworks",
    "executors",
    "identity",
    "tools",
    "policy",
    "approvals",
    "audit",
    "store",
    "run",
    "wire",
    "mcp_gateway",
    "service",
    "cli",
]
# what each layer may import of `gateway` besides the foundation and itself
OBSERVE = "gateway.observe"  # the bottom layer: any layer may report through its hooks
RULES: dict[str, set[str]] = {
    "gateway.observe": set(),
    "gateway.client": set(),
    "gateway.loop": {"gateway.client"},
    "gateway.frameworks": {"gateway.client", "gateway.loop"},
    "gateway.executors": {OBSERVE},
    "gateway.identity": set(),
    "gateway.tools": {"gateway.executors", "gateway.audit.keys"},
    "gateway.policy": {"gateway.tools", "gateway.audit.records", OBSERVE},
    "gateway.approvals": {"gateway.policy", "gateway.tools", *STORE_PROTOCOL},
    "gateway.audit": {"gateway.approvals", "gateway.policy", "gateway.tools", *STORE_PROTOCOL},
    "gateway.store": {"gateway.audit.keys", "gateway.audit.records", "gateway.audit.hashing"},
    "gateway.run": {
        "gateway.approvals",
        "gateway.audit",
        "gateway.executors",
        "gateway.policy",
        "gateway.tools",
        *STORE_PROTOCOL,
        OBSERVE,
    },
    "gateway.wire": {
        "gateway.run",
        "gateway.approvals",
        "gateway.audit",
        "gateway.identity",
        "gateway.policy",
        "gateway.tools",
        OBSERVE,
    },
    "gateway.mcp_gateway": {
        "gateway.run",
        "gateway.identity",
        "gateway.policy",
        "gateway.tools",
        OBSERVE,
    },
    "gateway.service": {
        f"gateway.{name}" for name in ORDER[: ORDER.index("service")] if name not in USER_ONLY
    },
    "gateway.cli": {
        f"gateway.{name}" for name in ORDER[: ORDER.index("cli")] if name not in USER_ONLY
    },
}
# the only foundation modules a layer may import, where it may not import all of them
USER_FOUNDATION = {"gateway.pb", "gateway.tls", "gateway.errors"}
FOUNDATION_OF: dict[str, set[str]] = {
    "gateway.client": USER_FOUNDATION,
    "gateway.loop": USER_FOUNDATION,
    "gateway.frameworks": USER_FOUNDATION,
}
# a foundation module's own exception (see the module docstring)
FOUNDATION_RULES: dict[str, set[str]] = {"gateway.testing": {"gateway.client"}}
# third-party packages a layer must not see
NO_GRPC_NO_SQL = {"grpc", "sqlite3", "psycopg", "psycopg_pool", "adapters"}
# what the sidecar needs and a user of the client does not install
SIDECAR_ONLY = {
    "sqlite3",
    "psycopg",
    "psycopg_pool",
    "regorus",
    "yaml",
    "jsonschema",
    "pydantic",
    "httpx",
    "aiohttp",
    "httptools",
    "orjson",
    "rfc8785",
    "jwt",
    "opa_client",
    "re2",
    "idna",
    "cryptography",
    "grpc_health",
    "grpc_reflection",
}
FORBIDDEN: dict[str, set[str]] = {
    "gateway.observe": NO_GRPC_NO_SQL,
    "gateway.client": SIDECAR_ONLY | {"adapters"},
    "gateway.loop": SIDECAR_ONLY | {"grpc"},
    "gateway.frameworks": SIDECAR_ONLY | {"grpc", "adapters"},
    "gateway.run": NO_GRPC_NO_SQL,
    "gateway.approvals": NO_GRPC_NO_SQL,
    "gateway.audit": NO_GRPC_NO_SQL,
    "gateway.policy": NO_GRPC_NO_SQL,
    "gateway.tools": NO_GRPC_NO_SQL,
    "gateway.executors": NO_GRPC_NO_SQL,
    "gateway.identity": {"grpc"},
    "gateway.mcp_gateway": NO_GRPC_NO_SQL,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in GATEWAY.rglob("*.py") if "_proto" not in p.parts}


def imported(name: str, path: Path) -> Iterator[str]:
    """What each import in the file names, at any depth (functions included): `import a.b`
    names a.b, `from a import b` names a.b (a submodule, or a name in module a)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            yield from (f"{base}.{alias.name}" for alias in node.names)


def edges(known: dict[str, Path], *, packages: bool = True) -> dict[str, set[str]]:
    """Module -> the callgate modules its imports name (the longest known prefix of each);
    with `packages`, also the packages around those, whose `__init__` Python runs first
    (except the module's own packages, which are running already: only a name imported from
    one of those counts)."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        own = {name.rsplit(".", i)[0] for i in range(name.count(".") + 1)}
        deps: set[str] = set()
        for target in imported(name, path):
            parts = target.split(".")
            found = [
                ".".join(parts[:cut])
                for cut in range(1, len(parts) + 1)
                if ".".join(parts[:cut]) in known
            ]
            if packages:
                deps.update(set(found[:-1]) - own)
            deps.update(found[-1:])  # named explicitly: counts even if it encloses the module
        graph[name] = deps - {name}
    return graph


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (GATEWAY / parts[1]).is_dir():
        return ".".join(parts[:2])
    return "gateway"  # the foundation


def test_adapters_never_import_gateway() -> None:
    for path in (ROOT / "adapters").rglob("*.py"):
        bad = {m for m in imported(module_name(path), path) if m.split(".")[0] == "gateway"}
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_every_layer_imports_only_what_its_rule_allows() -> None:
    known = modules()
    layers = {layer(m) for m in known} - {"gateway", "gateway._proto"}
    assert layers <= set(RULES), f"a package without a rule: {sorted(layers - set(RULES))}"
    problems = []
    for name, deps in edges(known, packages=False).items():
        mine = layer(name)
        # the foundation imports no layer (but for its named exceptions)
        allowed = RULES.get(mine, FOUNDATION_RULES.get(name, set()))
        for dep in deps:
            theirs = layer(dep)
            if theirs == mine or (
                theirs == "gateway" and mine != "gateway" and dep in FOUNDATION_OF.get(mine, {dep})
            ):
                continue
            if not any(dep == a or dep.startswith(a + ".") for a in allowed):
                problems.append(f"{name} imports {dep}")
    assert not problems, "imports against the layers:\n" + "\n".join(sorted(problems))


def test_layers_keep_grpc_sql_and_providers_out() -> None:
    problems = []
    for name, path in modules().items():
        banned = FORBIDDEN.get(layer(name), set())
        for target in imported(name, path):
            if target.split(".")[0] in banned:
                problems.append(f"{name} imports {target}")
    assert not problems, "\n".join(sorted(problems))


def test_no_import_circle() -> None:
    graph = edges(modules())
    circles = _circles(graph)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
