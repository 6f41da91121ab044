"""Rules on the Reduction Server, from Vertex AI's "Distributed training" page, section "Reduce
training time with Reduction Server" (https://cloud.google.com/vertex-ai/docs/training/distributed-training):

* ``rs-pool-2``: "specify one of the following URIs in the containerSpec.imageUri field of the third
  worker pool (workerPoolSpecs[2])": ``us-``, ``europe-`` or ``asia-docker.pkg.dev/vertex-ai-restricted/
  training/reductionserver:latest``. The image anywhere else is refused.
* ``rs-no-gpus``: "Don't use GPUs for Reduction Server nodes": no accelerator in pool 2's machine, and
  no accelerator-optimized machine type (A2, A3, A4, G2, G4: their GPUs come with the machine).
* ``rs-gpu-workers``: Prerequisites: "You're doing distributed training with GPU workers" and "Your
  training code uses TensorFlow or PyTorch and is configured for multi-host data-parallel training with
  GPUs using NCCL all-reduce". So pools 0 and 1 request GPUs. The page lists this as a prerequisite;
  that the service refuses a CPU or TPU job with reducers at Create is inferred, not verified.

The page's sizing advice (the reducers' total egress bandwidth at least that of pools 0 and 1) is a
recommendation the service does not enforce, and the emulator does not either.
"""

from __future__ import annotations

import re
from typing import Any

from vertex_emulator.rules._common import enum_name, problem

__all__ = ["REDUCTION_SERVER_IMAGE", "is_reduction_server", "reduction_problems"]

#: Any tag or digest of the three Reduction Server images.
REDUCTION_SERVER_IMAGE = re.compile(
    r"(us|europe|asia)-docker\.pkg\.dev/vertex-ai-restricted/training/reductionserver"
    r"(:[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?"
)
#: Compute Engine's accelerator-optimized families: GPUs come attached to the machine type.
_GPU_FAMILIES = ("a2-", "a3-", "a4-", "a4x-", "g2-", "g4-")
_TPU_MACHINE = re.compile(r"(ct\d|tpu|cloud-tpu)")


def is_reduction_server(pool: Any) -> bool:
    """Whether a raw ``WorkerPoolSpec`` runs the Reduction Server image."""
    return pool.WhichOneof("task") == "container_spec" and bool(
        REDUCTION_SERVER_IMAGE.fullmatch(pool.container_spec.image_uri)
    )


def _accelerator(pool: Any) -> str:
    machine = pool.machine_spec
    return enum_name(machine, "accelerator_type") if machine.accelerator_type else ""


def reduction_problems(pools: Any, path: str) -> list[str]:
    """The Reduction Server rules over a job's raw ``worker_pool_specs``."""
    out: list[str] = []
    for index, pool in enumerate(pools):
        if is_reduction_server(pool) and index != 2:
            out.append(
                problem(
                    f"{path}[{index}].container_spec.image_uri",
                    "the Reduction Server image runs only in the third worker pool (workerPoolSpecs[2])",
                )
            )
    if len(pools) < 3 or not is_reduction_server(pools[2]):
        return out
    reducers = pools[2].machine_spec
    accelerator = _accelerator(pools[2])
    if accelerator or reducers.accelerator_count or reducers.machine_type.startswith(_GPU_FAMILIES):
        got = (
            f"{accelerator or 'an accelerator'} x{reducers.accelerator_count}"
            if accelerator
            else reducers.machine_type
        )
        out.append(
            problem(
                f"{path}[2].machine_spec",
                f"Reduction Server replicas must not use GPUs or other accelerators (got {got})",
            )
        )
    for index in (0, 1):
        if index >= len(pools) or pools[index].ByteSize() == 0:
            continue
        accelerator = _accelerator(pools[index])
        machine_type = pools[index].machine_spec.machine_type
        if accelerator.startswith("TPU") or _TPU_MACHINE.match(machine_type):
            kind = "TPU"
        elif accelerator.startswith("NVIDIA") or machine_type.startswith(_GPU_FAMILIES):
            continue
        else:
            kind = "CPU"
        out.append(
            problem(
                f"{path}[{index}].machine_spec",
                f"a Reduction Server needs GPU workers doing NCCL all-reduce in worker pools 0 and 1 "
                f"(worker pool {index} is a {kind} machine, {machine_type or 'no machine type'})",
            )
        )
    return out
