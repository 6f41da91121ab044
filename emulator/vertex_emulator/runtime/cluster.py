"""The environment Vertex AI gives every replica, built from a CustomJob's ``jobSpec`` (pure, no I/O).

What each replica gets (vertex-facts.md, "Environment of every replica"):

- ``CLUSTER_SPEC``: ``{"cluster": {"workerpool0": [...], ...}, "environment": "cloud",
  "task": {"type": "workerpoolN", "index": i[, "trial": "<id>"]}, "job": {...}}``. Pools that are
  absent or sent as ``{}`` are absent from ``cluster``. ``task.trial`` is only there for a tuning trial.
- ``TF_CONFIG`` (only when the job has more than one replica): ``cluster`` maps ``chief`` (pool 0),
  ``worker`` (pool 1) and ``ps`` (pool 2) to addresses and never has ``evaluator``; ``task`` is
  ``{"type": chief|worker|ps|evaluator, "index", ["trial",] "cloud"}``. Reduction Server replicas are
  not parameter servers: with reducers in pool 2 there is no ``ps`` key, and a reducer gets no TF_CONFIG.
- ``job`` (in both) is the CustomJobSpec as a dict, with the proto field names (``worker_pool_specs``,
  ``replica_count`` as a string, as the proto JSON mapping writes int64) -- the form the service puts
  there. (The documentation says "a dictionary"; some real jobs have been seen to carry a JSON string.)
- ``AIP_MODEL_DIR``/``AIP_CHECKPOINT_DIR``/``AIP_TENSORBOARD_LOG_DIR`` when ``baseOutputDirectory`` is
  set: ``<base>/model/``, ``<base>/checkpoints/``, ``<base>/logs/`` -- for a tuning trial the trial's
  CustomJob already has ``<parent base>/<trial id>`` as its base, so the rule is the same. These are
  the ``gs://`` URIs Vertex AI gives (a base that is not ``gs://`` is a local path and stays one).
- ``STORAGE_EMULATOR_HOST`` (when the emulator serves its Cloud Storage API, cloud_storage/api.py): the URL
  ``google-cloud-storage`` and ``gcsfs`` send their ``gs://`` calls to. Not set on Vertex AI.
- ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` for the replicas of pools 0 and 1, as AI
  Platform Training's distributed PyTorch page defines them
  (https://cloud.google.com/ai-platform/training/docs/distributed-pytorch): the primary is rank 0 and
  the master (its ``CLUSTER_SPEC`` address), workers are ranks 1..n, the world is pools 0 and 1, so
  ``torch.distributed.init_process_group(init_method="env://")`` works unchanged.
- ``CLOUD_ML_PROJECT_ID`` and ``CLOUD_ML_REGION``: the project and location of the job's resource
  name. Vertex AI sets the project *number* there (Google's own pipeline components read it as one:
  kubeflow/pipelines, google-cloud components, "Inferred project number"; the SDK's ``initializer``
  falls back to it inside a job) and the region (GoogleCloudPlatform/vertex-ai-samples' R training
  example reads ``CLOUD_ML_REGION``); the emulator has no project numbers and sets what the job's
  name carries -- the project the client used.
- ``CLOUD_ML_JOB_ID`` (the CustomJob's numeric id), ``CLOUD_ML_TRIAL_ID`` (tuning trials only),
  ``CLOUD_ML_HP_METRIC_FILE`` (always: a per-replica file under the job's log directory, so replicas
  never share ``/tmp/hypertune``), ``AIP_TENSORBOARD_RESOURCE_NAME`` when ``jobSpec.tensorboard`` is set.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vertex_emulator.core.gcs import join_uri, to_local_path

__all__ = [
    "EMULATOR_ONLY_ENV",
    "LOCAL_ENV_NAMES",
    "LOCAL_ENV_PREFIXES",
    "POOL_COUNT",
    "Replica",
    "cluster_map",
    "cluster_spec",
    "expand_env",
    "expand_references",
    "is_reduction_server",
    "job_spec_as_dict",
    "local_env",
    "output_dirs",
    "pytorch_env",
    "replica_env",
    "replicas_of",
    "service_scope",
    "tf_config",
    "total_replicas",
]

POOL_COUNT = 4
_TF_TYPES = ("chief", "worker", "ps", "evaluator")
_REDUCER_GLOB = "*/vertex-ai-restricted/training/reductionserver:*"
#: what a local process needs to run, copied from the emulator's environment when set: every other
#: variable of the emulator's environment stays out of a replica's (docs/emulator.md).
LOCAL_ENV_NAMES = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR")
LOCAL_ENV_PREFIXES = ("LC_",)


@dataclass(frozen=True)
class Replica:
    """One replica: pool ``pool`` (0..3), ``index`` within the pool, and its pool spec (camelCase)."""

    pool: int
    index: int
    spec: Mapping[str, Any]

    @property
    def key(self) -> str:
        """``workerpool1-0``: the key ``webAccessUris`` and the emulator's logs use."""
        return f"workerpool{self.pool}-{self.index}"

    @property
    def is_primary(self) -> bool:
        return self.pool == 0 and self.index == 0

    @property
    def is_reducer(self) -> bool:
        return is_reduction_server(self.spec)


