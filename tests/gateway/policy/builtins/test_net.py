"""net.cidr_merge / cidr_intersects / cidr_contains_matches: OPA's documented examples and Go's
address rules."""

from __future__ import annotations

import pytest

from tests.gateway.policy.builtins.support import rego, rego_error, rego_set


@pytest.mark.parametrize(
    ("expr", "merged"),
    [
        ('net.cidr_merge(["192.0.128.0/24", "192.0.129.0/24"])', {"192.0.128.0/23"}),  # OPA docs
        ('net.cidr_merge({"192.0.128.0/24", "192.0.129.0/24"})', {"192.0.128.0/23"}),
        ('net.cidr_merge(["10.0.0.0/8", "10.0.1.0/24"])', {"10.0.0.0/8"}),  # contained
        ('net.cidr_merge(["10.0.0.0/24", "10.0.0.0/24"])', {"10.0.0.0/24"}),  # duplicate
        ('net.cidr_merge(["10.0.0.0/24", "10.0.2.0/24"])', {"10.0.0.0/24", "10.0.2.0/24"}),
        (
            'net.cidr_merge(["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"])',
            {"10.0.0.0/23", "10.0.2.0/24"},
        ),
        ('net.cidr_merge(["1900::1/96", "1900::20/64"])', {"1900::/64"}),
        ('net.cidr_merge(["192.0.128.1/24"])', {"192.0.128.0/24"}),  # host bits dropped
        (
            'net.cidr_merge(["10.0.0.0/8", "2001:db8::/33", "2001:db8:8000::/33"])',
            {"10.0.0.0/8", "2001:db8::/32"},
        ),
        ("net.cidr_merge([])", set()),
    ],
)
def test_cidr_merge(expr: str, merged: set[str]) -> None:
    assert rego_set(expr) == merged


def test_cidr_merge_bare_ipv4_takes_its_classful_mask_as_in_go() -> None:
    assert rego_set('net.cidr_merge(["192.168.1.1"])') == {"192.168.1.1/24"}
    assert rego_set('net.cidr_merge(["10.1.2.3"])') == {"10.1.2.3/8"}
    assert rego_set('net.cidr_merge(["192.168.1.1", "192.168.1.0/24"])') == {"192.168.1.0/24"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('["2001:db8::1"]', "IPv6 invalid: needs prefix length"),
        ('["10.0.0.0/33"]', "invalid CIDR address: 10.0.0.0/33"),
        ("[1]", "element must be string"),
    ],
)
def test_cidr_merge_errors(args: str, message: str) -> None:
    assert rego_error(f"net.cidr_merge({args})").endswith(message)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("192.168.0.0/16", "192.168.1.0/24", True),
        ("192.168.1.0/24", "192.168.0.0/16", True),
        ("10.0.0.0/8", "11.0.0.0/8", False),
        ("10.0.0.0/31", "10.0.0.1/32", True),
        ("fd1e:5bfe:8af3:9ddc::/64", "fd1e:5bfe:8af3:9ddc:1111::/72", True),
        ("10.0.0.0/8", "::/0", False),
    ],
)
def test_cidr_intersects(a: str, b: str, expected: bool) -> None:
    assert rego(f'net.cidr_intersects("{a}", "{b}")') is expected


def test_cidr_intersects_needs_two_cidrs() -> None:
    assert rego_error('net.cidr_intersects("10.0.0.1", "10.0.0.0/8")').endswith(
        "invalid CIDR address: 10.0.0.1"
    )


@pytest.mark.parametrize(
    ("expr", "matches"),
    [  # OPA's documented examples
        ('net.cidr_contains_matches("1.1.1.0/24", "1.1.1.128")', {'["1.1.1.0/24", "1.1.1.128"]'}),
        (
            'net.cidr_contains_matches(["1.1.1.0/24", "1.1.2.0/24"], "1.1.1.128")',
            {'[0, "1.1.1.128"]'},
        ),
        (
            'net.cidr_contains_matches([["1.1.0.0/16", "foo"], "1.1.2.0/24"], '
            '["1.1.1.128", ["1.1.254.254", "bar"]])',
            {"[0, 0]", "[0, 1]"},
        ),
        (
            'net.cidr_contains_matches({"a": "1.1.0.0/16"}, {"x": "1.1.1.128", "y": "2.2.2.2"})',
            {'["a", "x"]'},
        ),
        (
            'net.cidr_contains_matches({"1.1.0.0/16"}, "1.1.2.0/24")',
            {'["1.1.0.0/16", "1.1.2.0/24"]'},
        ),
    ],
)
def test_cidr_contains_matches(expr: str, matches: set[str]) -> None:
    assert rego_set(expr) == matches


def test_cidr_contains_matches_errors() -> None:
    assert rego_error('net.cidr_contains_matches([[]], "1.1.1.1")').endswith(
        "operand 1: element must be string or non-empty array"
    )
    assert rego_error('net.cidr_contains_matches("1.1.1.0/24", "x")').endswith(
        "not a valid textual representation of an IP address or CIDR: x"
    )
