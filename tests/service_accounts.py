"""A service-account key made for a test: a fresh RSA key in the JSON form Google's key files take
(google-auth signs with it locally; nothing here reaches a network)."""

from __future__ import annotations

from typing import Any

__all__ = ["GOOGLE_TOKEN_URI", "service_account_info"]

GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


def service_account_info(
    project: str, email: str, *, token_uri: str = GOOGLE_TOKEN_URI, key: Any = None
) -> dict[str, str]:
    """A service-account key file's fields, for ``key`` (an RSA private key; a new one when None)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    if key is None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": email,
        "client_id": "1",
        "token_uri": token_uri,
    }
