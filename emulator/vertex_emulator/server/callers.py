"""Who may call the emulator: its own local user, or whoever holds its access token.

The emulator runs the commands its jobs name, so whoever can call it can run code as its user. On a
shared machine loopback is no boundary: every local account can connect to ``127.0.0.1``. The
emulator therefore checks *who* is at the other end of each loopback connection, the way a Unix
socket with mode 0600 would, and serves only its own user:

- Linux knows the owner of every TCP socket: the kernel's socket diagnostics (``sock_diag(7)``,
  ``inet_diag_msg.idiag_uid``, one exact lookup by the connection's four addresses over a netlink
  socket, about 25 us) and ``/proc/net/tcp`` / ``tcp6`` (``proc(5)``: the uid column; read whole,
  milliseconds, used only when netlink is not available). A loopback connection has both ends on
  this machine, so the caller's end -- the socket whose local address is the connection's peer
  address and whose remote address is the one served -- is there, with its uid. ``peer_uid`` finds
  it, and takes only that very socket (its four addresses, not a listener the kernel's lookup falls
  back to) while a process still holds it: a socket its process closed (orphaned) and one in
  TIME_WAIT read as uid 0 and identify no one. ``identify`` asks once per connection, when it is
  accepted and before a byte is read (server/httpserve.py, server/acceptproxy.py for gRPC), so a
  caller cannot close its end before the question; the emulator serves a connection whose uid is its
  own effective uid and refuses every other (PERMISSION_DENIED / 403), including one it could not
  identify (gone before it was accepted; a caller in another network namespace behind a port
  forward, say).
- With an access token (``--auth-token``; required for a non-loopback ``--host``), the JobService
  (gRPC, REST), the Logging API and the pages accept only calls that carry it, from any user or
  machine, as before. Cloud Storage (loopback only) accepts the token *or* the emulator's own user:
  its replicas are processes of that user and call it with the stock clients, which send no
  credentials when ``STORAGE_EMULATOR_HOST`` is set.

Why this rather than a token written into the state directory by default (as Jupyter does): the
trust boundary is the same -- a process of the emulator's user could read a 0600 token file -- but
nothing has to carry a secret: the stock clients, an Airflow connection, the example DAGs, the
README's two commands, a browser opening the pages and every replica's ``google-cloud-storage`` or
``gcsfs`` keep working with no extra step, and a replica (which sends no credentials at all to
Storage: the stock clients use anonymous credentials with ``STORAGE_EMULATOR_HOST``) needs nothing
either. Where ``/proc/net`` does not exist (macOS), the owner of a connection cannot be told: loopback
stays open to the machine's other accounts there, and ``--auth-token`` is the way to close it
(``warn_if_unchecked`` says so at start).
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import os
import socket
import struct
import sys
from http.server import BaseHTTPRequestHandler
from typing import Protocol

__all__ = [
    "CAN_CHECK_PEERS",
    "PEER_REFUSAL",
    "bearer_matches",
    "caller_allowed",
    "http_caller_allowed",
    "identify",
    "peer_uid",
    "warn_if_unchecked",
]

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
#: whether this machine lists sockets with their owners (Linux)
CAN_CHECK_PEERS = os.path.exists(_TABLES[0])
PEER_REFUSAL = (
    "this emulator serves only the local user that runs it (or a caller with its --auth-token): "
    "the connection comes from another account, or its owner could not be told when it was accepted "
    "(the caller had closed it already)"
)
_log = logging.getLogger(__name__)
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLMSG_ERROR = 2
#: whether sock_diag answered (set to False the first time it cannot be used)
_diag_works = hasattr(socket, "AF_NETLINK")
#: TCP states (include/net/tcp_states.h) of a caller's end that its process may still hold:
#: ESTABLISHED, FIN_WAIT1 and FIN_WAIT2 (it shut down its sending side, and still reads)
_HELD_STATES = frozenset({1, 4, 5})


def _words(packed: bytes) -> str:
    """An address as ``/proc/net/tcp*`` prints it: each 32-bit word in host byte order, ``%08X``."""
    words = (packed[i : i + 4] for i in range(0, len(packed), 4))
    return "".join(f"{int.from_bytes(word, sys.byteorder):08X}" for word in words)


def _forms(ip: IPAddress) -> list[tuple[str, str]]:
    """``(table, hex address)`` pairs under which ``ip`` can appear."""
    if isinstance(ip, ipaddress.IPv4Address):
        mapped = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)
        return [(_TABLES[0], _words(ip.packed)), (_TABLES[1], _words(mapped.packed))]
    return [(_TABLES[1], _words(ip.packed))]


def _diag_uid(src: IPAddress, sport: int, dst: IPAddress, dport: int) -> int | None:
    """The uid of the TCP socket ``src:sport -> dst:dport`` by one ``SOCK_DIAG_BY_FAMILY`` request
    (``sock_diag(7)``); None when there is none. OSError when netlink cannot be used."""
    if src.version != dst.version:
        return None
    family = socket.AF_INET if src.version == 4 else socket.AF_INET6
    # struct inet_diag_req_v2 {family, protocol, ext, pad, states; inet_diag_sockid id}: an exact
    # lookup (no NLM_F_DUMP) of sport, dport, src, dst (network order), any interface, no cookie
    request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF)
    request += struct.pack("!HH", sport, dport) + src.packed.ljust(16, b"\0") + dst.packed.ljust(16, b"\0")
    request += struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendto(header + request, (0, 0))
        data = nl.recv(8192)
    if len(data) < 16 + 80:
        if len(data) >= 20 and struct.unpack_from("=H", data, 4)[0] == _NLMSG_ERROR:
            if -struct.unpack_from("=i", data, 16)[0] == errno.ENOENT:
                return None  # no such socket
            raise OSError("sock_diag refused the request")
        return None
    if struct.unpack_from("=H", data, 4)[0] != _SOCK_DIAG_BY_FAMILY:
        return None
    # struct inet_diag_msg {family, state, timer, retrans; id (48 bytes); expires, rqueue, wqueue, uid, inode}
    state = data[17]
    sockid = data[20:56]  # sport, dport (network order), src, dst (16 bytes each)
    uid, inode = struct.unpack_from("=II", data, 16 + 4 + 48 + 12)
    if sockid not in _sockids(src, sport, dst, dport):
        return None  # another socket than the one asked for (a listener the kernel fell back to)
    return _owned(state, uid, inode)


def _sockids(src: IPAddress, sport: int, dst: IPAddress, dport: int) -> tuple[bytes, ...]:
    """``inet_diag_sockid``'s ports and addresses as the kernel answers for this connection: an IPv4
    one may be an IPv6 socket's (a dual-stack client), named by IPv4-mapped addresses."""
    ports = struct.pack("!HH", sport, dport)
    plain = ports + src.packed.ljust(16, b"\0") + dst.packed.ljust(16, b"\0")
    if src.version == 6:
        return (plain,)
    mapped = b"\0" * 10 + b"\xff\xff"
    return plain, ports + mapped + src.packed + mapped + dst.packed


