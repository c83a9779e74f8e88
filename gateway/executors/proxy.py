"""Proxies from the environment (docs/operations.md, "Proxies"), settled per tool at load.

`HTTPS_PROXY` carries the requests to https:// tools (through a CONNECT tunnel: TLS still runs
end to end with the tool), `HTTP_PROXY` those to http:// tools (in absolute form), and
`NO_PROXY` lists the hosts reached directly. Each is also read in lower case, which wins; an
empty value counts as unset. `ALL_PROXY` is not read.

    NO_PROXY entry           reached directly
    *                        every host
    example.com              example.com and every name under it (a leading . or *. is the same)
    10.0.0.0/8, fd00::/8     an address in the range, when the URL's host is written as one
    10.1.2.3, ::1            that address
    any entry + :port        that host on that port only ([::1]:8443 for an IPv6 address)

Loopback (localhost, names under .localhost, 127.0.0.0/8, ::1) is always reached directly.
Only `http://` proxies are supported (the proxy's own URL; a bare host:port means http://); a
proxy named with another scheme (https://, socks5://) refuses, at load, each tool it would
carry, saying how to exempt its host with NO_PROXY. A user and password in the proxy's URL are
sent as Basic `Proxy-Authorization`; messages never show them.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from gateway.executors.http1 import Proxy, Target

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_HOST_AND_PORT = re.compile(r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]]*))(?::(?P<port>\d{1,5}))?")


class ProxySettingError(ValueError):
    """The proxy a tool would go through cannot be used; the message says how to avoid it."""


@dataclass(frozen=True)
class _Setting:
    """One proxy variable as read: the proxy, or why it cannot be used."""

    variable: str
    proxy: Proxy | None
    problem: str = ""


@dataclass(frozen=True)
class _Exempt:
    """One NO_PROXY entry."""

    domain: str = ""  # the name and every name under it
    network: _Network | None = None  # or: addresses in this range
    port: int = 0  # 0: any port


def _read(env: Mapping[str, str], name: str) -> tuple[str, str] | None:
    for variable in (name.lower(), name):
        value = env.get(variable, "").strip()
        if value:
            return variable, value
    return None


def _setting(variable: str, value: str) -> _Setting:
    parts = urlsplit(value if "://" in value else f"http://{value}")
    scheme = parts.scheme.lower()
    try:
        port = parts.port or 80
    except ValueError:
        return _Setting(
            variable, None, f"{variable}: the port of the proxy is not a number from 1 to 65535"
        )
    host = parts.hostname or ""
    shown = f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
    if scheme != "http":
        return _Setting(variable, None, f"{variable}={shown}: only http:// proxies are supported")
    if not host:
        return _Setting(variable, None, f"{variable}: the proxy's URL names no host")
    return _Setting(
        variable, Proxy(host, port, _authorization(parts.username, parts.password), shown)
    )


def _authorization(user: str | None, password: str | None) -> str:
    if user is None:
        return ""
    pair = f"{unquote(user)}:{unquote(password or '')}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def _network(text: str) -> _Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _exempt(entry: str) -> _Exempt:
    network = _network(entry)
    if network is not None:
        return _Exempt(network=network)
    match = _HOST_AND_PORT.fullmatch(entry)
    if match is None:
        return _Exempt(domain=entry)
    port = int(match["port"] or 0)
    host = match["v6"] or match["host"] or ""
    network = _network(host)
    if network is not None:
        return _Exempt(network=network, port=port)
    return _Exempt(domain=host.removeprefix("*").lstrip(".").rstrip("."), port=port)


def _address(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _loopback(host: str, address: _Address | None) -> bool:
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or (address is not None and address.is_loopback)
    )


class Proxies:
    """The proxy settings of an environment; `proxy_for` settles one target's."""

    def __init__(
        self,
        http: _Setting | None = None,
        https: _Setting | None = None,
        exempt: tuple[_Exempt, ...] = (),
        every: bool = False,
    ) -> None:
        self._http = http
        self._https = https
        self._exempt = exempt
        self._every = every  # NO_PROXY=*

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Proxies:
        http, https = _read(env, "HTTP_PROXY"), _read(env, "HTTPS_PROXY")
        found = _read(env, "NO_PROXY")
        entries = [e.strip().lower() for e in (found[1] if found else "").split(",")]
        return cls(
            http=_setting(*http) if http else None,
            https=_setting(*https) if https else None,
            exempt=tuple(_exempt(e) for e in entries if e and e != "*"),
            every="*" in entries,
        )

    def proxy_for(self, to: Target) -> Proxy | None:
        """The proxy to's requests go through (None: directly); ProxySettingError when it is
        one callgate cannot use."""
        setting = self._https if to.scheme == "https" else self._http
        if setting is None or self.direct(to.host, to.port):
            return None
        if setting.problem:
            raise ProxySettingError(
                f"{setting.problem}, and this tool would go through it; to reach {to.host} "
                f"directly, add it to NO_PROXY (e.g. NO_PROXY={to.host})"
            )
        return setting.proxy

    def direct(self, host: str, port: int) -> bool:
        """Whether host (as a URL names it) on port is reached without a proxy."""
        host = host.lower().rstrip(".")
        ip = _address(host)
        if self._every or _loopback(host, ip):
            return True
        return any(self._matches(e, host, port, ip) for e in self._exempt)

    @staticmethod
    def _matches(e: _Exempt, host: str, port: int, ip: _Address | None) -> bool:
        if e.port and e.port != port:
            return False
        if e.network is not None:
            return ip is not None and ip in e.network
        return bool(e.domain) and (host == e.domain or host.endswith("." + e.domain))
