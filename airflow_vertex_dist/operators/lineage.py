"""OpenLineage for the training and tuning operators (used only when the OpenLineage provider is there).

The OpenLineage provider calls ``get_openlineage_facets_on_start`` / ``_on_complete`` on an operator
that has them; ``VertexJobOperator`` imports this module
inside those methods, so a DAG parse (and a deployment without the provider) never loads it.

What a task reports:

- **outputs**: the model location, a ``gs`` dataset: ``<base_output_directory>/model`` (the job's
  ``AIP_MODEL_DIR``) for a training job; for a tuning job ``<base_output_directory>`` at start and the
  best trial's ``<base_output_directory>/<trial id>/model`` once it ended (each trial writes under its
  own id). Nothing without a ``base_output_directory``.
- **inputs**: the operator's ``lineage_inputs`` (URIs or Airflow Assets), then the Assets in its
  ``inlets``; a URI ``scheme://authority/path`` is the dataset ``scheme://authority`` / ``path``.
- **job facet** ``vertexDistJob``: the job kind, its Vertex AI resource name (once known), per
  worker pool its role, replica count, machine type and accelerators; with a capacity ladder, the rung
  the job ran on (``rung``: number, of, name, region, strategy); once the job ended, its estimated cost
  (``cost``: ``usdPerHour``, ``basis``, ``hours``, ``estimatedUsd``, as in the task's XCom) and the
  try's cost ledger (``ledger``: ``jobs``, ``byRung``, ``totals``, the XCom's ``ledger`` with its keys
  in camelCase: ``gpuHours``, ``usd``, ``queuedSeconds``, ``runSeconds``, ``preemptedSeconds``...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import attr
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import Dataset
from openlineage.client.facet_v2 import JobFacet

from airflow_vertex_dist.jobs.dicts import job_spec as spec_of
from airflow_vertex_dist.jobs.replicas import replica_count

__all__ = ["FACET_NAME", "VertexDistJobFacet", "camel_keys", "operator_lineage", "pools_of", "uri_dataset"]

#: The key of the job facet in the event's ``job.facets``.
FACET_NAME = "vertexDistJob"

#: Vertex AI's worker pool order: the role of each index.
_ROLES = ("primary", "workers", "parameter_servers", "evaluators")


@attr.define
class VertexDistJobFacet(JobFacet):
    """The Vertex AI job behind a task: its kind, resource name and worker pools."""

    jobKind: str  # noqa: N815 - OpenLineage facets use camelCase fields
    resourceName: str | None = None  # noqa: N815
    pools: list[dict[str, Any]] = attr.field(factory=list)
    rung: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    ledger: dict[str, Any] | None = None


def camel_keys(value: Any) -> Any:
    """``value`` with every dict key in camelCase (``gpu_hours`` -> ``gpuHours``), as facets spell them."""
    if isinstance(value, Mapping):
        return {_camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def uri_dataset(uri: str) -> Dataset:
    """``gs://bucket/a/b`` -> the dataset namespace ``gs://bucket``, name ``a/b`` (OpenLineage naming
    for object stores); ``ValueError`` for a string that is not ``scheme://...``."""
    parts = urlsplit(uri.strip())
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"lineage_inputs: {uri!r} is not a URI like gs://bucket/path")
    return Dataset(namespace=f"{parts.scheme}://{parts.netloc}", name=parts.path.strip("/") or "/")


def _asset_dataset(asset: Any) -> Dataset | None:
    """An Airflow Asset as a dataset: the provider's converter for its scheme when one is installed,
    else the URI naming of ``uri_dataset``."""
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset

    converted = translate_airflow_asset(asset, None)
    if converted is not None:
        return Dataset(namespace=converted.namespace, name=converted.name, facets=converted.facets)
    uri = getattr(asset, "uri", None)
    if not isinstance(uri, str):
        return None
    try:
        return uri_dataset(uri)
    except ValueError:
        return None


def _inputs(declared: Iterable[Any], inlets: Iterable[Any]) -> list[Dataset]:
    out: list[Dataset] = []
    for item in [*declared, *inlets]:
        dataset = uri_dataset(item) if isinstance(item, str) else _asset_dataset(item)
        if dataset is not None and (dataset.namespace, dataset.name) not in {
            (d.namespace, d.name) for d in out
        }:
            out.append(dataset)
    return out


def pools_of(job_spec: Mapping[str, Any], *, reduction_server: bool = False) -> list[dict[str, Any]]:
    """One row per worker pool of a v1 ``jobSpec``: role, replica count, machine type, accelerators."""
    rows = []
    for index, pool in enumerate(job_spec.get("workerPoolSpecs") or []):
        if not pool:
            continue  # an empty placeholder keeps the later pools at their index
        machine = pool.get("machineSpec") or {}
        role = _ROLES[index] if index < len(_ROLES) else f"workerpool{index}"
        if index == 2 and reduction_server:
            role = "reduction_server"
        rows.append(
            {
                "pool": f"workerpool{index}",
                "role": role,
                "replicaCount": replica_count(pool, field=f"workerPoolSpecs[{index}].replicaCount"),
                "machineType": machine.get("machineType"),
                "acceleratorType": machine.get("acceleratorType"),
                "acceleratorCount": int(machine.get("acceleratorCount", 0)),
            }
        )
    return rows


def _best_trial_id(job: Mapping[str, Any]) -> str | None:
    from airflow_vertex_dist.jobs.trials import trial_summary

    best = trial_summary(dict(job)).get("best")
    return str(best["id"]) if isinstance(best, Mapping) and best.get("id") is not None else None


def operator_lineage(
    *,
    kind: str,
    body: Mapping[str, Any],
    reduction_server: bool,
    declared_inputs: Iterable[Any],
    inlets: Iterable[Any],
    job: Mapping[str, Any] | None,
    rung: Mapping[str, Any] | None = None,
    cost: Mapping[str, Any] | None = None,
    ledger: Mapping[str, Any] | None = None,
) -> OperatorLineage[Dataset, JobFacet]:
    """The lineage of one task: ``body`` is the v1 body of its job (``to_api``), ``job`` the job as the
    API last returned it (``None`` before it exists); ``rung``, ``cost`` and ``ledger`` as in the task's
    XCom (``RungOutput``, ``CostOutput``, ``TaskLedger``), or ``None``."""
    tuning = kind == "hyperparameterTuningJobs"
    spec = spec_of(body)
    base = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    outputs = []
    if base:
        base = str(base).rstrip("/")
        if not tuning:
            outputs.append(uri_dataset(f"{base}/model"))
        else:
            best = _best_trial_id(job) if job is not None else None
            outputs.append(uri_dataset(f"{base}/{best}/model" if best else base))
    facet = VertexDistJobFacet(
        jobKind=kind,
        resourceName=str(job["name"]) if job is not None and job.get("name") else None,
        pools=pools_of(spec, reduction_server=reduction_server),
        rung=({key: rung[key] for key in ("number", "of", "name", "region", "strategy")} if rung else None),
        cost=(
            {
                "usdPerHour": cost["usd_per_hour"],
                "basis": cost["basis"],
                "hours": cost["hours"],
                "estimatedUsd": cost["estimated_usd"],
            }
            if cost
            else None
        ),
        ledger=camel_keys(ledger) if ledger else None,
    )
    return OperatorLineage(
        inputs=_inputs(declared_inputs, inlets),
        outputs=outputs,
        job_facets={FACET_NAME: facet},
    )