def _replica_count(pool_spec: Mapping[str, Any], pool: int) -> int:
    raw = pool_spec.get("replicaCount", 0)
    try:
        count = int(raw)
    except (TypeError, ValueError):
        raise ValueError(
            f"jobSpec.workerPoolSpecs[{pool}].replicaCount: must be an integer (got {raw!r})"
        ) from None
    if count < 0:
        raise ValueError(f"jobSpec.workerPoolSpecs[{pool}].replicaCount: must be >= 0 (got {count})")
    return count


def is_reduction_server(pool_spec: Mapping[str, Any]) -> bool:
    """True when the pool runs Google's Reduction Server image (any region's registry, any tag)."""
    image = str((pool_spec.get("containerSpec") or {}).get("imageUri", ""))
    return fnmatch.fnmatchcase(image, _REDUCER_GLOB)


def replicas_of(job_spec: Mapping[str, Any]) -> list[Replica]:
    """Every replica of every used pool, pool by pool. ``{}`` pools and ``replicaCount: 0`` give none."""
    pools = job_spec.get("workerPoolSpecs") or []
    if len(pools) > POOL_COUNT:
        raise ValueError(f"jobSpec.workerPoolSpecs: at most {POOL_COUNT} pools (got {len(pools)})")
    out: list[Replica] = []
    for pool, pool_spec in enumerate(pools):
        if not pool_spec:
            continue
        for index in range(_replica_count(pool_spec, pool)):
            out.append(Replica(pool, index, pool_spec))
    if not out or not out[0].is_primary:
        raise ValueError("jobSpec.workerPoolSpecs[0]: the primary pool is required (replicaCount 1)")
    return out


def total_replicas(job_spec: Mapping[str, Any]) -> int:
    return len(replicas_of(job_spec))


def cluster_map(replicas: Sequence[Replica], addresses: Mapping[str, str]) -> dict[str, list[str]]:
    """``{"workerpool0": ["127.0.0.1:40001"], ...}`` from each replica key's ``host:port``."""
    out: dict[str, list[str]] = {}
    for rep in replicas:
        out.setdefault(f"workerpool{rep.pool}", []).append(addresses[rep.key])
    return out


