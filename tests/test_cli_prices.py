"""``airflow-vertex-dist render`` shows prices on stderr, from the machine catalog: a spec's price per
hour, and a DAG file's task with a capacity ladder every rung's; stdout stays the body alone."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from airflow_vertex_dist.specs.prices import price_per_hour
from tests.test_cli_render import render

DAG_FILE = textwrap.dedent(
    """
    from datetime import datetime, timezone

    from airflow.sdk import DAG

    from airflow_vertex_dist.operators.training import VertexTrainingOperator
    from airflow_vertex_dist.specs import (
        CapacityLadder, Container, DistributedTrainingJob, Machine, MachineOverride, Rung, WorkerPool,
    )

    A100 = Machine(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
    L4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
    with DAG("priced", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=timezone.utc)) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=DistributedTrainingJob(
                display_name="priced",
                primary=WorkerPool(machine=A100, container=Container(image_uri="python:3.11")),
            ),
            location="us-central1",
            capacity=CapacityLadder(
                regions=("us-east1",),
                max_price_per_hour={ceiling},
                rungs=(
                    Rung(name="a100"),
                    Rung(name="a100-spot", strategy="SPOT", accepts_restarts_from_zero=True),
                    Rung(name="l4-east", region="us-east1", machine=L4),
                ),
            ),
        )
    """
)


def test_render_shows_every_rungs_price(tmp_path: Path) -> None:
    dag_file = tmp_path / "priced.py"
    dag_file.write_text(DAG_FILE.format(ceiling=50))
    out = render(tmp_path, str(dag_file))
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "a2-highgpu-1g"
    a100 = price_per_hour("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, "us-central1")
    l4 = price_per_hour("g2-standard-8", "NVIDIA_L4", 1, "us-east1")
    assert a100 is not None and l4 is not None
    table = out.stderr[out.stderr.index("capacity ladder, USD/hour from the machine catalog:") :]
    rows = [line.split() for line in table.splitlines()[3:6]]
    assert [row[:4] for row in rows] == [
        ["1", "a100", "us-central1", "STANDARD"],
        ["2", "a100-spot", "us-central1", "SPOT"],
        ["3", "l4-east", "us-east1", "STANDARD"],
    ]
    assert f"{a100:.2f} (on-demand)" in table.splitlines()[3]
    assert f"{a100:.2f} (at most (on-demand; no Spot price in the catalog))" in table.splitlines()[4]
    assert f"{l4:.2f} (on-demand)" in table.splitlines()[5]


def test_a_rung_over_the_price_ceiling_fails_when_the_dag_file_is_parsed(tmp_path: Path) -> None:
    dag_file = tmp_path / "priced.py"
    dag_file.write_text(DAG_FILE.format(ceiling=1))
    out = render(tmp_path, str(dag_file))
    assert out.returncode != 0
    assert "capacity.rungs[0] (a100)" in out.stderr and "is above max_price_per_hour=1" in out.stderr


def test_render_of_a_spec_file_shows_its_price(tmp_path: Path) -> None:
    spec = {
        "display_name": "x",
        "location": "us-central1",
        "primary": {"machine": {"machine_type": "n1-standard-4"}, "container": {"image_uri": "python:3.11"}},
        "workers": {
            "machine": {"machine_type": "n1-standard-4"},
            "replica_count": 3,
            "container": {"image_uri": "python:3.11"},
        },
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = render(tmp_path, str(path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["displayName"] == "x"
    assert f"price: {4 * 0.21849885:.2f} USD/hour (on-demand), from the machine catalog" in out.stderr
