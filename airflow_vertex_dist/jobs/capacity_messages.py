"""What Vertex AI says when capacity runs out: the exact texts, codes and quota metric names, with
their sources, in one place.

The provider's failure classification (``airflow_vertex_dist.jobs.failures``) matches these; a
local emulator that models capacity should answer with the same texts and codes (it must not import
this module: copy the texts, from the same sources). Where no source gives the exact text, the module
says so, and the classifier falls back on the job's state and the rung's strategy instead of a text.

* **Quota at Create.** A Create whose job would exceed a training quota answers gRPC
  ``RESOURCE_EXHAUSTED`` (HTTP 429) with "The following quota metrics exceed quota limits:
  aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
  (``gcloud ai custom-jobs create``, GoogleCloudPlatform/stable-diffusion-on-gcp#12; the same text
  with ``..._nvidia_p4_gpus`` in a Stack Overflow question quoted by openillumi.com/en/
  en-vertex-ai-429-gpu-quota-fix; with ``custom_model_training_cpus`` in
  GoogleCloudPlatform/vertex-ai-samples#3479). The same text can also end a job: "Training failed
  with: code: 8 message: The following quota metrics exceed quota limits:
  aiplatform.googleapis.com/custom_model_training_nvidia_k80_gpus" (vertex-ai-samples#700), code 8
  being ``RESOURCE_EXHAUSTED``. Vertex AI also documents a third form: "if your Google Cloud project
  does not have sufficient remaining custom training quotas for your job, then Vertex AI keeps the job
  queued until you have sufficient quotas" (cloud.google.com/vertex-ai/docs/training/
  understanding-training-service, "Queue a new job"): a rung's ``pending_limit`` catches that one.
* **Quota metric names** (``quota_metric``): ``custom_model_training_<suffix>`` on demand and
  ``custom_model_training_preemptible_<suffix>`` for Dynamic Workload Scheduler (flex-start); the
  suffix per accelerator is the one Google's own notebook helper uses (GoogleCloudPlatform/
  vertex-ai-samples, notebooks/community/model_garden/docker_source_codes/notebook_util/
  common_util.py, ``get_resource_id``). Users also report ``custom_model_training_preemptible_...`` as
  the metric a Spot job counts against (a quota table naming
  ``custom_model_training_preemptible_nvidia_a100_gpus``); that is not verified offline.
* **Request-rate quota.** A 429 whose message names a per-minute limit is the API's request rate, not
  a capacity quota: it is retried like any transient error (``RATE_LIMIT_MARKER``).
* **Stockout.** "Resources are insufficient in region: REGION_NAME. Try a different region or use a
  different accelerator." -- "A stockout happens when Compute Engine is at capacity for your selected
  CPU or GPU in your region. It is unrelated to your project quota. When this happens, Vertex AI
  attempts to restart the job up to three times." (cloud.google.com/vertex-ai/docs/training/
  understanding-training-service, "Handle common errors"). The service already tried every zone of the
  region, so retrying in place does not help (openreview/openreview-expertise#401); users also quote
  the text with "Please try a different region." after it, as a job's failure and as the message of a
  job left PENDING. The job error code that comes with it could not be verified offline: the
  classifier matches the text's first sentence, whatever follows it and whatever the code.
* **Spot preemption.** "Spot VMs can be reclaimed by Compute Engine at any time. When Spot VMs are
  preempted, the prediction job fails with a STOCKOUT error and Compute Engine tries to restart the job
  up to six times" (cloud.google.com/vertex-ai/docs/predictions/use-spot-vms, "Preemption handling":
  the prediction page; the training page's exact wording could not be read offline). A job on a SPOT
  rung that had started and then fails with a stockout text, ``STOCKOUT`` or a text naming a
  preemption is classified as preempted.
* **Flex-start.** ``Scheduling.max_wait_duration``: "This is the maximum duration that a job will wait
  for the requested resources to be provisioned if the scheduling strategy is set to
  [Strategy.DWS_FLEX_START]. If set to 0, the job will wait indefinitely. The default is 24 hours."
  (v1 ``Scheduling`` proto comment). The text of a job that was not granted capacity in that time is
  not documented: a FLEX_START job that ends without having started is classified as "flex-start not
  granted".
* **A persistent resource deleted or rebooted under its job.** Google's page "Delete a persistent
  resource" (cloud.google.com/vertex-ai/docs/training/persistent-resource-delete) says the custom jobs
  running on a resource being deleted are cancelled first; it gives no text, and no user report of one
  was found. A job the service cancels that way is CANCELLED like a user's cancel: the ladder tells
  them apart by reading the resource (gone or STOPPING: ``classify_job``'s ``resource_gone``, class
  "resource lost"), and so does the local emulator, which cancels them too. A reboot's effect on its
  jobs is not documented: the emulator fails them with code 10 (ABORTED) and its own words, "The
  PersistentResource NAME was rebooted while the job ran on it.", documented as its choice in its
  guide; ``RESOURCE_LOST_RE`` matches those words (class "resource lost").
* **User code.** "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about
  why your job exited please check the logs: ..." (a Vertex AI job's service log, tensorflow/
  models#10735).
"""

