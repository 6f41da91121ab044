"""The machine -> egress bandwidth table behind reducer sizing."""

from __future__ import annotations

import pytest

from airflow_vertex_dist.specs import egress_gbps


@pytest.mark.parametrize(
    ("machine", "accelerator", "count", "gbps"),
    [
        ("n1-highcpu-16", None, 0, 32),  # the recommended reducer
        ("n1-standard-4", None, 0, 8),  # 2 Gbps per vCPU
        ("n1-highmem-96", None, 0, 32),  # capped at 32
        ("n1-highmem-96", "NVIDIA_TESLA_V100", 8, 100),  # the seed's workers
        ("n1-standard-16", "NVIDIA_TESLA_T4", 4, 50),
        ("n1-standard-8", "NVIDIA_TESLA_P100", 1, 16),  # P100/P4: the plain N1 rate
        ("n2-highcpu-16", None, 0, 32),
        ("n2-standard-2", None, 0, 10),  # N2 floor
        ("e2-standard-32", None, 0, 16),  # E2 cap
        ("a2-megagpu-16g", "NVIDIA_TESLA_A100", 16, 100),  # the seed's second example
        ("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, 24),
        ("g2-standard-48", "NVIDIA_L4", 4, 50),
        ("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8, 1800),
    ],
)
def test_known_bandwidths(machine: str, accelerator: str | None, count: int, gbps: float) -> None:
    assert egress_gbps(machine, accelerator, count) == gbps


@pytest.mark.parametrize("machine", ["x9-custom-8", "n1-custom-8-30720", "c3-standard-8", "cloud-tpu"])
def test_unknown_machines_have_no_bandwidth(machine: str) -> None:
    assert egress_gbps(machine) is None
