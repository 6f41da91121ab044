"""Per-VM maximum egress bandwidth (Gbps), for sizing Reduction Server pools.

Sizing rule (Vertex AI "Distributed training" page, Reduction Server section): the reducers'
total egress bandwidth must be at least the total of worker pools 0 and 1. Seed examples:
5 x ``n1-highmem-96`` with 8 x V100 at 100 Gbps = 500 Gbps, matched by 16 x ``n1-highcpu-16``
at 32 Gbps (512 Gbps); 8 x ``a2-megagpu-16g`` at 100 Gbps need ceil(800 / 32) = 25 reducers.

Sources (public Google Cloud documentation, Compute Engine):

* "General-purpose machine family" (compute/docs/general-purpose-machines), columns
  "Default egress bandwidth (Gbps)": N1 gets 2 Gbps per vCPU up to 32 Gbps (shared-core
  ``f1-micro``/``g1-small`` 1 Gbps); N2 and N2D 2 Gbps per vCPU, at least 10 Gbps, up to 32 Gbps
  (per-VM Tier_1 networking raises N2/N2D with 32+ vCPUs to 50-100 Gbps; not assumed here
  because it is opt-in); E2 2 Gbps per vCPU up to 16 Gbps (``e2-micro``/``e2-small`` 1 Gbps,
  ``e2-medium`` 2 Gbps); C2 ``c2-standard-4`` 10, ``-8`` 16, ``-16`` and larger 32 Gbps.
* "Network bandwidth and GPUs" (compute/docs/gpus/gpu-network-bandwidth): N1 with V100
  1 GPU 24, 2 GPUs 32, 4 GPUs 50, 8 GPUs 100 Gbps; N1 with T4 1 or 2 GPUs 32, 4 GPUs 50 Gbps;
  N1 with P100, P4 (and K80) get the plain N1 rate (max 32 Gbps). A2 Standard/Ultra:
  1 GPU 24, 2 GPUs 32, 4 GPUs 50, 8 GPUs and ``a2-megagpu-16g`` 100 Gbps. G2: ``g2-standard-4``
  10, ``-8``/``-12`` 16, ``-16``/``-24``/``-32`` 32, ``-48`` 50, ``-96`` 100 Gbps. A3 High
  (``a3-highgpu-8g``) 1,000, A3 Mega (``a3-megagpu-8g``) 1,800, A3 Edge (``a3-edgegpu-8g``)
  600, A3 Ultra (``a3-ultragpu-8g``) and A4 (``a4-highgpu-8g``) 3,600 Gbps.

Machine types not covered return ``None``: the sizing check then cannot run, and
``replica_count="auto"`` asks for an explicit count.
"""

from __future__ import annotations

from airflow_vertex_dist.common.regex import LazyRegex

__all__ = ["GPU_ATTACHED_GBPS", "MACHINE_GBPS", "egress_gbps", "vcpus"]

#: (accelerator type, count) -> Gbps for N1 machines with attached GPUs.
GPU_ATTACHED_GBPS: dict[tuple[str, int], float] = {
    ("NVIDIA_TESLA_V100", 1): 24,
    ("NVIDIA_TESLA_V100", 2): 32,
    ("NVIDIA_TESLA_V100", 4): 50,
    ("NVIDIA_TESLA_V100", 8): 100,
    ("NVIDIA_TESLA_T4", 1): 32,
    ("NVIDIA_TESLA_T4", 2): 32,
    ("NVIDIA_TESLA_T4", 4): 50,
}

#: Fixed-bandwidth machine types (accelerator-optimized families).
MACHINE_GBPS: dict[str, float] = {
    "a2-highgpu-1g": 24,
    "a2-highgpu-2g": 32,
    "a2-highgpu-4g": 50,
    "a2-highgpu-8g": 100,
    "a2-megagpu-16g": 100,
    "a2-ultragpu-1g": 24,
    "a2-ultragpu-2g": 32,
    "a2-ultragpu-4g": 50,
    "a2-ultragpu-8g": 100,
    "g2-standard-4": 10,
    "g2-standard-8": 16,
    "g2-standard-12": 16,
    "g2-standard-16": 32,
    "g2-standard-24": 32,
    "g2-standard-32": 32,
    "g2-standard-48": 50,
    "g2-standard-96": 100,
    "a3-highgpu-8g": 1000,
    "a3-megagpu-8g": 1800,
    "a3-edgegpu-8g": 600,
    "a3-ultragpu-8g": 3600,
    "a4-highgpu-8g": 3600,
    "f1-micro": 1,
    "g1-small": 1,
    "e2-micro": 1,
    "e2-small": 1,
    "e2-medium": 2,
    "c2-standard-4": 10,
    "c2-standard-8": 16,
}

_PREDEFINED = LazyRegex(r"^(n1|n2|n2d|e2|c2)-(standard|highmem|highcpu)-(\d+)$")


def vcpus(machine_type: str) -> int | None:
    """vCPU count of a predefined N1/N2/N2D/E2/C2 machine type, else ``None``."""
    match = _PREDEFINED.match(machine_type)
    return int(match.group(3)) if match else None


def _general_purpose_gbps(machine_type: str) -> float | None:
    match = _PREDEFINED.match(machine_type)
    if not match:
        return None
    family, n = match.group(1), int(match.group(3))
    if family == "n1":
        return float(min(2 * n, 32))
    if family in ("n2", "n2d"):
        return float(min(max(2 * n, 10), 32))
    if family == "e2":
        return float(min(2 * n, 16))
    # c2: 4 -> 10, 8 -> 16, 16 and more -> 32
    return 10.0 if n <= 4 else 16.0 if n <= 8 else 32.0


def egress_gbps(
    machine_type: str, accelerator_type: str | None = None, accelerator_count: int = 0
) -> float | None:
    """Maximum egress bandwidth of one VM in Gbps, or ``None`` when the table does not know it."""
    if machine_type in MACHINE_GBPS:
        return MACHINE_GBPS[machine_type]
    base = _general_purpose_gbps(machine_type)
    if base is None:
        return None
    if machine_type.startswith("n1-") and accelerator_type:
        gpu = GPU_ATTACHED_GBPS.get((accelerator_type, accelerator_count))
        if gpu is not None:
            return max(base, gpu)
    return base
