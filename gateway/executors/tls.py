"""TLS toward tool services: the `ssl.SSLContext` an https tool's `tls` section asks for, built
once when the manifests load (docs/tools.md, "TLS").

Every file is read and checked here first, so that a problem is reported as what it is (a file
that cannot be read, one that holds no certificate, an encrypted key, a key that is not the
certificate's, a certificate that has expired or is not for client authentication) rather than
as an OpenSSL reason code, and never on the first call. `TlsFileError` names the field.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID

from gateway.executors.config import TlsConfig


class TlsFileError(ValueError):
    """A file of a `tls` section that cannot be used; `field` is its name in the section."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TlsFiles:
    """The files of a `tls` section, as absolute paths (None: not given)."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @classmethod
    def of(cls, cfg: TlsConfig, base: Path) -> TlsFiles:
        """cfg's files; a relative path is taken from base (the manifest file's folder)."""

        def resolve(name: str | None) -> Path | None:
            return None if name is None else (base / Path(name).expanduser()).absolute()

        return cls(resolve(cfg.ca_file), resolve(cfg.cert_file), resolve(cfg.key_file))

    @property
    def empty(self) -> bool:
        return self.ca is None and self.cert is None


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """A context that verifies the target against files.ca (the system's CAs when None) and
    presents files.cert with files.key; raises TlsFileError."""
    if files.ca is not None:
        _certificates(_read(files.ca, "ca_file"), files.ca, "ca_file")
    context = _context(files.ca)
    if files.cert is not None and files.key is not None:
        _check_pair(files.cert, files.key)
        try:
            context.load_cert_chain(str(files.cert), str(files.key))
        except (OSError, ssl.SSLError) as exc:
            raise TlsFileError(
                "cert_file", f"{files.cert}: cannot be used with key_file {files.key}: {exc}"
            ) from exc
    return context


def _context(ca: Path | None) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=None if ca is None else str(ca))
    except (OSError, ssl.SSLError) as exc:
        raise TlsFileError("ca_file", f"{ca}: OpenSSL cannot load it: {exc}") from exc


def _check_pair(cert_path: Path, key_path: Path) -> None:
    chain = _certificates(_read(cert_path, "cert_file"), cert_path, "cert_file")
    key = _private_key(_read(key_path, "key_file"), key_path)
    leaf = chain[0]
    if _public(key.public_key()) != _public(leaf.public_key()):
        raise TlsFileError(
            "key_file", f"{key_path}: is not the key of the certificate in cert_file {cert_path}"
        )
    now = datetime.now(UTC)
    if leaf.not_valid_after_utc < now:
        raise TlsFileError(
            "cert_file",
            f"{cert_path}: the certificate expired on "
            f"{leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC",
        )
    if leaf.not_valid_before_utc > now:
        raise TlsFileError(
            "cert_file",
            f"{cert_path}: the certificate is not valid before "
            f"{leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC",
        )
    if not _for_clients(leaf):
        raise TlsFileError(
            "cert_file",
            f"{cert_path}: the certificate is not for client "
            "authentication (its extended key usage lacks clientAuth)",
        )


def _read(path: Path, field: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TlsFileError(field, f"{path}: cannot read it: {exc.strerror or exc}") from exc


def _certificates(data: bytes, path: Path, field: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise TlsFileError(field, f"{path}: holds no PEM certificate") from exc


def _private_key(data: bytes, path: Path) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise TlsFileError(
            "key_file",
            f"{path}: the key is encrypted; give an unencrypted "
            "PEM key (protect it with file permissions)",
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise TlsFileError("key_file", f"{path}: holds no PEM private key") from exc


def _public(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _for_clients(cert: x509.Certificate) -> bool:
    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True
    return (
        ExtendedKeyUsageOID.CLIENT_AUTH in usage
        or ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE in usage
    )
