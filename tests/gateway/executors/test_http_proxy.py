"""Proxies from the environment (docs/operations.md, "Proxies"): which tool goes through which
proxy, what is refused at load, and calls through a real proxy on loopback. The tools are
named `tool.test`, a name only the proxy resolves (and, for the tests that go directly, this
process's resolver when `resolves` is used)."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.errors import ConfigError
from gateway.executors.base import ExecutionContext
from gateway.executors.http1 import target as url_target
from gateway.executors.proxy import Proxies, ProxySettingError
from gateway.model import CallStatus
from gateway.tools import Registry, Tool
from tests.gateway.executors.target import Reply, Target, refused_url, running_target
from tests.support.pki import CertificateAuthority
from tests.support.proxy import Proxy, running_proxy

NAME = "tool.test"
SECRET = "s3cr3t"
CREDENTIALS = "Basic " + base64.b64encode(f"agent:{SECRET}".encode()).decode()


def manifest(url: str, *, effect: str = "write", **executor: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "version": "1",
        "effect": effect,
        "input_schema": {"type": "object"},
        "executor": {"type": "http", "url": url, "timeout_s": 5, **executor},
    }


@pytest.fixture
async def load() -> Iterator[Any]:
    registries: list[Registry] = []

    def build(url: str, env: dict[str, str], **executor: Any) -> Tool:
        registry = Registry.from_manifests([manifest(url, **executor)], env=env)
        registries.append(registry)
        tool = registry.get("t")
        assert tool is not None
        return tool

    yield build
    for registry in registries:
        await registry.aclose()


@pytest.fixture
def resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    """tool.test resolves to loopback in this process too."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == NAME else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    with running_proxy({NAME: "127.0.0.1"}) as p:
        yield p


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("tools CA")


@pytest.fixture
def https(ca: CertificateAuthority, tmp_path: Path) -> Iterator[Target]:
    """An https tool service whose certificate names tool.test; it requires client
    certificates of the same CA."""
    context = ca.issue("tool", dns=[NAME]).server_context(tmp_path, "tool", client_ca=ca)
    with running_target(context) as t:
        t.script("/t", Reply(200, {"via": "tunnel"}))
        yield t


@pytest.fixture
def http() -> Iterator[Target]:
    with running_target() as t:
        t.script("/t", Reply(200, {"via": "proxy"}))
        yield t


def tls(ca: CertificateAuthority, tmp_path: Path) -> dict[str, str]:
    cert, key = ca.issue("agent").write(tmp_path, "agent")
    return {"ca_file": str(ca.write(tmp_path, "ca")), "cert_file": str(cert), "key_file": str(key)}


def named(target: Target, path: str = "/t") -> str:
    """target's URL with tool.test for its host."""
    return target.url.replace("127.0.0.1", NAME) + path


def with_auth(proxy: Proxy) -> str:
    return proxy.url.replace("http://", f"http://agent:{SECRET}@")


# --------------------------------------------------------------------------- refused at load


