"""Certificates made at test time with `cryptography`: a CA, and the certificates it signs.

    ca = CertificateAuthority("acme CA")
    server = ca.issue("server", dns=["localhost"], ips=["127.0.0.1"])
    agent = ca.issue("agent-a", uris=["spiffe://acme/agent-a"])
    paths = agent.write(tmp_path, "agent")   # (cert.pem, key.pem)
    tls = server.server_context(tmp_path, "server", client_ca=ca)   # an ssl.SSLContext

EC P-256 keys: quick to make, and what meshes issue.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@dataclass(frozen=True)
class Issued:
    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, name: str) -> tuple[Path, Path]:
        cert, key = directory / f"{name}.crt", directory / f"{name}.key"
        cert.write_bytes(self.cert_pem)
        key.write_bytes(self.key_pem)
        return cert, key

    def server_context(
        self, directory: Path, name: str, *, client_ca: CertificateAuthority | None = None
    ) -> ssl.SSLContext:
        """A server's TLS context with this certificate; with client_ca, it requires client
        certificates client_ca signed."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*self.write(directory, name))
        if client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cadata=client_ca.pem.decode())
        return context


class CertificateAuthority:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def write(self, directory: Path, name: str) -> Path:
        path = directory / f"{name}.crt"
        path.write_bytes(self.pem)
        return path

    def issue(
        self,
        cn: str,
        *,
        dns: Sequence[str] = (),
        ips: Sequence[str] = (),
        uris: Sequence[str] = (),
        expired: bool = False,
        usages: Sequence[x509.ObjectIdentifier] = (
            ExtendedKeyUsageOID.SERVER_AUTH,
            ExtendedKeyUsageOID.CLIENT_AUTH,
        ),
    ) -> Issued:
        """A certificate for cn (valid for a day, or one that expired yesterday)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC) - timedelta(days=2 if expired else 0)
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        names += [x509.UniformResourceIdentifier(u) for u in uris]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(hours=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Issued(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))
