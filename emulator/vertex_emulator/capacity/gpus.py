"""GPU capacity as a Vertex AI training job meets it: what the service says and which rules it applies,
each with its source. The emulator's capacity model (ledger.py, the drivers) uses these; the
settings are ``config.Capacity``.

* **Quota at Create.** A Create whose job asks for more GPUs than a quota allows is answered gRPC
  ``RESOURCE_EXHAUSTED`` (HTTP 429) "The following quota metrics exceed quota limits:
  aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus" (``gcloud ai custom-jobs create``,
  GoogleCloudPlatform/stable-diffusion-on-gcp#12; the same text with ``custom_model_training_cpus``
  in GoogleCloudPlatform/vertex-ai-samples#3479, and through the Python client, ``ResourceExhausted:
  429 The following quota metrics exceed quota limits: ..._tpu_v2``, google-deepmind/xmanager#29).
  Several metrics are listed comma separated (the #3479 message ends in ``_cpus,``).
* **Quota while others run.** "If your Google Cloud project does not have sufficient remaining custom
  training quotas for your job, then Vertex AI keeps the job queued until you have sufficient quotas"
  (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service, "Queue a new
  job"; it names CustomJob and HyperparameterTuningJob): a job that fits its quota alone but not
  beside the jobs running waits ``JOB_STATE_QUEUED``.
  Users also report the 429 at Create in that case (a P4 quota of 6 used 4 + 2 by running jobs,
  openillumi.com's write-up of a Stack Overflow question): ``Capacity.over_quota = "refuse"``
  rehearses that reading.
* **Quota metrics.** On demand ``custom_model_training_<suffix>``; a FLEX_START job "consumes
  preemptible quota ... instead of consuming aiplatform.googleapis.com/custom_model_training_nvidia_
  h100_gpus, [it] consumes aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_h100_gpus"
  (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws, "Quota"). A SPOT job is
  reported to count against the preemptible metric too (a user's W&B Launch patch quoting the error
  before SPOT, ``custom_model_training_nvidia_t4_gpus``, and after, ``custom_model_training_
  preemptible_nvidia_t4_gpus``; Compute Engine's Spot page: "To prevent Spot VMs from consuming your
  quotas for standard VMs' CPUs, GPUs, and disks, consider requesting preemptible quota"); not in
  Vertex AI's own pages. The suffix per accelerator is the one Google's notebook helper uses
  (GoogleCloudPlatform/vertex-ai-samples, notebooks/community/model_garden/docker_source_codes/
  notebook_util/common_util.py, ``get_resource_id``); for accelerators it does not list, the name is
  derived the same way (``NVIDIA_TESLA_K80`` -> ``nvidia_k80_gpus``, as vertex-ai-samples#700 shows;
  ``TPU_V2`` -> ``tpu_v2``, as xmanager#29 shows).
* **Counting.** A job's GPUs per accelerator type: ``replica_count x accelerator_count`` summed over
  its used pools. A tuning job's trials are CustomJobs; each trial is counted when it runs (no page
  says how the service counts ``parallel_trial_count``; see docs/emulator.md).
* **Stockout.** "Resources are insufficient in region: REGION_NAME. Try a different region or use a
  different accelerator." -- "A stockout happens when Compute Engine is at capacity for your selected
  CPU or GPU in your region. It is unrelated to your project quota. When this happens, [Vertex AI]
  attempts to restart the job up to three times." (understanding-training-service, "Handle common
  errors"; read in its current copy, https://docs.cloud.google.com/gemini-enterprise-agent-platform/
  machine-learning/training/understanding-training-service, which names the product "Agent Platform",
  here in brackets). Users quote it as a job's failure (openreview/openreview-expertise#401: the
  region "already tried all available zones"). How long the attempts take and the job's
  ``error.code`` are not documented: the emulator waits ``Capacity.stockout_after_s`` and uses 8
  (``RESOURCE_EXHAUSTED``).
* **Spot preemption.** "When Spot VMs are preempted, the serverless training job fails with a
  STOCKOUT error and Compute Engine tries to restart the job up to six times"
  (https://cloud.google.com/vertex-ai/docs/training/use-spot-vms, "Preemption handling", read in its
  current copy under docs.cloud.google.com/gemini-enterprise-agent-platform/); "If some of your VMs
  stop during processing, the job slows but does not completely stop" (same page, "Billing"). A Spot VM
  gets 30 seconds between ACPI G2 Soft Off and G3 Mechanical Off (Compute Engine v1
  ``Scheduling.skip_guest_os_shutdown``: "120 seconds ... for Standard VMs and 30 seconds for Spot
  VMs"): the replica gets SIGTERM, then SIGKILL. The wording of a preempted job's error is not
  documented: the emulator's names the preemption and ``STOCKOUT``.
* **Flex-start.** ``Scheduling.max_wait_duration``: "the maximum duration that a job will wait for the
  requested resources to be provisioned if the scheduling strategy is set to [Strategy.DWS_FLEX_START].
  If set to 0, the job will wait indefinitely. The default is 24 hours." (v1 ``Scheduling``); the page:
  Dynamic Workload Scheduler schedules the job "based on when the requested GPU resources become
  available", "rather than failing with a stockout error" (understanding-training-service). What a
  flex-start job that was not granted capacity in time says is not documented: the emulator's words.
* **Strategies** (v1 ``Scheduling.Strategy``): STRATEGY_UNSPECIFIED "will default to STANDARD";
  ON_DEMAND "Regular on-demand provisioning"; LOW_COST "making potential use of spot resources" (read
  here as on demand: the proto promises no preemption); SPOT "uses spot resources"; FLEX_START "uses
  DWS to queue for resources".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "DEFAULT_MAX_WAIT_S",
    "PREEMPTED_CODE",
    "QUOTA_METRIC_PREFIX",
    "STOCKOUT_CODE",
    "Provisioning",
    "flex_start_message",
    "max_wait_s",
    "preempted_message",
    "provisioning",
    "quota_message",
    "quota_metric",
    "region_of",
    "spec_gpus",
    "stockout_message",
]

#: Where a job's VMs come from: on demand, Spot, or Dynamic Workload Scheduler (flex-start).
Provisioning = Literal["standard", "spot", "flex_start"]

QUOTA_METRIC_PREFIX = "aiplatform.googleapis.com/"
_QUOTA_MESSAGE = "The following quota metrics exceed quota limits: {metrics}"
_STOCKOUT_MESSAGE = (
    "Resources are insufficient in region: {region}. Try a different region or use a different accelerator."
)
#: ``error.code`` of a job ended by a stockout or a preemption (google.rpc.Code RESOURCE_EXHAUSTED;
#: not documented for jobs, the emulator's choice).
STOCKOUT_CODE = 8
PREEMPTED_CODE = 8
#: ``max_wait_duration`` of a FLEX_START job that sets none: "The default is 24 hours."
DEFAULT_MAX_WAIT_S = 24 * 3600.0

#: Google's notebook helper's metric suffix per accelerator (``get_resource_id``).
_SUFFIXES: dict[str, str] = {
    "NVIDIA_TESLA_V100": "nvidia_v100_gpus",
    "NVIDIA_TESLA_P100": "nvidia_p100_gpus",
    "NVIDIA_L4": "nvidia_l4_gpus",
    "NVIDIA_TESLA_A100": "nvidia_a100_gpus",
    "NVIDIA_A100_80GB": "nvidia_a100_80gb_gpus",
    "NVIDIA_H100_80GB": "nvidia_h100_gpus",
    "NVIDIA_H100_MEGA_80GB": "nvidia_h100_mega_gpus",
    "NVIDIA_H200_141GB": "nvidia_h200_gpus",
    "NVIDIA_TESLA_T4": "nvidia_t4_gpus",
    "TPU_V3": "tpu_v3",
}
_STRATEGIES: dict[str, Provisioning] = {"SPOT": "spot", "FLEX_START": "flex_start"}


def quota_metric(accelerator: str, *, preemptible: bool = False) -> str:
    """The full quota metric an accelerator type counts against in a training job."""
    suffix = _SUFFIXES.get(accelerator)
    if suffix is None:
        name = accelerator.lower().replace("nvidia_tesla_", "nvidia_")
        suffix = name if name.startswith("tpu_") else f"{name}_gpus"
    kind = "custom_model_training_preemptible_" if preemptible else "custom_model_training_"
    return QUOTA_METRIC_PREFIX + kind + suffix


def quota_message(metrics: list[str]) -> str:
    """The RESOURCE_EXHAUSTED text naming ``metrics`` (full names, as ``quota_metric`` gives them)."""
    return _QUOTA_MESSAGE.format(metrics=", ".join(metrics))


def stockout_message(region: str) -> str:
    return _STOCKOUT_MESSAGE.format(region=region)


def preempted_message(replica: str, restarts: int) -> str:
    """A Spot job's error once its restarts are used up (the emulator's words; see the module doc)."""
    return (
        f"The replica {replica} was preempted: Compute Engine reclaimed its Spot VM (STOCKOUT). The job "
        f"was already restarted {restarts} times after preemptions, the limit."
    )


def flex_start_message(region: str, wait_s: float) -> str:
    """A FLEX_START job's error when no capacity was granted within its wait (the emulator's words)."""
    return (
        f"The requested resources were not provisioned within scheduling.max_wait_duration ({wait_s:g}s): "
        f"Dynamic Workload Scheduler (FLEX_START) found no capacity in region: {region}."
    )


def region_of(name: str) -> str:
    """The location of a job (``projects/P/locations/<region>/...``)."""
    parts = name.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "locations" else ""


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def spec_gpus(job_spec: Mapping[str, Any]) -> dict[str, int]:
    """GPUs (and TPU chips) per accelerator type of a v1 JSON ``CustomJobSpec``: ``replicaCount x
    acceleratorCount`` summed over its used pools (nothing for pools without an accelerator)."""
    out: dict[str, int] = {}
    for pool in job_spec.get("workerPoolSpecs") or []:
        if not isinstance(pool, Mapping) or not pool:
            continue
        machine = pool.get("machineSpec") or {}
        accelerator = machine.get("acceleratorType") if isinstance(machine, Mapping) else None
        if not isinstance(accelerator, str) or accelerator in ("", "ACCELERATOR_TYPE_UNSPECIFIED"):
            continue
        count = _count(pool.get("replicaCount")) * _count(machine.get("acceleratorCount"))
        if count:
            out[accelerator] = out.get(accelerator, 0) + count
    return out


def provisioning(job_spec: Mapping[str, Any]) -> Provisioning:
    """Where the job's VMs come from, by ``scheduling.strategy`` (a name, as the v1 JSON has it)."""
    scheduling = job_spec.get("scheduling") or {}
    strategy = scheduling.get("strategy") if isinstance(scheduling, Mapping) else None
    return _STRATEGIES.get(str(strategy or ""), "standard")


def max_wait_s(job_spec: Mapping[str, Any]) -> float | None:
    """How long a FLEX_START job waits for capacity: its ``max_wait_duration`` (default 24 hours), or
    ``None`` for ``0s`` ("the job will wait indefinitely")."""
    from vertex_emulator.core.timefmt import parse_duration_seconds

    scheduling = job_spec.get("scheduling") or {}
    raw = scheduling.get("maxWaitDuration") if isinstance(scheduling, Mapping) else None
    if raw is None or raw == "":
        return DEFAULT_MAX_WAIT_S
    seconds = parse_duration_seconds(str(raw))
    if seconds is None or seconds < 0:
        return DEFAULT_MAX_WAIT_S
    return None if seconds == 0 else seconds
