"""The emulator's whole state kept and given back: ``snapshot``, ``restore``, ``reset`` (and ``list``,
``delete``), one ``EmulatorState`` per emulator (``Emulator.state``), served by the admin API
(rest/state.py), the ``vertex-emulator state`` command and the pytest plugin.

The state is the jobs (the store), their logs (``<state_dir>/logs``), the objects under ``--gcs-root``
and the capacity and fault settings in force. Snapshots are directories under the state directory
(core/snapshots.py).

A restore or a reset first stops the scenario playing (``ScenarioSlot.clear``: it is forgotten, its
job outcome rules with it) and every job's driver and replicas, as stopping the emulator does
(``Runner.paused``: each replica's process tree is stopped, SIGTERM then SIGKILL after
``stop_grace_s``, and its driver joined); then it swaps the jobs in one transaction, the logs, the
objects (a reset keeps them when asked), the replicas' scratch directories (``work/``, ``packages/``)
and the settings (the start settings for a reset: those of the flags and files the emulator started
with, before any scenario or admin call changed them); last, a restored job the snapshot holds not
ended is settled as a restart settles it (runtime/runner.py ``recover``: FAILED with code 13, "The
emulator's state was restored while the job was RUNNING", or run again with
``restartJobOnWorkerRestart``). One operation runs at a time. A Create that arrives meanwhile is
ordered before it (its job is replaced with the rest) or after it (its job runs once it is done).
"""

from __future__ import annotations

import builtins
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.settings import CapacityError, capacity_from_json, capacity_to_json
from vertex_emulator.cloud_logging.api import LogEntriesApi
from vertex_emulator.core import snapshots
from vertex_emulator.core.config import EmulatorConfig
from vertex_emulator.core.errors import ApiError
from vertex_emulator.core.faults import (
    FaultInjector,
    FaultsError,
    faults_from_json,
    faults_to_json,
    update_faults,
)
from vertex_emulator.core.jobstore import JobStore
from vertex_emulator.runtime.runner import Runner
from vertex_emulator.scenario.player import ScenarioSlot

__all__ = ["OWN_ENTRIES", "EmulatorState", "ResourceKeeper"]

#: what the emulator keeps in its state directory (never taken for objects when ``--gcs-root`` is it)
OWN_ENTRIES = frozenset(
    {
        "jobs.sqlite3",
        "jobs.sqlite3-wal",
        "jobs.sqlite3-shm",
        "logs",
        "work",
        "packages",
        "quarantine",
        "snapshots",
    }
)
#: the replicas' scratch directories under the state directory, emptied by a restore and a reset
_SCRATCH = ("work", "packages")


class ResourceKeeper(Protocol):
    """What a restore and a reset need of the PersistentResourceService (persistent_resources/)."""

    def recover(self) -> None: ...


