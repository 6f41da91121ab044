"""The gRPC port's accept: who called is known before a byte of the connection is read.

``grpc.server`` accepts its TCP connections inside gRPC's C core: Python sees a call only once its
headers and message are read, too late to ask the kernel who owns the caller's end (a caller that
sent its call and closed at once had left no owner behind: its orphaned socket reads as uid 0).
So the gRPC server listens only on a Unix socket in a private directory (mode 0700: no other account
can reach it), and ``AcceptProxy`` owns the TCP port: it accepts each connection, identifies its
caller then (``callers.identify``), connects to the gRPC server from a Unix socket bound to a name
of its own, and carries the bytes both ways. gRPC reports that name as the call's peer
(``context.peer()``: ``unix:<path>``), and ``uid_of`` answers with the identity recorded at
accept, for as long as the connection lasts; an unknown peer has none.

One thread serves every connection (``selectors``): idle connections hold no thread, and the gRPC
server's own limits (idle timeout, message sizes, concurrent calls) still apply, to the Unix side.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import shutil
import socket
import tempfile
import threading

from vertex_emulator.server import callers

__all__ = ["AcceptProxy"]

#: bytes read at once, and the most buffered for a side before reading from the other side pauses
_CHUNK = 256 * 1024
_HIGH_WATER = 4 * 1024 * 1024


class _End:
    """One side of a carried connection: its socket, the bytes waiting to be written to it."""

    __slots__ = ("eof", "link", "out", "peer", "shut", "sock")

    def __init__(self, sock: socket.socket, link: _Link) -> None:
        self.sock = sock
        self.link = link
        self.peer: _End = self
        self.out = bytearray()
        self.eof = False  # nothing more will be read from it
        self.shut = False  # its sending side is shut down (the other side's end of file, passed on)

    def events(self) -> int:
        wanted = 0
        if not self.eof and len(self.peer.out) < _HIGH_WATER:
            wanted |= selectors.EVENT_READ
        if self.out:
            wanted |= selectors.EVENT_WRITE
        return wanted


class _Link:
    """An accepted TCP connection and the Unix connection it is carried over."""

    __slots__ = ("name", "tcp", "uid", "unix")

    def __init__(self, name: str, uid: int | None, tcp: socket.socket, unix: socket.socket) -> None:
        self.name, self.uid = name, uid
        self.tcp, self.unix = _End(tcp, self), _End(unix, self)
        self.tcp.peer, self.unix.peer = self.unix, self.tcp


def _private_dir() -> str:
    """A new directory of mode 0700, short enough for Unix socket names (108 bytes)."""
    path = tempfile.mkdtemp(prefix="vertex-grpc-")
    if len(path) > 80:  # a long TMPDIR
        shutil.rmtree(path, ignore_errors=True)
        path = tempfile.mkdtemp(prefix="vertex-grpc-", dir="/tmp")
    return path


class AcceptProxy:
    """Accepts TCP connections on ``host:port`` (port 0: a free one; an OSError when it cannot be
    bound) and carries each to the Unix socket ``backend``, its caller identified at accept."""

    def __init__(self, host: str, port: int = 0) -> None:
        host = host.strip("[]")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._dir = _private_dir()
        #: where the gRPC server listens (``unix:<backend>``)
        self.backend = os.path.join(self._dir, "grpc.sock")
        try:
            # SO_REUSEADDR (a port in TIME_WAIT), never SO_REUSEPORT: a second emulator given the
            # same port fails instead of sharing it
            self._listener = socket.create_server((host, port), family=family, backlog=1024)
        except OSError:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        self._listener.setblocking(False)
        self.port: int = int(self._listener.getsockname()[1])
        self._links: dict[str, _Link] = {}
        self._lock = threading.Lock()
        self._names = itertools.count()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stopped = False
        self._thread: threading.Thread | None = None

    def uid_of(self, peer: str) -> int | None:
        """The uid identified at accept for the connection gRPC names ``peer`` (``context.peer()``);
        None when it was not identified, or is no connection carried here."""
        with self._lock:
            link = self._links.get(peer)
        return None if link is None else link.uid

    def start(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="grpc-accept", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=10)
        for link in list(self._links.values()):
            self._close(link)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- the loop ---------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopped:
            for key, mask in self._selector.select():
                if key.fileobj is self._listener:
                    self._accept()
                elif isinstance(key.data, _End):
                    self._step(key.data, mask)

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except OSError:  # gone before it was taken (or out of descriptors: the next turn retries)
            return
        # who called, before a byte is read: the caller's end is open now, owned by its process
        uid = callers.identify(sock)
        name = os.path.join(self._dir, f"c{next(self._names)}")
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        link = _Link(name, uid, sock, unix)
        with self._lock:
            self._links[f"unix:{name}"] = link  # before gRPC can see a call from it
        try:
            unix.bind(name)
            unix.settimeout(5.0)
            unix.connect(self.backend)
        except OSError:
            self._close(link)
            return
        for end in (link.tcp, link.unix):
            end.sock.setblocking(False)
            self._watch(end)

    def _step(self, end: _End, mask: int) -> None:
        try:
            if mask & selectors.EVENT_WRITE and end.out:
                sent = end.sock.send(end.out)
                del end.out[:sent]
            if mask & selectors.EVENT_READ and not end.eof:
                data = end.sock.recv(_CHUNK)
                if data:
                    end.peer.out += data
                else:
                    end.eof = True
            for side in (end, end.peer):  # an end of file passed on once what came before it is sent
                if side.peer.eof and not side.out and not side.shut:
                    side.shut = True
                    side.sock.shutdown(socket.SHUT_WR)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:  # reset, or broken: the connection is over
            self._close(end.link)
            return
        link = end.link
        if link.tcp.shut and link.unix.shut:
            self._close(link)
            return
        for side in (link.tcp, link.unix):
            self._watch(side)

    def _watch(self, end: _End) -> None:
        """Wait for what ``end`` can do now (nothing: it leaves the selector until it can again)."""
        events = end.events()
        try:
            current = self._selector.get_key(end.sock).events
        except KeyError:
            current = 0
        if events == current:
            return
        if not current:
            self._selector.register(end.sock, events, end)
        elif events:
            self._selector.modify(end.sock, events, end)
        else:
            self._selector.unregister(end.sock)

    def _close(self, link: _Link) -> None:
        with self._lock:
            self._links.pop(f"unix:{link.name}", None)
        for end in (link.tcp, link.unix):
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(end.sock)
            end.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(link.name)
