"""Local TLS endpoints standing for a private Vertex AI endpoint (Private Service Connect): a gRPC and
an HTTPS server on loopback with a self-signed certificate, each forwarding every call to the emulator
(over its plain ports) and recording what the call carried: its ``authorization``,
``x-goog-user-project`` (the quota project) and ``x-goog-api-client`` (the client's user agent). The
HTTPS server also answers OAuth token requests at ``/token`` (a service account's ``token_uri`` may
point there), so no call leaves the machine.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

__all__ = ["Call", "Certificate", "grpc_tls_proxy", "https_proxy", "self_signed"]

#: the access token the ``/token`` endpoint hands out
ISSUED_TOKEN = "ya29.local-token-endpoint"


@dataclass(frozen=True)
class Certificate:
    """A self-signed certificate for ``localhost`` and ``127.0.0.1`` (its own CA) and its key, as PEM
    files: ``cert`` is what a client must trust."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Call:
    """One call a TLS endpoint received."""

    target: str  # gRPC method or HTTP method and path
    authorization: str
    user_project: str
    api_client: str = ""  # x-goog-api-client: the client's user agent, then library versions


@dataclass
class Recorder:
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)

    def snapshot(self) -> list[Call]:
        with self.lock:
            return list(self.calls)


def self_signed(directory: Path) -> Certificate:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "endpoint-cert.pem", directory / "endpoint-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Certificate(cert_path, key_path)


class _Forward(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Every unary method, forwarded as raw bytes to the upstream channel."""

    def __init__(self, upstream: grpc.Channel, recorder: Recorder) -> None:
        self._upstream = upstream
        self._recorder = recorder

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = str(details.method)

        def handle(raw: bytes, context: grpc.ServicerContext) -> bytes:
            metadata = {key: str(value) for key, value in context.invocation_metadata()}
            self._recorder.add(
                Call(
                    method,
                    metadata.get("authorization", ""),
                    metadata.get("x-goog-user-project", ""),
                    metadata.get("x-goog-api-client", ""),
                )
            )
            try:
                answer: bytes = self._upstream.unary_unary(method)(raw, timeout=30)
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())
            return answer

        return grpc.unary_unary_rpc_method_handler(handle)


@contextmanager
def grpc_tls_proxy(upstream: str, certificate: Certificate) -> Iterator[tuple[str, Recorder]]:
    """A gRPC server over TLS on loopback forwarding to the plain gRPC ``upstream``: its target and
    its record of calls."""
    recorder = Recorder()
    channel = grpc.insecure_channel(upstream)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="tls-proxy"))
    server.add_generic_rpc_handlers((_Forward(channel, recorder),))
    credentials = grpc.ssl_server_credentials([(certificate.key.read_bytes(), certificate.cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder
    finally:
        server.stop(None).wait()
        channel.close()


def _handler(upstream: str, recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path == "/token":  # an OAuth 2.0 token endpoint (any grant is granted)
                token = {"access_token": ISSUED_TOKEN, "expires_in": 3600, "token_type": "Bearer"}
                self._answer(200, json.dumps(token).encode(), "application/json")
                return
            recorder.add(
                Call(
                    f"{self.command} {self.path.split('?', 1)[0]}",
                    self.headers.get("Authorization", ""),
                    self.headers.get("x-goog-user-project", ""),
                    self.headers.get("x-goog-api-client", ""),
                )
            )
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            reply = requests.request(
                self.command, upstream + self.path, data=body, headers=headers, timeout=30
            )
            content_type = reply.headers.get("Content-Type", "application/json")
            self._answer(reply.status_code, reply.content, content_type)

        do_GET = do_POST = do_DELETE = do_PATCH = _forward

    return Handler


@contextmanager
def https_proxy(upstream: str, certificate: Certificate) -> Iterator[tuple[str, Recorder]]:
    """An HTTPS server on loopback forwarding to the plain HTTP ``upstream`` (and answering
    ``/token``): its base URL and its record of calls."""
    recorder = Recorder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream.rstrip("/"), recorder))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate.cert, certificate.key)
    # the handshake happens in the request's own thread, not in the accepting one
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, name="https-proxy", daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
