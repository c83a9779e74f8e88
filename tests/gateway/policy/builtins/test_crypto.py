"""crypto.* against published test vectors (FIPS 180 examples, RFC 2202, RFC 4231)."""

from __future__ import annotations

import pytest

from tests.gateway.policy.builtins.support import rego, rego_error


@pytest.mark.parametrize(
    ("expr", "digest"),
    [
        ('crypto.md5("hello")', "5d41402abc4b2a76b9719d911017c592"),
        ('crypto.sha1("hello")', "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"),
        (
            'crypto.sha256("hello")',
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        ),
        ('crypto.sha256("")', "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (
            'crypto.sha256("abc")',
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        ('crypto.sha1("abc")', "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ('crypto.md5("abc")', "900150983cd24fb0d6963f7d28e17f72"),
    ],
)
def test_hashes_are_lowercase_hex_of_utf8(expr: str, digest: str) -> None:
    assert rego(expr) == digest


# HMAC(key "Jefe", "what do ya want for nothing?"): RFC 2202 (MD5, SHA-1), RFC 4231 (SHA-2)
JEFE = ('"what do ya want for nothing?"', '"Jefe"')


@pytest.mark.parametrize(
    ("name", "mac"),
    [
        ("md5", "750c783e6ab0b503eaa86e310a5db738"),
        ("sha1", "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
        ("sha256", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            "sha512",
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
            "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
        ),
    ],
)
def test_hmac_message_then_key(name: str, mac: str) -> None:
    assert rego(f"crypto.hmac.{name}({JEFE[0]}, {JEFE[1]})") == mac


def test_hmac_equal_compares_macs() -> None:
    mac = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert rego(f'crypto.hmac.equal(crypto.hmac.sha256({JEFE[0]}, {JEFE[1]}), "{mac}")') is True
    assert rego(f'crypto.hmac.equal("{mac}", "{mac[:-1]}0")') is False


def test_a_non_string_operand_fails_naming_the_builtin() -> None:
    message = rego_error("crypto.sha256(data.t.n)", n=1)
    assert message.startswith("crypto.sha256 failed at t.rego:3:")
    assert message.endswith("operand 1 must be string but got number")
