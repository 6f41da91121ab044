"""A DAG file that builds our tasks loads neither the trigger machinery nor any Google client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from airflow_vertex_dist.operators import VertexCancelJobOperator, VertexTrainingOperator
from airflow_vertex_dist.operators import VertexTuningOperator
from airflow_vertex_dist.sensors import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER, TUNING_EXAMPLE
VertexTrainingOperator(task_id="train", spec=SEED_REDUCTION_SERVER)
VertexTuningOperator(task_id="tune", spec=TUNING_EXAMPLE)
print(json.dumps(sorted(sys.modules)))
"""

#: Only the cancel operator and the sensors: none of them imports a hook module to be built.
PROBE_HOOKLESS = """
import json, sys
from airflow_vertex_dist.operators import VertexCancelJobOperator
from airflow_vertex_dist.sensors import VertexJobSensor, VertexReplicaSensor, VertexTrialSensor
name = "projects/p/locations/us-central1/customJobs/1"
study = "projects/p/locations/us-central1/hyperparameterTuningJobs/2"
VertexCancelJobOperator(task_id="cancel", job_name=name)
VertexJobSensor(task_id="job", job_name=name)
VertexReplicaSensor(task_id="replicas", job_name=name, replicas=["workerpool0-0"])
VertexTrialSensor(task_id="trials", job_name=study, min_succeeded=1)
print(json.dumps(sorted(sys.modules)))
"""

#: The benchmark's shape: specs built in the DAG file, a training and a tuning task.
PROBE_TRAINING_ONLY = """
import json, sys
from airflow_vertex_dist.operators import VertexTrainingOperator, VertexTuningOperator
from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER, TUNING_EXAMPLE
VertexTrainingOperator(task_id="train", spec=SEED_REDUCTION_SERVER)
VertexTuningOperator(task_id="tune", spec=TUNING_EXAMPLE)
print(json.dumps(sorted(sys.modules)))
"""


#: A DAG file of Airflow's alone: the baseline of what parsing any DAG loads.
PROBE_AIRFLOW_ONLY = """
import json, sys
from airflow.sdk import DAG, BaseOperator
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(probe: str, tmp_path: Path) -> set[str]:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_building_tasks_loads_no_trigger_and_no_client(tmp_path: Path) -> None:
    modules = _modules_after(PROBE, tmp_path)
    heavy = {
        "airflow_vertex_dist.triggers.jobs",
        "airflow_vertex_dist.triggers.poller",
        "airflow_vertex_dist.triggers.sensors",
        "airflow_vertex_dist.hooks._clients",
        "grpc",
    }
    assert not heavy & modules, sorted(heavy & modules)
    assert not [m for m in modules if m.startswith("google.cloud.")], "a google.cloud submodule was imported"


def test_building_tasks_loads_no_openlineage(tmp_path: Path) -> None:
    """The OpenLineage methods import the provider when the provider calls them, not at parse time
    (OpenLineage is on here: a transport is configured)."""
    on = "import json, os, sys\nos.environ['AIRFLOW__OPENLINEAGE__TRANSPORT'] = '{\"type\": \"console\"}'"
    probe = PROBE.replace("import json, sys", on, 1)
    modules = _modules_after(probe, tmp_path)
    # (Airflow's providers manager reads every provider's get_provider_info: not ours to avoid.)
    provider_info = {"airflow.providers.openlineage", "airflow.providers.openlineage.get_provider_info"}
    lineage = sorted(m for m in modules if "openlineage" in m or m.endswith(".lineage"))
    assert not set(lineage) - provider_info, lineage


def test_cancel_and_sensor_tasks_load_no_hook_module(tmp_path: Path) -> None:
    # The hook class is looked up when a task first uses its hook, not when the task is built.
    modules = _modules_after(PROBE_HOOKLESS, tmp_path)
    hooks = {"airflow_vertex_dist.hooks.vertex_jobs", "airflow_vertex_dist.hooks.connection"}
    assert not hooks & modules, sorted(hooks & modules)


def test_a_training_dag_loads_only_what_it_uses(tmp_path: Path) -> None:
    modules = _modules_after(PROBE_TRAINING_ONLY, tmp_path)
    unused = {
        "airflow_vertex_dist.operators.cancel",  # operators are imported by name, on first use
        "airflow_vertex_dist.sensors",
        "pydantic.functional_serializers",  # the specs' durations serialize without it
        "airflow_vertex_dist.hooks.vertex_jobs",  # the hook class is looked up on first use
        "airflow_vertex_dist.hooks.connection",
        # the wait rules are needed when the task runs
        "airflow_vertex_dist.jobs.events",
        "airflow_vertex_dist.jobs.states",
        "airflow_vertex_dist.jobs.replicas",
        "airflow_vertex_dist.jobs.trials",
        "airflow_vertex_dist.jobs.progress",
        "airflow_vertex_dist.jobs.output_types",  # the XCom types: for type checkers and docs
        "airflow_vertex_dist.jobs.types",
    }
    # What Airflow's own DAG-building API loads is not ours to save (Airflow 3.1's loads
    # pydantic.functional_serializers itself).
    airflows = _modules_after(PROBE_AIRFLOW_ONLY, tmp_path)
    assert not (unused - airflows) & modules, sorted((unused - airflows) & modules)


def test_spec_model_annotations_are_objects_not_strings() -> None:
    """The modules that define spec models do without ``from __future__ import annotations``: string
    annotations would make pydantic compile and evaluate each one on every parse (see their header)."""
    import __future__

    import importlib

    from airflow_vertex_dist.specs._base import SpecModel

    importlib.import_module("airflow_vertex_dist.specs")  # imports every module that defines a model
    for short in ("cluster", "job", "study", "tuning"):
        module = importlib.import_module(f"airflow_vertex_dist.specs.{short}")
        assert getattr(module, "annotations", None) is not __future__.annotations, module.__name__
    models: list[type[SpecModel]] = []
    todo: list[type[SpecModel]] = [SpecModel]
    while todo:  # every spec model the package defines
        children = [c for c in todo.pop().__subclasses__() if c.__module__.startswith("airflow_vertex_dist.")]
        models += children
        todo += children
    assert {"DistributedTrainingJob", "HyperparameterTuningJob", "Study"} <= {m.__name__ for m in models}
    strings = {
        f"{m.__name__}.{field}": hint
        for m in models
        for field, hint in m.__dict__.get("__annotations__", {}).items()
        if isinstance(hint, str)
    }
    assert strings == {"ConditionalParameter.parameter": "Parameter"}, strings  # the one recursive type