def load_problem(url: str, env: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        Registry.from_manifests([manifest(url)], env=env)
    return info.value.message


@pytest.mark.parametrize(
    ("variable", "value", "url", "expected"),
    [
        (
            "HTTPS_PROXY",
            f"socks5://agent:{SECRET}@proxy.corp:1080",
            "https://tools.corp/t",
            "<manifests>: [0].executor.url: HTTPS_PROXY=socks5://proxy.corp:1080: only "
            "http:// proxies are supported, and this tool would go through it; to reach "
            "tools.corp directly, add it to NO_PROXY (e.g. NO_PROXY=tools.corp)",
        ),
        (
            "https_proxy",
            "https://proxy.corp",
            "https://tools.corp/t",
            "https_proxy=https://proxy.corp:80: only http:// proxies are supported",
        ),
        (
            "HTTP_PROXY",
            "http://proxy.corp:99999",
            "http://tools.corp/t",
            "HTTP_PROXY: the port of the proxy is not a number from 1 to 65535",
        ),
    ],
)
def test_a_proxy_callgate_cannot_use_refuses_the_tools_it_would_carry(
    variable: str, value: str, url: str, expected: str
) -> None:
    message = load_problem(url, {variable: value})
    assert expected in message and SECRET not in message


def test_a_tool_the_unusable_proxy_would_not_carry_loads() -> None:
    bad = {"HTTPS_PROXY": "socks5://proxy.corp:1080"}
    for url, env in [
        ("https://tools.corp/t", {**bad, "NO_PROXY": "tools.corp"}),
        ("http://tools.corp/t", bad),  # HTTPS_PROXY carries https only
        ("https://127.0.0.1:9/t", bad),
    ]:  # loopback: always directly
        Registry.from_manifests([manifest(url)], env=env)


def test_a_look_up_the_unusable_proxy_would_carry_is_named() -> None:
    tool = manifest("https://a.corp/t") | {
        "reconcile": {"type": "http", "url": "https://b.corp/{run_id}"}
    }
    with pytest.raises(ConfigError) as info:
        Registry.from_manifests([tool], env={"HTTPS_PROXY": "socks5://p:1", "NO_PROXY": "a.corp"})
    [line] = info.value.message.splitlines()
    assert line.startswith("<manifests>: [0].reconcile.url: HTTPS_PROXY=socks5://p:1: ")
    assert line.endswith("add it to NO_PROXY (e.g. NO_PROXY=b.corp)")


# --------------------------------------------------------------------------- which way


def way(env: dict[str, str], url: str) -> str:
    """How url is reached under env: the proxy's URL, or "direct"."""
    found = Proxies.from_env(env).proxy_for(url_target(url))
    return found.shown if found is not None else "direct"


P = {"HTTPS_PROXY": "http://p:3128", "HTTP_PROXY": "plain:8080"}


@pytest.mark.parametrize(
    ("env", "url", "expected"),
    [
        ({}, "https://tools.corp/t", "direct"),
        (P, "https://tools.corp/t", "http://p:3128"),
        (P, "http://tools.corp/t", "http://plain:8080"),  # host:port alone means http://
        ({"HTTP_PROXY": "http://p:1"}, "https://tools.corp/t", "direct"),
        (
            {"https_proxy": "http://lower:1", "HTTPS_PROXY": "socks5://upper:1"},
            "https://tools.corp/t",
            "http://lower:1",
        ),
        (
            {"https_proxy": " ", "HTTPS_PROXY": "http://upper:1"},
            "https://tools.corp/t",
            "http://upper:1",
        ),  # empty counts as unset
        ({"HTTPS_PROXY": "http://p"}, "https://tools.corp/t", "http://p:80"),
        ({**P, "NO_PROXY": "*"}, "https://tools.corp/t", "direct"),
        ({**P, "NO_PROXY": "corp"}, "https://tools.corp/t", "direct"),
        ({**P, "NO_PROXY": "tools.corp"}, "https://a.tools.corp/t", "direct"),
        ({**P, "NO_PROXY": ".tools.corp"}, "https://tools.corp/t", "direct"),
        ({**P, "NO_PROXY": "*.tools.corp"}, "https://x.tools.corp/t", "direct"),
        ({**P, "NO_PROXY": "tools.corp"}, "https://othertools.corp/t", "http://p:3128"),
        ({**P, "NO_PROXY": "tools.corp"}, "https://TOOLS.corp./t", "direct"),
        ({**P, "no_proxy": "a.corp, tools.corp ,"}, "https://tools.corp/t", "direct"),
        ({**P, "NO_PROXY": "tools.corp:8443"}, "https://tools.corp:8443/t", "direct"),
        ({**P, "NO_PROXY": "tools.corp:8443"}, "https://tools.corp/t", "http://p:3128"),
        ({**P, "NO_PROXY": "10.0.0.0/8"}, "https://10.1.2.3/t", "direct"),
        ({**P, "NO_PROXY": "10.0.0.0/8"}, "https://11.1.2.3/t", "http://p:3128"),
        ({**P, "NO_PROXY": "10.0.0.0/8"}, "https://ten.corp/t", "http://p:3128"),  # not resolved
        ({**P, "NO_PROXY": "10.1.2.3:8443"}, "https://10.1.2.3:8443/t", "direct"),
        ({**P, "NO_PROXY": "fd00::/8"}, "https://[fd00::5]/t", "direct"),
        ({**P, "NO_PROXY": "[fd00::5]:8443"}, "https://[fd00::5]:8443/t", "direct"),
        ({**P, "NO_PROXY": "[fd00::5]:8443"}, "https://[fd00::5]/t", "http://p:3128"),
        (P, "https://localhost:8443/t", "direct"),
        (P, "https://api.localhost/t", "direct"),
        (P, "https://127.0.0.2/t", "direct"),
        (P, "https://[::1]/t", "direct"),
    ],
)
def test_which_way_each_tool_goes(env: dict[str, str], url: str, expected: str) -> None:
    assert way(env, url) == expected


def test_the_proxys_credentials_become_its_authorization_and_are_never_shown() -> None:
    found = Proxies.from_env({"HTTPS_PROXY": "http://a%40corp:p%3Ass@p:3128"}).proxy_for(
        url_target("https://tools.corp/")
    )
    assert found is not None and found.shown == "http://p:3128"
    assert found.authorization == "Basic " + base64.b64encode(b"a@corp:p:ss").decode()
    assert found.authorization not in repr(found)


def test_an_unusable_proxy_is_an_error_only_for_a_tool_it_would_carry() -> None:
    proxies = Proxies.from_env({"HTTPS_PROXY": "socks5://p:1080", "NO_PROXY": "a.corp"})
    assert proxies.proxy_for(url_target("https://a.corp/")) is None
    with pytest.raises(ProxySettingError, match="to reach b.corp directly"):
        proxies.proxy_for(url_target("https://b.corp/"))


# --------------------------------------------------------------------------- through a proxy


async def test_the_proxy_refusing_the_tunnel_sends_nothing_and_shows_no_secret(
    load: Any, ctx: ExecutionContext, https: Target
) -> None:
    with running_proxy({NAME: "127.0.0.1"}, connect_status=403) as refusing:
        tool = load(named(https), {"HTTPS_PROXY": with_auth(refusing)})
        result = await tool.run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        0,
    )
    assert f"the proxy {refusing.url} answered CONNECT {NAME}:" in result.error_message
    assert "with HTTP 403" in result.error_message and SECRET not in result.error_message
    assert https.seen == [] and https.refused(0) == []