from __future__ import annotations

import re

from airflow_vertex_dist.common.regex import LazyRegex

__all__ = [
    "FLEX_START_DEFAULT_MAX_WAIT_S",
    "PREEMPTION_RE",
    "QUOTA_CODE",
    "QUOTA_HTTP_STATUS",
    "QUOTA_MESSAGE",
    "QUOTA_METRIC_PREFIX",
    "QUOTA_RE",
    "QUOTA_SUFFIXES",
    "RATE_LIMIT_MARKER",
    "REPLICA_EXIT_MESSAGE",
    "REPLICA_EXIT_RE",
    "RESOURCE_LOST_RE",
    "STOCKOUT_MESSAGE",
    "STOCKOUT_RE",
    "quota_message",
    "quota_metric",
    "quota_metrics_named",
    "stockout_message",
]

#: gRPC status of a Create over quota, and its HTTP status (google.rpc.Code 8 = RESOURCE_EXHAUSTED).
QUOTA_CODE = "RESOURCE_EXHAUSTED"
QUOTA_HTTP_STATUS = 429
#: The quota error's text: ``{metrics}`` is one or more ``aiplatform.googleapis.com/<metric>``,
#: comma separated.
QUOTA_MESSAGE = "The following quota metrics exceed quota limits: {metrics}"
QUOTA_METRIC_PREFIX = "aiplatform.googleapis.com/"
#: What the classifier recognises as a capacity quota, and the metric names it lists.
QUOTA_RE = LazyRegex(r"quota metrics exceed quota limits:?\s*(?P<metrics>[\w./, -]*)", flags=re.IGNORECASE)
#: In a 429's text, the mark of a request-rate quota (retried), not a capacity quota.
RATE_LIMIT_MARKER = "per minute"

#: The metric suffix of each accelerator (Google's ``get_resource_id``; see the module doc).
QUOTA_SUFFIXES: dict[str, str] = {
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

#: The stockout text; ``{region}`` is the job's region.
STOCKOUT_MESSAGE = (
    "Resources are insufficient in region: {region}. Try a different region or use a different accelerator."
)
STOCKOUT_RE = LazyRegex(r"resources are insufficient in region", flags=re.IGNORECASE)
#: A text naming a preemption, or the ``STOCKOUT`` error name of the Spot page.
PREEMPTION_RE = LazyRegex(r"preempt|\bSTOCKOUT\b", flags=re.IGNORECASE)

#: A replica's non-zero exit: training code failing.
REPLICA_EXIT_MESSAGE = "The replica {replica} exited with a non-zero status of {status}."
REPLICA_EXIT_RE = LazyRegex(r"exited with a non-zero status", flags=re.IGNORECASE)

#: A job failed because the persistent resource it ran on was rebooted (or deleted) under it: the local
#: emulator's words (the service's are not documented; see the module doc).
RESOURCE_LOST_RE = LazyRegex(
    r"persistent\s*resource\b.*\bwas\s+(deleted|rebooted)\s+while\s+the\s+job", flags=re.IGNORECASE
)

#: ``max_wait_duration`` when a FLEX_START job sets none: 24 hours (0 means no limit).
FLEX_START_DEFAULT_MAX_WAIT_S = 24 * 3600.0


def quota_metric(accelerator_type: str, *, preemptible: bool = False) -> str | None:
    """The full quota metric a training job's ``accelerator_type`` counts against
    (``aiplatform.googleapis.com/custom_model_training_[preemptible_]<suffix>``), or ``None`` for an
    accelerator the source does not name."""
    suffix = QUOTA_SUFFIXES.get(accelerator_type)
    if suffix is None:
        return None
    kind = "custom_model_training_preemptible_" if preemptible else "custom_model_training_"
    return QUOTA_METRIC_PREFIX + kind + suffix


def quota_message(*metrics: str) -> str:
    """The quota error's text naming ``metrics`` (full names, as ``quota_metric`` gives them)."""
    return QUOTA_MESSAGE.format(metrics=", ".join(metrics))


def stockout_message(region: str) -> str:
    return STOCKOUT_MESSAGE.format(region=region)


def quota_metrics_named(text: str) -> list[str]:
    """The metric names a quota error's ``text`` lists (``[]`` when it is not one)."""
    match = QUOTA_RE.search(text)
    if match is None:
        return []
    return [m.strip() for m in match.group("metrics").split(",") if m.strip()]
