"""Endpoint settings of the connection: what an ``api_endpoint`` or ``logging_endpoint`` may be.

An endpoint override is a TLS endpoint reached with the connection's credentials (a Private Service
Connect endpoint: "About accessing Google APIs through endpoints", cloud.google.com/vpc/docs/
about-accessing-google-apis-endpoints, names such as ``storage-vialink1.p.googleapis.com``; or a
regional one); the local emulator is plain (no TLS) and anonymous, and is only ever chosen by the
connection's ``emulator`` setting. Pure: no Google import.

Credentials go to Google's hosts only (``credentials_host_problem``): ``googleapis.com`` and its
subdomains, which hold every name Google documents for these APIs -- the regional endpoints
``<location>-aiplatform.googleapis.com`` ("Vertex AI locations", cloud.google.com/vertex-ai/docs/
general/locations), ``logging.googleapis.com``, the Private Service Connect names
``<service>-<endpoint>.p.googleapis.com`` (the page above) and ``private.googleapis.com`` /
``restricted.googleapis.com`` (Private Google Access). Any other host -- a PSC endpoint's IP address,
a proxy, a host on this machine -- must be listed in the connection's ``trusted_endpoint_hosts``.

An emulator token file is read only when it is a regular file of at most ``TOKEN_FILE_MAX_BYTES``
bytes that neither the group nor others may read or write (``read_token_file``); a token sent in
clear (the emulator's plain channel) to a host off this machine is logged as a warning
(``warn_clear_token``).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import stat
import threading
from collections.abc import Iterable

__all__ = [
    "GOOGLE_DOMAIN",
    "TOKEN_FILE_MAX_BYTES",
    "credentials_host_problem",
    "endpoint_problem",
    "host_of",
    "host_trusted",
    "is_google_host",
    "is_loopback",
    "read_token_file",
    "scheme_of",
    "warn_clear_token",
]

log = logging.getLogger(__name__)

#: The domain whose hosts may receive the connection's credentials without being listed.
GOOGLE_DOMAIN = "googleapis.com"
#: The largest emulator token file read (an access token is a few dozen bytes).
TOKEN_FILE_MAX_BYTES = 4096

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
    rest = endpoint
    if rest.lower().startswith("dns:"):  # dns:host, dns:///host or dns://authority/host
        rest = rest[4:]
        if rest.startswith("//"):
            rest = rest[2:].partition("/")[2]
    elif "://" in rest:
        rest = rest.split("://", 1)[1]
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
            f'{field}: {endpoint!r} is on this machine and "emulator" is not set: set '
            '"emulator": true for the local emulator (anonymous credentials, a plain channel), or '
            '"emulator": false for a TLS endpoint reached with the connection\'s credentials'
        )
    return None


def _norm(host: str) -> str:
    return host.strip().lower().rstrip(".")


def is_google_host(endpoint: str) -> bool:
    """Whether the endpoint's host is ``googleapis.com`` or one of its subdomains."""
    host = _norm(host_of(endpoint))
    return host == GOOGLE_DOMAIN or host.endswith("." + GOOGLE_DOMAIN)


def host_trusted(endpoint: str, trusted: Iterable[str]) -> bool:
    """Whether the endpoint's host is one of ``trusted``: a host name or address as written, or
    ``*.domain`` for the subdomains of ``domain``."""
    host = _norm(host_of(endpoint))
    for entry in (_norm(item) for item in trusted):
        if entry.startswith("*.") and host.endswith(entry[1:]) and len(host) > len(entry) - 1:
            return True
        if entry.strip("[]") == host:
            return True
    return False


def credentials_host_problem(field: str, endpoint: str, trusted: Iterable[str]) -> str | None:
    """What is wrong with sending the connection's credentials to ``endpoint`` (its ``field``), or
    None: a host that is neither Google's (``is_google_host``) nor listed in ``trusted_endpoint_hosts``."""
    if is_google_host(endpoint) or host_trusted(endpoint, trusted):
        return None
    host = host_of(endpoint)
    return (
        f"{field}: {endpoint!r}: the connection's Google credentials are only sent to *.{GOOGLE_DOMAIN} "
        f"hosts (regional, Private Service Connect *.p.{GOOGLE_DOMAIN}, private/restricted."
        f"{GOOGLE_DOMAIN}); {host!r} is not one: list it in trusted_endpoint_hosts to send them there "
        'anyway, or set "emulator": true for the local emulator (anonymous credentials)'
    )


def read_token_file(path: str, field: str = "emulator_token_file") -> str:
    """The token a file holds (stripped). ``ValueError`` naming ``field`` unless the file is a regular
    file (a symbolic link to one is followed), at most ``TOKEN_FILE_MAX_BYTES`` bytes, that neither its
    group nor others may read or write (mode 0600 or 0400), and not empty."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ValueError(f"{field}: cannot read {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ValueError(f"{field}: {path} is not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if info.st_mode & 0o077:
            raise ValueError(
                f"{field}: {path} may be read or written by its group or others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}): a token file must be the owner's only (chmod 600)"
            )
        if info.st_size > TOKEN_FILE_MAX_BYTES:
            raise ValueError(
                f"{field}: {path} is {info.st_size} bytes, over the {TOKEN_FILE_MAX_BYTES} a token file "
                "may be"
            )
        data = fh.read(TOKEN_FILE_MAX_BYTES + 1)
    if len(data) > TOKEN_FILE_MAX_BYTES:
        raise ValueError(f"{field}: {path} is over the {TOKEN_FILE_MAX_BYTES} bytes a token file may be")
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ValueError(f"{field}: {path} is not UTF-8 text") from None
    if not token:
        raise ValueError(f"{field}: {path} is empty")
    return token


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_clear_token(field: str, endpoint: str) -> bool:
    """Log a warning (once per endpoint and process) when the emulator's token, sent on its plain
    channel, would travel in clear to a host off this machine; whether ``endpoint`` is such a host."""
    if is_loopback(endpoint) or scheme_of(endpoint) == "https":
        return False
    with _warned_lock:
        first = endpoint not in _warned
        _warned.add(endpoint)
    if first:
        log.warning(
            "%s: %r is not on this machine and the emulator's channel is plain: its access token travels "
            "in clear; reach the emulator over a loopback address (an SSH tunnel, say) or a TLS proxy",
            field,
            endpoint,
        )
    return True