class EmulatorState:
    """Snapshot, restore and reset of one emulator's state (see the module doc)."""

    def __init__(
        self,
        config: EmulatorConfig,
        store: JobStore,
        runner: Runner,
        logs: LogEntriesApi,
        gpus: GpuCapacity,
        injector: FaultInjector,
        scenario: ScenarioSlot,
    ) -> None:
        self.config = config
        self.store = store
        self.runner = runner
        self.logs = logs
        self.gpus = gpus
        self.injector = injector
        self.scenario = scenario
        #: the persistent resources' service, settled again after a restore or a reset (None: none)
        self.resources: ResourceKeeper | None = None
        self.state_dir = Path(config.state_dir).resolve()
        self.gcs_root = Path(config.gcs_root).resolve()
        #: the settings a reset goes back to: those the emulator was configured with
        self.start_settings = {
            "capacity": capacity_to_json(config.capacity),
            "faults": faults_to_json(config.faults),
        }
        self._lock = threading.Lock()
        snapshots.remove_leftovers(self.state_dir)

    # -- what is the emulator's own under the gs:// root --------------------------------------------

    def _own(self, path: Path) -> bool:
        """A child of the gs:// root that is no object: the state directory, or one holding it."""
        if self.state_dir == path or self.state_dir.is_relative_to(path):
            return True
        return self.gcs_root == self.state_dir and path.name in OWN_ENTRIES

    def _own_children(self) -> list[Path]:
        try:
            return [child for child in self.gcs_root.iterdir() if self._own(child)]
        except FileNotFoundError:
            return []

    # -- the operations ----------------------------------------------------------------------------

    def list(self) -> list[dict[str, Any]]:
        """Every snapshot's summary, by name."""
        return snapshots.list_snapshots(self.state_dir)

    def delete(self, name: str) -> None:
        with self._lock:
            snapshots.delete_snapshot(self.state_dir, name)

    def snapshot(self, name: str, *, replace: bool = False) -> dict[str, Any]:
        """Write snapshot ``name`` of the state as it is (jobs keep running); its summary."""
        snapshots.check_name(name)
        with self._lock:
            settings = {
                "capacity": capacity_to_json(self.gpus.settings),
                "faults": faults_to_json(self.config.faults),
            }
            return snapshots.write_snapshot(
                self.state_dir,
                name,
                rows=self.store.export(),
                resources=self.store.export_resources(),
                settings=settings,
                stamp=self.store.clock.now_rfc3339(),
                parts={
                    "logs": (self.state_dir / "logs", ()),
                    "gcs": (self.gcs_root, self._own_children()),
                },
                max_bytes=self.config.snapshot_max_bytes,
                replace=replace,
            )

    def restore(self, name: str) -> dict[str, Any]:
        """The state of snapshot ``name`` (read and checked before anything changes) in force."""
        snap = snapshots.read_snapshot(self.state_dir, name)
        settings = snap.manifest
        try:
            capacity_from_json(settings["capacity"])
            faults_from_json(settings["faults"])
        except (CapacityError, FaultsError) as exc:
            raise ApiError(
                "FAILED_PRECONDITION", f"snapshot {name!r} is damaged: {exc}; nothing was changed"
            ) from None
        summary = self._swap(
            snap.rows,
            {"capacity": settings["capacity"], "faults": settings["faults"]},
            resources=snap.resources,
            logs=snap.logs,
            objects=snap.gcs,
            cause=f"The emulator's state was restored from snapshot {name!r}",
        )
        return {"restored": name, **summary}

    def reset(self, *, keep_objects: bool = False) -> dict[str, Any]:
        """No jobs, no logs, no objects (unless ``keep_objects``), the start settings."""
        summary = self._swap([], self.start_settings, logs=None, objects=None, keep_objects=keep_objects)
        return {"reset": True, "keptObjects": keep_objects, **summary}

    def _swap(
        self,
        rows: builtins.list[dict[str, Any]],
        settings: dict[str, Any],
        *,
        resources: builtins.list[dict[str, Any]] | None = None,
        logs: Path | None,
        objects: Path | None,
        keep_objects: bool = False,
        cause: str = "",
    ) -> dict[str, Any]:
        began = time.perf_counter()
        with self._lock:
            self.scenario.clear()
            self.store.outcomes.clear()
            stopped = [str(job["name"]) for job in self.store.non_terminal()]
            with self.runner.paused() as stuck:
                self.store.replace_all(rows, resources)
                self._put_logs(logs)
                if not keep_objects:
                    self._put_objects(objects)
                self.gpus.reset(settings["capacity"])
                update_faults(self.config.faults, settings["faults"])
                self.injector.reseed()
                if self.resources is not None:  # their holds and threads dropped, the restored ones settled
                    self.resources.recover()
                if rows:
                    self.runner.recover(cause)
        return {
            "jobs": len(rows),
            "stoppedJobs": stopped,
            "notStopped": stuck,
            "seconds": round(time.perf_counter() - began, 6),
        }

    def _put_logs(self, source: Path | None) -> None:
        root = self.state_dir / "logs"
        snapshots.clear_tree(root)
        for scratch in _SCRATCH:
            snapshots.clear_tree(self.state_dir / scratch)
        if source is not None and source.is_dir():
            snapshots.copy_tree(source, root)
        self.logs.forget()

    def _put_objects(self, source: Path | None) -> None:
        snapshots.clear_tree(self.gcs_root, keep=self._own)
        if source is not None and source.is_dir():
            snapshots.copy_tree(source, self.gcs_root)
