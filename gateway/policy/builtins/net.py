"""`net.cidr_merge`, `net.cidr_intersects`, `net.cidr_contains_matches` with OPA's (Go's) rules.

Go's `net.ParseCIDR` takes `addr/prefix` (host bits allowed, the network is kept); a bare IPv4
address given to `cidr_merge` takes its classful default mask, as Go's `IP.DefaultMask` gives
it, and an unmerged one prints with its address unmasked (`192.168.1.1/24`); a bare IPv6
address there is an error.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from gateway.policy.builtins.base import BuiltinError, Extension, string_operand, type_name

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_cidr(text: str) -> Network:
    if "/" not in text:
        raise BuiltinError(f"invalid CIDR address: {text}")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise BuiltinError(f"invalid CIDR address: {text}") from None


def parse_ip(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# net.cidr_intersects / contains


def cidr_intersects(a: Any, b: Any) -> bool:
    first = parse_cidr(string_operand(a, 1))
    second = parse_cidr(string_operand(b, 2))
    if first.version != second.version:
        return False
    return second.network_address in first or first.network_address in second


def cidr_contains(cidr: Any, cidr_or_ip: Any) -> bool:
    network = parse_cidr(string_operand(cidr, 1))
    text = string_operand(cidr_or_ip, 2)
    ip = parse_ip(text)
    if ip is not None:
        return ip.version == network.version and ip in network
    try:
        other = parse_cidr(text)
    except BuiltinError:
        raise BuiltinError(
            f"not a valid textual representation of an IP address or CIDR: {text}"
        ) from None
    # subnet_of wants the same address family, which the version check just ensured
    return other.version == network.version and other.subnet_of(network)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# net.cidr_contains_matches


def _match_term(item: Any, operand: int) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, list | tuple) and item:
        first = item[0]
        if isinstance(first, str):
            return first
        raise BuiltinError(f"operand {operand}: element must be string or non-empty array")
    raise BuiltinError(f"operand {operand}: element must be string or non-empty array")


def _hashable(value: Any) -> Any:
    """A set element or key as a hashable value (arrays become tuples)."""
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _entries(value: Any, operand: int) -> list[tuple[str, Any]]:
    """(cidr, key) of each element: the string itself, an array index, a set element, an
    object key."""
    if isinstance(value, str):
        return [(value, value)]
    if isinstance(value, list | tuple):
        return [(_match_term(item, operand), index) for index, item in enumerate(value)]
    if isinstance(value, set | frozenset):
        return [(_match_term(item, operand), _hashable(item)) for item in value]
    if isinstance(value, dict):
        return [(_match_term(item, operand), key) for key, item in value.items()]
    raise BuiltinError(
        f"operand {operand} must be one of {{string, array, object, set}} but "
        f"got {type_name(value)}"
    )


def cidr_contains_matches(cidrs: Any, cidrs_or_ips: Any) -> frozenset[tuple[Any, Any]]:
    result: set[tuple[Any, Any]] = set()
    for cidr, key1 in _entries(cidrs, 1):
        for candidate, key2 in _entries(cidrs_or_ips, 2):
            if cidr_contains(cidr, candidate):
                result.add((key1, key2))
    return frozenset(result)


# ---------------------------------------------------------------------------------------------
# net.cidr_merge


@dataclass
class _Range:
    version: int
    first: int
    last: int
    text: str | None  # the original network's text while unmerged


def _default_prefix(ip: ipaddress.IPv4Address) -> int:
    """Go's IP.DefaultMask: class A /8, B /16, C /24 (class D and E: the address alone)."""
    octet = int(ip) >> 24
    return 8 if octet < 128 else 16 if octet < 192 else 24 if octet < 224 else 32


def _range_of(item: Any) -> _Range:
    if not isinstance(item, str):
        raise BuiltinError("element must be string")
    ip = parse_ip(item)
    if ip is None:
        net = parse_cidr(item)
        return _Range(net.version, int(net.network_address), int(net.broadcast_address), str(net))
    if ip.version == 6:
        raise BuiltinError("IPv6 invalid: needs prefix length")
    prefix = _default_prefix(ip)
    net = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
    return _Range(4, int(net.network_address), int(net.broadcast_address), f"{ip}/{prefix}")


def _merge(ranges: list[_Range]) -> list[_Range]:
    ranges = sorted(ranges, key=lambda r: (r.last, r.first))
    i = len(ranges) - 1
    while i > 0:
        previous = max(ranges[i].first - 1, 0)
        if previous <= ranges[i - 1].last:
            first = min(ranges[i - 1].first, ranges[i].first)
            ranges[i - 1] = _Range(ranges[i].version, first, ranges[i].last, None)
            del ranges[i]
        i -= 1
    return ranges


def _texts(r: _Range) -> list[str]:
    if r.text is not None:
        return [r.text]
    make = ipaddress.IPv4Address if r.version == 4 else ipaddress.IPv6Address
    nets = ipaddress.summarize_address_range(make(r.first), make(r.last))
    return [str(n) for n in nets]


def cidr_merge(addrs: Any) -> frozenset[str]:
    if not isinstance(addrs, list | tuple | set | frozenset):
        raise BuiltinError("operand must be an array")
    ranges = [_range_of(item) for item in addrs]
    out: set[str] = set()
    for version in (4, 6):
        for merged in _merge([r for r in ranges if r.version == version]):
            out.update(_texts(merged))
    return frozenset(out)


EXTENSIONS = (
    Extension("net.cidr_merge", 1, cidr_merge),
    Extension("net.cidr_intersects", 2, cidr_intersects),
    Extension("net.cidr_contains_matches", 2, cidr_contains_matches),
)
