"""The bad-spec table's training-job rows on machines and the machine catalog
(airflow_vertex_dist.specs.catalog): accelerators, counts, machine types, reservations. Part of
`JOB_CASES` (`bad_job_cases.py`)."""

from __future__ import annotations

from .bad_job_bases import (
    GPU,
    T4,
    Case,
    J,
)

__all__ = ["MACHINE_CASES"]

MACHINE_CASES: list[Case] = [
    # -- machines
    (
        "count-without-type",
        J(("primary.machine", {"machine_type": "n1-standard-4", "accelerator_count": 2})),
        "primary.machine.accelerator_count",
        "set accelerator_type too",
    ),
    (
        "type-without-count",
        J(("primary.machine.accelerator_count", 0)),
        "primary.machine.accelerator_count",
        "must be at least 1 when accelerator_type is NVIDIA_TESLA_V100",
    ),
    (
        "gpu-count-3",
        J(("primary.machine.accelerator_count", 3)),
        "primary.machine.accelerator_count",
        "n1-highmem-96 takes NVIDIA_TESLA_V100 x8 (got x3)",
    ),
    (
        "gpu-count-for-machine",
        J(("primary.machine", T4(1, machine_type="n1-standard-96"))),
        "primary.machine.accelerator_count",
        "n1-standard-96 takes NVIDIA_TESLA_T4 x4 (got x1)",
    ),
    # -- the machine catalog (airflow_vertex_dist.specs.catalog)
    (
        "machine-type-misspelt",
        J(("primary.machine", {"machine_type": "n1-standrad-4"})),
        "primary.machine.machine_type",
        "'n1-standrad-4' is not a machine type of Vertex AI custom training (did you mean n1-standard-4?)",
    ),
    (
        "machine-type-unknown",
        J(("primary.machine", {"machine_type": "n1-foo-7"})),
        "primary.machine.machine_type",
        "'n1-foo-7' is not a machine type of Vertex AI custom training",
    ),
    (
        "a100-80gb-on-n1",
        J(("primary.machine", {"machine_type": "n1-standard-4", **GPU("NVIDIA_A100_80GB", 1)})),
        "primary.machine.accelerator_type",
        "n1-standard-4 does not take NVIDIA_A100_80GB (it takes NVIDIA_TESLA_P100, NVIDIA_TESLA_P4, "
        "NVIDIA_TESLA_T4, NVIDIA_TESLA_V100)",
    ),
    (
        "t4-on-e2",
        J(("workers.machine", T4(1, machine_type="e2-standard-4"))),
        "workers.machine.accelerator_type",
        "e2-standard-4 takes no accelerators (got NVIDIA_TESLA_T4 x1)",
    ),
    (
        "k80-anywhere",
        J(("primary.machine", {"machine_type": "n1-standard-4", **GPU("NVIDIA_TESLA_K80", 1)})),
        "primary.machine.accelerator_type",
        "NVIDIA_TESLA_K80 is past its end of support",
    ),
    (
        "a2-without-its-gpus",
        J(("primary.machine", {"machine_type": "a2-highgpu-1g"})),
        "primary.machine.accelerator_type",
        "a2-highgpu-1g comes with 1 x NVIDIA_TESLA_A100, which the request names (got none)",
    ),
    (
        "a2-other-count",
        J(("primary.machine", {"machine_type": "a2-highgpu-1g", **GPU("NVIDIA_TESLA_A100", 2)})),
        "primary.machine.accelerator_count",
        "a2-highgpu-1g comes with 1 x NVIDIA_TESLA_A100 (got x2)",
    ),
    (
        "g2-other-gpu",
        J(("primary.machine", T4(1, machine_type="g2-standard-8"))),
        "primary.machine.accelerator_type",
        "g2-standard-8 comes with 1 x NVIDIA_L4 (got NVIDIA_TESLA_T4 x1)",
    ),
    (
        "cloud-tpu-without-tpus",
        J(("primary.machine", {"machine_type": "cloud-tpu"}), ("workers", ...)),
        "primary.machine.accelerator_type",
        "cloud-tpu runs TPU_V2 or TPU_V3 x8 (got none)",
    ),
    (
        "tpu-vm-chips",
        J(
            ("primary.machine", {"machine_type": "ct5lp-hightpu-4t", **GPU("TPU_V5_LITEPOD", 8)}),
            ("workers", ...),
        ),
        "primary.machine.accelerator_count",
        "ct5lp-hightpu-4t has 4 x TPU_V5_LITEPOD (got x8)",
    ),
    (
        "rs-machine-unknown",
        J(("reduction_server", {"machine_type": "n1-highcpu-61"})),
        "reduction_server.machine_type",
        "'n1-highcpu-61' is not a machine type of Vertex AI custom training",
    ),
    (
        "unknown-accelerator",
        J(("primary.machine.accelerator_type", "NVIDIA_TESLA_X")),
        "primary.machine.accelerator_type",
        "Input should be",
    ),
    (
        "tpu-v3-on-n1",
        J(
            (
                "primary.machine",
                {"machine_type": "n1-standard-8", "accelerator_type": "TPU_V3", "accelerator_count": 8},
            )
        ),
        "primary.machine.accelerator_type",
        "runs on machine_type 'cloud-tpu'",
    ),
    (
        "topology-on-gpu",
        J(("primary.machine.tpu_topology", "2x2")),
        "primary.machine.tpu_topology",
        "only for TPU machines",
    ),
    (
        "topology-format",
        J(("primary.machine", {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2by2"})),
        "primary.machine.tpu_topology",
        "must look like '2x2'",
    ),
    (
        "topology-not-in-table",
        J(("primary.machine", {"machine_type": "ct6e-standard-8t", "tpu_topology": "4x4"})),
        "primary.machine.tpu_topology",
        "ct6e-standard-8t takes the topologies 2x4 (1 VM) in Google's TPU slice tables (got '4x4')",
    ),
    (
        "topology-not-on-the-page",
        J(("primary.machine", {"machine_type": "ct5lp-hightpu-8t", "tpu_topology": "4x4"}), ("workers", ...)),
        "primary.machine.tpu_topology",
        "ct5lp-hightpu-8t takes the topologies 2x4 (1 VM) in Google's TPU slice tables (got '4x4')",
    ),
    (
        "cloud-tpu-count",
        J(("primary.machine", {"machine_type": "cloud-tpu", **GPU("TPU_V2", 16)}), ("workers", ...)),
        "primary.machine.accelerator_count",
        "cloud-tpu takes TPU_V2 x8 (a single TPU), or 32 or a multiple of 32 (a TPU Pod) (got x16)",
    ),
    (
        "tpu-with-workers",
        J(("primary.machine", {"machine_type": "tpu7x-standard-4t", "tpu_topology": "4x4x4"})),
        "workers",
        "a job on TPUs (tpu7x-standard-4t) has a single worker pool of one replica, the primary (got "
        "primary, workers)",
    ),
    (
        "tpu-in-workers",
        J(("workers.machine", {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2"})),
        "workers.machine",
        "a TPU machine (ct5lp-hightpu-4t) runs only in worker pool 0",
    ),
    (
        "tpu-v6e-names-no-accelerator",
        J(
            (
                "primary.machine",
                {
                    "machine_type": "ct6e-standard-4t",
                    "accelerator_type": "TPU_V5_LITEPOD",
                    "accelerator_count": 4,
                },
            )
        ),
        "primary.machine.accelerator_type",
        "the v1 AcceleratorType has no value for them",
    ),  # fmt: skip
    (
        "machine-type-format",
        J(("primary.machine.machine_type", "N1_STANDARD_4")),
        "primary.machine.machine_type",
        "must look like 'n1-standard-4'",
    ),
    (
        "gpu-partition-count",
        J(("primary.machine.gpu_partition_size", "1g.10gb")),
        "primary.machine.gpu_partition_size",
        "needs accelerator_count 1",
    ),
    (
        "reservation-incomplete",
        J(("primary.machine.reservation_affinity", {"reservation_affinity_type": "SPECIFIC_RESERVATION"})),
        "primary.machine.reservation_affinity",
        "needs both key and values",
    ),
]
