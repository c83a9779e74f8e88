"""Masking before anything is stored: pointers (nested, `*`), credential-looking values by
name and by shape, and the same masks in free text that quotes them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.audit.keys import AuditKey, is_mask
from gateway.tools.redaction import (
    credential_name,
    credential_shaped,
    masked,
    pointer_tokens,
)

KEY = AuditKey(b"k" * 32)
M = KEY.mask


def mask(args: dict[str, Any], *pointers: str) -> Any:
    return masked(args, [pointer_tokens(p) for p in pointers], M, skip=is_mask)


def test_nested_and_wildcard_pointers() -> None:
    args = {
        "trip": {
            "travellers": [{"name": "Ann", "passport": "X123"}, {"name": "Bo", "passport": "Y456"}]
        },
        "seats": {"a": "12A", "b": "12B"},
        "~odd/key": "v",
    }
    out = mask(
        args,
        "/trip/travellers/*/passport",
        "/seats/*",
        "/~0odd~1key",
        "/nope/x",
        "/trip/travellers/7/name",
    )
    assert out.value == {
        "trip": {
            "travellers": [
                {"name": "Ann", "passport": M("X123")},
                {"name": "Bo", "passport": M("Y456")},
            ]
        },
        "seats": {"a": M("12A"), "b": M("12B")},
        "~odd/key": M("v"),
    }
    assert out.pointers == (
        "/trip/travellers/0/passport",
        "/trip/travellers/1/passport",
        "/seats/a",
        "/seats/b",
        "/~0odd~1key",
    )


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "db_password",
        "passwd",
        "client_secret",
        "accessToken",
        "refresh_token",
        "X-Api-Key",
        "apiKey",
        "api_key",
        "authorization",
        "Authorization",
        "cookie",
        "privateKey",
        "aws_secret_access_key",
        "pin",
        "cvv",
    ],
)
def test_credential_names(name: str) -> None:
    assert credential_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "username",
        "email",
        "city",
        "keyboard",
        "secretary",
        "passport",
        "date",
        "tokens_used",
    ],
)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not credential_name(name)


@pytest.mark.parametrize(
    "text",
    [
        "Bearer eyJhbGciOiJSUzI1NiJ9abcdef",
        "bearer abcdefgh12345678",
        "sk-proj-abcdefghijklmnop1234",
        "sk-ant-api03-abcdefghijklmnopqrst",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB...",
        "postgresql://app:hunter2@db/prod",
        "please use sk_live_abcdefghijklmnop12 for this",
        "glpat-abcdefghijklmnopqrst",
    ],
)
def test_credential_shapes(text: str) -> None:
    assert credential_shaped(text)


@pytest.mark.parametrize(
    "text",
    [
        "ICE123",
        "2026-12-01",
        "Berlin",
        "skip-this-one",
        "https://example.com/a:b",
        "ask-me-anything-really-long",
    ],
)
def test_ordinary_text_is_not_a_credential(text: str) -> None:
    assert not credential_shaped(text)


def test_credentials_are_masked_wherever_they_are() -> None:
    args = {
        "city": "Berlin",
        "auth": {"password": "hunter2", "user": "ann"},
        "headers": [{"name": "x", "value": "Bearer abcdefgh12345678"}],
        "credentials": {"user": "ann", "key": "k"},
        "max_tokens": 50,
        "password_set": True,
        "api_key": None,
    }
    out = mask(args)
    assert out.value == {
        "city": "Berlin",
        "auth": {"password": M("hunter2"), "user": "ann"},
        "headers": [{"name": "x", "value": M("Bearer abcdefgh12345678")}],
        "credentials": M({"user": "ann", "key": "k"}),
        "max_tokens": 50,
        "password_set": True,
        "api_key": None,
    }
    assert set(out.pointers) == {"/auth/password", "/headers/0/value", "/credentials"}


def test_masking_twice_changes_nothing_and_leaves_the_input_alone() -> None:
    args = {"email": "ann@example.com", "token": "t0k3n-value"}
    original = json.loads(json.dumps(args))
    once = mask(args, "/email")
    assert args == original
    again = mask(once.value, "/email")
    assert again.value == once.value and not again.changed


def test_arguments_given_as_own_are_masked_in_place_and_give_the_same_result() -> None:
    def args() -> dict[str, Any]:
        return {"card": {"number": "4111 1111 1111 1111"}, "api_key": "sk-live-abc", "n": 1}

    copied, given = args(), args()
    out = masked(copied, [pointer_tokens("/card/number")], M, skip=is_mask)
    own = masked(given, [pointer_tokens("/card/number")], M, skip=is_mask, own=True)
    assert copied == args(), "not own: the caller's arguments are left alone"
    assert own.value is given and given == out.value, "own: masked in place, the same masks"
    assert (own.pointers, own.found) == (out.pointers, out.found)


def test_a_mask_is_a_keyed_digest_of_the_value() -> None:
    other = AuditKey(b"o" * 32)
    assert is_mask(M("ann@example.com")) and M("ann@example.com") == M("ann@example.com")
    assert M("ann@example.com") != other.mask("ann@example.com")
    assert M("ann@example.com") != M("bob@example.com")
    assert M(1234) != M("1234")  # the JSON value, not its text
    assert KEY.key_id in M("x") and KEY.key_id != other.key_id


def test_text_quoting_a_masked_value_is_scrubbed() -> None:
    out = mask({"email": "ann@example.com", "n": "12"}, "/email", "/n")
    text = (
        "/email: 'ann@example.com' does not match; n is 12; call with "
        "Bearer abcdefgh12345678 failed"
    )
    scrubbed = out.scrub(text, M)
    assert "ann@example.com" not in scrubbed and M("ann@example.com") in scrubbed
    assert "n is 12" in scrubbed  # too short to search for: it would match anywhere
    assert "abcdefgh12345678" not in scrubbed
