"""What the emulator's own distribution ships (``emulator/pyproject.toml``), and that it runs jobs with
no Airflow and no provider installed: a virtualenv holding only it and ``google-cloud-aiplatform``
(with ``cloudml-hypertune`` for the trial's metric reports) runs a CustomJob and a tuning job through
the stock high-level SDK.

The virtualenv gets the emulator from the wheel built here and every other distribution by copying
its recorded files from this environment (the dependency closure, read from the metadata): no network,
and nothing in it that the closure does not name.
"""

from __future__ import annotations

import email
import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EMULATOR = ROOT / "emulator"

BUILD = """
import sys
import hatchling.build as backend
print(backend.build_wheel(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("emulator-dist")
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)], cwd=EMULATOR, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return out / result.stdout.split()[-1]


def test_the_emulator_wheel_holds_its_package_its_script_and_its_pytest_plugin(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [meta_name] = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(zf.read(meta_name))
        [ep_name] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = zf.read(ep_name).decode()
    tops = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"vertex_emulator"}
    assert "vertex_emulator/py.typed" in names
    assert meta["Name"] == "vertex-emulator"
    requires = " ".join(meta.get_all("Requires-Dist") or [])
    assert "airflow" not in requires, requires
    assert "vertex-emulator = vertex_emulator.cli:console_main" in entry_points
    assert "[pytest11]" in entry_points and "vertex_emulator.testing.pytest_plugin" in entry_points


def test_the_emulator_wheel_holds_the_page_templates(wheel: Path) -> None:
    """The web pages are rendered from package data: every template under pages/templates/."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    templates = EMULATOR / "vertex_emulator" / "pages" / "templates"
    shipped = sorted(f"vertex_emulator/pages/templates/{path.name}" for path in templates.iterdir())
    assert shipped and set(shipped) <= names, sorted(set(shipped) - names)


SDK_RUN = r"""
import sys, tempfile
from pathlib import Path

try:
    import airflow  # noqa: F401
except ImportError:
    pass
else:
    sys.exit("Airflow is importable in the emulator-only virtualenv")
try:
    import airflow_vertex_dist  # noqa: F401
except ImportError:
    pass
else:
    sys.exit("the provider is importable in the emulator-only virtualenv")

from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform
from google.cloud.aiplatform import hyperparameter_tuning as hpt
from google.cloud.aiplatform import jobs

from vertex_emulator.testing import running_emulator

jobs._JOB_WAIT_TIME = 0.2  # the SDK waits between polls; only the interval is shortened
TRAINER = (
    "import sys, hypertune\n"
    "args = dict(a[2:].split('=', 1) for a in sys.argv[1:])\n"
    "score = float(args.get('lr', 1))\n"
    "hypertune.HyperTune().report_hyperparameter_tuning_metric('score', score, global_step=1)\n"
)
with running_emulator(Path(tempfile.mkdtemp())) as em:
    aiplatform.init(
        project="local-project", location="us-central1", api_endpoint=em.rest_endpoint,
        api_transport="rest", credentials=AnonymousCredentials(), staging_bucket="gs://bkt/staging",
    )
    pools = [{
        "machine_spec": {"machine_type": "n1-standard-4"},
        "replica_count": 1,
        "container_spec": {"image_uri": "python:3.11", "command": [sys.executable, "-c", TRAINER]},
    }]
    job = aiplatform.CustomJob(display_name="only-emulator", worker_pool_specs=pools, base_output_dir="gs://bkt/o")
    job.run(sync=True)
    print("custom", job.state.name)
    study = aiplatform.HyperparameterTuningJob(
        display_name="only-emulator-study",
        custom_job=aiplatform.CustomJob(display_name="t", worker_pool_specs=pools, base_output_dir="gs://bkt/t"),
        metric_spec={"score": "maximize"},
        parameter_spec={"lr": hpt.DoubleParameterSpec(min=0.1, max=0.9, scale="linear")},
        max_trial_count=2, parallel_trial_count=2,
    )
    study.run(sync=True)
    print("tuning", study.state.name, len(study.trials))
"""


def _closure(roots: list[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``roots`` need, transitively (markers evaluated here, no extras)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    installed = {canonicalize_name(d.metadata["Name"]): d for d in importlib.metadata.distributions()}
    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = [canonicalize_name(name) for name in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen[name] = installed[name]
        for text in seen[name].requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return list(seen.values())


def _copy_into(venv: Path, dists: list[importlib.metadata.Distribution]) -> None:
    """Install ``dists`` into ``venv`` by copying their recorded files (what an offline installer
    does with a wheel it already holds)."""
    [site] = (venv / "lib").glob("python3*/site-packages")
    for dist in dists:
        for file in dist.files or []:
            if str(file).startswith(".."):
                continue  # console scripts and data outside site-packages: not needed here
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                target = site / file
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


@pytest.mark.slow
def test_a_virtualenv_with_only_the_emulator_and_the_sdk_runs_a_custom_and_a_tuning_job(
    tmp_path: Path, wheel: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # the emulator from its wheel, its dependencies and the SDK's from this environment: nothing else
    with zipfile.ZipFile(wheel) as zf:
        [site] = (venv / "lib").glob("python3*/site-packages")
        zf.extractall(site)
    emulator_needs = [
        name.split(">")[0].split("<")[0].split("=")[0].split(";")[0].strip()
        for name in importlib.metadata.requires("vertex-emulator") or []
    ]
    dists = _closure([*emulator_needs, "google-cloud-aiplatform", "cloudml-hypertune"])
    names = {d.metadata["Name"].lower() for d in dists}
    assert not {n for n in names if "airflow" in n}, sorted(names)
    _copy_into(venv, dists)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ran = subprocess.run(
        [str(python), "-c", SDK_RUN], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-4000:]
    assert "custom JOB_STATE_SUCCEEDED" in ran.stdout
    assert "tuning JOB_STATE_SUCCEEDED 2" in ran.stdout
