"""webhook_delivery over TLS: it connects to the address it checked, and verifies the certificate against the
URL's name (SNI); a certificate for another name is a failed attempt, never a post."""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, list[str]]]:
    from webhook_delivery import handler

    cert, key = _certificate(tmp_path, "localhost")
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            received.append(self.rfile.read(int(self.headers["content-length"])).decode())
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_HOSTS", "127.0.0.1,::1")  # localhost may give both
    monkeypatch.setattr(handler, "tls_context", lambda: ssl.create_default_context(cafile=str(cert)))
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


def test_an_https_endpoint_is_posted_to_with_its_certificate_verified_against_the_name(tls_receiver):
    from webhook_delivery.handler import post

    port, received = tls_receiver
    outcome = post(f"https://localhost:{port}/hook", {"content-type": "application/json"}, '{"a":1}')
    assert (outcome.outcome, outcome.status_code) == ("succeeded", 204)
    assert received == ['{"a":1}']


def test_a_certificate_for_another_name_fails_the_attempt(tls_receiver):
    from webhook_delivery.handler import post

    port, received = tls_receiver
    outcome = post(f"https://127.0.0.1:{port}/hook", {}, "{}")  # the certificate names localhost only
    assert outcome.outcome == "failed" and outcome.status_code is None
    assert received == []
