"""Whether a job found by its labels really runs the spec this task would submit.

Labels prove nothing: anyone who may create jobs in the project can copy a task's labels, the spec
fingerprint (``airflow-spec``) included, since every one of them is computable offline. So before a job
is adopted, its returned spec is compared with the request body the task would send now.

Both sides are brought to one canonical form first:

* read through the v1 proto type and written back as JSON (``job_to_dict``): camelCase keys, enum names,
  proto3 zero values left out, 64-bit integers as strings: the form the service returns;
* output-only fields dropped (``name``, ``state``, times, ``error``, ``webAccessUris``, ``trials``, ...):
  the service sets them, a request never does;
* the provider's own labels dropped (they differ per run and per call; the labels matched already);
* the defaults the service fills in on the jobs it returns, filled in on both sides: every used worker
  pool's ``diskSpec`` (``bootDiskType`` ``pd-ssd``, ``bootDiskSizeGb`` 100: the defaults the v1
  ``DiskSpec`` reference gives).

Anything else that differs -- another command, an extra environment variable, another image, machine or
pool -- means the job is not this task's. A default the service fills in that is not listed here would
make a genuine job look foreign: it is then not adopted and the task creates a new one, with a warning
naming the path that differed (report it, so it can be added to the list).
"""

from __future__ import annotations

from typing import Any

from airflow_vertex_dist.hooks.labels import PROVIDER_LABELS
from airflow_vertex_dist.jobs.kinds import CUSTOM_JOBS, JobKind
from airflow_vertex_dist.specs._api import CUSTOM_JOB_OUTPUT_ONLY, TUNING_JOB_OUTPUT_ONLY

__all__ = ["canonical_spec", "spec_difference"]

#: What a used pool's ``diskSpec`` holds when the request leaves it out (v1 ``DiskSpec``: "Type of the
#: boot disk ... Default is "pd-ssd"", "Size in GB of the boot disk (default is 100GB)").
_DISK_DEFAULTS = {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}


def _fill_pool_defaults(spec: dict[str, Any]) -> None:
    for pool in spec.get("workerPoolSpecs") or []:
        if not pool:
            continue  # a skipped pool, kept as {} so the positions keep their meaning
        disk = pool.setdefault("diskSpec", {})
        for key, value in _DISK_DEFAULTS.items():
            disk.setdefault(key, value)
        # the JSON form writes int32 as a number; what the service returns may be the same number
        disk["bootDiskSizeGb"] = int(disk["bootDiskSizeGb"])


def canonical_spec(kind: JobKind, job: dict[str, Any]) -> dict[str, Any]:
    """``job`` (a request body or a returned job) in the canonical form of the module doc."""
    from airflow_vertex_dist.hooks._clients import job_from_dict, job_to_dict

    out = job_to_dict(job_from_dict(kind, job))
    for key in CUSTOM_JOB_OUTPUT_ONLY if kind == CUSTOM_JOBS else TUNING_JOB_OUTPUT_ONLY:
        out.pop(key, None)
    labels = {k: v for k, v in (out.pop("labels", None) or {}).items() if k not in PROVIDER_LABELS}
    if labels:
        out["labels"] = labels
    _fill_pool_defaults(out.get("jobSpec" if kind == CUSTOM_JOBS else "trialJobSpec") or {})
    return out


def _first_difference(ours: Any, theirs: Any, path: str) -> str | None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            found = _first_difference(ours.get(key), theirs.get(key), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return f"{path} (length {len(theirs)}, this task's {len(ours)})"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found = _first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if ours == theirs else path or "(the job)"


def spec_difference(kind: JobKind, job: dict[str, Any], body: dict[str, Any]) -> str | None:
    """The first path at which ``job``'s spec differs from ``body``'s (both canonical), or ``None``
    when the job runs exactly what ``body`` asks for."""
    try:
        theirs = canonical_spec(kind, job)
    except ValueError as exc:
        return f"(not a v1 job: {exc})"
    return _first_difference(canonical_spec(kind, body), theirs, "")