def job_spec_as_dict(job_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The CustomJobSpec with proto field names, through the generated type (the service's form)."""
    from google.cloud.aiplatform_v1.types import CustomJobSpec

    msg = CustomJobSpec.from_json(json.dumps(job_spec), ignore_unknown_fields=True)
    out: dict[str, Any] = CustomJobSpec.to_dict(
        msg,
        use_integers_for_enums=False,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=False,
    )
    return out


def cluster_spec(
    cluster: Mapping[str, list[str]],
    replica: Replica,
    job: Mapping[str, Any],
    trial: str | None = None,
) -> dict[str, Any]:
    task: dict[str, Any] = {"type": f"workerpool{replica.pool}", "index": replica.index}
    if trial is not None:
        task["trial"] = trial
    return {
        "cluster": {k: list(v) for k, v in cluster.items()},
        "environment": "cloud",
        "task": task,
        "job": dict(job),
    }


def tf_config(
    replicas: Sequence[Replica],
    cluster: Mapping[str, list[str]],
    replica: Replica,
    job: Mapping[str, Any],
    *,
    cloud_id: str,
    trial: str | None = None,
) -> dict[str, Any] | None:
    """TF_CONFIG for ``replica``, or None for a single-replica job and for Reduction Server replicas."""
    if len(replicas) <= 1 or replica.is_reducer:
        return None
    reducers = any(r.is_reducer for r in replicas)
    tf_cluster: dict[str, list[str]] = {}
    for pool in range(3):  # evaluators (pool 3) never appear in TF_CONFIG's cluster
        if pool == 2 and reducers:
            continue
        addrs = cluster.get(f"workerpool{pool}")
        if addrs:
            tf_cluster[_TF_TYPES[pool]] = list(addrs)
    task: dict[str, Any] = {"type": _TF_TYPES[replica.pool], "index": replica.index}
    if trial is not None:
        task["trial"] = trial
    task["cloud"] = cloud_id
    return {"cluster": tf_cluster, "environment": "cloud", "task": task, "job": dict(job)}


def local_env(environ: Mapping[str, str], pass_env: Sequence[str] = ()) -> dict[str, str]:
    """The part of the emulator's environment a replica starts with.

    Only ``LOCAL_ENV_NAMES``, ``LC_*`` and the names in ``pass_env`` (the emulator's
    ``--pass-env`` flag) are copied; ``PYTHONUNBUFFERED=1`` is added (a replica's log, and a failed
    job's log tail, stay complete when it is killed; a pool's ``env`` can set it otherwise).
    """
    out = {
        k: v
        for k, v in environ.items()
        if k in LOCAL_ENV_NAMES or k.startswith(LOCAL_ENV_PREFIXES) or k in pass_env
    }
    out["PYTHONUNBUFFERED"] = "1"
    return out


def pytorch_env(
    replicas: Sequence[Replica], replica: Replica, addresses: Mapping[str, str]
) -> dict[str, str]:
    """``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK`` for pools 0 and 1; ``{}`` for other pools."""
    if replica.pool not in (0, 1):
        return {}
    world = [r for r in replicas if r.pool in (0, 1)]
    host, _, port = addresses[world[0].key].rpartition(":")
    return {
        "MASTER_ADDR": host,
        "MASTER_PORT": port,
        "WORLD_SIZE": str(len(world)),
        "RANK": str(world.index(replica)),
    }


def output_dirs(base_output_directory: str | None) -> dict[str, str]:
    """``AIP_*_DIR`` in the service's (``gs://``) form, or ``{}`` when there is no base directory."""
    if not base_output_directory:
        return {}
    return {
        "AIP_MODEL_DIR": join_uri(base_output_directory, "model", trailing_slash=True),
        "AIP_CHECKPOINT_DIR": join_uri(base_output_directory, "checkpoints", trailing_slash=True),
        "AIP_TENSORBOARD_LOG_DIR": join_uri(base_output_directory, "logs", trailing_slash=True),
    }


#: variables the emulator sets that Vertex AI does not: no ``$(NAME)`` reference resolves to them.
EMULATOR_ONLY_ENV = ("STORAGE_EMULATOR_HOST",)


def service_scope(vertex_env: Mapping[str, str]) -> dict[str, str]:
    """The service's variables a ``$(NAME)`` reference may name: ``vertex_env`` without the
    emulator's own (``EMULATOR_ONLY_ENV``). The image's variables (and so the local ``PATH``,
    ``HOME``...) are never in scope: "You cannot reference environment variables set in the Docker
    image" (v1 ``ModelContainerSpec.command``/``args``, the one v1 comment that spells the rule out)."""
    return {k: v for k, v in vertex_env.items() if k not in EMULATOR_ONLY_ENV}


def expand_references(value: str, scope: Mapping[str, str]) -> str:
    """``value`` with its ``$(NAME)`` references expanded from ``scope``, as Kubernetes expands a
    container's ``env`` values, ``command`` and ``args`` (its ``third_party/forked/golang/expansion``
    ``Expand``): ``$(NAME)`` is ``scope[NAME]``, or stays as written when ``NAME`` is not in scope;
    ``$$`` is one literal ``$`` (so ``$$(NAME)`` is the text ``$(NAME)``); a ``$(`` never closed and
    a ``$`` before anything else stay as written. One pass, linear in ``len(value)``.

    The v1 ``EnvVar.value`` comment states the rule for env values ("If a variable cannot be
    resolved, the reference in the input string will be unchanged. The $(VAR_NAME) syntax can be
    escaped with a double $$"); for ``command`` and ``args`` see ``replica_command``.
    """
    out: list[str] = []
    i, n = 0, len(value)
    last_close = value.rfind(")")  # a "$(" after it is never closed: no scan to the end each time
    while i < n:
        dollar = value.find("$", i)
        if dollar == -1 or dollar == n - 1:
            out.append(value[i:])
            break
        out.append(value[i:dollar])
        following = value[dollar + 1]
        if following == "$":
            out.append("$")
            i = dollar + 2
        elif following == "(":
            close = value.find(")", dollar + 2) if dollar + 2 <= last_close else -1
            if close == -1:
                out.append("$(")
                i = dollar + 2
            else:
                name = value[dollar + 2 : close]
                out.append(scope[name] if name in scope else value[dollar : close + 1])
                i = close + 1
        else:
            out.append(value[dollar : dollar + 2])
            i = dollar + 2
    return "".join(out)


def expand_env(
    entries: Sequence[Mapping[str, Any]], base: Mapping[str, str], *, field: str
) -> dict[str, str]:
    """A pool's ``env`` list as a dict, ``$(NAME)`` expanded (``expand_references``).

    v1 ``EnvVar.value``: "Variables that reference a $(VAR_NAME) are expanded using the previous
    defined environment variables in the container and any service environment variables": a
    reference resolves against the entries before it, then ``base`` (the service's variables,
    ``service_scope``); a later entry is not yet defined, so a reference to it stays as written.
    """
    out: dict[str, str] = {}
    for i, entry in enumerate(entries):
        name = entry.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{field}[{i}].name: must be a valid C identifier (got {name!r})")
        value = str(entry.get("value", ""))
        out[name] = expand_references(value, {**base, **out})
    return out


def replica_env(
    *,
    job_id: str,
    job_spec: Mapping[str, Any],
    replicas: Sequence[Replica],
    replica: Replica,
    addresses: Mapping[str, str],
    job: Mapping[str, Any],
    gcs_root: Path,
    metric_file: Path,
    trial: str | None = None,
    storage_host: str | None = None,
    job_name: str = "",
) -> dict[str, str]:
    """The variables the service sets for ``replica`` (not the pool's own ``env``: see expand_env).

    ``gcs_root`` is where ``gs://`` lives locally: the output directories are checked against it.
    ``job_name`` (``projects/P/locations/L/customJobs/N``) gives ``CLOUD_ML_PROJECT_ID`` and
    ``CLOUD_ML_REGION``.
    """
    cluster = cluster_map(replicas, addresses)
    env: dict[str, str] = {
        "CLUSTER_SPEC": json.dumps(cluster_spec(cluster, replica, job, trial)),
        "CLOUD_ML_JOB_ID": job_id,
        "CLOUD_ML_HP_METRIC_FILE": str(metric_file),
    }
    parts = job_name.split("/")
    if len(parts) >= 4 and parts[0] == "projects" and parts[2] == "locations":
        env["CLOUD_ML_PROJECT_ID"], env["CLOUD_ML_REGION"] = parts[1], parts[3]
    tf = tf_config(replicas, cluster, replica, job, cloud_id=f"{job_id}-{replica.key}", trial=trial)
    if tf is not None:
        env["TF_CONFIG"] = json.dumps(tf)
    if trial is not None:
        env["CLOUD_ML_TRIAL_ID"] = trial
    base = (job_spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    for name, uri in output_dirs(base).items():
        to_local_path(uri, gcs_root, field="jobSpec.baseOutputDirectory.outputUriPrefix")
        env[name] = uri
    env.update(pytorch_env(replicas, replica, addresses))
    if storage_host:
        env["STORAGE_EMULATOR_HOST"] = storage_host
    tensorboard = job_spec.get("tensorboard")
    if tensorboard:
        env["AIP_TENSORBOARD_RESOURCE_NAME"] = str(tensorboard)
    return env
