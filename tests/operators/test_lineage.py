"""OpenLineage: the training and tuning operators' facets, and the events the OpenLineage provider's
own listener emits for a real run (dag.test(), the emulator, the client's file transport)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import DAG, Asset

from airflow_vertex_dist.operators.training import VertexTrainingOperator
from airflow_vertex_dist.operators.tuning import VertexTuningOperator
from airflow_vertex_dist.specs import (
    Container,
    DistributedTrainingJob,
    Machine,
    ReductionServer,
    WorkerPool,
)
from airflow_vertex_dist.specs.examples import TUNING_EXAMPLE
from vertex_emulator.app import Emulator

from .harness import PY, poll, run_dag, ti_state
from .test_tuning import tuning_spec

pytestmark = [pytest.mark.usefixtures("airflow_db")]

START = datetime(2024, 1, 1, tzinfo=timezone.utc)

GPU_SPEC = DistributedTrainingJob(
    display_name="gpu",
    primary=WorkerPool(
        machine=Machine(
            machine_type="n1-highmem-16", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=2
        ),
        container=Container(image_uri="example.com/train:1"),
    ),
    workers=WorkerPool(
        machine=Machine(
            machine_type="n1-highmem-16", accelerator_type="NVIDIA_TESLA_V100", accelerator_count=2
        ),
        replica_count=3,
        container=Container(image_uri="example.com/train:1"),
    ),
    reduction_server=ReductionServer(replica_count=4),
    base_output_directory="gs://models-bucket/runs/{{ ds_nodash }}/",
)


def _facets(lineage: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[str, Any]]:
    from openlineage.client.serde import Serde

    inputs = [(d.namespace, d.name) for d in lineage.inputs]
    outputs = [(d.namespace, d.name) for d in lineage.outputs]
    facet = json.loads(Serde.to_json(lineage.job_facets["vertexDistJob"]))
    return inputs, outputs, facet


def test_training_facets_at_start(vertex_conn: Emulator) -> None:
    op = VertexTrainingOperator(
        task_id="t",
        spec=GPU_SPEC,
        lineage_inputs=["gs://data-bucket/features/2024/", Asset("gs://data-bucket/labels")],
        inlets=[Asset("gs://data-bucket/labels"), Asset("s3://other/raw.csv")],
    )
    op.render_template_fields({"ds_nodash": "20240102"})  # type: ignore[arg-type]
    inputs, outputs, facet = _facets(op.get_openlineage_facets_on_start())
    assert inputs == [
        ("gs://data-bucket", "features/2024"),
        ("gs://data-bucket", "labels"),  # declared once, though also in inlets
        ("s3://other", "raw.csv"),
    ]
    assert outputs == [("gs://models-bucket", "runs/20240102/model")]  # AIP_MODEL_DIR
    assert facet["jobKind"] == "customJobs" and "resourceName" not in facet  # no job yet
    assert facet["pools"] == [
        {
            "pool": "workerpool0",
            "role": "primary",
            "replicaCount": 1,
            "machineType": "n1-highmem-16",
            "acceleratorType": "NVIDIA_TESLA_V100",
            "acceleratorCount": 2,
        },
        {
            "pool": "workerpool1",
            "role": "workers",
            "replicaCount": 3,
            "machineType": "n1-highmem-16",
            "acceleratorType": "NVIDIA_TESLA_V100",
            "acceleratorCount": 2,
        },
        {
            "pool": "workerpool2",
            "role": "reduction_server",
            "replicaCount": 4,
            "machineType": "n1-highcpu-16",
            "acceleratorCount": 0,  # no acceleratorType: the emitted JSON leaves out nulls
        },
    ]


def test_a_ladders_facet_names_the_rung_and_the_cost(vertex_conn: Emulator) -> None:
    from airflow_vertex_dist.specs import MachineOverride, Rung

    l4 = MachineOverride(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1)
    op = VertexTrainingOperator(
        task_id="t",
        spec=GPU_SPEC.model_copy(update={"base_output_directory": "gs://models-bucket/run"}),
        capacity=[Rung(name="v100"), Rung(name="l4", machine=l4)],
    )
    _inputs, outputs, facet = _facets(op.get_openlineage_facets_on_start())
    assert facet["pools"][0]["machineType"] == "n1-highmem-16" and "rung" not in facet  # rung 1's body
    walk = op.ladder_walk
    assert walk is not None
    walk.rung_plan = walk.plans[1]  # as the walk leaves it once rung 2's job ran
    job = {
        "name": "projects/test-project/locations/us-central1/customJobs/9",
        "state": "JOB_STATE_SUCCEEDED",
        "startTime": "2024-01-01T00:00:00Z",
        "endTime": "2024-01-01T00:30:00Z",
    }
    op._final_job = job
    _inputs, outputs, facet = _facets(op.get_openlineage_facets_on_complete(None))
    assert outputs == [("gs://models-bucket", "run/model")]  # the same output on every rung
    assert facet["pools"][0]["machineType"] == "g2-standard-8"
    assert facet["rung"] == {"number": 2, "of": 2, "name": "l4", "region": "us-central1"}  # strategy: null
    plan = walk.plans[1]
    assert plan.usd_per_hour is not None
    assert facet["cost"]["hours"] == 0.5
    assert facet["cost"]["usdPerHour"] == plan.usd_per_hour
    assert facet["cost"]["estimatedUsd"] == pytest.approx(plan.usd_per_hour * 0.5)


def test_tuning_facets_name_the_study_output_until_a_best_trial(vertex_conn: Emulator) -> None:
    spec = TUNING_EXAMPLE.model_copy(
        update={
            "trial_job": TUNING_EXAMPLE.trial_job.model_copy(update={"base_output_directory": "gs://b/study"})
        }
    )
    op = VertexTuningOperator(task_id="t", spec=spec)
    inputs, outputs, facet = _facets(op.get_openlineage_facets_on_start())
    assert inputs == [] and outputs == [("gs://b", "study")]
    assert facet["jobKind"] == "hyperparameterTuningJobs"
    assert [p["role"] for p in facet["pools"]] == ["primary"]


def test_a_bad_declared_input_names_the_field() -> None:
    from airflow_vertex_dist.operators.lineage import uri_dataset

    with pytest.raises(ValueError, match=r"lineage_inputs: 'data/x' is not a URI like gs://bucket/path"):
        uri_dataset("data/x")


# ------------------------------------------------- the provider's listener, a real run, real events


@pytest.fixture
def lineage_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[Any]]]:
    """The OpenLineage provider enabled with the client's file transport; its listener registered
    with the Task SDK's listener manager for this test. Yields a reader of the emitted events."""
    from airflow.listeners.listener import get_listener_manager as core_listener_manager
    from airflow.providers.openlineage import conf as ol_conf
    from airflow.providers.openlineage.plugins.listener import OpenLineageListener
    from airflow.sdk.listener import get_listener_manager

    path = tmp_path / "openlineage.jsonl"
    transport = {"type": "file", "log_file_path": str(path), "append": True}
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps(transport))
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD", "True")
    cached = [f for f in vars(ol_conf).values() if callable(getattr(f, "cache_clear", None))]
    for function in cached:
        function.cache_clear()
    managers = [get_listener_manager(), core_listener_manager()]

    def drop_openlineage_listeners() -> None:
        # The provider's plugin adds its own listener when it is first loaded with OpenLineage on
        # (once per process): only this test's listener may emit, and only during this test.
        for manager in managers:
            for plugin in list(manager.pm.get_plugins()):
                if isinstance(plugin, OpenLineageListener):
                    manager.pm.unregister(plugin)

    drop_openlineage_listeners()
    managers[0].add_listener(OpenLineageListener())  # the task events, with this test's transport

    def read() -> list[Any]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    try:
        yield read
    finally:
        drop_openlineage_listeners()
        monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT")
        for function in cached:
            function.cache_clear()


