"""Static bearer tokens, missing credentials and the insecure development identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.errors import Unauthenticated
from gateway.identity import Authenticator, Credentials


def bearer(value: str) -> Credentials:
    return Credentials(authorization=value)


async def test_tokens_map_to_identities(tmp_path: Path) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text("tokens:\n  s3cret: {subject: alice, tenant: acme, roles: [traveler]}\n")
    auth = Authenticator.from_file(path)
    who = await auth.authenticate(bearer("Bearer s3cret"))
    assert (who.subject, who.tenant, who.roles) == ("alice", "acme", ("traveler",))
    assert (await auth.authenticate(bearer("bearer  s3cret "))).subject == "alice"
    for header, reason in [
        ("", "no credentials"),
        ("s3cret", "Bearer <token>"),
        ("Bearer s3cre", "not known"),
        ("Basic s3cret", "Bearer <token>"),
        ("Bearer " + "x" * 20000, "longer than"),
    ]:
        with pytest.raises(Unauthenticated) as err:
            await auth.authenticate(bearer(header))
        assert reason in err.value.message


async def test_a_client_certificate_alone_does_not_identify_without_mtls(tmp_path: Path) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text("tokens:\n  s3cret: {subject: alice}\n")
    with pytest.raises(Unauthenticated, match="authorization: Bearer"):
        await Authenticator.from_file(path).authenticate(
            Credentials(peer_certificate=b"-----BEGIN CERTIFICATE-----")
        )


async def test_insecure_dev_identity_is_everyone() -> None:
    auth = Authenticator.insecure("dev-user")
    assert (await auth.authenticate(Credentials())).subject == "dev-user"
