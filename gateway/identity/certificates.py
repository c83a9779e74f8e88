"""Callers identified by the client certificate the TLS listener verified (mutual TLS).

The listener accepts only certificates its client CA signed (`serve --tls-client-ca`); this
module names the caller: the subject is the certificate's SAN URI (a SPIFFE ID), SAN DNS name or
common name (`mtls.subject_from`), and `mtls.identities` gives it a tenant and roles. The
certificate's names reach policy as `input.identity.claims` (`san_uri`, `san_dns`, `cn`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from cryptography import x509
from cryptography.x509.oid import NameOID

from gateway.errors import Unauthenticated
from gateway.identity.config import MtlsConfig
from gateway.model import Identity

_SOURCE_NAMES = {
    "san_uri": "URI subject alternative name",
    "san_dns": "DNS subject alternative name",
    "cn": "common name (CN)",
}


@dataclass(frozen=True)
class CertificateNames:
    san_uri: tuple[str, ...]
    san_dns: tuple[str, ...]
    cn: tuple[str, ...]

    def as_claims(self) -> dict[str, object]:
        return {
            "san_uri": list(self.san_uri),
            "san_dns": list(self.san_dns),
            "cn": self.cn[0] if self.cn else "",
        }


@lru_cache(maxsize=256)
def certificate_names(pem: bytes) -> CertificateNames:
    """The names of a PEM certificate (cached: a connection presents the same one per call)."""
    cert = x509.load_pem_x509_certificate(pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        uris = tuple(san.get_values_for_type(x509.UniformResourceIdentifier))
        dns = tuple(san.get_values_for_type(x509.DNSName))
    except x509.ExtensionNotFound:
        uris, dns = (), ()
    cn = tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME))
    return CertificateNames(uris, dns, cn)


class CertificateIdentities:
    def __init__(self, config: MtlsConfig) -> None:
        self.config = config

    def identify(self, pem: bytes) -> Identity:
        try:
            names = certificate_names(pem)
        except ValueError as exc:
            raise Unauthenticated("the client certificate cannot be read") from exc
        source = self.config.subject_from
        candidates = getattr(names, source)
        what = _SOURCE_NAMES[source]
        if not candidates:
            raise Unauthenticated(
                f"the client certificate has no {what}, which the auth file's "
                f"mtls.subject_from ({source}) needs"
            )
        listed = [c for c in candidates if c in self.config.identities]
        if not listed:
            raise Unauthenticated(
                f"the client certificate's {what} is not listed under "
                "mtls.identities in the auth file"
            )
        if len(listed) > 1:
            raise Unauthenticated(
                f"the client certificate has several {what}s listed under "
                "mtls.identities; it must name exactly one"
            )
        subject = listed[0]
        entry = self.config.identities[subject]
        return Identity(
            subject, entry.tenant, tuple(entry.roles), {**names.as_claims(), **entry.claims}
        )
