"""Where each of the emulator's Create rules comes from: Google's documentation pages and the v1 protos.

The rule modules cite these next to the code that applies them; ``RULES`` lists every rule with its
source (the reference table of the emulator's rules, and what the differential test compares the
provider's specs with). A rule marked *inferred* follows from the cited text but the service's
refusal of it could not be verified offline.
"""

from __future__ import annotations

__all__ = [
    "CONFIGURE_COMPUTE",
    "DISTRIBUTED",
    "EXECVE",
    "DWS",
    "ERRORS",
    "IAM_SERVICE_ACCOUNTS",
    "LABELS_PAGE",
    "PR_CREATE",
    "PR_OVERVIEW",
    "PR_TRAIN",
    "PREBUILT",
    "PROTO",
    "RESERVATIONS",
    "RULES",
    "Rule",
    "SERVICE_LABELS",
    "SPOT",
    "TUNING_PAGE",
    "USER_REPORT_ENV",
]

#: The v1 protos as shipped in google-cloud-aiplatform (``google/cloud/aiplatform_v1/types/``); a
#: rule names the message and field whose comment it applies.
PROTO = "v1 proto comment"
#: Google's tuning page (the failed-trial rules, the TPU note). Read at its current address (its
#: Vertex AI address was cloud.google.com/vertex-ai/docs/training/using-hyperparameter-tuning).
TUNING_PAGE = (
    'Google Cloud docs, "Create a hyperparameter tuning job", '
    "https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
    "using-hyperparameter-tuning (read 2026-12-06)"
)
DISTRIBUTED = 'Vertex AI docs, "Distributed training", https://cloud.google.com/vertex-ai/docs/training/distributed-training'
DWS = (
    'Vertex AI docs, "Schedule training jobs based on resource availability" (Requirements), '
    "https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws"
)
PREBUILT = (
    'Vertex AI docs, "Prebuilt containers for custom training", '
    "https://cloud.google.com/vertex-ai/docs/training/pre-built-containers (the images listed on "
    '"Supported frameworks list", https://cloud.google.com/vertex-ai/docs/supported-frameworks-list)'
)
LABELS_PAGE = (
    'Resource Manager docs, "Create and manage labels" (Requirements for labels), '
    "https://cloud.google.com/resource-manager/docs/creating-managing-labels (the v1 labels comment's "
    "https://goo.gl/xmQnxf)"
)
SERVICE_LABELS = (
    "the service's answer to a bad label as quoted in statmike/vertex-ai-mlops issue 6 "
    '(https://github.com/statmike/vertex-ai-mlops/issues/6, read 2026-12-06): "Label keys must start with '
    "a letter or number, must be less than 64 characters in length, and must be less that 128 bytes in "
    'length when encoded in UTF-8"'
)
RESERVATIONS = (
    'Vertex AI docs, "Use reservations with training" (Limitations and requirements: flex-start is '
    'supported "except when using Compute Engine reservations"), '
    "https://cloud.google.com/vertex-ai/docs/training/use-reservations, read 2026-12-06"
)
SPOT = (
    'Vertex AI docs, "Use Spot VMs with training" ("All Spot VMs limitations apply"), '
    "https://cloud.google.com/vertex-ai/docs/training/use-spot-vms, read 2026-12-06 (inferred: no page "
    "read says so in so many words; the stricter reading)"
)
IAM_SERVICE_ACCOUNTS = (
    'IAM docs, "Service accounts overview" (a service account is named by its e-mail address), '
    "https://cloud.google.com/iam/docs/service-account-overview"
)
USER_REPORT_ENV = (
    "the service's answer quoted in PrefectHQ/prefect issue 5940 (2022): "
    '"Env vars cannot contain any unescaped apostrophe character \'"'
)
EXECVE = (
    'POSIX "exec" (execve: "argv is an array of character pointers to null-terminated strings"), '
    "https://pubs.opengroup.org/onlinepubs/9799919799/functions/exec.html; the emulator's reading: "
    "Vertex AI's own answer is not documented"
)
PR_TRAIN = (
    'Vertex AI docs, "Run custom training jobs on a persistent resource", '
    "https://cloud.google.com/vertex-ai/docs/training/persistent-resource-train, read 2026-12-07: a job's "
    'worker pools "such that the values for machine-type and disk-type matches exactly with a corresponding '
    'resource pool"; "a replica-count less than or equal to the replica-count or max-replica-count of the '
    'corresponding resource pool"'
)
PR_OVERVIEW = (
    'Vertex AI docs, "Overview of persistent resource", '
    "https://cloud.google.com/vertex-ai/docs/training/persistent-resource-overview, read 2026-12-07: "
    '"persistent resource remains available until it\'s deleted"; "if min-replica-count is set to 4, 4 '
    'instances are always provisioned"'
)
PR_CREATE = (
    'Vertex AI docs, "Create a persistent resource", '
    "https://docs.cloud.google.com/vertex-ai/docs/training/persistent-resource-create, read 2026-12-07: "
    '"the training service first finds resources from the Compute Engine resource pool based on the '
    'specifications you provided, and then provisions a long-running cluster"'
)
PR_DELETE = (
    'Vertex AI docs, "Delete a persistent resource", '
    "https://cloud.google.com/vertex-ai/docs/training/persistent-resource-delete, read 2026-12-07: "
    '"if there are custom jobs running on the persistent resource when you delete it, the custom jobs are '
    'automatically cancelled before the persistent resource is deleted"'
)
CONFIGURE_COMPUTE = (
    'Google Cloud docs, "Configure compute resources for serverless training", '
    "https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
    "configure-compute (read 2026-12-07)"
)
ERRORS = (
    "the service's INVALID_ARGUMENT text as quoted in PrefectHQ/prefect issue 5940 and googleapis/go-genai "
    'issue 508: "List of found errors:\\t1.Field: <path>; Message: <text>\\t"'
)


