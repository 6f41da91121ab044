"""An HTTP/1.1 server with ceilings, for the REST API and the local Cloud Storage API.

The standard library's ``ThreadingHTTPServer`` makes one thread per connection with no bound and no
deadline: 1,100 idle sockets, or one client sending its headers a byte at a time, held the emulator
for everyone. ``BoundedHTTPServer`` keeps the standard library's request handling and bounds it:

* at most ``Ceilings.max_connections`` connections are served at once (one thread each). A new
  connection beyond that evicts the connection that has waited longest without a request being
  handled (idle between requests, or still sending its request line and headers); when every
  connection is busy handling a request, the new one is answered ``503`` and closed.
* a connection waiting for its next request is closed after ``idle_timeout_s``;
* the request line and headers must arrive within ``header_timeout_s`` of the first byte;
* a handler bounds its body with ``Deadlines.body`` (``body_timeout_s`` for the whole body) or
  ``Deadlines.progress`` (``idle_timeout_s`` between two blocks: uploads of any size, at any steady
  pace).

Each connection's caller is identified when it is accepted, before a byte of it is read
(``callers.identify``), and keeps that identity (``caller_uid``) for its life. An IPv6 address
(``::1``) is served on an IPv6 socket.

A watchdog thread shuts down the socket of a connection past its deadline, so a blocked read returns
at once, whatever the client sends. Handlers must call ``Deadlines.busy`` once their body is read.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from vertex_emulator.server import callers

__all__ = ["BoundedHTTPServer", "Ceilings", "Deadlines"]


@dataclass(frozen=True)
class Ceilings:
    """The limits of one listener (``EmulatorConfig`` holds the emulator's)."""

    #: connections served at once (threads: one per connection).
    max_connections: int = 128
    #: seconds a connection may wait for its next request (keep-alive) before it is closed.
    idle_timeout_s: float = 60.0
    #: seconds from a request's first byte to the end of its headers.
    header_timeout_s: float = 10.0
    #: seconds to read a whole request body (REST; storage uploads use ``idle_timeout_s`` per block).
    body_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections: must be at least 1 (got {self.max_connections})")
        for name in ("idle_timeout_s", "header_timeout_s", "body_timeout_s"):
            value = getattr(self, name)
            if not 0 < value < float("inf"):
                raise ValueError(f"{name}: must be a positive number of seconds (got {value!r})")


_BUSY_BODY = b'{"error": {"code": 503, "message": "the emulator is serving its maximum number of connections; retry", "status": "UNAVAILABLE"}}\n'  # noqa: E501
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)


class _Conn:
    __slots__ = ("deadline", "evictable", "since", "sock", "uid")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        #: who called (``callers.identify``), looked up when accepted, before a byte was read
        self.uid: int | None = None
        self.since = time.monotonic()
        self.deadline: float | None = deadline
        self.evictable = True


