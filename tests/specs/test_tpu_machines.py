"""TPU VM machines in the specs, as docs/how-to/tpu.md states them: the machine types and topologies of
the catalog (derived from Google's TPU slice tables), refused at parse time outside them, with the error
the page quotes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.specs import DistributedTrainingJob, Machine
from airflow_vertex_dist.specs.catalog import TPU_MACHINES, TPU_TOPOLOGIES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "tpu.md"


def _rule(**machine: object) -> str:
    with pytest.raises(ValidationError) as info:
        Machine.model_validate(machine)
    [error] = info.value.errors()
    return str(error["msg"])


def test_the_page_quotes_the_error_a_bad_topology_gets() -> None:
    quoted = re.search(r"```text\n(tpu_topology: .*?)\n```", PAGE.read_text(), re.S)
    assert quoted is not None
    assert " ".join(quoted.group(1).split("\n")) in _rule(machine_type="ct6e-standard-8t", tpu_topology="4x4")


def test_the_pages_machines_are_valid_and_render_as_the_v1_machine_spec() -> None:
    assert Machine(machine_type="ct6e-standard-8t", tpu_topology="2x4").to_api() == {
        "machineType": "ct6e-standard-8t",
        "tpuTopology": "2x4",
    }
    Machine(machine_type="ct5lp-hightpu-4t", tpu_topology="2x2")
    Machine(machine_type="ct5lp-hightpu-4t", accelerator_type="TPU_V5_LITEPOD", accelerator_count=4)
    Machine(machine_type="cloud-tpu", accelerator_type="TPU_V3", accelerator_count=8)


def test_a_v6e_machine_names_no_accelerator_and_a_v5e_one_its_own_or_none() -> None:
    assert TPU_MACHINES["ct6e-standard-4t"][0] == ()
    assert "drop accelerator_type and accelerator_count" in _rule(
        machine_type="ct6e-standard-4t", accelerator_type="TPU_V5_LITEPOD", accelerator_count=4
    )
    assert TPU_MACHINES["ct5lp-hightpu-4t"] == (("TPU_V5_LITEPOD",), 4, False)


@pytest.mark.parametrize("machine_type", ["ct5p-hightpu-4t", "ct4p-hightpu-4t", "ct6e-standard-2t"])
def test_tpu_machines_google_page_does_not_give_are_refused(machine_type: str) -> None:
    """TPU v5p and v4 have no section on Google's "Configure compute resources" page: refused."""
    assert "is not a machine type of Vertex AI custom training" in _rule(machine_type=machine_type)


@pytest.mark.parametrize(
    ("machine_type", "topology"),
    [("tpu7x-standard-4t", "2x2x1"), ("tpu7x-standard-4t", "8x8x16"), ("ct5lp-hightpu-4t", "16x16")],
)
def test_the_pages_tpu7x_and_multi_host_v5e_slices_are_valid(machine_type: str, topology: str) -> None:
    Machine(machine_type=machine_type, tpu_topology=topology)


@pytest.mark.parametrize(
    ("accelerator", "count"), [("TPU_V2", 8), ("TPU_V2", 64), ("TPU_V3", 32), ("TPU_V3", 48)]
)
def test_cloud_tpu_takes_a_single_tpu_or_a_pod(accelerator: str, count: int) -> None:
    """TPU v2: 8, or 32 or a multiple of 32; TPU v3: 8, or 32 and more ('32+')."""
    Machine(machine_type="cloud-tpu", accelerator_type=accelerator, accelerator_count=count)


def test_a_multi_host_slice_runs_in_one_pool_of_one_replica() -> None:
    """The page: a multi-host slice (4 VMs) is still "a single worker pool [...] only one replica"."""
    assert TPU_TOPOLOGIES["ct6e-standard-4t"]["4x4"] == 4
    job = DistributedTrainingJob.model_validate(
        {
            "display_name": "tpu",
            "primary": {
                "machine": {"machine_type": "ct6e-standard-4t", "tpu_topology": "4x4"},
                "container": {"image_uri": "us-docker.pkg.dev/p/r/trainer:1"},
            },
        }
    )
    assert job.to_api()["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] == 1
