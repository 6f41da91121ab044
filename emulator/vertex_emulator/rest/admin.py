"""The emulator's admin API over REST: ``/emulator/faults`` (read or change the fault settings),
``/emulator/capacity`` (the GPU capacity settings; a change wakes the jobs waiting) and
``/emulator/capacity/preempt`` (preempt a replica of a running Spot job now) and ``/emulator/scenario``
(the scenario playing: its time and the steps played; a PUT plays another) and ``/emulator/clock``
(the service's time and pace). Each answers JSON.
``/emulator/faults/schema``, ``/emulator/capacity/schema`` and ``/emulator/scenario/schema`` answer the
JSON schema of the settings (the pydantic models every way in validates with: ``FaultSettings``,
``CapacitySettings``, ``Scenario``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from vertex_emulator.capacity.ledger import GpuCapacity
from vertex_emulator.capacity.settings import (
    CapacityError,
    CapacitySettings,
    capacity_to_json,
)
from vertex_emulator.core.faults import FaultsError, FaultSettings, faults_to_json, update_faults
from vertex_emulator.core.validation import SettingsModel
from vertex_emulator.jobservice.methods import ApiError
from vertex_emulator.jobservice.service import JobService
from vertex_emulator.scenario.loader import ScenarioError, parse_scenario
from vertex_emulator.scenario.model import Scenario
from vertex_emulator.scenario.player import ScenarioSlot

__all__ = ["SCHEMAS", "capacity", "clock", "faults", "preempt", "scenario", "schema"]

JsonBody = Callable[[], dict[str, Any]]


def faults(service: JobService, method: str, json_body: JsonBody) -> dict[str, Any]:
    """``GET``/``PUT /emulator/faults``: the fault settings, after a PUT's partial change."""
    settings = service.faults
    if method == "PUT":
        changes = json_body()
        try:
            update_faults(settings, changes)
        except FaultsError as exc:
            raise ApiError("INVALID_ARGUMENT", str(exc)) from None
    return faults_to_json(settings)


#: admin path -> the settings model its PUT body is validated by (``<path>/schema`` serves its schema)
SCHEMAS: dict[str, type[SettingsModel]] = {
    "/emulator/faults": FaultSettings,
    "/emulator/capacity": CapacitySettings,
    "/emulator/scenario": Scenario,
}


def clock(service: JobService) -> dict[str, Any]:
    """``GET /emulator/clock``: the service's wall time (``now``, as the API writes times, and ``now_ns``)
    and its ``compression`` (service seconds per real second: 1 unless a scenario plays faster). A client
    whose own waits count service time (a rung's pending limit, a poll interval) reads them here, since
    a played night's job times run ahead of the machine's clock."""
    service_clock = service.store.clock
    now_ns = service_clock.time_ns()
    return {"now": service_clock.now_rfc3339(), "now_ns": now_ns, "compression": service_clock.compression}


def schema(path: str) -> dict[str, Any]:
    """``GET /emulator/faults/schema``, ``/emulator/capacity/schema``, ``/emulator/scenario/schema``: the
    JSON schema of the settings that path reads and changes (every field, its type, bounds and default)."""
    return SCHEMAS[path].model_json_schema()


def _gpus(service: JobService) -> GpuCapacity:
    gpus = service.gpus
    if gpus is None:
        raise ApiError("UNIMPLEMENTED", "this emulator was started without a GPU capacity model")
    return gpus


def capacity(service: JobService, method: str, json_body: JsonBody) -> dict[str, Any]:
    """``GET``/``PUT /emulator/capacity``: the GPU capacity settings, after a PUT's partial change."""
    gpus = _gpus(service)
    if method == "PUT":
        changes = json_body()
        try:
            gpus.update(changes)  # and jobs waiting for quota or GPUs try again under the new limits
        except CapacityError as exc:
            raise ApiError("INVALID_ARGUMENT", str(exc)) from None
    return capacity_to_json(gpus.settings)


def preempt(service: JobService, json_body: JsonBody) -> dict[str, Any]:
    """``POST /emulator/capacity/preempt`` ``{"job": NAME, "replica": KEY}``."""
    body = json_body()
    unknown = sorted(set(body) - {"job", "replica"})
    if unknown:
        raise ApiError("INVALID_ARGUMENT", f"{unknown[0]}: unknown field (known: job, replica)")
    job, replica = body.get("job"), body.get("replica", "workerpool0-0")
    if not isinstance(job, str) or not job:
        raise ApiError("INVALID_ARGUMENT", "job: required, the job's resource name")
    if not isinstance(replica, str) or not replica:
        raise ApiError("INVALID_ARGUMENT", "replica: must be a replica key like 'workerpool0-0'")
    _gpus(service).preempt(job, replica)
    return {"job": job, "replica": replica, "preempted": True}


def scenario(slot: ScenarioSlot, method: str, json_body: JsonBody) -> dict[str, Any]:
    """``GET``/``PUT /emulator/scenario``: the scenario playing (its time, the steps played so far); a PUT
    (a scenario as JSON) stops the one playing, what it set staying in force, and plays the new one."""
    if method == "PUT":
        try:  # the file's own loader and rules (the body laid out one value a line, which errors name)
            slot.play(parse_scenario(json.dumps(json_body(), indent=1), "body"))
        except ScenarioError as exc:
            raise ApiError("INVALID_ARGUMENT", str(exc)) from None
    return slot.status()