class BoundedHTTPServer(HTTPServer):
    """``HTTPServer`` serving each connection in its own thread, within ``ceilings``."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        ceilings: Ceilings,
        *,
        backlog: int = 1024,
    ) -> None:
        self.ceilings = ceilings
        self.request_queue_size = backlog
        self._conns: dict[int, _Conn] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        #: connections refused (every slot busy) and evicted (idle or slow), for tests and stats.
        self.refused = 0
        self.evicted = 0
        host = address[0].strip("[]")
        # an IPv6 address (``::1``) needs an IPv6 socket: HTTPServer's default family is IPv4 only
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, *address[1:]), handler)
        self._watchdog = threading.Thread(target=self._watch, name="http-watchdog", daemon=True)
        self._watchdog.start()

    # -- connections ------------------------------------------------------------------------------

    def process_request(self, request: Any, client_address: Any) -> None:
        sock: socket.socket = request
        conn = _Conn(sock, time.monotonic() + self.ceilings.idle_timeout_s)
        with self._lock:
            if len(self._conns) >= self.ceilings.max_connections:
                victim = min(
                    (c for c in self._conns.values() if c.evictable), key=lambda c: c.since, default=None
                )
                if victim is None:
                    self.refused += 1
                    self._refuse(sock)
                    return
                self.evicted += 1
                self._cut(victim)
                # no longer served: its thread only has its socket's close left, so the slot is free
                # now, not when a loaded machine gets round to running that thread
                self._conns.pop(id(victim.sock), None)
            self._conns[id(sock)] = conn
        thread = threading.Thread(target=self._serve, args=(sock, client_address), daemon=True)
        try:
            thread.start()
        except RuntimeError:  # the machine has no thread left
            with self._lock:
                self._conns.pop(id(sock), None)
            self._refuse(sock)

    def _serve(self, sock: socket.socket, client_address: Any) -> None:
        try:
            # who called, before a byte is read: a caller gone by then is not identified (and refused
            # where the emulator's user is required), never read from a closed socket's leftovers
            uid = callers.identify(sock)
            with self._lock:
                conn = self._conns.get(id(sock))
                if conn is not None:
                    conn.uid = uid
            self.finish_request(sock, client_address)
        except Exception:
            self.handle_error(sock, client_address)
        finally:
            with self._lock:
                self._conns.pop(id(sock), None)
            self.shutdown_request(sock)

    def _refuse(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(1.0)
            sock.sendall(_BUSY)
        except OSError:
            pass
        self.shutdown_request(sock)

    @staticmethod
    def _cut(conn: _Conn) -> None:
        """Shut the connection's socket down: its thread's blocked read returns, and it ends."""
        conn.deadline = None
        conn.evictable = False
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client gone or cut off: nothing to report (the handlers log their own failures)

    def set_phase(self, sock: socket.socket, timeout: float | None, *, evictable: bool) -> None:
        """The connection's deadline (``timeout`` seconds from now; None: none) and whether a new
        connection may evict it."""
        with self._lock:
            conn = self._conns.get(id(sock))
            if conn is None:
                return
            now = time.monotonic()
            conn.deadline = None if timeout is None else now + timeout
            if evictable and not conn.evictable:
                conn.since = now
            conn.evictable = evictable

    def caller_uid(self, sock: socket.socket) -> int | None:
        """The uid identified when ``sock`` was accepted (None: not identified, or no longer served)."""
        with self._lock:
            conn = self._conns.get(id(sock))
            return None if conn is None else conn.uid

    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def _watch(self) -> None:
        while not self._stopped.wait(0.1):
            now = time.monotonic()
            with self._lock:
                for conn in list(self._conns.values()):
                    if conn.deadline is not None and conn.deadline <= now:
                        self._cut(conn)

    def server_close(self) -> None:
        self._stopped.set()
        super().server_close()
        with self._lock:
            for conn in list(self._conns.values()):
                self._cut(conn)


class Deadlines(BaseHTTPRequestHandler):
    """A request handler whose connection keeps its server's ceilings (mix in first)."""

    server: BoundedHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.ceilings.idle_timeout_s)  # every read, as a last resort

    def handle_one_request(self) -> None:
        ceilings = self.server.ceilings
        self.server.set_phase(self.connection, ceilings.idle_timeout_s, evictable=True)
        try:
            first = self.rfile.peek(1)  # type: ignore[attr-defined]  # a BufferedReader
        except OSError:
            first = b""
        if not first:
            self.close_connection = True
            return
        self.server.set_phase(self.connection, ceilings.header_timeout_s, evictable=True)
        super().handle_one_request()

    def body(self) -> None:
        """The headers are in: the body must follow within ``body_timeout_s``."""
        self.server.set_phase(self.connection, self.server.ceilings.body_timeout_s, evictable=False)

    def progress(self) -> None:
        """A block of the body arrived: the next must follow within ``idle_timeout_s``."""
        self.server.set_phase(self.connection, self.server.ceilings.idle_timeout_s, evictable=False)

    def busy(self) -> None:
        """The request is read: it is being handled, with no deadline and never evicted."""
        self.server.set_phase(self.connection, None, evictable=False)