class Rule:
    """One rule: an id, what it refuses, and its source."""

    __slots__ = ("rule_id", "source", "text")

    def __init__(self, rule_id: str, text: str, source: str) -> None:
        self.rule_id = rule_id
        self.text = text
        self.source = source

    def __repr__(self) -> str:
        return f"Rule({self.rule_id!r})"


def _rules(*rows: tuple[str, str, str]) -> dict[str, Rule]:
    return {rule_id: Rule(rule_id, text, source) for rule_id, text, source in rows}


#: Every rule the emulator applies to a Create request, by id.
RULES: dict[str, Rule] = _rules(
    # -- fields the reference marks Required (rules/required.py)
    ("required", "a field whose comment starts `Required.` is set (a number's 0 is a value)", f"{PROTO}s"),
    # -- the job (rules/labels.py, rules/resources.py)
    ("display-name", "display_name: at most 128 characters, any UTF-8", f"{PROTO} CustomJob.display_name"),
    ("labels-count", "at most 64 labels", SERVICE_LABELS),
    (
        "label-length",
        "label keys and values less than 64 code points (the v1 labels comment says 64: the service's "
        "own text wins)",
        SERVICE_LABELS,
    ),
    ("label-bytes", "label keys and values less than 128 bytes in UTF-8", SERVICE_LABELS),
    (
        "label-chars",
        "lowercase letters, numbers, '_' and '-' (international characters allowed)",
        f"{PROTO} CustomJob.labels; {SERVICE_LABELS}",
    ),
    (
        "label-key-start",
        "a key is not empty and starts with a letter or number (the labels page says a lowercase or "
        "international letter: the service's own text wins)",
        f"{SERVICE_LABELS}; {LABELS_PAGE}",
    ),
    (
        "kms-key",
        "projects/P/locations/L/keyRings/R/cryptoKeys/K, with L the job's location",
        f"{PROTO} EncryptionSpec.kms_key_name",
    ),
    ("network", "projects/{project number}/global/networks/{network}", f"{PROTO} CustomJobSpec.network"),
    (
        "reserved-ip-ranges",
        "reserved_ip_ranges need network (they are ranges of that VPC network)",
        f"{PROTO} CustomJobSpec.reserved_ip_ranges (inferred)",
    ),
    ("tensorboard", "projects/P/locations/L/tensorboards/T", f"{PROTO} CustomJobSpec.tensorboard"),
    (
        "experiment",
        "projects/P/locations/L/metadataStores/S/contexts/C (experiment and experiment_run)",
        f"{PROTO} CustomJobSpec.experiment / experiment_run",
    ),
    ("models", "projects/P/locations/L/models/M[@version]", f"{PROTO} CustomJobSpec.models"),
    (
        "persistent-resource-id",
        "1-63 of [a-z0-9-], starting with a letter, not ending with '-'",
        f"{PROTO} CreatePersistentResourceRequest.persistent_resource_id",
    ),
    ("service-account", "a service account e-mail address", IAM_SERVICE_ACCOUNTS),
    (
        "protected-artifact-location",
        "a Vertex AI location",
        f"{PROTO} CustomJobSpec.protected_artifact_location_id",
    ),
    ("dns-domain", "a DNS peering domain ends with a dot", f"{PROTO} DnsPeeringConfig.domain"),
    # -- pools (rules/pools.py)
    (
        "pool-0",
        "worker pool 0 (the primary) is set; the others may be skipped with an empty value",
        f"{PROTO} CustomJobSpec.worker_pool_specs; {DISTRIBUTED}",
    ),
    ("pool-count", "at most 4 worker pools (0 primary, 1 workers, 2 servers, 3 evaluators)", DISTRIBUTED),
    ("primary-replicas", "worker pool 0 holds exactly 1 replica", DISTRIBUTED),
    (
        "pool-replicas",
        "a used (non-empty) pool has at least 1 replica; a pool to skip is an empty value",
        f"{DISTRIBUTED} (inferred)",
    ),
    (
        "pool-task",
        "a used pool has exactly one of container_spec and python_package_spec",
        f"{PROTO} WorkerPoolSpec.task (a oneof)",
    ),
    (
        "machine-type",
        "a used pool names its machine type",
        f'{PROTO} MachineSpec.machine_type ("as part of WorkerPoolSpec this field is required")',
    ),
    ("nfs-path", "an NFS path starts with '/'", f"{PROTO} NfsMount.path"),
    (
        "tpu-pools",
        "a job on TPU VMs uses a single worker pool, of one replica",
        f"{CONFIGURE_COMPUTE} (TPUs)",
    ),
    (
        "reservation",
        "SPECIFIC_RESERVATION names its reservation (key and values)",
        f"{PROTO} ReservationAffinity.Type.SPECIFIC_RESERVATION",
    ),
    # -- tasks (rules/tasks.py)
    ("env-name", "an environment variable name is a C identifier", f"{PROTO} EnvVar.name"),
    ("env-count", "at most 100 environment variables", f"{PROTO} ContainerSpec.env / PythonPackageSpec.env"),
    ("env-apostrophe", "an environment variable value holds no unescaped apostrophe", USER_REPORT_ENV),
    ("package-uris", "at most 100 package URIs", f"{PROTO} PythonPackageSpec.package_uris"),
    (
        "package-uris-gcs",
        "each package URI is a gs:// URI",
        f'{PROTO} PythonPackageSpec.package_uris ("The Google Cloud Storage location of the Python package '
        'files")',
    ),
    (
        "nul",
        "no NUL character in command, args, env values, image URIs, package URIs, python_module, parameter "
        "ids or categorical values (they reach a replica's command line or environment)",
        EXECVE,
    ),
    (
        "executor-image",
        "executor_image_uri is a prebuilt training image: "
        "{us,europe,asia}-docker.pkg.dev/vertex-ai/training/...",
        f'{PROTO} PythonPackageSpec.executor_image_uri ("You must use an image from this list"); {PREBUILT}',
    ),
    (
        "python-module",
        "python_module is a dotted Python module name",
        f"{PROTO} PythonPackageSpec.python_module",
    ),
    # -- Reduction Server (rules/reduction.py)
    ("rs-pool-2", "the Reduction Server image runs in worker pool 2 only", DISTRIBUTED),
    ("rs-no-gpus", "Reduction Server replicas have no accelerators", DISTRIBUTED),
    (
        "rs-gpu-workers",
        "with a Reduction Server, pools 0 and 1 are GPU machines (NCCL all-reduce), not TPU or CPU",
        f"{DISTRIBUTED} (Prerequisites; inferred as a refusal)",
    ),
    # -- scheduling (rules/scheduling.py)
    ("strategy", "strategy is a value of Scheduling.Strategy", f"{PROTO} Scheduling.strategy"),
    (
        "durations",
        "timeout and max_wait_duration are not negative",
        f"{PROTO} Scheduling.timeout / max_wait_duration (inferred)",
    ),
    ("flex-gpus", "FLEX_START: every pool requests L4, A100, H100, H200 or B200 GPUs", DWS),
    ("flex-same-machine", "FLEX_START: every pool has the same machine configuration", DWS),
    ("flex-timeout", "FLEX_START: timeout at most 7 days", DWS),
    (
        "flex-reservation",
        "FLEX_START: no pool consumes a reservation (ANY_ or SPECIFIC_RESERVATION)",
        RESERVATIONS,
    ),
    ("spot-reservation", "SPOT: no pool consumes a reservation (ANY_ or SPECIFIC_RESERVATION)", SPOT),
    # -- study (rules/study.py, rules/parameters.py)
    ("metrics", "metric ids: no whitespace, unique", f"{PROTO} StudySpec.MetricSpec.metric_id"),
    (
        "objective-metric",
        "at least one metric without safety_config (the objective)",
        f"{PROTO} StudySpec.MetricSpec.safety_config",
    ),
    (
        "parameter-ids",
        "parameter ids: no whitespace, unique; a conditional one differs from every top-level id",
        f"{PROTO} StudySpec.ParameterSpec.parameter_id / conditional_parameter_specs",
    ),
    ("value-spec", "a parameter has a value spec", f"{PROTO} StudySpec.ParameterSpec.parameter_value_spec"),
    ("bounds", "min_value <= max_value (both inclusive)", f"{PROTO} DoubleValueSpec / IntegerValueSpec"),
    ("log-scale", "log scales need a strictly positive space", f"{PROTO} StudySpec.ParameterSpec.ScaleType"),
    ("categorical-scale", "no scale_type for a categorical parameter", f"{PROTO} ParameterSpec.scale_type"),
    (
        "discrete-values",
        "discrete values increasing, at least 1e-10 apart, at most 1,000",
        f"{PROTO} DiscreteValueSpec.values",
    ),
    (
        "categorical-values",
        "categorical values are unique",
        f'{PROTO} CategoricalValueSpec.values ("possible categories"; inferred)',
    ),
    (
        "conditions",
        "a child's condition matches its parent's kind and values (a double has no children); "
        "children with one id have disjoint conditions",
        f"{PROTO} StudySpec.ParameterSpec.ConditionalParameterSpec",
    ),
    (
        "grid-search",
        "GRID_SEARCH: integer, categorical and discrete parameters only",
        f"{PROTO} StudySpec.Algorithm",
    ),
    (
        "default-value",
        "no default_value (Vizier only)",
        f"{PROTO} StudySpec.ParameterSpec.*ValueSpec.default_value",
    ),
    (
        "trial-counts",
        "max_trial_count and parallel_trial_count at least 1, parallel at most max; max_failed_trial_count "
        "not negative and at most max_trial_count",
        f"{PROTO} HyperparameterTuningJob (Required counts; parallel <= max inferred); "
        f"{TUNING_PAGE}, Handle failed trials: maxFailedTrialCount <= maxTrialCount",
    ),
    (
        "tuning-tpu",
        "a tuning job whose trial job asks for TPUs (a TPU machine type or accelerator)",
        f"{TUNING_PAGE}, Hyperparameter training job configuration: \"doesn't support hyperparameter tuning "
        'jobs that require TPUs"',
    ),
    # -- persistent resources (rules/persistent_resources.py)
    (
        "pr-id",
        "persistent_resource_id: 1 to 63 characters matching /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/",
        f"{PROTO} CreatePersistentResourceRequest.persistent_resource_id",
    ),
    (
        "pr-pools",
        "resource_pools: at least one pool, each with a machine_spec",
        f"{PROTO} PersistentResource",
    ),
    (
        "pr-replicas",
        "a pool without autoscaling has replica_count of at least 1 (inferred: a pool of no machine holds "
        "nothing)",
        f"{PROTO} ResourcePool.replica_count; {PR_OVERVIEW}",
    ),
    (
        "pr-autoscaling",
        "autoscaling: 0 < min_replica_count <= replica_count <= max_replica_count and min < max",
        f"{PROTO} ResourcePool.AutoscalingSpec",
    ),
    ("pr-pool-ids", "resource pool ids are unique in their resource", f"{PROTO} ResourcePool.id"),
    (
        "job-on-resource",
        "a CustomJob's persistent_resource_id names a resource in the job's project and location that is "
        "RUNNING (RUNNING inferred: the job runs on the resource's existing machines)",
        f"{PROTO} CustomJobSpec.persistent_resource_id",
    ),
    (
        "job-pool-match",
        "each worker pool's machine spec and boot disk type match a resource pool's",
        PR_TRAIN,
    ),
    (
        "pr-delete-cancels",
        "deleting a persistent resource cancels the jobs on it first (CANCELLED, code 1; the message is the "
        "emulator's)",
        PR_DELETE,
    ),
    (
        "job-pool-replicas",
        "each worker pool's replica_count is at most its resource pool's replica_count (max_replica_count "
        "with autoscaling), and so is the sum of the worker pools on one resource pool (the sum inferred)",
        PR_TRAIN,
    ),
)
