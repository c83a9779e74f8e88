"""The auth file: every problem names the file and the field; the example file loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.identity import Authenticator
from gateway.identity.config import load_auth_file
from tests.support.paths import ROOT


def auth_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "auth.yaml"
    path.write_text(text)
    return path


JWT = (
    "jwt:\n  issuer: https://idp.test/\n  audiences: [callgate]\n"
    "  jwks_url: https://idp.test/jwks\n"
)


@pytest.mark.parametrize(
    "text,where",
    [
        ("tokens:\n  t: {tenant: acme}\n", "tokens.t.subject"),
        ("tokens:\n  t: {subject: a, role: x}\n", "tokens.t.role"),
        ("tokens: [\n", "cannot read"),
        ("users: {}\n", "users"),
        ("{}\n", "no way to identify callers"),
        (JWT.replace("  audiences: [callgate]\n", ""), "jwt.audiences"),
        (JWT + "  algorithms: [HS256]\n", "'HS256' is not allowed"),
        (JWT + "  algorithms: [none]\n", "'none' is not allowed"),
        (JWT + "  jwks_file: keys.json\n", "exactly one of jwks_file and jwks_url"),
        (JWT.replace("https://idp.test/jwks", "http://idp.test/jwks"), "jwt.jwks_url: must be"),
        (JWT + "  leeway_s: 3600\n", "jwt.leeway_s"),
        (JWT + "  claims: {subject: sub, group: g}\n", "jwt.claims.group"),
        ("mtls:\n  subject_from: email\n  identities: {a: {}}\n", "mtls.subject_from"),
        ("mtls:\n  identities: {}\n", "mtls.identities"),
    ],
)
def test_bad_auth_files_name_the_file_and_field(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(ConfigError) as err:
        Authenticator.from_file(auth_file(tmp_path, text))
    assert "auth.yaml" in err.value.message and where in err.value.message


@pytest.mark.parametrize(
    "text,where,problem",
    [
        (
            "tokens:\n  t: {subject: a}\ntokens:\n  u: {subject: b}\n",
            "line 3",
            "duplicate key 'tokens'",
        ),
        (
            "tokens:\n  t: {subject: a}\n  t: {subject: b, roles: [admin]}\n",
            "line 3",
            "duplicate key 't'",
        ),
        ("tokens:\n  t: {subject: a, subject: b}\n", "line 2", "duplicate key 'subject'"),
        ("tokens:\n  t: {subject: a, claims: {n: .nan}}\n", "line 2", "NaN is not a JSON number"),
        ("tokens:\n  t: {subject: a, claims: {n: -.inf}}\n", "line 2", "not a JSON number"),
        ("tokens:\n  t: {subject: a, claims: {7: x}}\n", "line 2", "key 7 is not a string"),
        ("a: &a [*a]\n", "", "contains it"),
    ],
)
def test_an_auth_file_that_is_not_plain_json_data_is_refused(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    """A repeated key would silently replace what came first (a second entry for a token, a
    second subject); YAML's NaN and infinities, and keys that are not strings, are not JSON."""
    with pytest.raises(ConfigError) as err:
        Authenticator.from_file(auth_file(tmp_path, text))
    message = err.value.message
    assert "\n" not in message and str(tmp_path / "auth.yaml") in message, message
    assert where in message and problem in message, message


def test_a_jwks_file_is_read_relative_to_the_auth_file_and_checked(tmp_path: Path) -> None:
    text = JWT.replace("jwks_url: https://idp.test/jwks", "jwks_file: keys.json")
    path = auth_file(tmp_path, text)
    assert load_auth_file(path).jwt.jwks_file == tmp_path / "keys.json"  # type: ignore[union-attr]
    for content, problem in [
        (None, "No such file"),
        ('{"keys": [', "not JSON"),
        ('{"k": []}', "not a JWKS"),
        ('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}', "no usable"),
    ]:
        if content is not None:
            (tmp_path / "keys.json").write_text(content)
        with pytest.raises(ConfigError) as err:
            Authenticator.from_file(path)
        assert "jwt.jwks_file" in err.value.message and problem in err.value.message


def test_the_example_auth_file_loads_with_tokens_and_jwt() -> None:
    auth = load_auth_file(ROOT / "examples" / "auth.yaml")
    assert "alice-demo-token" in auth.tokens and auth.jwt is not None
    Authenticator.from_file(ROOT / "examples" / "auth.yaml")
