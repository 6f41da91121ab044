"""Reading a v1 ``CustomJobSpec`` (REST JSON, camelCase) into the fields of a
``DistributedTrainingJob``: the conversion behind ``DistributedTrainingJob.from_api`` and the trial job
of ``HyperparameterTuningJob.from_api``. The model then applies every rule."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from airflow_vertex_dist.specs import _api
from airflow_vertex_dist.specs.cluster import POOL_ROLES, WorkerPool, is_reduction_server_image

__all__ = ["job_spec_from_api"]


_SPEC_SIMPLE = {
    "serviceAccount": "service_account",
    "network": "network",
    "reservedIpRanges": "reserved_ip_ranges",
    "protectedArtifactLocationId": "protected_artifact_location_id",
    "tensorboard": "tensorboard",
    "enableWebAccess": "enable_web_access",
    "enableDashboardAccess": "enable_dashboard_access",
    "persistentResourceId": "persistent_resource_id",
    "experiment": "experiment",
    "experimentRun": "experiment_run",
    "models": "models",
}


def _snake_tree(value: Any) -> Any:
    """Recursively snake_case the keys of plain nested objects, dropping proto3 defaults."""
    if isinstance(value, dict):
        return {_api.snake(k): _snake_tree(v) for k, v in value.items() if not _api.is_unset(v)}
    if isinstance(value, list):
        return [_snake_tree(v) for v in value]
    return value


def _env_from_api(title: str, loc: tuple[str | int, ...], env: Any) -> Any:
    if not isinstance(env, list):
        return env
    out: dict[str, Any] = {}
    for i, item in enumerate(env):
        item = _api.as_dict(title, (*loc, i), item)
        extra = set(item) - {"name", "value"}
        if extra or not isinstance(item.get("name"), str):
            _api.reject(title, (*loc, i), "env: each entry is {name, value} with a string name", item)
        if item["name"] in out:
            _api.reject(title, (*loc, i), f"env: duplicate variable name {item['name']!r}; keep one", item)
        out[item["name"]] = item.get("value", "")
    return out


def _task_from_api(title: str, loc: tuple[str | int, ...], raw: Any) -> dict[str, Any]:
    task: dict[str, Any] = _snake_tree(_api.as_dict(title, loc, raw))
    if "env" in task:
        task["env"] = _env_from_api(title, (*loc, "env"), task["env"])
    return task


def _machine_from_api(title: str, loc: tuple[str | int, ...], spec: Any) -> dict[str, Any]:
    spec = dict(_api.as_dict(title, loc, spec))
    if "acceleratorType" in spec:
        spec["acceleratorType"] = _api.enum_name(spec["acceleratorType"], _api.ACCELERATOR_NUMBERS)
    affinity = spec.get("reservationAffinity")
    if isinstance(affinity, dict) and "reservationAffinityType" in affinity:
        affinity = dict(affinity)
        affinity["reservationAffinityType"] = _api.enum_name(
            affinity["reservationAffinityType"], _api.RESERVATION_NUMBERS
        )
        spec["reservationAffinity"] = affinity
    machine: dict[str, Any] = _snake_tree(spec)
    if "accelerator_count" in machine:
        machine["accelerator_count"] = _api.as_int(machine["accelerator_count"])
    if machine.get("accelerator_count") == 0 and "accelerator_type" not in machine:
        del machine["accelerator_count"]
    return machine


def _pool_from_api(title: str, loc: tuple[str | int, ...], raw: Any) -> dict[str, Any]:
    raw = _api.as_dict(title, loc, raw)
    pool: dict[str, Any] = {}
    known = {
        "machineSpec",
        "replicaCount",
        "diskSpec",
        "containerSpec",
        "pythonPackageSpec",
        "nfsMounts",
        "lustreMounts",
    }
    _api.unknown_keys(raw, known, pool, WorkerPool.model_fields)
    if "machineSpec" in raw:
        pool["machine"] = _machine_from_api(title, (*loc, "machine_spec"), raw["machineSpec"])
    # proto3: an omitted replicaCount is 0, and a used pool with 0 replicas is refused (WorkerPool's
    # rule; pool 0 must hold exactly 1), so the validator and the runner read the same count.
    pool["replica_count"] = _api.as_int(raw.get("replicaCount", 0))
    if not _api.is_unset(raw.get("diskSpec")):
        disk = _snake_tree(_api.as_dict(title, (*loc, "disk_spec"), raw["diskSpec"]))
        disk = {k: _api.as_int(v) for k, v in disk.items() if v != 0}
        if disk:
            pool["disk"] = disk
    if not _api.is_unset(raw.get("containerSpec")):
        pool["container"] = _task_from_api(title, (*loc, "container_spec"), raw["containerSpec"])
    if not _api.is_unset(raw.get("pythonPackageSpec")):
        pool["python_package"] = _task_from_api(
            title, (*loc, "python_package_spec"), raw["pythonPackageSpec"]
        )
    for key, name in (("nfsMounts", "nfs_mounts"), ("lustreMounts", "lustre_mounts")):
        if not _api.is_unset(raw.get(key)):
            pool[name] = _snake_tree(raw[key])
    return pool


def _reducers_from_api(title: str, loc: tuple[str | int, ...], pool: dict[str, Any]) -> dict[str, Any]:
    """Turn a pool-2 dict running the Reduction Server image into ``ReductionServer`` fields."""
    rs: dict[str, Any] = {"allow_undersized": True}
    container = dict(pool.pop("container"))
    rs["image_uri"] = container.pop("image_uri")
    rs.update(container)  # command/args/env: refused by ReductionServer with a clear message
    machine = dict(pool.pop("machine", {}))
    if "machine_type" in machine:
        rs["machine_type"] = machine.pop("machine_type")
    if "reservation_affinity" in machine:
        rs["reservation_affinity"] = machine.pop("reservation_affinity")
    rs.update(machine)  # accelerators: refused by ReductionServer with a clear message
    count = pool.pop("replica_count", 0)
    if not isinstance(count, int) or isinstance(count, bool):
        _api.reject(title, (*loc, "replica_count"), "replica_count: must be an integer", count)
    rs["replica_count"] = count
    rs.update(pool)  # disk, and anything unknown
    return rs


def _pool_is_empty(raw: Any) -> bool:
    """A skipped pool: ``{}``, or what ``to_json`` makes of it (zero replicas, empty lists)."""
    if not isinstance(raw, dict):
        return raw is None
    return all(_api.is_unset(v) or (k == "replicaCount" and v in (0, "0")) for k, v in raw.items())


def job_spec_from_api(
    title: str, loc: tuple[str | int, ...], raw: Any, job_fields: Collection[str]
) -> dict[str, Any]:
    """``CustomJobSpec`` JSON -> the spec fields of ``DistributedTrainingJob`` (``job_fields``: its
    field names, which an unknown key must not pass for)."""
    spec = _api.as_dict(title, loc, raw if raw is not None else {})
    data: dict[str, Any] = {}
    known = {*_SPEC_SIMPLE, "workerPoolSpecs", "scheduling", "pscInterfaceConfig", "baseOutputDirectory"}
    _api.unknown_keys(spec, known, data, job_fields)
    for key, name in _SPEC_SIMPLE.items():
        if key in spec and not _api.is_unset(spec[key]) and spec[key] is not False:
            data[name] = spec[key]
    if not _api.is_unset(spec.get("scheduling")):
        scheduling = dict(_api.as_dict(title, (*loc, "scheduling"), spec["scheduling"]))
        if scheduling.get("timeout") in ("0s", 0):
            # A zero timeout: the reference only says "The default is 7 days"; read it as unset.
            del scheduling["timeout"]
        if "strategy" in scheduling:
            scheduling["strategy"] = _api.enum_name(scheduling["strategy"], _api.STRATEGY_NUMBERS)
        data["scheduling"] = _snake_tree(scheduling)
        data["scheduling"] = {k: v for k, v in data["scheduling"].items() if v is not False}
    if not _api.is_unset(spec.get("pscInterfaceConfig")):
        data["psc_interface_config"] = _snake_tree(spec["pscInterfaceConfig"])
    if spec.get("baseOutputDirectory") is not None:
        out = _api.as_dict(title, (*loc, "base_output_directory"), spec["baseOutputDirectory"])
        extra = set(out) - {"outputUriPrefix"}
        if extra:
            _api.reject(
                title,
                (*loc, "base_output_directory"),
                f"unknown field(s) {sorted(extra)}; a GcsDestination has only outputUriPrefix",
                out,
            )
        if _api.is_unset(out.get("outputUriPrefix")):
            _api.reject(
                title,
                (*loc, "base_output_directory", "output_uri_prefix"),
                "base_output_directory.output_uri_prefix: required when base_output_directory is set "
                "(the v1 GcsDestination reference marks it Required); set it, or drop baseOutputDirectory",
                out,
            )
        data["base_output_directory"] = out.get("outputUriPrefix")
    pools = _api.as_list(title, (*loc, "worker_pool_specs"), spec.get("workerPoolSpecs", []))
    if not pools or _pool_is_empty(pools[0]):
        rule = "worker_pool_specs: pool 0 (primary) is required; send the primary first"
        _api.reject(title, (*loc, "worker_pool_specs"), rule, pools)
    if len(pools) > 4:
        _api.reject(
            title,
            (*loc, "worker_pool_specs"),
            f"worker_pool_specs: at most 4 pools (primary, workers, parameter servers or Reduction "
            f"Server, evaluators) (got {len(pools)}); put every replica in one of these four roles",
            pools,
        )
    for index, raw_pool in enumerate(pools):
        if _pool_is_empty(raw_pool):
            continue
        pool = _pool_from_api(title, (*loc, "worker_pool_specs", index), raw_pool)
        role = POOL_ROLES[index]
        container = pool.get("container")
        if (
            index == 2
            and isinstance(container, dict)
            and isinstance(container.get("image_uri"), str)
            and is_reduction_server_image(container["image_uri"])
        ):
            data["reduction_server"] = _reducers_from_api(title, (*loc, "worker_pool_specs", 2), pool)
        else:
            data[role] = pool
    return data
