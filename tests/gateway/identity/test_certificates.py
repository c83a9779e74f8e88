"""Client certificates name the caller: SAN URI (SPIFFE), SAN DNS or CN, mapped by the file."""

from __future__ import annotations

import pytest

from gateway.errors import Unauthenticated
from gateway.identity.certificates import CertificateIdentities
from gateway.identity.config import MtlsConfig
from tests.support.pki import CertificateAuthority

SPIFFE = "spiffe://acme.test/agent-a"


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("acme test CA")


def mapping(subject_from: str, *subjects: str) -> CertificateIdentities:
    return CertificateIdentities(
        MtlsConfig.model_validate(
            {
                "subject_from": subject_from,
                "identities": {s: {"tenant": "acme", "roles": ["traveler"]} for s in subjects},
            }
        )
    )


def test_a_spiffe_id_names_the_caller_and_the_names_become_claims(ca: CertificateAuthority) -> None:
    pem = ca.issue("agent-a", uris=[SPIFFE], dns=["agent-a.acme.test"]).cert_pem
    who = mapping("san_uri", SPIFFE).identify(pem)
    assert (who.subject, who.tenant, who.roles) == (SPIFFE, "acme", ("traveler",))
    assert who.claims == {"san_uri": [SPIFFE], "san_dns": ["agent-a.acme.test"], "cn": "agent-a"}


def test_dns_names_and_common_names(ca: CertificateAuthority) -> None:
    pem = ca.issue("agent-b", dns=["b.acme.test", "other.acme.test"]).cert_pem
    assert mapping("san_dns", "b.acme.test").identify(pem).subject == "b.acme.test"
    assert mapping("cn", "agent-b").identify(pem).subject == "agent-b"


@pytest.mark.parametrize(
    "subject_from,listed,reason",
    [
        (
            "san_uri",
            [SPIFFE],
            "no URI subject alternative name, which the auth file's "
            "mtls.subject_from (san_uri) needs",
        ),
        (
            "san_dns",
            ["x.acme.test"],
            "DNS subject alternative name is not listed under mtls.identities",
        ),
        ("san_dns", ["b.acme.test", "other.acme.test"], "several"),
    ],
)
def test_certificates_that_name_no_listed_identity_are_refused(
    ca: CertificateAuthority, subject_from: str, listed: list[str], reason: str
) -> None:
    pem = ca.issue("agent-b", dns=["b.acme.test", "other.acme.test"]).cert_pem
    with pytest.raises(Unauthenticated) as err:
        mapping(subject_from, *listed).identify(pem)
    assert reason in err.value.message and "agent-b" not in err.value.message


def test_garbage_instead_of_a_certificate_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="cannot be read"):
        mapping("cn", "x").identify(b"-----BEGIN CERTIFICATE-----\nnope\n")
