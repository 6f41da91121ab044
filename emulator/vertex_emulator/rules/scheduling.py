"""Rules on ``CustomJobSpec.scheduling`` (v1 ``Scheduling``): the strategy, flex-start's requirements
and the durations.

* ``strategy``: a value of ``Scheduling.Strategy`` (``STRATEGY_UNSPECIFIED`` "will default to
  STANDARD"; the deprecated ``ON_DEMAND`` and ``LOW_COST`` are still values and are accepted).
* ``flex-gpus``, ``flex-same-machine``, ``flex-timeout``: "Schedule training jobs based on resource
  availability" (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws), Requirements:
  "Your serverless training job requests L4, A100, H100, H200, or B200 GPUs. Your serverless training
  job has a maximum timeout of 7 days or less. Your serverless training job uses the same machine
  configuration for all worker pools." It names CustomJob and HyperparameterTuningJob alike. Read
  strictly: every used pool requests one of those GPUs, and every used pool has the same machine type,
  accelerator type and count (so a CPU Reduction Server or parameter-server pool rules flex-start out).
* ``durations``: ``timeout`` is "The maximum job running time" and ``max_wait_duration`` "the maximum
  duration that a job will wait for the requested resources"; a negative maximum is refused (inferred).
  ``max_wait_duration`` is taken with any strategy and applies only to FLEX_START ("if the scheduling
  strategy is set to [Strategy.DWS_FLEX_START]. If set to 0, the job will wait indefinitely."): the
  reference does not say another strategy refuses it, so the emulator does not.
* ``flex-reservation``: "Use reservations with training"
  (https://cloud.google.com/vertex-ai/docs/training/use-reservations, read 2026-12-06; its current
  English text was not in the offline copies, its Japanese and Chinese translations under
  docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/use-reservations
  were), Limitations and requirements: Dynamic Workload Scheduler's flex-start and training on a
  persistent resource are supported "except when using Compute Engine reservations with" training.
  So a FLEX_START job whose pool consumes a reservation (``reservation_affinity`` ANY_RESERVATION or
  SPECIFIC_RESERVATION; NO_RESERVATION consumes none) is refused, naming the pool's
  ``machine_spec.reservation_affinity``.
* ``spot-reservation``: "Use Spot VMs with training"
  (https://cloud.google.com/vertex-ai/docs/training/use-spot-vms, read 2026-12-06): "All Spot VMs
  limitations apply when using Spot VMs with Vertex AI"; no page read offline says in so many words
  whether a Spot job may consume a reservation, and Spot VMs run on spare capacity, not on reserved
  capacity: the stricter reading is taken and SPOT with a consuming ``reservation_affinity`` is refused
  too (docs/emulator.md lists it as inferred). No other Create-time rule was found for Spot.
"""

from __future__ import annotations

from typing import Any

from vertex_emulator.rules._common import duration_s, enum_name, problem

__all__ = [
    "CONSUMING_AFFINITIES",
    "FLEX_START_GPUS",
    "MAX_FLEX_TIMEOUT_S",
    "NO_RESERVATION_STRATEGIES",
    "scheduling_problems",
]

#: The accelerator types of "L4, A100, H100, H200, or B200 GPUs".
FLEX_START_GPUS = frozenset(
    {
        "NVIDIA_L4",
        "NVIDIA_TESLA_A100",
        "NVIDIA_A100_80GB",
        "NVIDIA_H100_80GB",
        "NVIDIA_H100_MEGA_80GB",
        "NVIDIA_H200_141GB",
        "NVIDIA_B200",
    }
)
MAX_FLEX_TIMEOUT_S = 7 * 24 * 3600


def _shape(pool: Any) -> tuple[str, str, int]:
    machine = pool.machine_spec
    accelerator = enum_name(machine, "accelerator_type") if machine.accelerator_type else ""
    return machine.machine_type, accelerator, int(machine.accelerator_count)


def _describe(shape: tuple[str, str, int]) -> str:
    machine_type, accelerator, count = shape
    return f"{machine_type} with {count} x {accelerator}" if accelerator else f"{machine_type} without GPUs"


#: The strategies that cannot consume a reservation (``flex-reservation``, ``spot-reservation``).
NO_RESERVATION_STRATEGIES = frozenset({"FLEX_START", "SPOT"})
#: The ``ReservationAffinity`` types that consume reserved capacity.
CONSUMING_AFFINITIES = frozenset({"ANY_RESERVATION", "SPECIFIC_RESERVATION"})


def _reservation_problems(spec: Any, path: str, strategy: str) -> list[str]:
    """A FLEX_START or SPOT job whose pools consume a reservation."""
    if strategy not in NO_RESERVATION_STRATEGIES:
        return []
    out: list[str] = []
    for index, pool in enumerate(spec.worker_pool_specs):
        machine = pool.machine_spec
        if not machine.HasField("reservation_affinity"):
            continue
        affinity = enum_name(machine.reservation_affinity, "reservation_affinity_type")
        if affinity in CONSUMING_AFFINITIES:
            out.append(
                problem(
                    f"{path}.worker_pool_specs[{index}].machine_spec.reservation_affinity",
                    f"{strategy} cannot consume a reservation (got {affinity}); use NO_RESERVATION "
                    "or the STANDARD strategy",
                )
            )
    return out


def scheduling_problems(spec: Any, path: str) -> list[str]:
    """The scheduling rules of a raw ``CustomJobSpec``."""
    if not spec.HasField("scheduling"):
        return []
    scheduling = spec.scheduling
    where = f"{path}.scheduling"
    out: list[str] = []
    strategy = enum_name(scheduling, "strategy")
    if strategy.isdigit():
        out.append(problem(f"{where}.strategy", f"{strategy} is not a Scheduling.Strategy value"))
    timeout = duration_s(scheduling, "timeout")
    if timeout is not None and timeout < 0:
        out.append(problem(f"{where}.timeout", f"must not be negative (got {timeout:g}s)"))
    wait = duration_s(scheduling, "max_wait_duration")
    if wait is not None and wait < 0:
        out.append(problem(f"{where}.max_wait_duration", f"must not be negative (got {wait:g}s)"))
    out.extend(_reservation_problems(spec, path, strategy))
    if strategy != "FLEX_START":
        return out
    if timeout is not None and timeout > MAX_FLEX_TIMEOUT_S:
        out.append(
            problem(
                f"{where}.timeout",
                f"FLEX_START needs a timeout of 7 days or less (got {timeout:g}s)",
            )
        )
    used = [(index, pool) for index, pool in enumerate(spec.worker_pool_specs) if pool.ByteSize()]
    shapes = {index: _shape(pool) for index, pool in used}
    for index, shape in shapes.items():
        if shape[1] not in FLEX_START_GPUS:
            out.append(
                problem(
                    f"{path}.worker_pool_specs[{index}].machine_spec",
                    "FLEX_START needs L4, A100, H100, H200 or B200 GPUs in every worker pool "
                    f"(got {_describe(shape)})",
                )
            )
    if len(set(shapes.values())) > 1:
        described = ", ".join(f"pool {index}: {_describe(shape)}" for index, shape in shapes.items())
        out.append(
            problem(
                f"{path}.worker_pool_specs",
                f"FLEX_START needs the same machine configuration in every worker pool ({described})",
            )
        )
    return out
