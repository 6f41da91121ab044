"""``airflow-vertex-dist render`` finds every DAG a file defines as Airflow's DAG processor does (a
``with DAG(...)`` block without ``as``, a ``@dag`` function called at module level), and prices a task
whose operator sets no location with its connection's location, read offline as the hooks read it."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_vertex_dist.specs.prices import price_per_hour
from tests.test_cli_render import render

TASK = """
    VertexTrainingOperator(
        task_id="train",
        vertex_dist_conn_id="{conn_id}",
        spec=DistributedTrainingJob(
            display_name="found",
            primary=WorkerPool(
                machine=Machine(machine_type="n1-standard-4"), container=Container(image_uri="python:3.11")
            ),
        ),
        {location}
    )
"""
HEADER = """
from datetime import datetime, timezone

from airflow.sdk import DAG, dag

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.specs import Container, DistributedTrainingJob, Machine, WorkerPool

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
"""
WITH_DAG = (
    HEADER
    + """
with DAG("no_as", schedule=None, start_date=START):
{task}
"""
)
DECORATED = (
    HEADER
    + """
@dag(schedule=None, start_date=START)
def decorated():
{task}


decorated()
"""
)


def _dag_file(
    tmp_path: Path, template: str, *, conn_id: str = "vertex_dist_default", location: str = ""
) -> Path:
    path = tmp_path / "found.py"
    path.write_text(template.format(task=TASK.format(conn_id=conn_id, location=location).strip("\n")))
    return path


def _conn(location: str | None) -> dict[str, str]:
    extra = {"project": "p"} | ({"location": location} if location else {})
    return {"AIRFLOW_CONN_TEAM_VERTEX": json.dumps({"conn_type": "vertex_dist", "extra": extra})}


def test_a_with_dag_block_without_as_is_found(tmp_path: Path) -> None:
    path = _dag_file(tmp_path, WITH_DAG, location='location="us-central1",')
    out = render(tmp_path, str(path))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["displayName"] == "found"


def test_a_dag_decorated_function_called_at_module_level_is_found(tmp_path: Path) -> None:
    path = _dag_file(tmp_path, DECORATED, location='location="us-central1",')
    out = render(tmp_path, str(path), "--dag", "decorated")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["displayName"] == "found"


def test_the_price_takes_the_connections_location(tmp_path: Path) -> None:
    path = _dag_file(tmp_path, WITH_DAG, conn_id="team_vertex")
    out = render(tmp_path, str(path), env_vars=_conn("europe-west4"))
    assert out.returncode == 0, out.stderr
    price = price_per_hour("n1-standard-4", None, 0, "europe-west4")
    assert price is not None
    assert "location: europe-west4, the location of connection 'team_vertex'" in out.stderr
    assert f"price: {price:.2f} USD/hour (on-demand), from the machine catalog" in out.stderr


def test_a_connection_that_does_not_exist_is_named(tmp_path: Path) -> None:
    path = _dag_file(tmp_path, DECORATED, conn_id="team_vertex")
    out = render(tmp_path, str(path))
    assert out.returncode == 0, out.stderr
    assert "location: none: connection 'team_vertex' does not exist here" in out.stderr
    assert "give --location" in out.stderr
    assert "price: unknown (no region), from the machine catalog" in out.stderr


def test_a_connection_without_a_location_says_so(tmp_path: Path) -> None:
    path = _dag_file(tmp_path, WITH_DAG, conn_id="team_vertex")
    out = render(tmp_path, str(path), env_vars=_conn(None))
    assert out.returncode == 0, out.stderr
    assert "location: none: connection 'team_vertex' sets no location; give --location" in out.stderr


def test_a_file_that_does_not_import_shows_airflows_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("from airflow.sdk import DAG\nimport no_such_module_here\n")
    out = render(tmp_path, str(path))
    assert out.returncode == 2
    assert f"cannot import {path}" in out.stderr
    assert "No module named 'no_such_module_here'" in out.stderr


def test_a_logical_date_variable_in_a_dag_without_schedule_gets_a_note(tmp_path: Path) -> None:
    """A DAG with no schedule runs by hand, and a manual run may have no logical date: render says which
    field uses which logical-date-only variable, and what to use instead (the run's own advice). A
    scheduled DAG's runs always have one: no note."""
    from airflow_vertex_dist.operators.spec_field import NO_LOGICAL_DATE_ADVICE

    task = TASK.format(conn_id="vertex_dist_default", location='location="us-central1",').strip("\n")
    task = task.replace('display_name="found"', 'display_name="found-{{ ds_nodash }}-{{ run_id }}"')
    path = tmp_path / "found.py"
    path.write_text(WITH_DAG.format(task=task))
    out = render(tmp_path, str(path), "--logical-date", "2026-01-02")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["displayName"].startswith("found-20260102-manual__")
    notes = [line for line in out.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: spec.display_name uses ds_nodash: this DAG has no schedule, and a run triggered by hand "
        f"without a logical date cannot render it; {NO_LOGICAL_DATE_ADVICE}"
    ]
    assert "{{ dag_run.run_after | ds_nodash }} or {{ run_id }}" in NO_LOGICAL_DATE_ADVICE
    path.write_text(WITH_DAG.replace("schedule=None", 'schedule="@daily"').format(task=task))
    out = render(tmp_path, str(path), "--logical-date", "2026-01-02")
    assert out.returncode == 0, out.stderr
    assert "note: " not in out.stderr
