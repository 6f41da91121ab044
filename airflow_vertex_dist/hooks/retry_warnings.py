"""What a hook call says while google.api_core's ``Retry`` retries it: the ``on_error`` hook of its retry.

``RetryWarnings`` is given to ``Retry(on_error=...)`` (``_clients.sync_retry`` / ``async_retry``), one
per hook call: each transient error it sees is one failed attempt, logged with the connection id, the
attempt number and the call's deadline. On an emulator connection (``"emulator": true``) a refused
connection is not left to the retry's five minutes: nothing listens at the address, so after
``EMULATOR_START_GRACE_S`` (an emulator started at the same moment gets that long to open its port)
``on_error`` raises ``EmulatorNotRunningError`` (once a TCP connect to the address is refused too: a
gRPC channel keeps failing fast for its reconnect backoff after a server has started), which
google.api_core lets through unchanged, naming the connection, the address and the command that
starts the emulator there; raised without its chain (the gRPC or requests errors of the refused
attempts), so a task log ends in the one error that says what to do. A refused connection to
Google's endpoints stays transient. Pure: no Google import.
"""

from __future__ import annotations

import socket
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from airflow_vertex_dist.hooks.endpoints import host_of, is_loopback

__all__ = [
    "EMULATOR_START_GRACE_S",
    "EmulatorNotRunningError",
    "RetryWarnings",
    "emulator_command",
    "is_refused",
    "listens",
]

#: How long an emulator connection's refused calls are retried before ``EmulatorNotRunningError``.
EMULATOR_START_GRACE_S = 2.0

_REFUSED_TEXT = "connection refused"  # gRPC's C core reports the socket error as strerror text


def is_refused(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection was refused (nothing listens at the address): a
    ``ConnectionRefusedError`` in its chain (REST: requests -> urllib3 -> socket), or gRPC's
    UNAVAILABLE "Failed to connect to remote host: Connection refused"."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        error = todo.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, ConnectionRefusedError) or _REFUSED_TEXT in str(error).lower():
            return True
        reason = getattr(error, "reason", None)  # urllib3's MaxRetryError keeps the cause here
        todo += [error.__cause__, error.__context__, reason if isinstance(reason, BaseException) else None]
        todo += [arg for arg in error.args if isinstance(arg, BaseException)]
    return False


def _port_of(address: str) -> str:
    rest = address.split("://", 1)[1] if "://" in address else address
    rest = rest.split("/", 1)[0]
    return rest.rsplit(":", 1)[1] if ":" in rest and not rest.endswith("]") else ""


def listens(address: str, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to ``address`` is accepted now: the check before saying that nothing
    listens there (a gRPC channel keeps failing fast for its reconnect backoff after a refusal, even
    once a server has started; a REST call does not, but the check costs one connect either way)."""
    port = _port_of(address)
    if not port.isdigit():
        return False
    try:
        with socket.create_connection((host_of(address).strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def emulator_command(address: str, transport: str) -> str:
    """The ``vertex-emulator`` command line that serves ``address`` (``host:port`` for gRPC, a URL for
    REST): the port flag of the transport, and ``--host`` unless the host is loopback."""
    port = _port_of(address)
    flag = "--rest-port" if transport == "rest" else "--grpc-port"
    command = "vertex-emulator"
    if not is_loopback(address):
        command += f" --host {host_of(address)}"
    return f"{command} {flag} {port}" if port.isdigit() else command


class EmulatorNotRunningError(ConnectionRefusedError):
    """An emulator connection's address refuses connections: the emulator is not running there."""

    def __init__(self, conn_id: str, address: str, transport: str) -> None:
        self.conn_id = conn_id
        self.address = address
        self.command = emulator_command(address, transport)
        super().__init__(
            f"connection {conn_id!r}: nothing listens at {address} (connection refused): the emulator "
            f"is not running there; start it with `{self.command}`, or point the connection's "
            "api_endpoint at the address it serves"
        )


class _Logger(Protocol):
    def warning(self, event: Any, *args: Any) -> Any: ...


class RetryWarnings:
    """The ``on_error`` hook of one hook call's retry (see the module doc).

    :param deadline_s: the retry's deadline (``RetryPolicy.deadline_s``), counted from now.
    :param emulator: whether the connection is the emulator's (a refused connection fails fast).
    :param transport: the connection's transport (for the command that starts the emulator).
    """

    def __init__(
        self,
        log: _Logger,
        conn_id: str,
        address: str,
        *,
        deadline_s: float,
        emulator: bool,
        transport: str,
    ) -> None:
        self.log = log
        self.conn_id = conn_id
        self.address = address
        self.emulator = emulator
        self.transport = transport
        self.started = time.monotonic()
        self.deadline = datetime.now(timezone.utc) + timedelta(seconds=deadline_s)
        self.attempt = 0

    def __call__(self, exc: Exception) -> None:
        self.attempt += 1
        if self.emulator and is_refused(exc):
            if time.monotonic() - self.started >= EMULATOR_START_GRACE_S:
                if not listens(self.address):
                    raise EmulatorNotRunningError(self.conn_id, self.address, self.transport) from None
                self.started = time.monotonic()  # it listens now: the refusal was the channel's backoff
            self.log.warning(
                "Vertex AI call on connection %r: attempt %d refused at %s; is the emulator starting? "
                "trying again for up to %.0f s",
                self.conn_id,
                self.attempt,
                self.address,
                EMULATOR_START_GRACE_S,
            )
            return
        self.log.warning(
            "Vertex AI call on connection %r: attempt %d failed with a transient error, retrying until "
            "%s (the call's deadline): %s",
            self.conn_id,
            self.attempt,
            self.deadline.strftime("%Y-%m-%d %H:%M:%S UTC"),
            exc,
        )
