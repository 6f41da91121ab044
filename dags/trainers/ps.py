"""A synchronous parameter server over TCP (standard library): one weight shard per server.

Protocol: one JSON object per line each way, on a connection a trainer keeps open for the whole run.

- ``{"op": "init", "values": [...], "step": s}`` -- rank 0 sets the shard's initial values and the
  step training starts from (``step``: 0 when left out; a resumed run gives its checkpoint's step);
  the first one wins.
- ``{"op": "pull"}`` -- the current values, once initialized: ``{"values": [...], "version": n}``.
- ``{"op": "step", "rank": r, "step": s, "grad": [...], "lr": 0.1}`` -- trainer ``r``'s gradient for
  step ``s``. When every trainer's gradient for ``s`` is in, the server applies
  ``values -= lr * mean(grads)`` (summed in rank order, so a run is deterministic), and every waiting
  trainer gets the new ``{"values", "version"}``.
- ``{"op": "done"}`` -- the primary says training is over: ``{"version": the step reached,
  "applied": steps this server applied, "size": n}`` (``version`` counts from the init's ``step``);
  the server stops once the other trainers have hung up (or after a grace period).

A request that cannot be served gets ``{"error": "..."}`` and the client raises ``PsError``.
Waiting for peers is bounded by ``timeout`` (a dead trainer does not hang the others forever).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import socketserver
import threading
import time
from collections.abc import Sequence
from typing import Any

from trainers.cluster import split_address

__all__ = ["PsError", "ShardClient", "ShardServer", "shard_bounds", "wait_closed"]

log = logging.getLogger("trainers.ps")


class PsError(RuntimeError):
    """A parameter-server request failed (the message says which server and why)."""


def shard_bounds(size: int, shards: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, end)`` ranges splitting ``size`` parameters over ``shards`` servers."""
    if shards < 1:
        raise ValueError(f"shards: must be >= 1 (got {shards})")
    edges = [size * i // shards for i in range(shards + 1)]
    return [(edges[i], edges[i + 1]) for i in range(shards)]


class _Handler(socketserver.StreamRequestHandler):
    server: _TcpServer

    def handle(self) -> None:
        owner = self.server.owner
        owner._connection(+1)
        try:
            for line in self.rfile:
                if not line.strip():
                    continue
                try:
                    request = json.loads(line)
                    reply = owner.handle(request)
                except Exception as exc:  # reply with the reason instead of dropping the peer
                    reply = {"error": str(exc) or type(exc).__name__}
                self.wfile.write((json.dumps(reply) + "\n").encode())
                self.wfile.flush()
        except (ConnectionError, OSError):
            pass
        finally:
            owner._connection(-1)


class _TcpServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    owner: ShardServer


class ShardServer:
    """Holds one shard of the weights for ``trainers`` synchronous trainers; serves it at ``address``."""

    def __init__(self, address: str, trainers: int, *, timeout: float = 60.0, name: str = "ps") -> None:
        if trainers < 1:
            raise ValueError(f"trainers: must be >= 1 (got {trainers})")
        self.name = name
        self.trainers = trainers
        self.timeout = timeout
        self.values: list[float] | None = None
        self.version = 0
        self.first_step = 0  # the step the init said training starts from
        self._pending: dict[int, list[float]] = {}
        self._lrs: dict[int, float] = {}
        self._cond = threading.Condition()
        self._connections = 0
        self.done = threading.Event()
        host, port = split_address(address, field=f"{name} address")
        self._tcp = _bind(host, port)
        self._tcp.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        port: int = self._tcp.server_address[1]
        return port

    def start(self) -> ShardServer:
        self._thread = threading.Thread(
            target=self._tcp.serve_forever, kwargs={"poll_interval": 0.05}, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until no trainer is connected; True if none is."""
        with self._cond:
            return self._cond.wait_for(lambda: self._connections == 0, max(0.0, timeout))

    def stop(self, *, wait_for_peers: float = 0.0) -> None:
        """Stop serving (close the port); first wait up to ``wait_for_peers`` s for trainers to hang up."""
        if wait_for_peers > 0:
            self.wait_idle(wait_for_peers)
        self._tcp.shutdown()
        self._tcp.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _connection(self, delta: int) -> None:
        with self._cond:
            self._connections += delta
            self._cond.notify_all()

    # -- requests ---------------------------------------------------------------------------

    def handle(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            raise PsError("request: must be a JSON object")
        op = request.get("op")
        if op == "init":
            return self._init(request)
        if op == "pull":
            return self._pull()
        if op == "step":
            return self._step(request)
        if op == "done":
            self.done.set()
            with self._cond:
                return {
                    "ok": True, "version": self.version, "applied": self.applied,
                    "size": len(self.values or ()),
                }  # fmt: skip
        raise PsError(f"op: must be init, pull, step or done (got {op!r})")

    @property
    def applied(self) -> int:
        """Steps this server applied (from the init's ``step`` to ``version``)."""
        return self.version - self.first_step

    def _init(self, request: dict[str, Any]) -> dict[str, Any]:
        values = _floats(request.get("values"), "init.values")
        start = request.get("step", 0)
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise PsError(f"init.step: must be a non-negative integer (got {start!r})")
        with self._cond:
            if self.values is None:
                self.values = values
                self.version = self.first_step = start
                self._cond.notify_all()
            elif len(self.values) != len(values):
                raise PsError(f"init.values: the shard has {len(self.values)} values (got {len(values)})")
            return {"ok": True, "size": len(self.values)}

    def _pull(self) -> dict[str, Any]:
        with self._cond:
            if not self._cond.wait_for(lambda: self.values is not None, self.timeout):
                raise PsError(f"{self.name}: not initialized by rank 0 within {self.timeout:g}s")
            assert self.values is not None
            return {"values": self.values, "version": self.version}

    def _step(self, request: dict[str, Any]) -> dict[str, Any]:
        rank, step = request.get("rank"), request.get("step")
        if not isinstance(rank, int) or not 0 <= rank < self.trainers:
            raise PsError(f"step.rank: must be an integer in 0..{self.trainers - 1} (got {rank!r})")
        if not isinstance(step, int) or step < 0:
            raise PsError(f"step.step: must be a non-negative integer (got {step!r})")
        grad = _floats(request.get("grad"), "step.grad")
        lr = request.get("lr")
        if not isinstance(lr, (int, float)) or isinstance(lr, bool) or not lr > 0:
            raise PsError(f"step.lr: must be a positive number (got {lr!r})")
        with self._cond:
            if self.values is None:
                raise PsError(f"{self.name}: step before init")
            if len(grad) != len(self.values):
                raise PsError(f"step.grad: the shard has {len(self.values)} values (got {len(grad)})")
            if step != self.version:
                raise PsError(f"step.step: this shard is at step {self.version} (rank {rank} sent {step})")
            if rank in self._pending:
                raise PsError(f"step: rank {rank} already sent its gradient for step {step}")
            self._pending[rank] = grad
            self._lrs[rank] = float(lr)
            if len(self._pending) == self.trainers:
                self._apply()
            elif not self._cond.wait_for(lambda: self.version > step, self.timeout):
                missing = sorted(set(range(self.trainers)) - set(self._pending))
                raise PsError(
                    f"{self.name}: ranks {missing} sent no gradient for step {step} in {self.timeout:g}s"
                )
            return {"values": self.values, "version": self.version}

    def _apply(self) -> None:
        assert self.values is not None
        ranks = sorted(self._pending)
        lr = self._lrs[ranks[0]]
        if any(self._lrs[r] != lr for r in ranks):
            log.warning("%s: trainers disagree on the learning rate %s; using rank 0's", self.name, self._lrs)
        n = len(ranks)
        for i in range(len(self.values)):
            total = 0.0
            for r in ranks:
                total += self._pending[r][i]
            self.values[i] -= lr * (total / n)
        self._pending.clear()
        self._lrs.clear()
        self.version += 1
        self._cond.notify_all()


def _floats(raw: Any, field: str) -> list[float]:
    if not isinstance(raw, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw
    ):
        raise PsError(f"{field}: must be a list of numbers")
    return [float(v) for v in raw]


def _bind(host: str, port: int) -> _TcpServer:
    """Bind the address from CLUSTER_SPEC; a host name that is not ours falls back to all interfaces."""
    try:
        return _TcpServer((host, port), _Handler)
    except OSError:
        if host in ("127.0.0.1", "localhost", "::1"):
            raise
        return _TcpServer(("", port), _Handler)


class ShardClient:
    """A trainer's connection to one shard server (connects with retries until ``connect_timeout``)."""

    def __init__(self, address: str, *, connect_timeout: float = 60.0, timeout: float = 120.0) -> None:
        self.address = address
        host, port = split_address(address, field="parameter server address")
        deadline = time.monotonic() + connect_timeout
        delay = 0.02
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=timeout)
                break
            except OSError as exc:
                if time.monotonic() + delay > deadline:
                    raise PsError(
                        f"{address}: could not connect within {connect_timeout:g}s ({exc})"
                    ) from None
                time.sleep(delay)  # the server may not be up yet: replicas start in any order
                delay = min(delay * 2, 0.5)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rfile = self._sock.makefile("rb")

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self._sock.sendall((json.dumps(request) + "\n").encode())
            line = self._rfile.readline()
        except OSError as exc:
            raise PsError(f"{self.address}: {request.get('op')} failed ({exc})") from None
        if not line:
            raise PsError(f"{self.address}: the server closed the connection during {request.get('op')}")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise PsError(f"{self.address}: {reply['error']}")
        return reply

    def init(self, values: Sequence[float], step: int = 0) -> None:
        """Set the shard's values and the step training starts from (rank 0; the first init wins)."""
        self.call({"op": "init", "values": list(values), "step": step})

    def pull(self) -> list[float]:
        return [float(v) for v in self.call({"op": "pull"})["values"]]

    def step(self, rank: int, step: int, grad: Sequence[float], lr: float) -> list[float]:
        reply = self.call({"op": "step", "rank": rank, "step": step, "grad": list(grad), "lr": lr})
        return [float(v) for v in reply["values"]]

    def done(self) -> dict[str, Any]:
        """Tell the server training is over; its ``{"version", "applied", "size"}`` at that point."""
        return self.call({"op": "done"})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._rfile.close()
            self._sock.close()


def wait_closed(address: str, timeout: float) -> bool:
    """Wait until nothing listens at ``address`` any more (a server that was told ``done`` has
    stopped); True if it stopped within ``timeout`` seconds."""
    host, port = split_address(address, field="parameter server address")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                pass
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