def _task_events(read: Callable[[], list[Any]], task_id: str, final: str) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        events = {e["eventType"]: e for e in read() if e["job"]["name"].endswith(f".{task_id}")}
        return events if "START" in events and final in events else None

    found: dict[str, Any] = poll(
        ready, timeout=30, what=f"START and {final} events of {task_id} in {[e['job'] for e in read()]}"
    )
    return found


@pytest.mark.slow
def test_the_provider_emits_a_training_jobs_lineage(
    vertex_conn: Emulator, lineage_events: Callable[[], list[Any]]
) -> None:
    spec = DistributedTrainingJob(
        display_name="lineage",
        primary=WorkerPool(
            machine=Machine(machine_type="n1-standard-4"),
            container=Container(image_uri="python:3.11", command=(PY, "-c", "print('ok')")),
        ),
        base_output_directory="gs://models-bucket/lineage/{{ ds_nodash }}",
    )
    with DAG("lineage_train", schedule=None, start_date=START) as dag:
        VertexTrainingOperator(
            task_id="train",
            spec=spec,
            deferrable=True,
            poll_interval=0.3,
            lineage_inputs=["gs://data-bucket/features/{{ ds_nodash }}"],
            inlets=[Asset("gs://data-bucket/labels")],
        )
    dr = run_dag(dag, logical_date=datetime(2024, 7, 1, tzinfo=timezone.utc))
    assert ti_state(dr, "train") == "success"
    [job] = vertex_conn.store.list("customJobs", "projects/test-project/locations/us-central1")
    events = _task_events(lineage_events, "train", "COMPLETE")
    for kind in ("START", "COMPLETE"):
        event = events[kind]
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [
            ("gs://data-bucket", "features/20240701"),
            ("gs://data-bucket", "labels"),
        ]
        assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [
            ("gs://models-bucket", "lineage/20240701/model")
        ]
        facet = event["job"]["facets"]["vertexDistJob"]
        assert facet["pools"][0]["machineType"] == "n1-standard-4"
    assert "resourceName" not in events["START"]["job"]["facets"]["vertexDistJob"]
    assert events["COMPLETE"]["job"]["facets"]["vertexDistJob"]["resourceName"] == job["name"]
    assert "cost" not in events["START"]["job"]["facets"]["vertexDistJob"]  # not ended yet
    cost = events["COMPLETE"]["job"]["facets"]["vertexDistJob"]["cost"]
    assert (cost["usdPerHour"], cost["basis"]) == (0.21849885, "on-demand")  # n1-standard-4, us-central1
    assert cost["hours"] > 0
    assert cost["estimatedUsd"] == pytest.approx(cost["usdPerHour"] * cost["hours"], abs=1e-8)
    # the try's cost ledger, as the task's XCom has it, its keys in camelCase
    assert "ledger" not in events["START"]["job"]["facets"]["vertexDistJob"]
    ledger = events["COMPLETE"]["job"]["facets"]["vertexDistJob"]["ledger"]
    [entry] = ledger["jobs"]
    assert entry["job"] == job["name"] and entry["strategy"] == "STANDARD"
    # the event's job is compact (no spec): its pool is priced from the request, 1 CPU replica
    assert entry["replicas"] == 1 and "acceleratorType" not in entry  # null: left out of the event
    assert entry["runSeconds"] == pytest.approx(cost["hours"] * 3600, abs=0.01)
    assert entry["usd"] == pytest.approx(cost["estimatedUsd"], abs=1e-5)
    assert (entry["preemptedSeconds"], entry["preemptions"]) == (0.0, 0)
    assert ledger["totals"]["usd"] == entry["usd"] and ledger["totals"]["jobs"] == 1
    assert ledger["byRung"] == [{"totals": ledger["totals"]}]  # no ladder: its rung is null (left out)