def _owned(state: int, uid: int, inode: int) -> int | None:
    """The uid of a caller's socket that a process still holds open, else None: a socket its process
    closed (orphaned: inode 0, and the kernel reports uid 0 for it) or in TIME_WAIT has no owner
    left, and must not read as root."""
    return int(uid) if state in _HELD_STATES and inode != 0 else None


def _proc_uid(peer: IPAddress, peer_port: int, served_port: int) -> int | None:
    """The same answer from ``/proc/net/tcp*`` (read whole: milliseconds)."""
    remote_port = f":{served_port:04X}".encode()
    for table, address in _forms(peer):
        needle = f" {address}:{peer_port:04X} ".encode()
        try:
            with open(table, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        at = data.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            fields = data[start : end if end >= 0 else len(data)].split()
            # sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode (proc(5))
            if len(fields) > 9 and fields[1] == needle.strip() and fields[2].endswith(remote_port):
                try:
                    return _owned(int(fields[3], 16), int(fields[7]), int(fields[9]))
                except ValueError:
                    return None
            at = data.find(needle, at + 1)
    return None


def peer_uid(peer_host: str, peer_port: int, served_port: int, served_host: str | None = None) -> int | None:
    """The uid owning the caller's end of a loopback connection (``peer_host:peer_port`` calling
    ``served_host:served_port``; ``served_host`` None: a loopback address of the peer's family, or
    the peer's own); None when it cannot be found."""
    try:
        peer = _ip(peer_host)
    except ValueError:
        return None
    try:
        served = [_ip(served_host or "")]
    except ValueError:  # not given, or a name (localhost): the peer's own address, or the loopback one
        served = [peer, _ip("127.0.0.1" if peer.version == 4 else "::1")]
    global _diag_works
    if _diag_works:
        try:
            for dst in dict.fromkeys(served):
                uid = _diag_uid(peer, peer_port, dst, served_port)
                if uid is not None:
                    return uid
            return None
        except OSError:
            _diag_works = False  # no netlink here (a sandbox, not Linux): read /proc
    return _proc_uid(peer, peer_port, served_port)


def _ip(host: str) -> IPAddress:
    """An address, an IPv4-mapped IPv6 one as its IPv4 address (the socket behind it is IPv4)."""
    ip = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def identify(sock: socket.socket) -> int | None:
    """Who called: the uid owning the other end of the accepted connection ``sock``, looked up once,
    when it is accepted and before a byte is read from it (the caller's end is then open, owned by the
    process that connected). None when it cannot be told: the caller closed it already, it is in
    TIME_WAIT, the lookup fails, or it is not a loopback connection of this network namespace."""
    try:
        peer, served = sock.getpeername(), sock.getsockname()
    except OSError:
        return None
    if not isinstance(peer, tuple) or not isinstance(served, tuple):
        return None  # not TCP (a Unix socket: not served by the emulator's listeners)
    return peer_uid(str(peer[0]), int(peer[1]), int(served[1]), str(served[0]))


def caller_allowed(uid: int | None) -> bool:
    """Whether a connection identified as ``uid`` at accept (``identify``) is this process's own
    user's; one that could not be identified is refused. Where the machine cannot tell (not Linux),
    every caller is."""
    if not CAN_CHECK_PEERS:
        return True
    return uid is not None and uid == os.geteuid()


def warn_if_unchecked(auth_token: str | None) -> None:
    """Log that other local accounts can call the emulator when no check can keep them out."""
    if auth_token is None and not CAN_CHECK_PEERS:
        _log.warning(
            "this machine does not list socket owners (/proc/net/tcp): every local account can call "
            "the emulator on loopback; start it with --auth-token to keep them out"
        )


class _AcceptedCallers(Protocol):
    def caller_uid(self, sock: socket.socket) -> int | None: ...


def http_caller_allowed(handler: BaseHTTPRequestHandler, auth_token: str | None = None) -> bool:
    """Whether an HTTP request carries ``auth_token`` (when given) or its connection was identified,
    when its server accepted it, as the emulator's user's (``BoundedHTTPServer.caller_uid``)."""
    if auth_token is not None and bearer_matches(handler.headers.get("Authorization"), auth_token):
        return True
    server: _AcceptedCallers = handler.server  # type: ignore[assignment]  # a BoundedHTTPServer
    return caller_allowed(server.caller_uid(handler.connection))


def bearer_matches(header: str | None, auth_token: str) -> bool:
    """Whether ``header`` is ``Bearer <auth_token>`` (compared in constant time)."""
    scheme, _, token = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), auth_token.encode())
