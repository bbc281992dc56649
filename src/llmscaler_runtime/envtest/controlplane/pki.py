"""The control plane's certificates: one CA, the API server's serving cert, client certs, SA keys.

kube-apiserver is started with ``--client-ca-file``, so every client authenticates with a
certificate this CA signed: the admin (group ``system:masters``, what tests and kubectl use), and
the controller manager, scheduler and kwok under their own names. Service-account tokens are
signed with an RSA key pair of their own, as in a real cluster, so the TokenRequest API hands out
tokens that the RBAC authorizer judges by the ServiceAccount's role bindings.

Everything is written once per control plane into its temporary directory; nothing is reused
across runs. Keys are ECDSA P-256 (fast to generate) except the service-account signer, which
kube-apiserver requires to be RSA or ECDSA and which we keep RSA for the widest compatibility.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import attrs

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError as exc:  # pragma: no cover - exercised only without the extra installed
    raise ImportError(
        "the controlplane backend needs the 'cryptography' package to create its certificates: "
        "pip install 'llmscaler[controlplane]'"
    ) from exc

__all__ = ["ClientCert", "Pki", "create_pki"]

#: Lifetime of every certificate: long enough for a long test session, short enough to be
#: obviously throwaway.
VALIDITY = dt.timedelta(days=7)

#: The in-cluster names of the ``kubernetes`` Service, so in-cluster style clients verify too.
_SERVICE_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@attrs.frozen
class ClientCert:
    """A client certificate and its key, as files (what a kubeconfig points at)."""

    cert: Path
    key: Path


@attrs.frozen
class Pki:
    """Paths of everything :func:`create_pki` wrote."""

    ca_cert: Path
    ca_key: Path
    serving: ClientCert
    admin: ClientCert
    sa_public_key: Path
    sa_private_key: Path
    directory: Path

    def client(self, common_name: str, *organizations: str) -> ClientCert:
        """Issue one more client certificate signed by this CA (e.g. for a test user)."""
        ca_key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        return _issue_client(self.directory, ca_cert, ca_key, common_name, organizations)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attrs_ = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs_.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs_)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature for every key (ECDSA TLS); certificate and CRL signing for the CA."""
    return x509.KeyUsage(
        digital_signature=True,
        key_encipherment=False,
        content_commitment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _issue_client(
    directory: Path,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    organizations: tuple[str, ...],
) -> ClientCert:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name(common_name, organizations), ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    stem = common_name.replace(":", "-")
    out = ClientCert(directory / f"{stem}.crt", directory / f"{stem}.key")
    out.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(out.key, key)
    return out


def create_pki(directory: Path, *, service_ip: str = "10.0.0.1") -> Pki:
    """Write a fresh CA, serving cert (127.0.0.1, ``service_ip``), admin cert and SA keys."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("llmscaler-envtest-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_cert_path, ca_key_path = directory / "ca.crt", directory / "ca.key"
    ca_cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(ca_key_path, ca_key)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in _SERVICE_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", service_ip)]
    serving_cert = (
        _builder(_name("kube-apiserver"), ca_name, serving_key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    serving = ClientCert(directory / "apiserver.crt", directory / "apiserver.key")
    serving.cert.write_bytes(serving_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(serving.key, serving_key)

    admin = _issue_client(directory, ca_cert, ca_key, "admin", ("system:masters",))

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_private, sa_public = directory / "sa.key", directory / "sa.pub"
    _write_key(sa_private, sa_key)
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(
        ca_cert=ca_cert_path,
        ca_key=ca_key_path,
        serving=serving,
        admin=admin,
        sa_public_key=sa_public,
        sa_private_key=sa_private,
        directory=directory,
    )