@pytest.mark.slow
def test_the_provider_emits_a_studys_best_model(
    vertex_conn: Emulator, lineage_events: Callable[[], list[Any]]
) -> None:
    spec = tuning_spec("MINIMIZE", trials=4)
    spec = spec.model_copy(
        update={"trial_job": spec.trial_job.model_copy(update={"base_output_directory": "gs://b/study"})}
    )
    with DAG("lineage_tune", schedule=None, start_date=START) as dag:
        VertexTuningOperator(task_id="tune", spec=spec, deferrable=False, poll_interval=0.3)
    dr = run_dag(dag)
    assert ti_state(dr, "tune") == "success"
    [job] = vertex_conn.store.list("hyperparameterTuningJobs", "projects/test-project/locations/us-central1")
    best = next(t for t in job["trials"] if t["parameters"][0]["value"] in (3, "3", 3.0))  # loss 0.5
    events = _task_events(lineage_events, "tune", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in events["START"]["outputs"]] == [("gs://b", "study")]
    assert [(d["namespace"], d["name"]) for d in events["COMPLETE"]["outputs"]] == [
        ("gs://b", f"study/{best['id']}/model")
    ]
    assert events["COMPLETE"]["job"]["facets"]["vertexDistJob"]["resourceName"] == job["name"]
