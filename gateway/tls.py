"""TLS for the listener and for its clients.

    ServerCertificates   serve --tls-cert/--tls-key (and --tls-client-ca for mutual TLS): gRPC
                         server credentials that pick up new certificate files by themselves
    ClientTLS            what a client trusts (--tls-ca) and presents (--tls-client-cert/-key)

gRPC asks `ServerCertificates` for its configuration before every new connection's handshake;
the files are read again only when one of them changed (size, mtime or inode), so a renewal
written next to the old files and moved into place is served from the next connection on. A
renewal that does not load (a half-written file, a key that does not match) is logged and the
previous certificates stay in use.

`cryptography` is imported only where server certificates are read: a client (`ClientTLS`) needs
nothing beyond grpcio.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from gateway.errors import ConfigError

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes

log = logging.getLogger("callgate.tls")

_Signature = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class _Material:
    cert_chain: bytes
    key: bytes
    client_ca: bytes | None


class ServerCertificates:
    def __init__(self, cert: Path, key: Path, client_ca: Path | None = None) -> None:
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self._lock = threading.Lock()
        self._signature = self._stat()
        self._material = self._load()
        self._refused: _Signature | None = None
        self._warned = ""

    @property
    def mutual(self) -> bool:
        return self.client_ca is not None

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(
            _configuration(self._material), self._fetch, require_client_authentication=self.mutual
        )

    def _files(self) -> list[tuple[str, Path]]:
        files = [("--tls-cert", self.cert), ("--tls-key", self.key)]
        return files + ([("--tls-client-ca", self.client_ca)] if self.client_ca else [])

    def _stat(self) -> _Signature:
        sig = []
        for flag, path in self._files():
            try:
                st = path.stat()
            except OSError as exc:
                raise ConfigError(f"{flag} {path}: cannot read it: {exc.strerror}") from exc
            sig.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(sig)

    def _load(self) -> _Material:
        cert, key = _read(self.cert, "--tls-cert"), _read(self.key, "--tls-key")
        chain = _certificates(cert, "--tls-cert", self.cert)
        private = _private_key(key, self.key)
        if _public(private.public_key()) != _public(chain[0].public_key()):
            raise ConfigError(
                f"--tls-key {self.key}: does not match the certificate in --tls-cert {self.cert}"
            )
        ca = None
        if self.client_ca is not None:
            ca = _read(self.client_ca, "--tls-client-ca")
            _certificates(ca, "--tls-client-ca", self.client_ca)
        return _Material(cert, key, ca)

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """gRPC's certificate fetcher: a new configuration when the files changed, else None."""
        with self._lock:
            try:
                signature = self._stat()
            except ConfigError as err:
                self._keep(None, err)
                return None
            if signature == self._signature or signature == self._refused:
                return None
            try:
                material = self._load()
            except ConfigError as err:
                self._keep(signature, err)
                return None
            self._signature, self._material = signature, material
            self._refused, self._warned = None, ""
            log.info("TLS certificates reloaded from %s", self.cert)
            return _configuration(material)

    def _keep(self, signature: _Signature | None, err: ConfigError) -> None:
        if signature is not None:
            self._refused = signature
        if err.message != self._warned:  # once per problem, not once per handshake
            self._warned = err.message
            log.warning("keeping the previous TLS certificates: %s", err.message)


def _configuration(material: _Material) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration(
        [(material.key, material.cert_chain)], root_certificates=material.client_ca
    )


@dataclass(frozen=True)
class ClientTLS:
    """A client's TLS settings: `ca` (PEM roots to trust; the system's when unset), `cert` and
    `key` (a client certificate, for a listener that requires one), `server_name` (the name to
    check the server's certificate against, when it differs from the target's host)."""

    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str = ""

    def channel_credentials(self) -> grpc.ChannelCredentials:
        if (self.cert is None) != (self.key is None):
            raise ConfigError("--tls-client-cert and --tls-client-key go together")
        roots = _read(self.ca, "--tls-ca") if self.ca else None
        cert = _read(self.cert, "--tls-client-cert") if self.cert else None
        key = _read(self.key, "--tls-client-key") if self.key else None
        return grpc.ssl_channel_credentials(
            root_certificates=roots, private_key=key, certificate_chain=cert
        )

    def channel_options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def _read(path: Path, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot read it: {exc.strerror or exc}") from exc


def _certificates(data: bytes, flag: str, path: Path) -> list[x509.Certificate]:
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise ConfigError(f"{flag} {path}: not a PEM certificate file") from exc
    return certs


def _private_key(data: bytes, path: Path) -> PrivateKeyTypes:
    from cryptography.hazmat.primitives import serialization

    try:
        return serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise ConfigError(
            f"--tls-key {path}: the key is encrypted; give an unencrypted PEM "
            "key (protect it with file permissions)"
        ) from exc
    except ValueError as exc:
        raise ConfigError(f"--tls-key {path}: not a PEM private key") from exc


def _public(key: PublicKeyTypes) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def describe(certs: ServerCertificates | None) -> str:
    if certs is None:
        return "plaintext"
    return "TLS with client certificates (mutual TLS)" if certs.mutual else "TLS"
