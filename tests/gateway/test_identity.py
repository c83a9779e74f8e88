"""Bearer-token authentication and the auth file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import ConfigError, Unauthenticated
from gateway.identity import Authenticator


def auth_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "auth.yaml"
    path.write_text(text)
    return path


def test_tokens_map_to_identities(tmp_path: Path) -> None:
    auth = Authenticator.from_file(auth_file(
        tmp_path, "tokens:\n  s3cret: {subject: alice, tenant: acme, roles: [traveler]}\n"))
    who = auth.authenticate([("authorization", "Bearer s3cret")])
    assert (who.subject, who.tenant, who.roles) == ("alice", "acme", ("traveler",))
    assert auth.authenticate([("Authorization", b"bearer s3cret")]).subject == "alice"
    for md in ([], [("authorization", "s3cret")], [("authorization", "Bearer s3cre")],
               [("authorization", "Basic s3cret")]):
        with pytest.raises(Unauthenticated):
            auth.authenticate(md)


@pytest.mark.parametrize("text,where", [
    ("tokens:\n  t: {tenant: acme}\n", "tokens.t.subject"),
    ("tokens:\n  t: {subject: a, role: x}\n", "tokens.t.role"),
    ("tokens: [\n", "cannot read"),
    ("users: {}\n", "tokens"),
])
def test_bad_auth_files_name_the_file_and_field(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(ConfigError) as err:
        Authenticator.from_file(auth_file(tmp_path, text))
    assert "auth.yaml" in err.value.message and where in err.value.message


def test_insecure_dev_identity_is_everyone() -> None:
    auth = Authenticator.insecure("dev-user")
    assert auth.authenticate([]).subject == "dev-user"