async def test_a_proxy_that_asks_for_credentials_it_was_not_given_gets_no_tunnel(
    load: Any, ctx: ExecutionContext, https: Target
) -> None:
    with running_proxy({NAME: "127.0.0.1"}, credentials=CREDENTIALS) as asking:
        result = await load(named(https), {"HTTPS_PROXY": asking.url}).run({}, ctx)
        assert [s.headers.get("Proxy-Authorization") for s in asking.seen] == [None]
    assert (result.status, result.attempts) == (CallStatus.FAILED, 0)
    assert "HTTP 407 Proxy Authentication Required" in result.error_message


async def test_a_tool_the_proxy_cannot_reach_is_sent_nothing(
    load: Any, ctx: ExecutionContext
) -> None:
    with running_proxy() as blind:  # resolves nothing
        result = await load(f"https://{NAME}:1/t", {"HTTPS_PROXY": blind.url}).run({}, ctx)
    assert (result.status, result.attempts) == (CallStatus.FAILED, 0)
    assert f"answered CONNECT {NAME}:1 with HTTP 502 Bad Gateway" in result.error_message


async def test_an_unreachable_proxy_sends_nothing(
    load: Any, ctx: ExecutionContext, https: Target
) -> None:
    with refused_url() as nowhere:
        result = await load(named(https), {"HTTPS_PROXY": nowhere}).run({}, ctx)
    assert (result.status, result.error_code, result.attempts) == (
        CallStatus.FAILED,
        "tool_error",
        0,
    )
    assert "ConnectionRefusedError" in result.error_message and https.seen == []


async def test_https_through_the_tunnel_with_mutual_tls(
    load: Any, ctx: ExecutionContext, https: Target, ca: CertificateAuthority, tmp_path: Path
) -> None:
    """TLS runs end to end inside the tunnel: the service sees callgate's certificate, and
    the proxy's credentials go to the proxy only."""
    with running_proxy({NAME: "127.0.0.1"}, credentials=CREDENTIALS) as asking:
        tool = load(named(https), {"HTTPS_PROXY": with_auth(asking)}, tls=tls(ca, tmp_path))
        results = [await tool.run({"n": n}, ctx) for n in range(2)]
        seen = asking.seen
    assert [r.output_json for r in results] == ['{"via": "tunnel"}'] * 2
    port = url_target(https.url).port
    assert [(s.method, s.target, s.headers["Proxy-Authorization"]) for s in seen] == [
        ("CONNECT", f"{NAME}:{port}", CREDENTIALS)
    ]  # one tunnel, kept alive
    assert [(s.body, s.client_cert) for s in https.seen] == [
        ({"n": 0}, "agent"),
        ({"n": 1}, "agent"),
    ]
    assert all("Proxy-Authorization" not in s.headers for s in https.seen)
    assert https.seen[0].headers["Host"] == f"{NAME}:{port}"


async def test_http_goes_to_the_proxy_in_absolute_form(
    load: Any, ctx: ExecutionContext, http: Target, proxy: Proxy
) -> None:
    tool = load(named(http), {"HTTP_PROXY": proxy.url}, effect="read")
    result = await tool.run({"q": 1}, ctx)
    assert result.output_json == '{"via": "proxy"}'
    [through] = proxy.seen
    assert (through.method, through.target) == ("POST", named(http))
    assert through.headers["Idempotency-Key"] == "run-1:call-1"
    [seen] = http.seen
    assert (seen.path, seen.body, seen.headers["Host"]) == (
        "/t",
        {"q": 1},
        f"{NAME}:{url_target(http.url).port}",
    )


async def test_a_host_in_no_proxy_goes_directly(
    load: Any, ctx: ExecutionContext, http: Target, proxy: Proxy, resolves: None
) -> None:
    env = {"HTTP_PROXY": proxy.url, "NO_PROXY": f"example.org,{NAME}"}
    result = await load(named(http), env, effect="read").run({}, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert proxy.seen == [] and len(http.seen) == 1


async def test_without_no_proxy_the_same_tool_goes_through_the_proxy(
    load: Any, ctx: ExecutionContext, http: Target, proxy: Proxy, resolves: None
) -> None:
    result = await load(named(http), {"HTTP_PROXY": proxy.url}, effect="read").run({}, ctx)
    assert result.status is CallStatus.SUCCEEDED
    assert [s.target for s in proxy.seen] == [named(http)] and len(http.seen) == 1


async def test_loopback_tools_never_go_through_the_proxy(
    load: Any, ctx: ExecutionContext, http: Target, proxy: Proxy
) -> None:
    env = {"HTTP_PROXY": proxy.url, "HTTPS_PROXY": proxy.url}
    result = await load(f"{http.url}/t", env, effect="read").run({}, ctx)
    assert result.status is CallStatus.SUCCEEDED and proxy.seen == []
