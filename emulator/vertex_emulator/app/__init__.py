"""The emulator as one object: config, job store, runner, JobService, gRPC and REST servers."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from vertex_emulator.app.state import EmulatorState
from vertex_emulator.capacity.host import HostCeilings
from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.resources import ResourceBooks
from vertex_emulator.cloud_logging.api import LogEntriesApi
from vertex_emulator.cloud_logging.transports import grpc_handler
from vertex_emulator.cloud_storage.api import STORAGE_HOST, StorageServer
from vertex_emulator.core.clock import ServiceClock
from vertex_emulator.core.config import BindError, EmulatorConfig, check_exposure, check_gcs_mount
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.jobservice.grpc_server import GrpcServer
from vertex_emulator.jobservice.service import JobService, RunnerLike
from vertex_emulator.persistent_resources.service import PersistentResourceService
from vertex_emulator.persistent_resources.transports import grpc_handler as resources_grpc_handler
from vertex_emulator.rest import RestServer
from vertex_emulator.scenario.model import Scenario
from vertex_emulator.scenario.player import ScenarioSlot
from vertex_emulator.server.callers import warn_if_unchecked
from vertex_emulator.server.httpserve import Ceilings

if TYPE_CHECKING:
    from vertex_emulator.runtime.runner import Runner

__all__ = ["Emulator"]


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def _make_runner(
    store: JobStore, config: EmulatorConfig, ceilings: HostCeilings, gpus: GpuCapacity, books: ResourceBooks
) -> Runner:
    from vertex_emulator.runtime.runner import Runner

    return Runner(store, config, ceilings, gpus, books)


_T = TypeVar("_T")


def _bind(what: str, host: str, port: int, make: Callable[[], _T]) -> _T:
    """``make()``, its OSError (the address in use, not the machine's...) told as a ``BindError``."""
    try:
        return make()
    except OSError as exc:
        raise BindError(what, host, port, exc.strerror or str(exc)) from None


class Emulator:
    """A local Vertex AI JobService.

    ``Emulator(config).start()`` binds both servers (port 0: an ephemeral port) and the local
    Cloud Storage API (cloud_storage/api.py; on 127.0.0.1, port 0 a free one too, unless
    ``config.storage_port`` is None), sets
    ``config.web_base_url`` and ``config.storage_endpoint``, lets the runner recover jobs left
    unfinished by a previous run, then serves. ``stop()`` (or leaving the ``with`` block) stops the
    servers, then every replica.
    The state directory is created with mode 0700; servers bind ``config.host`` (127.0.0.1); a
    non-loopback host without ``config.auth_token`` is a ValueError. Every surface serves only the
    emulator's own local user, or a caller with ``config.auth_token`` (server/callers.py).
    """

    def __init__(self, config: EmulatorConfig) -> None:
        check_exposure(config.host, config.auth_token)  # ValueError: non-loopback without a token
        check_gcs_mount(config.gcs_mount)
        warn_if_unchecked(config.auth_token)  # where other local accounts cannot be told apart
        self.config = config
        _private_dir(Path(config.state_dir))
        Path(config.gcs_root).mkdir(parents=True, exist_ok=True)
        #: the service's clock (core/clock.py): its waits and the times it writes; a scenario paces it
        self.clock = ServiceClock()
        self.store = JobStore(Path(config.state_dir) / "jobs.sqlite3", clock=self.clock)
        #: the host's ceilings on replicas, shared by the runner (room) and the service (Create)
        self.ceilings = HostCeilings(config.max_replica_processes, config.max_job_replicas)
        #: GPU quotas, free capacity and Spot preemption (capacity/ledger.py), shared the same way
        self.gpus = GpuCapacity(config.capacity, config.faults)
        #: the persistent resources' replicas (capacity/resources.py), shared by the runner and their service
        self.books = ResourceBooks()
        self._runner = _make_runner(self.store, config, self.ceilings, self.gpus, self.books)
        self.runner: RunnerLike = self._runner
        self.service = JobService(
            self.store, self.runner, config.faults, ceilings=self.ceilings, gpus=self.gpus
        )
        #: the PersistentResourceService (persistent_resources/), served by both servers
        self.resources = PersistentResourceService(self.store, self.gpus, self.books, self.service.injector)
        self.service.resources = self.resources
        #: the Cloud Logging read API over the replica logs (served by both servers)
        self.logs = LogEntriesApi(self.store, Path(config.state_dir), fault=self.service.injector.draw)
        #: the scenario played (``config.scenario`` from the start; ``PUT /emulator/scenario``)
        self.scenario = ScenarioSlot(self.gpus, config.faults, self.store)
        if config.scenario is not None and not isinstance(config.scenario, Scenario):
            raise TypeError("config.scenario: must be a vertex_emulator.scenario.model.Scenario")
        #: snapshot, restore and reset of the whole state (app/state.py; ``/emulator/state``)
        self.state = EmulatorState(
            config, self.store, self._runner, self.logs, self.gpus, self.service.injector, self.scenario
        )
        self.state.resources = self.resources
        self._grpc: GrpcServer | None = None
        self._rest: RestServer | None = None
        self._storage: StorageServer | None = None
        self._closed = False

    def start(self) -> Emulator:
        """Bind every listener (a ``BindError`` naming the one that cannot be bound, after the
        others are closed again), recover unfinished jobs, then serve."""
        if self._grpc is not None:
            return self
        token, host, config = self.config.auth_token, self.config.host, self.config
        ceilings = Ceilings(
            max_connections=config.max_connections,
            idle_timeout_s=config.idle_timeout_s,
            header_timeout_s=config.header_timeout_s,
            body_timeout_s=config.body_timeout_s,
        )
        rest = _bind(
            "the REST API",
            host,
            self.config.rest_port,
            lambda: RestServer(
                self.service,
                host,
                config.rest_port,
                auth_token=token,
                logs=self.logs,
                ceilings=ceilings,
                scenario=self.scenario,
                state=self.state,
                resources=self.resources,
            ),
        )
        try:
            grpc_server = _bind(
                "the gRPC API",
                host,
                self.config.grpc_port,
                lambda: GrpcServer(
                    self.service,
                    host,
                    self.config.grpc_port,
                    auth_token=token,
                    extra_handlers=(grpc_handler(self.logs), resources_grpc_handler(self.resources)),
                    max_workers=config.grpc_workers,
                    max_concurrent_rpcs=config.grpc_max_concurrent_rpcs,
                    idle_timeout_s=config.idle_timeout_s,
                ),
            )
        except BaseException:
            rest.stop()
            raise
        self._rest, self._grpc = rest, grpc_server
        self.config.web_base_url = rest.endpoint
        if self.config.storage_port is not None:
            port = self.config.storage_port
            try:
                self._storage = _bind(
                    "the Cloud Storage API",
                    STORAGE_HOST,
                    port,
                    lambda: StorageServer(
                        Path(self.config.gcs_root), port, ceilings, auth_token=token, clock=self.clock
                    ),
                )
            except BaseException:
                rest.stop()
                grpc_server.stop(grace=0)
                self._rest = self._grpc = None
                raise
            self.config.storage_endpoint = self._storage.endpoint
            self._storage.start()
        self.runner.recover()
        self.resources.recover()
        if self.config.restore is not None:  # before any client is served
            try:
                self.state.restore(self.config.restore)
            except BaseException:
                self.stop()
                raise
        rest.start()
        grpc_server.start()
        if isinstance(self.config.scenario, Scenario):
            self.scenario.play(self.config.scenario)  # its time 0: the emulator serving
        return self

    @property
    def grpc_target(self) -> str:
        if self._grpc is None:
            raise RuntimeError("the emulator is not started")
        return self._grpc.target

    @property
    def rest_endpoint(self) -> str:
        if self._rest is None:
            raise RuntimeError("the emulator is not started")
        return self._rest.endpoint

    def call_counts(self) -> dict[str, int]:
        return self.service.call_counts()

    def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.scenario.stop()
        try:
            if self._grpc is not None:
                self._grpc.stop(grace=0.5)
            if self._rest is not None:
                self._rest.stop()
        finally:
            try:
                self.resources.close()
                self.runner.close()
            finally:
                try:
                    if self._storage is not None:
                        self._storage.stop()
                finally:
                    self.store.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where: Any = self._grpc.target if self._grpc else "not started"
        return f"Emulator({where}, state_dir={str(self.config.state_dir)!r})"
