"""load_spec (JSON, YAML, module:attribute), pools_table, the CLI ``render`` and import purity."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from airflow_vertex_dist.cli import main
from airflow_vertex_dist.specs import DistributedTrainingJob, HyperparameterTuningJob, load_spec, pools_table
from airflow_vertex_dist.specs.examples import SEED_REDUCTION_SERVER, TUNING_EXAMPLE

from ._helpers import canonical

SEED_YAML = textwrap.dedent(
    """\
    display_name: seed-reduction-server
    primary:
      machine: &gpu {machine_type: n1-highmem-96, accelerator_type: NVIDIA_TESLA_V100, accelerator_count: 8}
      container: &task {image_uri: "example.com/ml/trainer:1.0"}
    workers:
      machine: *gpu
      replica_count: 4
      container: *task
    reduction_server: {replica_count: auto}
    """
)


def test_load_yaml_equals_python_example(tmp_path: Path) -> None:
    path = tmp_path / "seed.yaml"
    path.write_text(SEED_YAML)
    spec = load_spec(str(path))
    assert isinstance(spec, DistributedTrainingJob)
    assert spec.to_api() == SEED_REDUCTION_SERVER.to_api()
    yml = tmp_path / "seed.yml"
    yml.write_text(SEED_YAML)
    assert load_spec(str(yml)) == spec


def test_load_json_tuning_job_and_location(tmp_path: Path) -> None:
    path = tmp_path / "tuning.json"
    path.write_text(TUNING_EXAMPLE.model_dump_json())
    spec = load_spec(str(path), location="europe-west4")
    assert isinstance(spec, HyperparameterTuningJob)
    assert spec.location == "europe-west4"
    assert spec.to_api() == TUNING_EXAMPLE.to_api()


def test_location_fills_in_only_when_unset(tmp_path: Path) -> None:
    path = tmp_path / "seed.json"
    path.write_text(
        json.dumps({**json.loads(SEED_REDUCTION_SERVER.model_dump_json()), "location": "asia-east1"})
    )
    spec = load_spec(str(path), location="europe-west4")
    assert spec.location == "asia-east1"
    image = spec.to_api()["jobSpec"]["workerPoolSpecs"][2]["containerSpec"]["imageUri"]
    assert image.startswith("asia-docker.pkg.dev/")


def test_load_module_attribute_object_and_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec("airflow_vertex_dist.specs.examples:SEED_REDUCTION_SERVER", location="europe-west4")
    assert spec.location == "europe-west4" and SEED_REDUCTION_SERVER.location is None
    assert spec.to_api()["jobSpec"]["workerPoolSpecs"][2]["containerSpec"]["imageUri"].startswith("europe-")
    (tmp_path / "avd_user_specs.py").write_text(
        "SPEC = {'display_name': 'one', 'primary': {'machine': {'machine_type': 'n1-standard-4'},"
        " 'container': {'image_uri': 'trainer'}}}\n"
        "NOT_A_SPEC = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_spec("avd_user_specs:SPEC")
    assert isinstance(loaded, DistributedTrainingJob) and loaded.display_name == "one"
    with pytest.raises(ValueError, match="not a spec or a dict"):
        load_spec("avd_user_specs:NOT_A_SPEC")
    with pytest.raises(AttributeError):
        load_spec("avd_user_specs:MISSING")
    with pytest.raises(ValueError, match="module:attribute"):
        load_spec("no-colon-here")


def test_load_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "display_name: x\nprimary: {machine: {machine_type: n1-standard-4}, replica_count: 2,"
        " container: {image_uri: t}}\n"
    )
    with pytest.raises(ValidationError, match="exactly 1 replica"):
        load_spec(str(bad))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_spec(str(broken))
    with pytest.raises(OSError):
        load_spec(str(tmp_path / "missing.yaml"))
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n")
    with pytest.raises(ValueError, match="must be a mapping"):
        load_spec(str(listing))


def test_cli_render_prints_exact_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "seed.yaml"
    path.write_text(SEED_YAML)
    assert main(["render", str(path)]) == 0
    out = capsys.readouterr().out
    assert out == canonical(SEED_REDUCTION_SERVER.to_api())
    assert (
        main(
            [
                "render",
                "--compact",
                "--location",
                "asia-east1",
                "airflow_vertex_dist.specs.examples:TUNING_EXAMPLE",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert json.loads(out) == TUNING_EXAMPLE.to_api() and out.count("\n") == 1


def test_cli_render_reports_invalid_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps({"display_name": "x", "primary": {"machine": {"machine_type": "n1-standard-4"}}})
    )
    assert main(["render", str(path)]) == 2
    err = capsys.readouterr().err
    assert "container/python_package" in err and "exactly one of container or python_package" in err
    assert main(["render", "nowhere.module:THING"]) == 2
    assert "cannot load" in capsys.readouterr().err


def test_pools_table() -> None:
    table = pools_table(SEED_REDUCTION_SERVER)
    lines = table.splitlines()
    assert lines[0].split() == [
        "pool",
        "role",
        "replicas",
        "machine",
        "accelerators",
        "image",
        "or",
        "module",
        "egress",
        "Gbps",
    ]
    assert lines[2].split()[:4] == ["0", "primary", "1", "n1-highmem-96"]
    assert lines[3].split()[:4] == ["1", "workers", "4", "n1-highmem-96"]
    assert "8 x NVIDIA_TESLA_V100" in lines[3] and "100 x4 = 400" in lines[3]
    assert lines[4].split()[:5] == ["2", "reduction_server", "16", "(auto)", "n1-highcpu-16"]
    assert "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest" in lines[4]
    assert lines[5] == "reducers: 16 x 32 = 512 Gbps >= 500 Gbps of pools 0 and 1 (needed: 16)"
    tuning = pools_table(TUNING_EXAMPLE).splitlines()
    assert len(tuning) == 3 and "n1-standard-4" in tuning[2] and "example.com/ml/trainer:1.0" in tuning[2]


def test_imports_load_no_google_cloud_nor_airflow() -> None:
    """Only the empty ``google.cloud`` namespace that the google-cloud packages' ``.pth`` file
    creates at interpreter start may exist; nothing is imported from it, nor from Airflow."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import airflow_vertex_dist, airflow_vertex_dist.specs, airflow_vertex_dist.specs.examples\n"
        "from airflow_vertex_dist.specs import load_spec, pools_table\n"
        "pools_table(load_spec('airflow_vertex_dist.specs.examples:SEED_REDUCTION_SERVER'))\n"
        "new = set(sys.modules) - before\n"
        "print(sorted(m for m in new if m.split('.')[0] in ('google', 'airflow')))\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith('google.cloud.') or m.split('.')[0] == 'airflow'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines() == ["[]", "[]"], result.stdout
