"""``RestServer``: the REST port's listener (handler.py) served in a thread of its own."""

from __future__ import annotations

import threading

from vertex_emulator.cloud_logging.api import LogEntriesApi
from vertex_emulator.jobservice.service import JobService
from vertex_emulator.persistent_resources.service import PersistentResourceService
from vertex_emulator.rest.handler import LISTEN_BACKLOG, RestHTTPServer
from vertex_emulator.rest.state import StateKeeper
from vertex_emulator.scenario.player import ScenarioSlot
from vertex_emulator.server.httpserve import Ceilings

__all__ = ["LISTEN_BACKLOG", "RestServer"]


class RestServer:
    """Serves the REST API and pages for ``service`` on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        service: JobService,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        auth_token: str | None = None,
        logs: LogEntriesApi | None = None,
        ceilings: Ceilings | None = None,
        scenario: ScenarioSlot | None = None,
        state: StateKeeper | None = None,
        resources: PersistentResourceService | None = None,
    ) -> None:
        self.host = host
        self._server = RestHTTPServer(
            (host, port), service, auth_token, logs, ceilings, scenario, state, resources
        )
        self.port: int = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="rest", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
