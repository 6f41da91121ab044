"""Endpoint settings of the connection: what an ``api_endpoint`` or ``logging_endpoint`` may be.

An endpoint override is a TLS endpoint reached with the connection's credentials (a Private Service
Connect endpoint: "About accessing Google APIs through endpoints", cloud.google.com/vpc/docs/
about-accessing-google-apis-endpoints, names such as ``storage-vialink1.p.googleapis.com``; or a
regional one); the local emulator is plain (no TLS) and anonymous, and is only ever chosen by the
connection's ``emulator`` setting. Pure: no Google import.
"""

from __future__ import annotations

import ipaddress

__all__ = ["endpoint_problem", "host_of", "is_loopback", "scheme_of"]

#: gRPC target schemes a ``host:port`` may carry (gRPC's naming: ``dns:///host:port``).
_GRPC_SCHEMES = ("", "dns", "grpc")


def scheme_of(endpoint: str) -> str:
    """The URL scheme (lower case), ``dns`` for a ``dns:`` gRPC target, ``""`` for ``host:port``."""
    if "://" in endpoint:
        return endpoint.split("://", 1)[0].lower()
    if endpoint.lower().startswith("dns:"):
        return "dns"
    return ""


def host_of(endpoint: str) -> str:
    """The host of an endpoint (no scheme, port, path or IPv6 brackets)."""
    rest = endpoint.split("://", 1)[1] if "://" in endpoint else endpoint
    if rest.lower().startswith("dns:"):
        rest = rest[4:].lstrip("/")
    rest = rest.split("/", 1)[0]
    if rest.startswith("["):
        return rest[1:].split("]", 1)[0]
    return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


def is_loopback(endpoint: str) -> bool:
    """Whether the endpoint names this machine: ``localhost`` (or ``*.localhost``), ``127.0.0.0/8``,
    ``::1`` or ``0.0.0.0``."""
    host = host_of(endpoint).lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def endpoint_problem(field: str, endpoint: str, *, transport: str, emulator: bool | None) -> str | None:
    """What is wrong with ``endpoint`` as the connection's ``field`` (``api_endpoint`` or
    ``logging_endpoint``, the latter read over REST when it is a URL), or None.

    With ``emulator`` true: ``host:port`` (gRPC) or an ``http://`` URL (REST). Otherwise a TLS endpoint:
    ``host[:port]`` (gRPC) or ``https://host[:port]`` / ``host[:port]`` (REST); ``http://`` and
    ``grpc://`` are refused (plain, they cannot be TLS), and so is a loopback address while ``emulator``
    is not set at all (a connection of an earlier version meant the emulator by it: the reader must say
    which).
    """
    scheme = scheme_of(endpoint)
    url = scheme not in _GRPC_SCHEMES
    if field == "api_endpoint" and transport == "grpc" and url:
        return (
            f"{field}: {endpoint!r} is a {scheme} URL but transport is grpc; give host:port or set "
            "transport to rest"
        )
    if url and scheme not in ("http", "https"):
        return f"{field}: {endpoint!r}: the scheme must be http or https (or none: host:port)"
    if emulator:
        return None
    if scheme in ("http", "grpc"):
        plain = "plain HTTP" if scheme == "http" else "plain gRPC (grpc://)"
        fix = "the https:// endpoint" if scheme == "http" else "host:port"
        return (
            f"{field}: {endpoint!r} is {plain}, which only the local emulator speaks: set "
            f'"emulator": true for the emulator, or give {fix} (an endpoint override always uses TLS '
            "and the connection's credentials)"
        )
    if emulator is None and is_loopback(endpoint):
        return (
            f"{field}: {endpoint!r} is on this machine and \"emulator\" is not set: set "
            '"emulator": true for the local emulator (anonymous credentials, a plain channel), or '
            '"emulator": false for a TLS endpoint reached with the connection\'s credentials'
        )
    return None
