"""``airflow-vertex-dist render`` run as the installed command: a DAG file's task rendered for a logical
date, the choices when a task id is unknown, and ``module:attribute`` from the current directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_vertex_dist.specs import DistributedTrainingJob

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags"
COMMAND = Path(sys.executable).with_name("airflow-vertex-dist")


def render(
    tmp_path: Path, *args: str, cwd: Path | None = None, env_vars: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing on the path by hand
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW_CONN_")}  # only the test's own
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow-home")
    env.update(env_vars or {})
    return subprocess.run(
        [str(COMMAND), "render", *args],
        cwd=cwd or tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def substituted(value: Any, replacements: dict[str, str]) -> Any:
    if isinstance(value, str):
        for template, text in replacements.items():
            value = value.replace(template, text)
        return value
    if isinstance(value, dict):
        return {k: substituted(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [substituted(v, replacements) for v in value]
    return value


def example_spec(module: str) -> dict[str, Any]:
    """The ``SPEC`` of an example DAG file, as JSON (imported with its folder on the path)."""
    code = f"import json, {module}; print(json.dumps({module}.SPEC.model_dump(mode='json')))"
    env = {**os.environ, "PYTHONPATH": str(DAGS)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])  # after any log line
    return result


def test_a_dag_files_task_renders_for_a_logical_date(tmp_path: Path) -> None:
    out = render(tmp_path, str(DAGS / "parameter_server.py"), "--logical-date", "2026-01-01")
    assert out.returncode == 0, out.stderr
    rendered = substituted(example_spec("parameter_server"), {"{{ds_nodash}}": "20260101"})
    body = DistributedTrainingJob.model_validate(rendered).to_api()
    assert out.stdout == json.dumps(body, sort_keys=True, indent=2) + "\n"  # the spec render's output
    assert body["displayName"] == "ps-20260101"
    assert body["jobSpec"]["baseOutputDirectory"]["outputUriPrefix"].endswith("/parameter_server/20260101")


def test_the_data_interval_and_a_mapped_task(tmp_path: Path) -> None:
    out = render(
        tmp_path,
        str(DAGS / "retraining.py"),
        "--logical-date",
        "2026-01-08T00:00:00+00:00",
        "--data-interval",
        "2026-01-01",
        "2026-01-08",
        "--compact",
    )
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["displayName"] == "retrain-20260108"
    assert (
        "--data-dir=gs://vertex-dist-examples/retraining/data/20260101-20260108"
        in (body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"])
    )
    mapped = render(tmp_path, str(DAGS / "per_segment.py"), "--logical-date", "2026-01-01", "--map-index=1")
    assert mapped.returncode == 0, mapped.stderr
    assert json.loads(mapped.stdout)["displayName"] == "segment-south-20260101"


def test_an_unknown_task_id_lists_the_choices(tmp_path: Path) -> None:
    out = render(tmp_path, str(DAGS / "training_logs.py"), "--task", "trian", "--logical-date", "2026-01-01")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines()[-1] == (
        f"{DAGS / 'training_logs.py'}: no training or tuning task 'trian'; choose one of: "
        "vertex_dist_training_logs:train, vertex_dist_training_logs_sync:train"
    )
    several = render(tmp_path, str(DAGS / "training_logs.py"))
    assert several.returncode == 2
    assert "several tasks match; pick one with --dag: vertex_dist_training_logs:train, " in several.stderr


def test_a_template_render_cannot_give_names_its_path(tmp_path: Path) -> None:
    out = render(tmp_path, str(DAGS / "prep_to_train.py"), "--logical-date", "2026-01-01")
    assert out.returncode == 2
    assert (
        "cannot render field 'spec' of task 'train':\n  spec.display_name: \"train-on-{{ti.xcom_pull("
        in out.stderr
    )
    assert "'ti' is undefined" in out.stderr and "it has no task instance, XCom" in out.stderr


@pytest.mark.parametrize("ref", ["my_specs:SPEC"])
def test_module_attribute_is_imported_from_the_current_directory(tmp_path: Path, ref: str) -> None:
    (tmp_path / "my_specs.py").write_text(
        "from airflow_vertex_dist.specs.examples import PARAMETER_SERVER_EXAMPLE as SPEC\n"
    )
    out = render(tmp_path, ref, "--compact", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    from airflow_vertex_dist.specs.examples import PARAMETER_SERVER_EXAMPLE

    assert json.loads(out.stdout) == PARAMETER_SERVER_EXAMPLE.to_api()


def test_the_location_is_the_flags_else_the_operators(tmp_path: Path) -> None:
    """The Reduction Server image follows the job's region: the operator's ``location``, or ``--location``."""
    dag_file = tmp_path / "located.py"
    dag_file.write_text(
        "from airflow.sdk import DAG\n"
        "from airflow_vertex_dist.operators.training import VertexTrainingOperator\n"
        "from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER\n"
        "with DAG('located', schedule=None) as dag:\n"
        "    VertexTrainingOperator(task_id='train', spec=SEED_REDUCTION_SERVER, location='europe-west4')\n"
    )

    def reducer_image(*flags: str) -> str:
        out = render(tmp_path, str(dag_file), "--logical-date", "2026-01-01", *flags)
        assert out.returncode == 0, out.stderr
        image: str = json.loads(out.stdout)["jobSpec"]["workerPoolSpecs"][2]["containerSpec"]["imageUri"]
        return image

    assert reducer_image().startswith("europe-docker.pkg.dev/")
    assert reducer_image("--location", "asia-east1").startswith("asia-docker.pkg.dev/")
